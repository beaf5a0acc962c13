import assert from 'node:assert/strict';
import { ReadAhead } from '../../src/dataplane/read-ahead.js';
import type { Dataplane } from '../../src/dataplane/reconcile.js';
import { test } from 'node:test';
import type {
  Ops,
  PeerChanges,
  ReconcileOptions,
  WireGuardConfig,
  WireGuardDevice,
  WireGuardState,
  WireGuardWritten,
} from '../../src/dataplane/types.js';
import { lastWrite } from './last-write.js';
import type { PlanPeer } from '../../src/mesh/types.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';

export interface ContractSubject {
  device: WireGuardDevice & { lastOps: Ops };
  cleanup(): Promise<void>;
}

function sorted(keys: string[]): string[] {
  return [...keys].sort();
}

const noChanges: PeerChanges = { added: [], removed: [], updated: [] };

function changes(c: Partial<PeerChanges>): PeerChanges {
  return { added: sorted(c.added ?? []), removed: sorted(c.removed ?? []), updated: sorted(c.updated ?? []) };
}

function peer(name: string, over: Partial<PlanPeer> = {}): PlanPeer {
  return {
    kind: 'segment',
    names: [name],
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: null,
    allowedIPs: [],
    persistentKeepalive: 0,
    presharedKey: null,
    ...over,
  };
}

/** What read() must give back for a config: its peers, in WireGuard's normal form. */
function view(state: WireGuardState) {
  return state.peers
    .map((p) => ({
      publicKey: p.publicKey,
      endpoint: p.endpoint,
      allowedIPs: [...p.allowedIPs].sort(),
      persistentKeepalive: p.persistentKeepalive,
      hasPresharedKey: p.hasPresharedKey,
    }))
    .sort((a, b) => (a.publicKey < b.publicKey ? -1 : 1));
}

/**
 * The behaviour every WireGuardDevice has, fake or real: configure applies exactly the
 * difference and says which peers it touched; an unchanged config touches nothing.
 */
