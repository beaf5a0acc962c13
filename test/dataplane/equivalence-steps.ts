/**
 * The sequence of plans and faults the cache-equivalence tests run on two machines, one reconciled
 * through a cache (trusting the last write, or reading ahead) and one reading in every step: after
 * each step both must hold the same state. The machines are fakes (cache-equivalence.test.ts) or
 * network namespaces (cache-equivalence-real.test.ts); each harness says how a fault is made on its
 * machine, and what tells its cache (a DataplaneMemory is told what the agent's routing monitor or
 * resync timer would tell; a read ahead is taken after the fault, as the next kg apply's would be).
 */
import assert from 'node:assert/strict';
import type { DataplaneMemory } from '../../src/dataplane/cache.js';
import type { ReconcileInput, ReconcileResult } from '../../src/dataplane/reconcile.js';
import type { Plan } from '../../src/mesh/types.js';
import { Cidr } from '../../src/net/cidr.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';
import { node, peer, planFor, twoLocations, wgKey } from '../helpers/cluster.js';

export const privateKey = generatePrivateKey();
const objects = twoLocations();
export const planA = planFor(objects, 'eu-a', { granularity: 'location', encapsulate: 'never' });
export const planB = planFor(objects, 'eu-a', {
  granularity: 'full',
  encapsulate: 'never',
  iptablesForwardRules: true,
});
export const planC = planFor(objects.slice(0, 4), 'eu-a', { granularity: 'full', encapsulate: 'never' });
/**
 * A with the mesh's subnet narrowed to 10.4.0.0/24: the same routes, peers and firewall, the
 * interface's address given again with the new prefix. Its only IPv4 address taken away, the kernel
 * drops every route through the interface (and tells no routing monitor): a reconcile must not diff
 * against a read of before its link step.
 */
export const planNarrowed = planFor(objects, 'eu-a', {
  granularity: 'location',
  encapsulate: 'never',
  subnet: Cidr.parse('10.4.0.0/24'),
});
/**
 * eu-b made the leader of eu: this node follows, its interface without address and down (which takes
 * the routes through it away), its routes through eu-b over the private network.
 */
export const planFollower = planFor(
  twoLocations({
    'eu-b': {
      location: 'eu',
      internalIP: '10.1.0.2/24',
      endpoint: '10.1.0.2:51820',
      podCIDR: '10.2.2.0/24',
      leader: true,
    },
  }),
  'eu-a',
  { granularity: 'location', encapsulate: 'never' },
);

/**
 * A node joining (us-c, in us, not its leader) and then leaving: in the full mesh its own peer, routes
 * and firewall rules come and go; by location, us's peer (its leader) gains and loses an allowed IP and
 * a route (a peer updated in place). What an agent's pass does at any size when one node joins.
 */
const joined = [
  ...objects,
  node('us-c', { location: 'us', internalIP: '10.8.0.3/24', endpoint: '10.8.0.3:51820', podCIDR: '10.2.10.0/24' }),
];
export const planBJoined = planFor(joined, 'eu-a', {
  granularity: 'full',
  encapsulate: 'never',
  iptablesForwardRules: true,
});
export const planAJoined = planFor(joined, 'eu-a', { granularity: 'location', encapsulate: 'never' });
/**
 * A node joining whose name sorts first: the WireGuard IPs go by segment order, so every other node's
 * is renumbered, and each route through one is replaced in place (the same destination, another gateway).
 */
export const planBFirstJoined = planFor(
  [
    node('aa-a', { location: 'eu', internalIP: '10.1.0.9/24', endpoint: '10.1.0.9:51820', podCIDR: '10.2.11.0/24' }),
    ...objects,
  ],
  'eu-a',
  { granularity: 'full', encapsulate: 'never', iptablesForwardRules: true },
);

/**
 * B with its nodes changed as a cluster changes them, each a peer updated or replaced in place: an
 * endpoint (us-b), a key rotated (eu-c: its peer removed and another added), a pod CIDR (us-a: an
 * allowed IP and the routes through it), allowed location IPs (eu-b), and the Peer given a preshared
 * key; then that key changed. What a cluster event's pass patches
 * from its last write (dataplane/wireguard/incremental.ts).
 */
const changedNodes = (laptopKey: string) =>
  twoLocations({
    'us-b': { endpoint: '10.8.0.12:51822' },
    'eu-c': { key: wgKey('eu-c rotated') },
    'us-a': { podCIDR: '10.2.18.0/24' },
    'eu-b': { allowedLocationIPs: '192.168.40.0/24' },
  }).map((o) => (o.kind === 'Peer' ? peer('laptop', { allowedIPs: ['10.5.0.1/32'], presharedKey: laptopKey }) : o));
const fullMesh = { granularity: 'full', encapsulate: 'never', iptablesForwardRules: true } as const;
export const planBChanged = planFor(changedNodes(generatePrivateKey()), 'eu-a', fullMesh);
export const planBRekeyed = planFor(changedNodes(generatePrivateKey()), 'eu-a', fullMesh);

export const devices = { kilo: 'kilo0', private: 'eth0', tunnel: null };
export const inputOf = (plan: Plan): ReconcileInput => ({ plan, privateKey, mtu: 1420, devices });

/**
 * How each fault is made by hand on a harness's machines. `memory` is the cached side's, when it
 * trusts the last write (null otherwise): the fault tells it what the agent would be told.
 */
