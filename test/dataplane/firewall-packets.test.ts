/**
 * The same packets masqueraded, accepted and dropped by both backends (issue 33): each backend's
 * rendering of a plan's firewall (iptables rules of rules.ts, the nftables table of
 * nftables/ruleset.ts) is run by a small interpreter of the syntax it writes, over sample packets
 * at and around every address the plan names, and the verdicts must agree. The plans cover every
 * granularity and every encapsulation: IPIP, and beside flannel and cilium (--compatibility),
 * leaders and followers. The interpreters refuse any syntax they do not know, so a rendering that
 * grows a new kind of match fails here until this test learns it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { iptablesRulesOf, type IptablesRules } from '../../src/dataplane/iptables/rules.js';
import { nftRulesetOf, type NftChain, type NftRuleset, type NftSet } from '../../src/dataplane/nftables/ruleset.js';
import type { Compatibility } from '../../src/encapsulation/index.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import type { Firewall, IPFamily } from '../../src/mesh/types.js';
import { Annotation } from '../../src/model/annotations.js';
import type { KubeObject } from '../../src/model/parse.js';
import { Cidr, IP } from '../../src/net/cidr.js';
import { clusterObjects, firewallOf, planWith } from './firewall-plans.js';

interface Packet {
  family: IPFamily;
  src: IP;
  dst: IP;
  ipip: boolean;
}

/** Where Kilo's rules leave a packet at each hook it has rules in. */
interface Verdicts {
  /** nat postrouting: masqueraded or left alone. */
  nat: 'masquerade' | 'continue';
  /** filter forward: accepted, or left to the rest of the host's rules. */
  forward: 'accept' | 'continue';
  /** filter input. */
  input: 'accept' | 'drop' | 'continue';
}

type Verdict = 'accept' | 'drop' | 'masquerade' | 'continue';

const parsed = new Map<string, Cidr>();
/** Cidr.parse, once per text: the interpreters look at a few hundred thousand packets. */
const cidr = (text: string): Cidr => parsed.get(text) ?? parsed.set(text, Cidr.parse(text)).get(text)!;

// ---- iptables ----------------------------------------------------------------------------------

/** The iptables rules as a machine deciding packets. */
function iptablesMachine(rules: IptablesRules): (p: Packet) => Verdicts {
  const byFamily = new Map([4, 6].map((f) => [f, chainsOf(rules, f as IPFamily)]));
  return (p) => runIptables(rules, byFamily.get(p.family)!, p);
}

function chainsOf(rules: IptablesRules, family: IPFamily): Map<string, string[][]> {
  const chains = new Map<string, string[][]>();
  const chainOf = (table: string, chain: string) => `${table}/${chain}`;
  const mine = rules.rules.filter((r) => r.family === family);
  // Built-in chains: prepended rules end up in reverse order of insertion, before appended ones.
  for (const r of [
    ...mine.filter((r) => r.position === 'prepend').reverse(),
    ...mine.filter((r) => r.position === 'append'),
  ]) {
    const key = chainOf(r.table, r.chain);
    chains.set(key, [...(chains.get(key) ?? []), r.args]);
  }
  return chains;
}

function runIptables(rules: IptablesRules, chains: Map<string, string[][]>, p: Packet): Verdicts {
  const chainOf = (table: string, chain: string) => `${table}/${chain}`;
  const matches = (args: string[]): string | null => {
    let target: string | null = null;
    for (let i = 0; i < args.length; i += 2) {
      const [flag, value] = [args[i]!, args[i + 1]!];
      if (flag === '-s') {
        if (!cidr(value).contains(p.src)) return null;
      } else if (flag === '-d') {
        if (!cidr(value).contains(p.dst)) return null;
      } else if (flag === '-p') {
        assert.ok(value === 'ipencap' || value === '4', `unknown protocol ${value}`);
        if (!p.ipip) return null;
      } else if (flag === '-j') target = value;
      else assert.fail(`unknown iptables match ${flag} in ${args.join(' ')}`);
    }
    assert.ok(target, `a rule without a target: ${args.join(' ')}`);
    return target;
  };
  const run = (table: string, chain: string): Verdict | 'return' => {
    for (const args of chains.get(chainOf(table, chain)) ?? []) {
      const target = matches(args);
      if (target === null) continue;
      if (target === 'ACCEPT') return 'accept';
      if (target === 'DROP') return 'drop';
      if (target === 'MASQUERADE') return 'masquerade';
      if (target === 'RETURN') return 'return';
      assert.ok(
        rules.chains.some((c) => c.family === p.family && c.table === table && c.name === target),
        `a jump to a chain Kilo does not own: ${target}`,
      );
      const v = run(table, target);
      if (v !== 'return') return v;
    }
    return 'return';
  };
  const builtin = (table: string, chain: string) => {
    const v = run(table, chain);
    return v === 'return' ? 'continue' : v;
  };
  return {
    nat: builtin('nat', 'POSTROUTING') as Verdicts['nat'],
    forward: builtin('filter', 'FORWARD') as Verdicts['forward'],
    input: builtin('filter', 'INPUT') as Verdicts['input'],
  };
}

