/**
 * The agent's key rotation (docs/key-rotation.md) over the test API server and a fake device: the
 * next key is announced, the device switches, and only then is the key published; a request is
 * served once; the period rotates; a key file that cannot be written keeps the key; and the private
 * keys appear in no log, annotation or metric.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { handshakeAddresses } from '../../src/agent/handshake-primer.js';
import type { KeyRotationOptions } from '../../src/agent/key-rotation.js';
import { Annotation } from '../../src/model/annotations.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { NOW } from '../helpers/cluster.js';
import { settled, startHarness, waitUntil, type Harness } from './agent-harness.js';

const own = (h: Harness) => h.api.node('a')?.metadata?.annotations ?? {};

interface Observed {
  /** Each patch of the local node, with the public key the device held when it was sent. */
  patches: { patch: Record<string, string | null>; deviceKey: string | null }[];
  /** Keys handed to persist, in order (secret: compared, never printed). */
  persisted: string[];
}

/** A harness whose rotation persists into memory (or fails), and a record of the patches it sends. */
async function rotating(
  t: Parameters<typeof startHarness>[0],
  o: Partial<KeyRotationOptions> & { failPersist?: boolean } = {},
): Promise<Harness & { seen: Observed }> {
  const seen: Observed = { patches: [], persisted: [] };
  const keyRotation: KeyRotationOptions = {
    periodMs: 0,
    keyCreatedAtMs: NOW * 1000,
    persist: (key) => {
      if (o.failPersist) throw new Error('EROFS: read-only file system');
      seen.persisted.push(key);
    },
    ...o,
  };
  const h = await startHarness(t, { deps: { keyRotation } });
  const patch = h.source.patchNodeAnnotations.bind(h.source);
  h.source.patchNodeAnnotations = async (name, p) => {
    seen.patches.push({ patch: { ...p }, deviceKey: (await h.device.read()).publicKey });
    return patch(name, p);
  };
  await settled(h);
  return { ...h, seen };
}

/** Everything the agent let out: its log, the Node objects, the metrics. */
async function outputs(h: Harness): Promise<string> {
  return [JSON.stringify(h.log.entries), JSON.stringify(h.api.allObjects()), await h.metrics.registry.metrics()].join(
    '\n',
  );
}

