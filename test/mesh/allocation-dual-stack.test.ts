/**
 * `--wireguard-ip-allocation=stable` in a dual-stack mesh: kilo.squat.ai/wireguard-ip-ipv6 follows
 * the rule of Kilo's wireguard-ip. Over generated clusters and changes, a segment's IPv6 address
 * stays at its IPv4 address's slot, moves no more than the IPv4 one when others come, go or stop
 * checking in, and survives switching the mesh between IPv6-only, dual-stack and back.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { NodeSpec } from '../helpers/cluster.js';
import { applyChange, ready, topologyOfSpecs, type Specs } from '../helpers/allocation.js';
import { publishedWireGuardIPv6 } from '../../src/agent/published-wireguard-ip.js';
import { slotOf } from '../../src/mesh/allocation.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import type { Topology } from '../../src/mesh/topology.js';
import { Annotation } from '../../src/model/annotations.js';
import { parseNode } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import { node } from '../helpers/cluster.js';

const v4 = Cidr.parse('10.4.0.0/16');
const v6 = Cidr.parse('fd4b::/64');
type Family = 'ipv4' | 'ipv6' | 'dual';

function options(f: Family, granularity: 'location' | 'cross') {
  return {
    granularity,
    wireGuardIPAllocation: 'stable' as const,
    subnet: f === 'ipv6' ? v6 : v4,
    ...(f === 'dual' ? { subnets: [v4, v6] } : {}),
  };
}

/** Segment key → its addresses, e.g. "10.4.0.3 fd4b::3". */
function addresses(t: Topology): Map<string, string[]> {
  return new Map(t.segments.map((s) => [s.key, s.wireGuardIPs.map((ip) => ip.text)]));
}

const live = (specs: Specs) => [...specs].filter(([, s]) => s.lastSeen === undefined).map(([n]) => n);

/** What each ready node's agent publishes (agent.ts): Kilo's annotation and, in dual-stack only, the -ipv6 one. */
function published(specs: Specs, t: Topology, f: Family): Map<string, NodeSpec> {
  const mine = new Map<string, Topology['segments'][number]>();
  for (const s of t.segments) for (const n of s.nodes) mine.set(n.name, s);
  return new Map(
    [...specs].map(([name, spec]) => {
      const s = mine.get(name);
      if (!s) return [name, spec];
      const ips = s.wireGuardIPs;
      const annotations = { ...spec.annotations };
      if (f === 'dual') annotations[Annotation.wireGuardIPv6] = `${ips[1]!.text}/${v6.prefix}`;
      return [name, { ...spec, wireGuardIP: `${ips[0]!.text}/${t.subnets[0]!.prefix}`, annotations }];
    }),
  );
}

function agreed(specs: Specs, f: Family, g: 'location' | 'cross'): Map<string, string[]> {
  const maps = live(specs).map((h) => addresses(topologyOfSpecs(specs, h, options(f, g))));
  for (const m of maps) assert.deepEqual(m, maps[0], 'two nodes compute different maps');
  return maps[0]!;
}

/** Dual-stack: each segment's two addresses are at one slot. */
function correspond(map: Map<string, string[]>): void {
  for (const [key, [a, b]] of map) {
    assert.ok(b !== undefined, `${key} has no IPv6 address`);
    assert.equal(slotOf(v4, Cidr.parse(`${a}/32`).ip), slotOf(v6, Cidr.parse(`${b}/128`).ip), `${key}: ${a} ${b}`);
  }
}

const locations = fc.constantFrom('0first', 'eu', 'us', 'ap', 'zz');
const change = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), name: fc.stringMatching(/^[a-z0-9]{1,3}$/), location: locations }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('stale' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('switch' as const),
    to: fc.constantFrom('ipv4' as const, 'ipv6' as const, 'dual' as const),
  }),
);
const initial = fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'), locations), {
  minLength: 1,
  maxLength: 7,
  selector: ([n]) => n,
});