// ---- nftables ----------------------------------------------------------------------------------

const tokenized = new Map<string, string[]>();
/** A rule's words, its comment (which every rule must carry) left out. */
function tokens(rule: string): string[] {
  let t = tokenized.get(rule);
  if (!t) {
    const withoutComment = rule.replace(/ comment "(?:[^"\\]|\\.)*"$/, '');
    assert.notEqual(withoutComment, rule, `every rule carries a comment: ${rule}`);
    tokenized.set(rule, (t = withoutComment.split(' ')));
  }
  return t;
}

/** The nftables table as a machine deciding packets. */
function nftablesMachine(ruleset: NftRuleset): (p: Packet) => Verdicts {
  const sets = new Map(ruleset.sets.map((s) => [s.name, s]));
  const chains = new Map(ruleset.chains.map((c) => [c.name, c]));
  return (p) => runNftables(ruleset, sets, chains, p);
}

function runNftables(
  ruleset: NftRuleset,
  sets: Map<string, NftSet>,
  chains: Map<string, NftChain>,
  p: Packet,
): Verdicts {
  const inSet = (name: string, ip: IP): boolean => {
    const s = sets.get(name);
    assert.ok(s, `a rule names a set the table lacks: @${name}`);
    // The set's type says the family it holds: a packet of the other family never matches.
    if ((s.type === 'ipv4_addr' ? 4 : 6) !== ip.family) return false;
    return s.elements.some((e) => cidr(e).contains(ip));
  };
  /** A rule's verdict on the packet, null when one of its matches fails. */
  const matches = (rule: string): string[] | null => {
    const t = tokens(rule);
    let i = 0;
    let ok = true;
    while (i < t.length) {
      const word = t[i]!;
      if (word === 'ip' || word === 'ip6') {
        const family = word === 'ip' ? 4 : 6;
        const [field, value] = [t[i + 1]!, t[i + 2]!];
        assert.ok(field === 'saddr' || field === 'daddr', `unknown match ${word} ${field}`);
        assert.ok(value.startsWith('@'), `a literal address where a set was expected: ${rule}`);
        // `ip saddr` matches only IPv4 packets in an inet table.
        if (p.family !== family || !inSet(value.slice(1), field === 'saddr' ? p.src : p.dst)) ok = false;
        i += 3;
      } else if (word === 'meta' && t[i + 1] === 'l4proto') {
        assert.equal(t[i + 2], 'ipip', `unknown protocol in ${rule}`);
        if (!p.ipip) ok = false;
        i += 3;
      } else break;
    }
    const verdict = t.slice(i);
    assert.ok(
      ['accept', 'drop', 'return', 'masquerade'].includes(verdict.join(' ')) ||
        (verdict.length === 2 && verdict[0] === 'jump'),
      `unknown statement in ${rule}`,
    );
    return ok ? verdict : null;
  };
  const run = (name: string): Verdict | 'return' => {
    const chain = chains.get(name);
    assert.ok(chain, `a jump to a chain the table lacks: ${name}`);
    for (const rule of chain.rules) {
      const v = matches(rule);
      if (v === null) continue;
      if (v[0] === 'jump') {
        const r = run(v[1]!);
        if (r !== 'return') return r;
        continue;
      }
      return v[0] as Verdict | 'return';
    }
    return 'return';
  };
  const hook = (h: string, expectedType: string) => {
    const base = ruleset.chains.filter((c) => c.base?.hook === h);
    assert.ok(base.length <= 1, `one base chain at ${h}`);
    if (base.length === 0) return 'continue';
    assert.equal(base[0]!.base!.type, expectedType);
    const v = run(base[0]!.name);
    // accept ends only this base chain: the host's other chains still see the packet, as after
    // iptables' ACCEPT in a built-in chain (the DROP-policy case is handled beside, iptables-side.ts).
    return v === 'return' ? 'continue' : v;
  };
  return {
    nat: hook('postrouting', 'nat') as Verdicts['nat'],
    forward: hook('forward', 'filter') as Verdicts['forward'],
    input: hook('input', 'filter') as Verdicts['input'],
  };
}