export interface Faults<N> {
  /** A route of Kilo's deleted by hand; the routing monitor reports it (the agent forgets what disagrees). */
  routeDeleted(n: N, memory: DataplaneMemory | null): Promise<void> | void;
  /** A blackhole of the fail-closed guard deleted by hand; the routing monitor reports it. */
  guardDeleted(n: N, memory: DataplaneMemory | null): Promise<void> | void;
  /** A Kilo rule deleted from KILO-NAT by hand: no monitor tells; the agent's resync timer reads. */
  firewallRuleDeleted(n: N, memory: DataplaneMemory | null): Promise<void> | void;
  /** A WireGuard peer of plan A removed by hand (wg set … remove): found by the next resync. */
  peerRemoved(n: N, memory: DataplaneMemory | null): Promise<void> | void;
  /**
   * The WireGuard interface deleted by hand, made again empty by whoever does on that machine (the
   * agent's wireguard-go supervisor, or the next kg apply creating it ahead).
   */
  interfaceDeleted(n: N, memory: DataplaneMemory | null): Promise<void> | void;
  /** iptables' FORWARD policy set (DROP: Docker starts; back to ACCEPT): found by the next resync. */
  forwardPolicy(n: N, policy: 'DROP' | 'ACCEPT', memory: DataplaneMemory | null): Promise<void> | void;
}

export interface Step {
  name: string;
  plan: Plan;
  /** Made on both machines before the step's reconciles. */
  fault?: Exclude<keyof Faults<unknown>, 'forwardPolicy'>;
  /** iptables' FORWARD policy set on both machines before the step's reconciles. */
  forwardPolicy?: 'DROP' | 'ACCEPT';
  /** Whether the step's pass finds no WireGuard interface (a first apply, or one deleted by hand). */
  createsInterface?: boolean;
}

export const steps: readonly Step[] = [
  { name: 'A on an empty machine', plan: planA, createsInterface: true },
  { name: 'B (a cluster event)', plan: planB },
  { name: 'B again', plan: planB },
  { name: 'a node joins B (a peer, its routes and rules added)', plan: planBJoined },
  { name: 'it leaves B (the same removed)', plan: planB },
  { name: 'a node sorting first joins B (every WireGuard IP renumbered, routes replaced)', plan: planBFirstJoined },
  { name: 'it leaves B (renumbered back)', plan: planB },
  {
    name: "B's nodes change (an endpoint, a key rotated, a pod CIDR, allowed IPs, the Peer's preshared key)",
    plan: planBChanged,
  },
  { name: "the Peer's preshared key changes", plan: planBRekeyed },
  { name: 'B again (every change undone)', plan: planB },
  { name: 'A', plan: planA },
  { name: "a node joins A (its leader's peer updated, a route added)", plan: planAJoined },
  { name: 'it leaves A', plan: planA },
  { name: 'A in a narrower subnet (the address given again, the routes through kilo0 gone)', plan: planNarrowed },
  { name: 'a route deleted by hand, then A', plan: planA, fault: 'routeDeleted' },
  { name: "the fail-closed guard's route deleted by hand, then A", plan: planA, fault: 'guardDeleted' },
  { name: 'C', plan: planC },
  { name: 'a firewall rule deleted by hand, then C at the resync', plan: planC, fault: 'firewallRuleDeleted' },
  { name: 'a follower (its interface down, the routes through it gone)', plan: planFollower },
  { name: 'B', plan: planB },
  { name: 'a peer removed by hand, then A at the resync', plan: planA, fault: 'peerRemoved' },
  {
    name: 'the interface deleted by hand, then A',
    plan: planA,
    fault: 'interfaceDeleted',
    createsInterface: true,
  },
  { name: "iptables' FORWARD policy DROP, then B at the resync", plan: planB, forwardPolicy: 'DROP' },
  { name: 'C', plan: planC },
  { name: "iptables' FORWARD policy back to ACCEPT, then A at the resync", plan: planA, forwardPolicy: 'ACCEPT' },
];

/**
 * How many steps' passes, at least, patch the last WireGuard write when the cached side trusts it
 * (dataplane/wireguard/incremental.ts): those after which the memory still holds the device.
 */
export const patchedSteps = steps.filter((s) => !s.fault && !s.forwardPolicy && !s.createsInterface).length;

/** One of the two machines: how a step's pass reconciles it. */
export interface Side<N> {
  node: N;
  /** What its faults tell, when it trusts the last write. */
  memory?: DataplaneMemory;
  pass(input: ReconcileInput, step: Step): Promise<ReconcileResult>;
}

/**
 * Runs every step on both machines: the step's fault on each, then each one's pass. After each
 * step, neither pass failed, both machines hold the same state and both passes wrote as much.
 */
export async function runSteps<N>(
  faults: Faults<N>,
  stateOf: (n: N) => Promise<unknown>,
  cached: Side<N>,
  plain: Side<N>,
): Promise<void> {
  for (const step of steps) {
    if (step.fault) {
      await faults[step.fault](cached.node, cached.memory ?? null);
      await faults[step.fault](plain.node, null);
    }
    if (step.forwardPolicy) {
      await faults.forwardPolicy(cached.node, step.forwardPolicy, cached.memory ?? null);
      await faults.forwardPolicy(plain.node, step.forwardPolicy, null);
    }
    const input = inputOf(step.plan);
    const viaCache = await cached.pass(input, step);
    const read = await plain.pass(input, step);
    assert.deepEqual(viaCache.errors, [], `${step.name}: ${viaCache.errors.join('; ')}`);
    assert.deepEqual(read.errors, [], `${step.name}: ${read.errors.join('; ')}`);
    assert.deepEqual(await stateOf(cached.node), await stateOf(plain.node), step.name);
    assert.equal(viaCache.writes, read.writes, `${step.name}: the same writes`);
  }
}
