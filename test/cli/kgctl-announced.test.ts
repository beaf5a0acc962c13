/**
 * kgctl plans with the flags the agents announce (kilo.squat.ai/mesh-flags) unless the user gives
 * them: the built CLI on snapshot files, as a user runs it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { formatMeshFlags, type MeshFlags } from '../../src/model/mesh-flags.js';
import { Cidr } from '../../src/net/cidr.js';
import { node } from '../helpers/cluster.js';
import { ensureBuilt, kgctl, kgctlPlan } from './built.js';

let dir = '';
before(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'kgctl-announced-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const agents: MeshFlags = {
  subnet: Cidr.parse('10.5.0.0/16'),
  port: 51820,
  encapsulate: 'never',
  local: true,
  cni: true,
  iptablesForwardRules: false,
  routeHostTraffic: false,
  serviceCidr: [],
  topologyLabel: 'example.com/zone',
  compatibility: '',
  leaderElection: 'annotation',
  namespace: 'kube-system',
};

/** Two zones by the label `example.com/zone` (not the default topology label), two nodes in eu. */
function snapshot(name: string, announce: (n: string) => string | undefined): string {
  const nodes = [
    ['a', 'eu', '198.51.100.1', '192.168.0.1/24', '10.42.0.0/24'],
    ['b', 'eu', '198.51.100.2', '192.168.0.2/24', '10.42.1.0/24'],
    ['c', 'us', '198.51.100.3', '192.168.1.3/24', '10.42.2.0/24'],
  ].map(([n, zone, ip, internal, pod]) => {
    const text = announce(n!);
    return node(n!, {
      labels: { 'example.com/zone': zone! },
      endpoint: `${ip}:51820`,
      internalIP: internal,
      podCIDR: pod,
      granularity: 'location',
      ...(text === undefined ? {} : { annotations: { [Annotation.meshFlags]: text } }),
    });
  });
  const p = join(dir, name);
  writeFileSync(p, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
  return p;
}

const plan = kgctlPlan;

describe('kgctl and the flags the agents announce', () => {
  test('without flags, kgctl plans as the agents do: their subnet, encapsulation and topology label', () => {
    const file = snapshot('all.json', () => formatMeshFlags(agents));
    const { plan: p, stderr } = plan('c', '--cluster', file);
    assert.equal(stderr, '');
    assert.equal(p.encapsulate, 'never');
    assert.match(p.wireGuardIP ?? '', /^10\.5\./);
    // The announced label puts a and b in one location: one segment, one WireGuard peer for c.
    assert.deepEqual(
      p.peers.map((x) => x.names),
      [['a', 'b']],
    );
  });

  test('a flag the user gives wins over the announcement', () => {
    const file = snapshot('all.json', () => formatMeshFlags(agents));
    const { plan: p } = plan('c', '--cluster', file, '--subnet', '10.4.0.0/16', '--encapsulate', 'always');
    assert.equal(p.encapsulate, 'always');
    assert.match(p.wireGuardIP ?? '', /^10\.4\./);
  });

  test("the planned node's own announcement beats the others'", () => {
    const file = snapshot('mixed.json', (n) =>
      formatMeshFlags(n === 'a' ? agents : { ...agents, encapsulate: 'crosssubnet' }),
    );
    assert.equal(plan('a', '--cluster', file).plan.encapsulate, 'never');
    const c = plan('c', '--cluster', file);
    assert.equal(c.plan.encapsulate, 'crosssubnet');
  });

  test('nodes that disagree: the most common announcement, and a warning that says so', () => {
    const file = snapshot('disagree.json', (n) =>
      n === 'c' ? undefined : formatMeshFlags(n === 'a' ? agents : { ...agents, encapsulate: 'crosssubnet' }),
    );
    const { plan: p, stderr } = plan('c', '--cluster', file);
    // One each: the smaller text wins the tie, whatever the order of the list.
    assert.equal(p.encapsulate, 'crosssubnet');
    assert.match(stderr, /^warning: the nodes announce 2 different sets of flags: using the one 1 of 2 announce/m);
  });

  test('nodes that differ only in --relay=false agree: no warning', () => {
    const file = snapshot('relay.json', (n) => formatMeshFlags(n === 'a' ? { ...agents, relay: false } : agents));
    const { plan: p, stderr } = plan('c', '--cluster', file);
    assert.equal(p.encapsulate, 'never');
    assert.doesNotMatch(stderr, /different sets of flags/);
  });

  test('a malformed announcement is one warning naming the node, field and value; the node stays in the mesh', () => {
    const file = snapshot('bad.json', (n) =>
      n === 'b' ? formatMeshFlags(agents).replace('"never"', '5') : formatMeshFlags(agents),
    );
    const { plan: p, stderr } = plan('c', '--cluster', file);
    assert.equal(
      stderr.trim(),
      `warning: ignoring the announced flags of Node "b": field metadata.annotations["kilo.squat.ai/mesh-flags"].encapsulate: Invalid option: expected one of "never"|"crosssubnet"|"always": 5`,
    );
    assert.equal(p.encapsulate, 'never');
    assert.deepEqual(
      p.peers.map((x) => x.names),
      [['a', 'b']],
    );
  });

  test('one malformed text on two nodes is a warning for each (a text read once is a good one)', () => {
    const file = snapshot('bad-twice.json', (n) =>
      n === 'c' ? formatMeshFlags(agents) : formatMeshFlags(agents).replace('"never"', '5'),
    );
    const { plan: p, stderr } = plan('c', '--cluster', file);
    assert.deepEqual(
      stderr.trim().split('\n'),
      ['a', 'b'].map(
        (n) =>
          `warning: ignoring the announced flags of Node "${n}": field metadata.annotations["kilo.squat.ai/mesh-flags"].encapsulate: Invalid option: expected one of "never"|"crosssubnet"|"always": 5`,
      ),
    );
    assert.equal(p.encapsulate, 'never');
  });

  test('agents announcing Lease election: offline there are no Leases, so the annotation rule, with a warning', () => {
    const file = snapshot('lease.json', () => formatMeshFlags({ ...agents, leaderElection: 'lease' }));
    const { stderr } = plan('c', '--cluster', file);
    assert.match(
      stderr,
      /^warning: the agents elect leaders by Lease \(announced by node "c"\); a snapshot holds no Leases/m,
    );
    // Asked for explicitly, it stays the usage error it was.
    const r = kgctl('plan', 'c', '--cluster', file, '--leader-election', 'lease');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--leader-election=lease reads the Leases of a live cluster/);
  });
});
