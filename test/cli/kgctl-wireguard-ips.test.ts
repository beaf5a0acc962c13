/**
 * kgctl and the WireGuard IP allocation (issue 35): it plans with the rule the agents announce,
 * warns when agents announce different rules (or Kilo's agents run beside `stable` ones), and
 * reports forced addresses it cannot honour. The built CLI on snapshot files.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import type { Plan } from '../../src/mesh/types.js';
import { formatMeshFlags } from '../../src/model/mesh-flags.js';
import { node, type NodeSpec } from '../helpers/cluster.js';
import { ensureBuilt, kgctl, kgctlPlan } from './built.js';
import { defaultAnnounced } from '../helpers/mesh-flags.js';

let dir = '';
before(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'kgctl-wireguard-ips-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const flags = (allocation: 'kilo' | 'stable'): string =>
  formatMeshFlags({ ...defaultAnnounced, wireguardIpAllocation: allocation });

/**
 * Locations a (new, sorts first), b and c; b and c published 10.4.0.1 and 10.4.0.2 before a
 * joined. `announce` gives each node's mesh-flags (undefined: none, as Kilo's agent).
 */
function snapshot(name: string, announce: (n: string) => string | undefined, extra: Record<string, NodeSpec> = {}) {
  const nodes = [
    ['a1', 'a', '198.51.100.1', '192.168.0.1/24', '10.42.0.0/24', undefined],
    ['b1', 'b', '198.51.100.2', '192.168.1.2/24', '10.42.1.0/24', '10.4.0.1/16'],
    ['c1', 'c', '198.51.100.3', '192.168.2.3/24', '10.42.2.0/24', '10.4.0.2/16'],
  ].map(([n, location, ip, internal, pod, wg]) => {
    const text = announce(n!);
    return node(n!, {
      location,
      endpoint: `${ip}:51820`,
      internalIP: internal,
      podCIDR: pod,
      granularity: 'location',
      ...(wg ? { wireGuardIP: wg } : {}),
      ...(text === undefined ? {} : { annotations: { [Annotation.meshFlags]: text } }),
      ...extra[n!],
    });
  });
  const p = join(dir, name);
  writeFileSync(p, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
  return p;
}

const plan = kgctlPlan;

describe('kgctl and --wireguard-ip-allocation', () => {
  test('agents announcing stable: kgctl plans with it, the published addresses stay', () => {
    const file = snapshot('stable.json', () => flags('stable'));
    const { plan: p, stderr } = plan('b1', '--cluster', file, '-o', 'json');
    assert.equal(stderr, '');
    assert.equal(p.wireGuardIP, '10.4.0.1/16');
    assert.equal(plan('a1', '--cluster', file, '-o', 'json').plan.wireGuardIP, '10.4.0.3/16');
  });

  test("kilo agents (or the flag given): Kilo's rule, the location sorting first shifts the others", () => {
    const file = snapshot('kilo.json', () => flags('kilo'));
    assert.equal(plan('b1', '--cluster', file, '-o', 'json').plan.wireGuardIP, '10.4.0.2/16');
    const stable = snapshot('stable2.json', () => flags('stable'));
    const given = plan('b1', '--cluster', stable, '-o', 'json', '--wireguard-ip-allocation', 'kilo');
    assert.equal(given.plan.wireGuardIP, '10.4.0.2/16');
  });

  test("stable beside kilo, or beside Kilo's own agents (no announcement): a warning naming who runs which", () => {
    const mixed = snapshot('mixed.json', (n) => (n === 'c1' ? flags('kilo') : flags('stable')));
    const r = kgctl('plan', 'b1', '--cluster', mixed, '-o', 'json', '--wireguard-ip-allocation', 'stable');
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stderr,
      /warning: the agents allocate WireGuard IPs by different rules: stable on 2 \("a1", "b1"\); kilo on 1 \("c1"\); they may give a segment different addresses/,
    );
    const withKilo = snapshot('with-kilo.json', (n) => (n === 'a1' ? undefined : flags('stable')));
    assert.match(
      kgctl('plan', 'b1', '--cluster', withKilo, '--wireguard-ip-allocation', 'stable').stderr,
      /stable on 2 \("b1", "c1"\); no announcement \(Kilo's agent\) on 1 \("a1"\)/,
    );
    // Kilo's agents beside kilo-ts in kilo mode: the same rule, nothing to say.
    const same = snapshot('same.json', (n) => (n === 'a1' ? undefined : flags('kilo')));
    assert.doesNotMatch(kgctl('plan', 'b1', '--cluster', same).stderr, /different rules/);
  });

  test('a forced address two locations claim: one conflict line, the same on every run', () => {
    const force = { annotations: { [Annotation.forceWireGuardIP]: '10.4.0.9' } };
    const file = snapshot('forced.json', () => undefined, { a1: force, c1: force });
    const r = kgctl('plan', 'c1', '--cluster', file, '-o', 'json');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stderr,
      'warning: conflict: Node "c1": field metadata.annotations["kilo.squat.ai/force-wireguard-ip"]: already held by location "a" (forced by Node "a1"), which keeps it; ignored: location "c" takes another address: "10.4.0.9"\n',
    );
    assert.equal((JSON.parse(r.stdout) as Plan).wireGuardIP, '10.4.0.2/16');
  });
});