// ---- sample packets ----------------------------------------------------------------------------

const toBig = (ip: IP): bigint => ip.bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);

function fromBig(family: IPFamily, n: bigint): IP | null {
  const width = family === 4 ? 4 : 16;
  if (n < 0n || n >= 1n << BigInt(width * 8)) return null;
  const bytes = new Uint8Array(width);
  for (let i = width - 1; i >= 0; i--, n >>= 8n) bytes[i] = Number(n & 0xffn);
  return IP.fromBytes(bytes);
}

/** Every address the firewall names, with the first, second and last address of each prefix and its neighbours outside. */
function samples(fw: Firewall): Map<IPFamily, IP[]> {
  const cidrs = [
    ...fw.masquerade.podCIDRs,
    ...fw.masquerade.allowedLocationIPs,
    ...fw.masquerade.peerAllowedIPs,
    ...fw.masquerade.exceptions.flatMap((e) => e.destinations),
    ...fw.forwardPodCIDRs,
    ...(fw.ipip?.sources ?? []),
  ].map((c) => Cidr.parse(c));
  const out = new Map<IPFamily, Map<string, IP>>([
    [4, new Map()],
    [6, new Map()],
  ]);
  const add = (ip: IP | null) => ip && out.get(ip.family)!.set(ip.text, ip);
  for (const c of cidrs) {
    const first = toBig(c.network);
    const last = first + c.size() - 1n;
    for (const n of [first - 1n, first, first + 1n, last, last + 1n]) add(fromBig(c.family, n));
  }
  // Outside the mesh: the internet and a LAN nobody announced.
  for (const a of ['8.8.8.8', '172.16.0.1', '2001:db8::1', 'fd99::1']) add(IP.parse(a));
  return new Map([...out].map(([f, m]) => [f, [...m.values()]]));
}

function assertSamePackets(fw: Firewall, what: string): number {
  const ipt = iptablesMachine(iptablesRulesOf(fw));
  const nft = nftablesMachine(nftRulesetOf(fw));
  let packets = 0;
  for (const [family, ips] of samples(fw)) {
    for (const src of ips) {
      for (const dst of ips) {
        for (const ipip of [false, true]) {
          const p: Packet = { family, src, dst, ipip };
          const a = ipt(p);
          const b = nft(p);
          if (JSON.stringify(a) !== JSON.stringify(b))
            assert.deepEqual(
              b,
              a,
              `${what}: ${ipip ? 'IPIP' : 'a packet'} ${src.text} → ${dst.text}: nftables decides otherwise than iptables`,
            );
          packets++;
        }
      }
    }
  }
  return packets;
}

/** The test cluster with a printer LAN in location a, and Cilium's internal IPs on two nodes. */
function cluster(): KubeObject[] {
  const extra: Record<string, Record<string, string>> = {
    'node-0': {
      [Annotation.allowedLocationIPs]: '192.168.50.0/24,fd50::/64',
      [Annotation.ciliumInternalIP]: '10.42.0.201',
    },
    'node-1': { [Annotation.ciliumInternalIP]: '10.42.1.17' },
  };
  return clusterObjects().map((o): KubeObject => {
    const more = extra[o.metadata?.name ?? ''];
    return more ? { ...o, metadata: { ...o.metadata, annotations: { ...o.metadata?.annotations, ...more } } } : o;
  });
}

const granularities = ['location', 'full', 'cross', 'subnet'] as const;
const encapsulations = ['always', 'crosssubnet', 'never'] as const;

