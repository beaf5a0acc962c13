/**
 * The agent's plan memo (src/mesh/plan-memo.ts): plans made with it, pass after pass, are
 * byte-identical to plans made without it, over seeded random sequences of joins, leaves, changes
 * of every value a segment's part reads and heartbeats (new objects, same values), in every
 * granularity, with and without --route-host-traffic. A memo that ignored its inputs would fail:
 * the last test shows the sequences catch one that reuses a part whenever it holds one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encapsulatorOf } from '../../src/encapsulation/index.js';
import { topologyOf } from '../../src/mesh/compute.js';
import { defaultMeshOptions, type MeshOptions } from '../../src/mesh/options.js';
import { planNode } from '../../src/mesh/plan.js';
import { PlanMemo, type SegmentPart } from '../../src/mesh/plan-memo.js';
import { TopologyError } from '../../src/mesh/topology.js';
import type { Segment } from '../../src/mesh/topology.js';
import { parseCluster, type KubeObject, type ParsedObject } from '../../src/model/parse.js';
// The lab's seeded generator (mulberry32), so a failure names its seed and step.
import { random } from '../../packages/lab/src/chaos/schedule.js';
import type { Endpoint, Granularity } from '../../src/model/types.js';

interface Spec {
  name: string;
  location: string;
  key: string;
  endpoint: string;
  internalIP: string | null;
  podCIDR: string;
  keepalive: number;
  allowedLocationIPs: string | null;
  leader: boolean;
  /** Public key → where this node saw it. */
  discovered: Record<string, { IP: string; Port: number }>;
  lastSeen: number;
}

const now = 1_764_662_400;

function objectOf(s: Spec): KubeObject {
  const a: Record<string, string> = {
    'kilo.squat.ai/key': s.key,
    'kilo.squat.ai/endpoint': s.endpoint,
    'kilo.squat.ai/location': s.location,
    'kilo.squat.ai/last-seen': String(s.lastSeen),
  };
  if (s.internalIP) a['kilo.squat.ai/internal-ip'] = s.internalIP;
  if (s.keepalive > 0) a['kilo.squat.ai/persistent-keepalive'] = String(s.keepalive);
  if (s.allowedLocationIPs) a['kilo.squat.ai/allowed-location-ips'] = s.allowedLocationIPs;
  if (s.leader) a['kilo.squat.ai/leader'] = 'true';
  if (Object.keys(s.discovered).length > 0) a['kilo.squat.ai/discovered-endpoints'] = JSON.stringify(s.discovered);
  return { apiVersion: 'v1', kind: 'Node', metadata: { name: s.name, annotations: a }, spec: { podCIDR: s.podCIDR } };
}

/** A run of `steps` passes from `seed`: each step changes the cluster, then plans with `memo` and without. */
function run(
  seed: number,
  steps: number,
  granularity: Granularity,
  options: Partial<MeshOptions>,
  memo: Pick<PlanMemo, 'begin' | 'part' | 'end'>,
): { compared: number; differences: string[] } {
  const r = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const int = (n: number) => Math.floor(r() * n);
  const key = () => Buffer.from(Array.from({ length: 32 }, () => int(256))).toString('base64');
  let serial = 0;
  const fresh = (): Spec => {
    const i = serial++;
    const location = pick(['a', 'b', 'c']);
    return {
      name: `node-${String(i).padStart(3, '0')}`,
      location,
      key: key(),
      endpoint: pick([
        `203.0.113.${1 + (i % 250)}:51820`,
        `10.1.${i % 250}.1:51820`,
        `n${i}.example.com:51820`,
        `shared.example.com:51820`,
      ]),
      internalIP: r() < 0.9 ? `192.168.${location.charCodeAt(0)}.${1 + (i % 250)}/24` : null,
      podCIDR: `10.${42 + (i >> 8)}.${i & 0xff}.0/24`,
      keepalive: r() < 0.3 ? 25 : 0,
      allowedLocationIPs: r() < 0.1 ? `172.20.${i % 250}.0/24` : null,
      leader: r() < 0.1,
      discovered: {},
      lastSeen: now,
    };
  };
  const specs: Spec[] = Array.from({ length: 12 }, fresh);
  // As the agent sees them: an unchanged node is the same object, and parses to the same node.
  const objects = new Map<Spec, { text: string; o: KubeObject }>();
  const parsed = new WeakMap<object, ParsedObject>();
  const mesh: MeshOptions = { ...defaultMeshOptions, granularity, ...options };
  const enc = encapsulatorOf(mesh);
  const self = specs[0]!.name;
  const differences: string[] = [];
  let compared = 0;
  for (let step = 0; step < steps; step++) {
    for (let c = 1 + int(3); c > 0; c--) {
      const what = int(12);
      const s = pick(specs);
      if (what === 0 && specs.length < 30) specs.push(fresh());
      else if (what === 1 && specs.length > 3 && s.name !== self) specs.splice(specs.indexOf(s), 1);
      else if (what === 2) s.podCIDR = `10.99.${int(250)}.0/24`;
      else if (what === 3) s.internalIP = pick([null, `192.168.${int(3) + 97}.${1 + int(250)}/24`]);
      else if (what === 4)
        s.endpoint = pick([
          `203.0.113.${1 + int(250)}:51820`,
          `10.1.${int(250)}.1:5182${int(3)}`,
          `shared.example.com:51820`,
        ]);
      else if (what === 5) s.key = key();
      else if (what === 6) s.location = pick(['a', 'b', 'c']);
      else if (what === 7) s.keepalive = s.keepalive > 0 ? 0 : 25;
      else if (what === 8) s.allowedLocationIPs = pick([null, `172.20.${int(250)}.0/24`, `172.21.${int(4)}.0/24`]);
      else if (what === 9) s.leader = !s.leader;
      else if (what === 10) {
        const target = pick(specs);
        s.discovered =
          r() < 0.3
            ? {}
            : { ...s.discovered, [target.key]: { IP: `198.51.100.${1 + int(250)}`, Port: 40000 + int(3) } };
      } else if (what === 11 && s.name !== self) {
        // A rename: one node leaves and another joins at once, at another slot.
        s.name = `node-${String(serial++).padStart(3, '0')}`;
      }
    }
    // Heartbeats: a few nodes' objects new with the same values but last-seen.
    for (const s of specs) if (r() < 0.2) s.lastSeen = now - int(30);
    const list = specs.map((s) => {
      const o = objectOf(s);
      const text = JSON.stringify(o);
      const last = objects.get(s);
      if (last?.text === text) return last.o;
      objects.set(s, { text, o });
      return o;
    });
    const cluster = parseCluster(list, { memo: parsed });
    let t;
    try {
      t = topologyOf(cluster, self, mesh, now);
    } catch (e) {
      if (e instanceof TopologyError) continue;
      throw e;
    }
    const cached = JSON.stringify(planNode(t, mesh, enc, memo as PlanMemo));
    const plain = JSON.stringify(planNode(t, mesh, enc));
    compared++;
    if (cached !== plain) differences.push(`seed ${seed}, step ${step}`);
  }
  return { compared, differences };
}