describe('agent: key rotation', () => {
  test('on request: next-key announced, the device switched, then the key published and the request acknowledged', async (t) => {
    const h = await rotating(t);
    assert.equal(own(h)[Annotation.key], h.publicKey);
    h.api.patchNode('a', { metadata: { annotations: { [Annotation.rotateKey]: 'r1' } } });
    await waitUntil('the rotation was acknowledged', () => own(h)[Annotation.keyRotated] === 'r1', 10_000);
    await settled(h);

    const [next] = h.seen.persisted;
    assert.equal(h.seen.persisted.length, 1, 'one key written');
    const nextPublic = publicKeyOf(next!);
    assert.notEqual(nextPublic, h.publicKey);
    assert.equal((await h.device.read()).publicKey, nextPublic, 'the device holds the new key');
    assert.equal(own(h)[Annotation.key], nextPublic, 'the new key is published');
    assert.equal(own(h)[Annotation.nextKey], undefined, 'next-key is removed');

    // The order: next-key announced under the old device key; the key published only once the device held it.
    const announce = h.seen.patches.findIndex((p) => p.patch[Annotation.nextKey] === nextPublic);
    const publish = h.seen.patches.findIndex((p) => p.patch[Annotation.key] === nextPublic);
    assert.ok(announce >= 0 && publish > announce, 'next-key before key');
    assert.equal(h.seen.patches[announce]!.deviceKey, h.publicKey, 'announced while the device held the old key');
    assert.equal(h.seen.patches[publish]!.deviceKey, nextPublic, 'published once the device held the new key');
    assert.equal(h.seen.patches[publish]!.patch[Annotation.nextKey], null, 'next-key removed with the same patch');
    assert.equal(h.seen.patches[publish]!.patch[Annotation.keyRotated], 'r1');

    const metrics = await h.metrics.registry.metrics();
    assert.match(metrics, /^kilo_key_rotations_total 1$/m);
    assert.match(metrics, /^kilo_key_age_seconds \d/m);

    // Served once: the same value again (a resync, a restart) is no new request.
    h.agent.resync();
    await settled(h);
    assert.equal(h.seen.persisted.length, 1, 'the served request does not rotate again');
    h.api.patchNode('a', { metadata: { annotations: { [Annotation.rotateKey]: 'r2' } } });
    await waitUntil('the second rotation was acknowledged', () => own(h)[Annotation.keyRotated] === 'r2', 10_000);
    assert.equal(h.seen.persisted.length, 2);
    assert.equal(own(h)[Annotation.key], publicKeyOf(h.seen.persisted[1]!));

    const out = await outputs(h);
    for (const key of [h.privateKey, ...h.seen.persisted])
      assert.ok(!out.includes(key), 'a private key appears in a log, an object or the metrics');
    assert.ok(out.includes(nextPublic), 'the outputs searched hold the public keys (the search can fail)');
  });

  test("once the device holds the new key and before it is published, the device starts its handshakes: the peers' are then the only ones", async (t) => {
    // Both sides initiating at once (the node on its own traffic as a peer learns the key, the
    // peer on its new entry) each drop the other's response: no session for REKEY_TIMEOUT, 5 s
    // (the lab's stall, docs/key-rotation.md#who-initiates).
    const started: { addresses: string[]; deviceKey: string | null; patchesBefore: number }[] = [];
    const h = await rotating(t, {
      startHandshakes: async (addresses) => {
        started.push({ addresses, deviceKey: (await h.device.read()).publicKey, patchesBefore: h.seen.patches.length });
      },
    });
    h.api.patchNode('a', { metadata: { annotations: { [Annotation.rotateKey]: 'r1' } } });
    await waitUntil('the rotation was acknowledged', () => own(h)[Annotation.keyRotated] === 'r1', 10_000);
    await settled(h);
    const nextPublic = publicKeyOf(h.seen.persisted[0]!);
    assert.equal(started.length, 1, 'once per rotation');
    assert.equal(started[0]!.deviceKey, nextPublic, 'after the device switched');
    const publish = h.seen.patches.findIndex((p) => p.patch[Annotation.key] === nextPublic);
    assert.ok(started[0]!.patchesBefore <= publish, 'before the key was published');
    const plan = h.agent.status.plan!;
    assert.ok(plan.peers.length > 0, 'the harness has WireGuard peers');
    assert.deepEqual(
      started[0]!.addresses,
      handshakeAddresses(plan, h.agent.status.topology!),
      "one address per peer, in the peer's tunnel",
    );
  });

  test('on the period: a key older than --key-rotation-period is replaced; the age restarts', async (t) => {
    const h = await rotating(t, { periodMs: 3_600_000 });
    assert.equal(h.seen.persisted.length, 0, 'a young key is kept');
    h.clock.ms += 3_600_000;
    h.agent.schedule(0);
    await waitUntil('the key was rotated', () => h.seen.persisted.length === 1 && !h.agent.status.lastError, 10_000);
    await waitUntil(
      'the new key is published',
      () => own(h)[Annotation.key] === publicKeyOf(h.seen.persisted[0]!),
      10_000,
    );
    assert.equal(own(h)[Annotation.keyRotated], undefined, 'no request to acknowledge');
    assert.match(await h.metrics.registry.metrics(), /^kilo_key_age_seconds 0$/m);
    await settled(h);
    assert.equal(h.seen.persisted.length, 1, 'the new key is young: no second rotation');
  });

  test('a key file that cannot be written: the key stays, next-key goes, the error names no key', async (t) => {
    const h = await rotating(t, { failPersist: true });
    h.api.patchNode('a', { metadata: { annotations: { [Annotation.rotateKey]: 'r1' } } });
    await waitUntil(
      'the agent gave the rotation up',
      () => h.log.entries.some((e) => e.msg.includes('cannot write the key file')),
      10_000,
    );
    await waitUntil('next-key is removed', () => own(h)[Annotation.nextKey] === undefined, 10_000);
    assert.equal(own(h)[Annotation.key], h.publicKey);
    assert.equal((await h.device.read()).publicKey, h.publicKey, 'the device keeps the key');
    assert.ok(!(await outputs(h)).includes(h.privateKey));
  });

  test('without rotation options a request changes nothing (kg apply, the tests of the rest)', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    h.api.patchNode('a', { metadata: { annotations: { [Annotation.rotateKey]: 'r1' } } });
    await settled(h);
    assert.equal(own(h)[Annotation.key], h.publicKey);
    assert.equal(own(h)[Annotation.nextKey], undefined);
    assert.equal(own(h)[Annotation.keyRotated], undefined);
    assert.doesNotMatch(await h.metrics.registry.metrics(), /kilo_key_rotations_total/);
    // A fresh key is not the harness's: the check above can tell them apart.
    assert.notEqual(publicKeyOf(generatePrivateKey()), h.publicKey);
  });
});