export function wireGuardContract(
  label: string,
  make: () => Promise<ContractSubject>,
  skip: string | false = false,
): void {
  const privateKey = generatePrivateKey();
  const p1 = peer('node-1', { endpoint: '192.0.2.1:51820', allowedIPs: ['10.4.0.1/32', '10.42.1.0/24'] });
  const p2 = peer('node-2', {
    endpoint: '[2001:db8::2]:51820',
    allowedIPs: ['10.4.0.2/32', '10.42.2.0/24', 'fd42:2::/64'],
    persistentKeepalive: 25,
    presharedKey: generatePrivateKey(),
  });
  const p3 = peer('node-3', { endpoint: '192.0.2.3:51821', allowedIPs: ['10.4.0.3/32'] });
  const p4 = peer('node-4', { endpoint: null, allowedIPs: ['10.4.0.4/32'], kind: 'peer' });
  const configA: WireGuardConfig = { privateKey, listenPort: 51820, peers: [p1, p2, p3] };
  const configB: WireGuardConfig = {
    privateKey,
    listenPort: 51820,
    fwmark: 0x1107,
    peers: [
      { ...p1, allowedIPs: ['10.42.1.0/24', '10.4.0.1/32', '10.42.11.0/24'] },
      { ...p2, presharedKey: generatePrivateKey() },
      p4,
    ],
  };

  test(`${label}: WireGuard device contract`, { skip }, async (t) => {
    const subject = await make();
    t.after(() => subject.cleanup());
    const d = subject.device;
    await d.ensure();

    await t.test('configure A: every peer added, read back exactly', async () => {
      assert.deepEqual(await d.configure(configA), changes({ added: [p1.publicKey, p2.publicKey, p3.publicKey] }));
      const s = await d.read();
      assert.equal(s.publicKey, publicKeyOf(privateKey));
      assert.equal(s.listenPort, 51820);
      assert.equal(s.fwmark, 0);
      assert.deepEqual(
        view(s),
        [
          {
            publicKey: p1.publicKey,
            endpoint: '192.0.2.1:51820',
            allowedIPs: ['10.4.0.1/32', '10.42.1.0/24'],
            persistentKeepalive: 0,
            hasPresharedKey: false,
          },
          {
            publicKey: p2.publicKey,
            endpoint: '[2001:db8::2]:51820',
            allowedIPs: ['10.4.0.2/32', '10.42.2.0/24', 'fd42:2::/64'],
            persistentKeepalive: 25,
            hasPresharedKey: true,
          },
          {
            publicKey: p3.publicKey,
            endpoint: '192.0.2.3:51821',
            allowedIPs: ['10.4.0.3/32'],
            persistentKeepalive: 0,
            hasPresharedKey: false,
          },
        ].sort((a, b) => (a.publicKey < b.publicKey ? -1 : 1)),
      );
    });

    await t.test('configure A again: no changes', async () => {
      assert.deepEqual(await d.configure(configA), noChanges);
      // Allowed IPs are a set: order and host bits are not changes.
      const shuffled = {
        ...configA,
        peers: [{ ...p2, allowedIPs: ['fd42:2::1/64', '10.42.2.7/24', '10.4.0.2/32'] }, p3, p1],
      };
      assert.deepEqual(await d.configure(shuffled), noChanges);
    });

    await t.test('configure B: exactly the difference', async () => {
      const before = await d.read();
      assert.deepEqual(
        await d.configure(configB),
        changes({ added: [p4.publicKey], removed: [p3.publicKey], updated: [p1.publicKey, p2.publicKey] }),
      );
      const s = await d.read();
      assert.equal(s.fwmark, 0x1107);
      assert.equal(s.listenPort, before.listenPort);
      assert.deepEqual(
        view(s),
        [
          {
            publicKey: p1.publicKey,
            endpoint: '192.0.2.1:51820',
            allowedIPs: ['10.4.0.1/32', '10.42.1.0/24', '10.42.11.0/24'],
            persistentKeepalive: 0,
            hasPresharedKey: false,
          },
          {
            publicKey: p2.publicKey,
            endpoint: '[2001:db8::2]:51820',
            allowedIPs: ['10.4.0.2/32', '10.42.2.0/24', 'fd42:2::/64'],
            persistentKeepalive: 25,
            hasPresharedKey: true,
          },
          {
            publicKey: p4.publicKey,
            endpoint: null,
            allowedIPs: ['10.4.0.4/32'],
            persistentKeepalive: 0,
            hasPresharedKey: false,
          },
        ].sort((a, b) => (a.publicKey < b.publicKey ? -1 : 1)),
      );
    });

    await t.test('configure B again: no changes', async () => {
      assert.deepEqual(await d.configure(configB), noChanges);
    });

    await t.test('trusting the last write: the same changes as a read, and a read afterwards agrees', async () => {
      const m = lastWrite<WireGuardWritten>();
      assert.deepEqual(await d.configure(configB, m.keep()), noChanges);
      const all = [p1.publicKey, p2.publicKey];
      assert.deepEqual(
        await d.configure(configA, m.trust()),
        changes({ added: [p3.publicKey], removed: [p4.publicKey], updated: all }),
      );
      assert.deepEqual(await d.configure(configA), noChanges);
      assert.deepEqual(await d.configure(configA, m.trust()), noChanges);
      assert.deepEqual(
        await d.configure(configB, m.trust()),
        changes({ added: [p4.publicKey], removed: [p3.publicKey], updated: all }),
      );
      assert.deepEqual(await d.configure(configB), noChanges);
      assert.equal((await d.read()).fwmark, 0x1107);
    });

    await t.test('endpoint, keepalive and preshared-key removal are updates', async () => {
      const c: WireGuardConfig = {
        ...configB,
        peers: [
          { ...configB.peers[0]!, endpoint: '198.51.100.1:51820', persistentKeepalive: 10 },
          { ...configB.peers[1]!, presharedKey: null },
          p4,
        ],
      };
      assert.deepEqual(await d.configure(c), changes({ updated: [p1.publicKey, p2.publicKey] }));
      const byKey = new Map((await d.read()).peers.map((p) => [p.publicKey, p]));
      assert.equal(byKey.get(p1.publicKey)!.endpoint, '198.51.100.1:51820');
      assert.equal(byKey.get(p1.publicKey)!.persistentKeepalive, 10);
      assert.equal(byKey.get(p2.publicKey)!.hasPresharedKey, false);
      assert.deepEqual(await d.configure(c), noChanges);
    });

    await t.test('a null endpoint leaves the endpoint WireGuard has', async () => {
      const withEndpoint: WireGuardConfig = { ...configB, peers: [{ ...p4, endpoint: '203.0.113.4:51820' }] };
      await d.configure(withEndpoint);
      assert.deepEqual(await d.configure({ ...configB, peers: [p4] }), noChanges);
      assert.equal((await d.read()).peers[0]!.endpoint, '203.0.113.4:51820');
    });

    await t.test('a new private key changes the interface, not the peers', async () => {
      const other = generatePrivateKey();
      assert.deepEqual(await d.configure({ ...configB, privateKey: other, peers: [p4] }), noChanges);
      assert.equal((await d.read()).publicKey, publicKeyOf(other));
    });

    await t.test(
      'once (kg apply): the same writes and errors as a full configure, whatever the device holds',
      async () => {
        const outcome = async (config: WireGuardConfig, options: ReconcileOptions) => {
          try {
            const peers = await d.configure(config, options);
            return { peers, ops: d.lastOps };
          } catch (e) {
            return { error: e };
          }
        };
        /** `config` applied with `once` and without, each time to a device left by `held`. */
        const compare = async (held: WireGuardConfig | WireGuardConfig[], config: WireGuardConfig) => {
          const hold = async () => {
            for (const h of [held].flat()) await d.configure(h);
          };
          await hold();
          const once = await outcome(config, { once: true });
          await hold();
          const full = await outcome(config, {});
          assert.deepEqual(once, full);
          return once;
        };
        const zero = { peers: noChanges, ops: { writes: 0, details: [] } };
        assert.deepEqual(await compare(configA, configA), zero);
        // The same config in another order, and in texts the device prints otherwise.
        const [q1, q2, q3] = configA.peers as [PlanPeer, PlanPeer, PlanPeer];
        const reordered = { ...configA, peers: [q3, { ...q2, allowedIPs: [...q2.allowedIPs].reverse() }, q1] };
        assert.deepEqual(await compare(configA, reordered), zero);
        const hostBits = {
          ...configA,
          peers: [q1, { ...q2, allowedIPs: ['fd42:2::1/64', '10.42.2.7/24', '10.4.0.2/32'] }, q3],
        };
        assert.deepEqual(await compare(configA, hostBits), zero);
        const longhand = { ...configA, peers: [q1, { ...q2, endpoint: '[2001:db8:0::2]:51820' }, q3] };
        assert.deepEqual(await compare(configA, longhand), zero);
        const repeated = { ...configA, peers: [{ ...q1, allowedIPs: [...q1.allowedIPs, q1.allowedIPs[0]!] }, q2, q3] };
        assert.deepEqual(await compare(configA, repeated), zero);
        assert.deepEqual(await compare(configA, { ...configA, listenPort: 0 }), zero);
        // A device that differs from the config in one thing each.
        const one = (c: WireGuardConfig, i: number, over: Partial<PlanPeer>): WireGuardConfig => ({
          ...c,
          peers: c.peers.map((p, j) => (j === i ? { ...p, ...over } : p)),
        });
        const held: WireGuardConfig[] = [
          one(configA, 0, { endpoint: '192.0.2.9:51820' }),
          one(configA, 1, { presharedKey: generatePrivateKey() }),
          one(configA, 1, { presharedKey: null }),
          one(configA, 0, { presharedKey: generatePrivateKey() }),
          one(configA, 1, { persistentKeepalive: 0 }),
          one(configA, 0, { allowedIPs: ['10.4.0.1/32'] }),
          one(configA, 0, { allowedIPs: ['10.4.0.1/32', '10.42.1.0/24', '10.42.9.0/24'] }),
          one(one(configA, 0, { allowedIPs: ['10.4.0.1/32'] }), 2, { allowedIPs: ['10.4.0.3/32', '10.42.1.0/24'] }),
          { ...configA, peers: [q1, q2] },
          { ...configA, peers: [q1, q2, q3, p4] },
          { ...configA, listenPort: 51821 },
          { ...configA, fwmark: 0x1107 },
          { ...configA, privateKey: generatePrivateKey() },
          configB,
        ];
        for (const h of held) {
          for (const r of [await compare(h, configA), await compare(configA, h)])
            assert.ok(r.ops !== undefined && r.ops.writes > 0, JSON.stringify(r));
        }
        // A peer the device knows no endpoint of (added with none), and one the config gives it.
        const noEndpoint = one(configA, 2, { endpoint: null });
        const added = await compare([{ ...configA, peers: [q1, q2] }, noEndpoint], configA);
        assert.deepEqual(added.peers, changes({ updated: [q3.publicKey] }));
        // A null endpoint takes the one the device has; configs the full diff refuses are refused alike.
        assert.deepEqual(
          await compare(one(configA, 0, { endpoint: '192.0.2.9:51820' }), one(configA, 0, { endpoint: null })),
          zero,
        );
        for (const bad of [
          { ...configA, peers: [q1, q2, q3, { ...q3, names: ['node-3b'] }] },
          { ...configA, privateKey: 'not a key' },
        ]) {
          const r = await compare(configA, bad);
          assert.ok('error' in r && r.error instanceof Error, JSON.stringify(r));
        }
      },
    );

    await t.test('removing every peer', async () => {
      const left = (await d.read()).peers.map((p) => p.publicKey);
      assert.ok(left.length > 0);
      assert.deepEqual(await d.configure({ privateKey, listenPort: 51820, peers: [] }), changes({ removed: left }));
      assert.deepEqual((await d.read()).peers, []);
      assert.deepEqual(await d.configure({ privateKey, listenPort: 51820, peers: [] }), noChanges);
    });
  });
}