const cases: { granularity: Granularity; options: Partial<MeshOptions> }[] = [
  { granularity: 'cross', options: {} },
  { granularity: 'location', options: {} },
  { granularity: 'full', options: { routeHostTraffic: true } },
  { granularity: 'subnet', options: {} },
];

for (const { granularity, options } of cases) {
  test(`${granularity}${options.routeHostTraffic ? ', --route-host-traffic' : ''}: plans with the memo are byte-identical to plans without, over random joins, leaves and changes`, () => {
    let compared = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = run(seed, 80, granularity, options, new PlanMemo());
      assert.deepEqual(r.differences, []);
      compared += r.compared;
    }
    // Most steps plan (the local node is ready in all but a few).
    assert.ok(compared > 300, `only ${compared} plans compared`);
  });
}

test('the sequences catch a memo that reuses a part without comparing its inputs', () => {
  const blind = new Map<string, SegmentPart>();
  const naive = {
    begin: () => {},
    end: () => {},
    part: (s: Segment, _e: Endpoint | null, make: () => SegmentPart) => {
      let p = blind.get(s.key);
      if (!p) blind.set(s.key, (p = make()));
      return p;
    },
  };
  const r = run(1, 80, 'cross', {}, naive);
  assert.ok(r.differences.length > 0, 'a blind memo went unnoticed');
});

test("location: a remote location's leader moving to a mate with the same endpoint changes the peer's key", () => {
  const node = (name: string, location: string, leader: boolean): Spec => ({
    name,
    location,
    key: Buffer.alloc(32, name.charCodeAt(name.length - 1)).toString('base64'),
    endpoint: 'shared.example.com:51820',
    internalIP: `192.168.${location.charCodeAt(0)}.${name.charCodeAt(name.length - 1)}/24`,
    podCIDR: `10.42.${name.charCodeAt(name.length - 1)}.0/24`,
    keepalive: 0,
    allowedLocationIPs: null,
    leader,
    discovered: {},
    lastSeen: now,
  });
  const mesh: MeshOptions = { ...defaultMeshOptions, granularity: 'location' };
  const enc = encapsulatorOf(mesh);
  const memo = new PlanMemo();
  const keys: string[] = [];
  for (const leader of ['node-b', 'node-c']) {
    const objects = [
      node('node-a', 'a', false),
      node('node-b', 'b', leader === 'node-b'),
      node('node-c', 'b', leader === 'node-c'),
    ];
    const t = topologyOf(parseCluster(objects.map(objectOf)), 'node-a', mesh, now);
    const cached = planNode(t, mesh, enc, memo);
    assert.equal(JSON.stringify(cached), JSON.stringify(planNode(t, mesh, enc)));
    keys.push(cached.peers[0]!.publicKey);
  }
  assert.notEqual(keys[0], keys[1]);
});
