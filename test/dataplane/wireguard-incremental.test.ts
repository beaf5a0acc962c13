/**
 * A WireGuard diff patched from the last write (wireguard/incremental.ts) is the whole diff of the
 * new config against that write, in the same order, and leaves the same state (stateAfter's); where
 * it cannot say, it says null and the whole diff decides. Configs shaped like a cross mesh's (a peer
 * per node: its pod CIDR and WireGuard IP, the IPs by the nodes' order), changed as a cluster changes
 * them, and at random over hundreds of rounds, each patched from the one before: also through two
 * fake devices, one trusting its last write and one reading, which must end up holding the same.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { WireGuardConfig, WireGuardWritten } from '../../src/dataplane/types.js';
import { diffWireGuard, stateAfter, WireGuardConfigError } from '../../src/dataplane/wireguard/diff.js';
import { FakeWireGuardDevice } from '../../src/dataplane/wireguard/fake.js';
import { patchedDiff, type WrittenFrom } from '../../src/dataplane/wireguard/incremental.js';
import type { PlanPeer } from '../../src/mesh/types.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';

const privateKey = generatePrivateKey();
const key = (seed: string) => createHash('sha256').update(`wg incremental ${seed}`).digest('base64');

/** A node of the mesh: what its peer is made of. */
interface Member {
  n: number;
  /** Its key's generation (a rotation makes another key). */
  gen: number;
  endpoint: string | null;
  podCIDR: string;
  keepalive: number;
  psk: string | null;
  /** Extra allowed IPs (allowed-location-ips), as written. */
  extra: string[];
}

const member = (n: number): Member => ({
  n,
  gen: 0,
  endpoint: `100.64.${n >> 8}.${n & 0xff}:51820`,
  podCIDR: `10.${42 + (n >> 8)}.${n & 0xff}.0/24`,
  keepalive: 0,
  psk: null,
  extra: [],
});

/** The config of a mesh: each member's WireGuard IP is its place in the list, as Kilo numbers them. */
function configOf(members: readonly Member[], over: Partial<WireGuardConfig> = {}): WireGuardConfig {
  const peers = members.map((m, i): PlanPeer => ({
    kind: 'segment',
    names: [`node-${m.n}`],
    publicKey: key(`${m.n}/${m.gen}`),
    endpoint: m.endpoint,
    allowedIPs: [m.podCIDR, `10.4.${(i + 1) >> 8}.${(i + 1) & 0xff}/32`, ...m.extra],
    persistentKeepalive: m.keepalive,
    presharedKey: m.psk,
  }));
  return { privateKey, listenPort: 51820, fwmark: 0, peers, ...over };
}

/** The first write: the whole diff against an empty device, and what it leaves. */
function firstWrite(config: WireGuardConfig): WrittenFrom {
  const empty: WireGuardWritten = {
    state: { publicKey: null, listenPort: 51820, fwmark: 0, peers: [] },
    presharedKeyDigests: new Map(),
  };
  const diff = diffWireGuard(empty.state, config, empty.presharedKeyDigests);
  return { config, written: stateAfter(empty.state, empty.presharedKeyDigests, config, diff), byKey: null };
}

const entries = (m: ReadonlyMap<string, unknown>) => [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1));

/**
 * Patches `last` into `config`; when it does, the diff and the state left must be the whole diff's and
 * stateAfter's. Returns the next write (patched, or the whole diff's) and whether it was patched.
 */