/**
 * The read-ahead layer's creation of the interface, fake or real, on a subject whose interface does
 * not exist yet: the reconcile takes what ReadAhead.ensure did (once), and undo removes only an
 * interface it created that no reconcile took.
 */
export function wireGuardAheadContract(
  label: string,
  make: () => Promise<ContractSubject>,
  skip: string | false = false,
): void {
  const exists = (d: WireGuardDevice) =>
    d.read().then(
      () => true,
      () => false,
    );
  const config: WireGuardConfig = { privateKey: generatePrivateKey(), listenPort: 51820, peers: [] };
  const aheadOf = (d: WireGuardDevice) => new ReadAhead({ device: d } as Dataplane, d.name);

  test(`${label}: an interface created ahead and not taken is removed by undo`, { skip }, async (t) => {
    const subject = await make();
    t.after(() => subject.cleanup());
    const d = subject.device;
    assert.equal(await exists(d), false);
    const ahead = aheadOf(d);
    assert.equal(await ahead.ensure(), true, 'it says it created the interface');
    assert.equal(await exists(d), true, 'ensure created the interface');
    await ahead.undo();
    assert.equal(await exists(d), false, 'undo removed what ensure created');
    await ahead.undo();
    // Undone, the next ensure creates the interface anew.
    assert.equal(await d.ensure(), true);
    await d.configure(config);
    assert.equal((await d.read()).listenPort, 51820);
  });

  test(`${label}: a reconcile takes what was created ahead; undo then leaves it`, { skip }, async (t) => {
    const subject = await make();
    t.after(() => subject.cleanup());
    const d = subject.device;
    const ahead = aheadOf(d);
    void ahead.ensure();
    assert.equal(await ahead.take().ensured, true);
    await ahead.undo();
    assert.equal(await exists(d), true, 'taken by the reconcile, the interface stays');
    await d.configure(config);
    assert.equal((await d.read()).listenPort, 51820);
  });

  test(`${label}: an interface that was there before is never removed by undo`, { skip }, async (t) => {
    const subject = await make();
    t.after(() => subject.cleanup());
    const d = subject.device;
    await d.ensure();
    await d.configure(config);
    const ahead = aheadOf(d);
    assert.equal(await ahead.ensure(), false, 'it says it found the interface');
    await ahead.undo();
    assert.equal(await exists(d), true);
    assert.equal((await d.read()).listenPort, 51820, 'its configuration is untouched');
  });
}

/**
 * A detached device (its owner is stopping), fake or real: ensure still finds the interface that is
 * there, and creates none once it is gone.
 */
export function wireGuardDetachContract(
  label: string,
  make: () => Promise<ContractSubject>,
  skip: string | false = false,
): void {
  test(`${label}: detached, ensure keeps the interface there and creates none`, { skip }, async (t) => {
    const subject = await make();
    t.after(() => subject.cleanup());
    const d = subject.device;
    await d.ensure();
    await d.configure({ privateKey: generatePrivateKey(), listenPort: 51820, peers: [] });
    await d.detach();
    assert.equal(await d.ensure(), false, 'it found the interface');
    assert.equal((await d.read()).listenPort, 51820, 'its configuration is untouched');
    await d.destroy();
    await assert.rejects(d.ensure(), /kilo0 does not exist and is not created: its owner is stopping \(detached\)/);
    await assert.rejects(d.read(), 'no interface was created');
  });
}