describe('stable WireGuard IPs of two families', () => {
  test('nodes that come, go or stop checking in, and switching between IPv6-only, dual-stack and IPv4-only, move no address of either family', () => {
    fc.assert(
      fc.property(
        initial,
        fc.array(change, { minLength: 1, maxLength: 8 }),
        fc.constantFrom('location' as const, 'cross' as const),
        fc.constantFrom('ipv6' as const, 'dual' as const),
        (nodes, changes, g, start) => {
          let family: Family = start;
          let specs: Map<string, NodeSpec> = new Map(nodes.map(([n, l]) => [n, ready(l)]));
          let before = agreed(specs, family, g);
          specs = published(specs, topologyOfSpecs(specs, live(specs)[0]!, options(family, g)), family);
          for (const c of changes) {
            const was = family;
            if (c.kind === 'switch') family = c.to;
            else if (!applyChange(specs, c)) continue;
            const after = agreed(specs, family, g);
            if (family === 'dual') correspond(after);
            for (const [key, ips] of after) {
              const old = before.get(key);
              if (!old) continue;
              // Each family's address, where the mesh had that family before and has it now.
              for (const ip of ips)
                if (old.some((o) => o.includes(':') === ip.includes(':')))
                  assert.ok(
                    old.includes(ip),
                    `${key} moved ${old.join(' ')} -> ${ips.join(' ')} after ${JSON.stringify(c)} (${was} -> ${family})`,
                  );
            }
            specs = published(specs, topologyOfSpecs(specs, live(specs)[0]!, options(family, g)), family);
            before = after;
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test("an IPv6-only mesh turned dual-stack keeps the IPv6 addresses it published in Kilo's annotation", () => {
    const specs = new Map<string, NodeSpec>([
      ['a1', ready('a', { wireGuardIP: 'fd4b::2/64' })],
      ['b1', ready('b', { wireGuardIP: 'fd4b::1/64' })],
    ]);
    assert.deepEqual(Object.fromEntries(agreed(specs, 'dual', 'location')), {
      'location:a': ['10.4.0.2', 'fd4b::2'],
      'location:b': ['10.4.0.1', 'fd4b::1'],
    });
    // Under Kilo's rule the first key takes the first slot: the stable rule is what keeps them.
    const kilo = { ...options('dual', 'location'), wireGuardIPAllocation: 'kilo' as const };
    assert.deepEqual(addresses(topologyOfSpecs(specs, 'a1', kilo)).get('location:a'), ['10.4.0.1', 'fd4b::1']);
  });

  test('a dual-stack mesh turned IPv6-only keeps the IPv6 addresses of wireguard-ip-ipv6', () => {
    const six = (ip: string) => ({ annotations: { [Annotation.wireGuardIPv6]: `${ip}/64` } });
    const specs = new Map<string, NodeSpec>([
      ['a1', ready('a', { wireGuardIP: '10.4.0.2/16', ...six('fd4b::2') })],
      ['b1', ready('b', { wireGuardIP: '10.4.0.1/16', ...six('fd4b::1') })],
    ]);
    assert.deepEqual(Object.fromEntries(agreed(specs, 'ipv6', 'location')), {
      'location:a': ['fd4b::2'],
      'location:b': ['fd4b::1'],
    });
  });

  test("the two annotations at different slots: Kilo's is the claim, and takes no other segment's slot", () => {
    const specs = new Map<string, NodeSpec>([
      ['a1', ready('a', { wireGuardIP: '10.4.0.5/16', annotations: { [Annotation.wireGuardIPv6]: 'fd4b::3/64' } })],
      ['b1', ready('b', { wireGuardIP: '10.4.0.3/16' })],
    ]);
    const map = agreed(specs, 'dual', 'location');
    correspond(map);
    // a's IPv6 annotation names b's slot: Kilo's (5) is a's claim, so b keeps 3.
    assert.deepEqual(map.get('location:a'), ['10.4.0.5', 'fd4b::5']);
    assert.deepEqual(map.get('location:b'), ['10.4.0.3', 'fd4b::3']);
  });

  test('a forced IPv6 address of the IPv6 --subnet is honoured at its slot in both families', () => {
    const specs = new Map<string, NodeSpec>([
      ['a1', ready('a')],
      ['b1', ready('b', { annotations: { [Annotation.forceWireGuardIP]: 'fd4b::9' } })],
    ]);
    assert.deepEqual(agreed(specs, 'dual', 'location').get('location:b'), ['10.4.0.9', 'fd4b::9']);
  });
});

describe('kilo.squat.ai/wireguard-ip-ipv6', () => {
  const bad = (annotations: Record<string, string>, value: string, why: RegExp) => {
    const p = parseNode(node('bad', { ...ready('x'), annotations }));
    assert.ok(!p.ok, 'the node is dropped');
    const text = p.errors.map((e) => e.message).join('\n');
    for (const part of ['Node "bad"', Annotation.wireGuardIPv6, JSON.stringify(value)])
      assert.ok(text.includes(part), `${part} in ${text}`);
    assert.match(text, why);
  };

  test('an IPv4 address or no CIDR: the node drops naming field and value', () => {
    bad({ [Annotation.wireGuardIPv6]: '10.4.0.1/16' }, '10.4.0.1/16', /not an IPv6 address/);
    bad({ [Annotation.wireGuardIPv6]: 'fd4b::1' }, 'fd4b::1', /not a CIDR/);
  });

  test('beside an IPv6 Kilo annotation (a mesh turned IPv6-only left it): not read, the node stays', () => {
    const p = parseNode(
      node('n', {
        ...ready('x'),
        wireGuardIP: 'fd4b::1/64',
        annotations: { [Annotation.wireGuardIPv6]: 'fd4b::2/64' },
      }),
    );
    assert.ok(p.ok);
    assert.equal(p.value.wireGuardIP?.toString(), 'fd4b::1/64');
    assert.ok(!('wireGuardIPv6' in p.value));
  });

  test("read beside Kilo's; absent, the node has no such field (one family is as before)", () => {
    const p = parseNode(node('n', { ...ready('x'), annotations: { [Annotation.wireGuardIPv6]: 'fd4b::1/64' } }));
    assert.ok(p.ok);
    assert.equal(p.value.wireGuardIPv6?.toString(), 'fd4b::1/64');
    const q = parseNode(node('n', ready('x')));
    assert.ok(q.ok && !('wireGuardIPv6' in q.value));
  });

  test("the agent publishes it by Kilo's annotation's rule: in stable mode a pass without a topology keeps it", () => {
    const stable = { ...defaultMeshOptions, wireGuardIPAllocation: 'stable' as const };
    assert.equal(publishedWireGuardIPv6(stable, null, null, 'fd4b::7/64'), 'fd4b::7/64');
    assert.equal(publishedWireGuardIPv6(stable, null, null, undefined), null);
    assert.equal(publishedWireGuardIPv6(defaultMeshOptions, null, null, 'fd4b::7/64'), null);
    // A follower of a location publishes its segment's address too.
    const specs = new Map<string, NodeSpec>([
      ['a1', ready('a', { leader: true })],
      ['a2', ready('a')],
    ]);
    const t = topologyOfSpecs(specs, 'a2', options('dual', 'location'));
    assert.equal(t.local.leader, false);
    assert.equal(publishedWireGuardIPv6({ ...stable, subnets: [v4, v6] }, null, t, undefined), 'fd4b::1/64');
  });
});
