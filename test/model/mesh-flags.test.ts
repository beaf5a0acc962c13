import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatMeshFlags, parseMeshFlags, type MeshFlags } from '../../src/model/mesh-flags.js';
import { ValidationError } from '../../src/model/errors.js';
import { Cidr } from '../../src/net/cidr.js';

const flags: MeshFlags = {
  subnet: Cidr.parse('10.5.0.0/16'),
  port: 51821,
  encapsulate: 'never',
  local: false,
  cni: true,
  iptablesForwardRules: true,
  routeHostTraffic: false,
  serviceCidr: [Cidr.parse('10.96.0.0/12')],
  topologyLabel: 'example.com/zone',
  compatibility: 'flannel',
  leaderElection: 'lease',
  namespace: 'kilo',
};

describe('kilo.squat.ai/mesh-flags', () => {
  test('round-trips, named as kg names its flags, in a stable order', () => {
    const text = formatMeshFlags(flags);
    assert.equal(
      text,
      '{"subnet":"10.5.0.0/16","port":51821,"encapsulate":"never","local":false,"cni":true,"iptables-forward-rules":true,"route-host-traffic":false,"service-cidr":["10.96.0.0/12"],"topology-label":"example.com/zone","compatibility":"flannel","leader-election":"lease","namespace":"kilo"}',
    );
    const back = parseMeshFlags(text, 'Node "a"');
    assert.ok(!(back instanceof Error));
    assert.equal(formatMeshFlags(back as MeshFlags), text);
  });

  test('--wireguard-ip-allocation: stable is announced; kilo, the default, is not (the text of kilo agents is unchanged)', () => {
    const text = formatMeshFlags({ ...flags, wireguardIpAllocation: 'stable' });
    assert.ok(text.endsWith(',"wireguard-ip-allocation":"stable"}'), text);
    assert.equal((parseMeshFlags(text, 'Node "a"') as Partial<MeshFlags>).wireguardIpAllocation, 'stable');
    assert.equal(formatMeshFlags({ ...flags, wireguardIpAllocation: 'kilo' }), formatMeshFlags(flags));
    const bad = parseMeshFlags(text.replace('"stable"', '"sticky"'), 'Node "a"');
    assert.ok(bad instanceof ValidationError);
    assert.match(bad.message, /\.wireguard-ip-allocation: .*"sticky"/);
  });

  test('an older or newer agent: unknown keys are skipped, missing keys are not announced', () => {
    const r = parseMeshFlags('{"encapsulate":"never","tunnel-mode":"geneve"}', 'Node "a"');
    assert.deepEqual(r, { encapsulate: 'never' });
  });

  const bad: [string, string, RegExp][] = [
    ['not JSON', '{', /field metadata\.annotations\["kilo\.squat\.ai\/mesh-flags"\]: not JSON: "\{"/],
    ['a wrong type', formatMeshFlags(flags).replace('"port":51821', '"port":"51821"'), /\.port: .*: "51821"$/],
    ['a value out of range', formatMeshFlags(flags).replace('"port":51821', '"port":0'), /\.port: .*: 0$/],
    [
      'an unknown encapsulation',
      formatMeshFlags(flags).replace('"never"', '"sometimes"'),
      /\.encapsulate: .*"sometimes"/,
    ],
    [
      'a bad CIDR',
      formatMeshFlags(flags).replace('10.5.0.0/16', '10.5.0.0/33'),
      /\.subnet: not a CIDR: "10\.5\.0\.0\/33"/,
    ],
    ['an array', '[]', /mesh-flags"\]: .*\[\]$/],
  ];
  for (const [what, text, want] of bad) {
    test(`${what} is an error naming the node, the field and the value`, () => {
      const r = parseMeshFlags(text, 'Node "a"');
      assert.ok(r instanceof ValidationError, `accepted: ${text}`);
      assert.match(r.message, /^Node "a": field /);
      assert.match(r.message, want);
    });
  }

  test('a huge announcement is refused without being echoed', () => {
    const r = parseMeshFlags(`{"namespace":"${'x'.repeat(100_000)}"}`, 'Node "a"');
    assert.ok(r instanceof ValidationError);
    assert.ok(r.message.length < 400, r.message);
  });
});