function step(last: WrittenFrom, config: WireGuardConfig, name: string): { next: WrittenFrom; patched: boolean } {
  const { state, presharedKeyDigests } = last.written;
  const diff = diffWireGuard(state, config, presharedKeyDigests);
  const expected = stateAfter(state, presharedKeyDigests, config, diff);
  const kept = new Set(state.peers);
  const patch = patchedDiff(last, config);
  if (!patch) return { next: { config, written: expected, byKey: null }, patched: false };
  assert.deepEqual(patch.diff, diff, `${name}: the diff`);
  const next = patch.after();
  assert.deepEqual(next.written.state, expected.state, `${name}: the state left`);
  assert.deepEqual(
    entries(next.written.presharedKeyDigests),
    entries(expected.presharedKeyDigests),
    `${name}: preshared-key digests`,
  );
  // Made on the first patch that needs it (none when nothing changed since the whole diff).
  if (next.byKey)
    assert.deepEqual(
      entries(next.byKey),
      entries(new Map(expected.state.peers.map((p) => [p.publicKey, p]))),
      `${name}: peers by key`,
    );
  // A peer the diff left alone is the last state's own object: not built again.
  const reused = next.written.state.peers.filter((p) => kept.has(p)).length;
  const alone = expected.state.peers.filter((p) => kept.has(p)).length;
  assert.equal(reused, alone, `${name}: untouched peers reused`);
  return { next, patched: true };
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => member(from + i));

test('a node joining, leaving or changing is patched as the whole diff would make it', () => {
  const base = range(1, 200);
  const at = (i: number, over: Partial<Member>) => base.map((m, j) => (j === i ? { ...m, ...over } : m));
  const cases: [string, Member[]][] = [
    ['the same config', base],
    ['a node joins at the end', [...base, member(500)]],
    ['a node leaves at the end', base.slice(0, -1)],
    ['its endpoint changes', at(20, { endpoint: '100.99.0.1:51821' })],
    ['its endpoint is left to WireGuard', at(21, { endpoint: null })],
    ['its key is rotated', at(22, { gen: 1 })],
    ['its pod CIDR changes', at(23, { podCIDR: '10.99.0.0/24' })],
    ['it gains allowed IPs', at(24, { extra: ['192.168.7.0/24', '192.168.8.1/32'] })],
    ['its keepalive is set', at(25, { keepalive: 25 })],
    ['a preshared key is set', at(26, { psk: generatePrivateKey() })],
    ['only its names change', base],
  ];
  for (const [name, members] of cases) {
    const config = configOf(members);
    if (name === 'only its names change') config.peers[30] = { ...config.peers[30]!, names: ['renamed'] };
    assert.ok(step(firstWrite(configOf(base)), config, name).patched, `${name}: patched`);
  }
  // A node leaving in the middle renumbers the WireGuard IPs of every node after it.
  const left = step(firstWrite(configOf(base)), configOf(base.filter((m) => m.n !== 190)), 'a late node leaves');
  assert.ok(left.patched, 'a node near the end leaving is patched');
  // A preshared key changed and removed, patched from a state that holds its digest.
  const psk = at(40, { psk: generatePrivateKey() });
  const withPsk = step(firstWrite(configOf(base)), configOf(psk), 'psk set').next;
  const changed = step(withPsk, configOf(psk.map((m) => (m.psk ? { ...m, psk: generatePrivateKey() } : m))), 'psk');
  assert.ok(changed.patched);
  assert.ok(step(changed.next, configOf(base), 'psk removed').patched);
});

test('an interface change, a duplicate key or a renumbering is left to the whole diff', () => {
  const base = range(1, 200);
  const last = () => firstWrite(configOf(base));
  for (const [name, over] of [
    ['another private key', { privateKey: generatePrivateKey() }],
    ['another port', { listenPort: 51821 }],
    ['another fwmark', { fwmark: 0x4000 }],
  ] as const)
    assert.equal(patchedDiff(last(), configOf(base, over)), null, name);
  assert.equal(patchedDiff(last(), configOf([member(0), ...base])), null, 'a node sorting first renumbers every peer');
  assert.equal(patchedDiff(last(), configOf(range(1000, 1200))), null, 'every node another');
  // A joining node with the key of one kept: the whole diff names the duplicate.
  const twin = configOf([...base, member(500)]);
  twin.peers[199] = { ...twin.peers[199]!, publicKey: twin.peers[5]!.publicKey };
  assert.equal(patchedDiff(last(), twin), null, 'a duplicate of a kept peer');
  assert.throws(() => diffWireGuard(last().written.state, twin), WireGuardConfigError);
  const two = configOf([...base, member(500), member(501)]);
  two.peers[200] = { ...two.peers[200]!, publicKey: two.peers[199]!.publicKey };
  assert.equal(patchedDiff(last(), two), null, 'two new peers with one key');
});