for (const compatibility of [null, 'flannel', 'cilium'] as (Compatibility | null)[]) {
  test(`${compatibility ? `--compatibility=${compatibility}` : 'IPIP'}: every granularity, leader and follower, both backends masquerade, accept and drop the same packets`, () => {
    let plans = 0;
    let packets = 0;
    let withIPIP = 0;
    for (const granularity of granularities) {
      for (const encapsulate of encapsulations) {
        for (const local of [true, false]) {
          for (const hostname of ['node-0', 'node-1', 'node-3']) {
            const options: Partial<MeshOptions> = { granularity, encapsulate, local, compatibility };
            const fw = firewallOf(cluster(), options, hostname);
            if (fw.ipip && fw.ipip.sources.length > 0) withIPIP++;
            packets += assertSamePackets(fw, `${JSON.stringify(options)} on ${hostname}`);
            plans++;
          }
        }
      }
    }
    // The samples reach every kind of rule: a plan with an IPIP policy (not beside flannel, which
    // carries traffic itself), the printer LAN, the Peers, the forward accepts.
    if (compatibility === 'flannel') assert.equal(withIPIP, 0, 'flannel: no IPIP policy');
    else assert.ok(withIPIP > 0, 'some plans accept IPIP from mates');
    console.log(`${compatibility ?? 'ipip'}: ${plans} plans, ${packets} packets, the same verdicts`);
  });
}

test('the interpreters tell packets apart: a ruleset with one exception less masquerades what the full one returns', () => {
  const fw = firewallOf(cluster(), { compatibility: 'cilium' });
  const peers = fw.masquerade.exceptions.find((e) => e.reason === 'peers')!;
  assert.ok(peers.destinations.length > 0);
  const fewer: Firewall = {
    ...fw,
    masquerade: {
      ...fw.masquerade,
      exceptions: fw.masquerade.exceptions.map((e) => (e.reason === 'peers' ? { ...e, destinations: [] } : e)),
    },
  };
  const p: Packet = { family: 4, src: IP.parse('10.42.0.5'), dst: IP.parse('10.5.0.1'), ipip: false };
  assert.equal(iptablesMachine(iptablesRulesOf(fw))(p).nat, 'continue');
  assert.equal(nftablesMachine(nftRulesetOf(fw))(p).nat, 'continue');
  assert.equal(iptablesMachine(iptablesRulesOf(fewer))(p).nat, 'masquerade');
  assert.equal(nftablesMachine(nftRulesetOf(fewer))(p).nat, 'masquerade');
  // And the comparison itself fails when the backends disagree.
  assert.throws(() => {
    const a = iptablesMachine(iptablesRulesOf(fw))(p);
    const b = nftablesMachine(nftRulesetOf(fewer))(p);
    assert.deepEqual(b, a);
  });
  // IPIP from a mate is accepted, from elsewhere dropped, by both.
  const ipip = fw.ipip!.sources.map((s) => Cidr.parse(s)).find((c) => c.family === 4)!;
  for (const run of [iptablesMachine(iptablesRulesOf(fw)), nftablesMachine(nftRulesetOf(fw))]) {
    assert.equal(run({ family: 4, src: ipip.network, dst: IP.parse('10.42.0.1'), ipip: true }).input, 'accept');
    assert.equal(run({ family: 4, src: IP.parse('8.8.8.8'), dst: IP.parse('10.42.0.1'), ipip: true }).input, 'drop');
    assert.equal(
      run({ family: 4, src: IP.parse('8.8.8.8'), dst: IP.parse('10.42.0.1'), ipip: false }).input,
      'continue',
    );
  }
});

test('--route-host-traffic changes no firewall rule, in either backend: only the WireGuard fwmark and the routing rules', () => {
  let leaders = 0;
  for (const compatibility of [null, 'flannel', 'cilium'] as (Compatibility | null)[]) {
    for (const granularity of granularities) {
      for (const hostname of ['node-0', 'node-1', 'node-3']) {
        const options: Partial<MeshOptions> = { granularity, compatibility };
        const without = planWith(cluster(), { ...options, routeHostTraffic: false }, hostname);
        const withIt = planWith(cluster(), { ...options, routeHostTraffic: true }, hostname);
        const what = `${JSON.stringify(options)} on ${hostname}`;
        assert.deepEqual(withIt.firewall, without.firewall, `${what}: the intent`);
        assert.deepEqual(iptablesRulesOf(withIt.firewall), iptablesRulesOf(without.firewall), `${what}: iptables`);
        assert.deepEqual(nftRulesetOf(withIt.firewall), nftRulesetOf(without.firewall), `${what}: nftables`);
        // The flag did take effect: a leader marks WireGuard's packets.
        if (withIt.fwmark !== null) {
          assert.equal(without.fwmark, null, what);
          leaders++;
        }
      }
    }
  }
  assert.ok(leaders > 0, 'some plans are a leader with the fwmark');
});