/** A seeded generator: the same rounds every run. */
function generator(seed: number) {
  return (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
}

/** One round of cluster events on `members` (returns the new list). */
function events(members: Member[], random: (n: number) => number, fresh: () => number): Member[] {
  const next = [...members];
  const pick = () => random(next.length);
  for (let k = random(4); k >= 0; k--) {
    const what = random(10);
    const i = pick();
    const m = next[i];
    if (what === 0 && next.length > 1) next.splice(i, 1);
    else if (what === 1) next.push(member(fresh()));
    // A join in the middle: every WireGuard IP after it renumbered (mostly too many to patch).
    else if (what === 2 && random(4) === 0) next.splice(i, 0, member(fresh()));
    else if (m && what === 3) next[i] = { ...m, endpoint: random(5) === 0 ? null : `100.65.${random(256)}.1:51820` };
    else if (m && what === 4) next[i] = { ...m, gen: m.gen + 1 };
    else if (m && what === 5) next[i] = { ...m, podCIDR: `10.${100 + random(100)}.${random(256)}.0/24` };
    else if (m && what === 6) next[i] = { ...m, extra: random(2) === 0 ? [] : [`192.168.${random(256)}.0/24`] };
    else if (m && what === 7) next[i] = { ...m, keepalive: random(2) * 25 };
    else if (m && what === 8) next[i] = { ...m, psk: random(3) === 0 ? null : generatePrivateKey() };
    else next.push(member(fresh()));
  }
  return next;
}

test('random cluster events: patched exactly as the whole diff, or left to it', () => {
  const random = generator(11);
  let id = 1000;
  let members = range(1, 120);
  let last = firstWrite(configOf(members));
  let patched = 0;
  const rounds = 400;
  for (let round = 0; round < rounds; round++) {
    members = events(members, random, () => id++);
    const r = step(last, configOf(members), `round ${round}`);
    if (r.patched) patched++;
    last = r.next;
  }
  assert.ok(patched > rounds / 2, `most rounds patched (${patched} of ${rounds})`);
});

/** The device (its port is a random one of each fake's). */
async function peersOf(device: FakeWireGuardDevice) {
  const s = await device.read();
  return { ...s, listenPort: 0 };
}

test('random cluster events: a device trusting its last write holds what one reading every time does', async () => {
  const random = generator(23);
  let id = 2000;
  let members = range(1, 80);
  const trusting = new FakeWireGuardDevice();
  const reading = new FakeWireGuardDevice();
  await trusting.ensure();
  await reading.ensure();
  let written: WireGuardWritten | undefined;
  const rounds = 300;
  for (let round = 0; round < rounds; round++) {
    if (round > 0) members = events(members, random, () => id++);
    const config = configOf(members);
    const viaMemory = await trusting.configure(config, {
      ...(written ? { current: written } : {}),
      wrote: (after) => (written = after),
    });
    const read = await reading.configure(config);
    assert.deepEqual(viaMemory, read, `round ${round}: the same changes`);
    assert.deepEqual(trusting.lastOps.details, reading.lastOps.details, `round ${round}: the same writes`);
    assert.deepEqual(await peersOf(trusting), await peersOf(reading), `round ${round}: the same device`);
    // A session: kept by a peer the next write leaves alone, on both alike.
    const [first] = config.peers;
    if (first) {
      trusting.handshake(first.publicKey, round);
      reading.handshake(first.publicKey, round);
    }
  }
  assert.ok(trusting.differ.patches > rounds / 2, `most passes patched (${trusting.differ.patches} of ${rounds})`);
  assert.equal(reading.differ.patches, 0, 'a device given no last write diffs whole');
});
