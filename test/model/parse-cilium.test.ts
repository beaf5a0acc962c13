import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { parseNode } from '../../src/model/parse.js';
import { kiloNode, node, type NodeSpec } from '../helpers/cluster.js';

const good: NodeSpec = {
  location: 'eu',
  internalIP: '10.1.0.5/24',
  endpoint: '198.51.100.1:51820',
  podCIDR: '10.2.1.0/24',
};
const withCilium = (value: string) => ({ ...good, annotations: { [Annotation.ciliumInternalIP]: value } });

test("the annotation is Kilo's kilo.squat.ai/cilium-internal-ip", () => {
  assert.equal(Annotation.ciliumInternalIP, 'kilo.squat.ai/cilium-internal-ip');
});

test("cilium-internal-ip: a bare address, as Kilo writes it, is the node's Cilium internal IP", () => {
  assert.equal(kiloNode('x', withCilium('10.2.1.180')).ciliumInternalIP?.text, '10.2.1.180');
  assert.equal(kiloNode('x', withCilium(' fd00:2::1 ')).ciliumInternalIP?.text, 'fd00:2::1');
});

test('cilium-internal-ip: absent or "" (a node not beside Cilium) is no address', () => {
  assert.equal(kiloNode('x', good).ciliumInternalIP, null);
  assert.equal(kiloNode('x', withCilium('')).ciliumInternalIP, null);
});

for (const bad of ['10.2.1.180/32', '10.2.1.256', 'cilium_host', '10.2.1']) {
  test(`cilium-internal-ip ${JSON.stringify(bad)} drops the node with an error naming node, annotation and value`, () => {
    const p = parseNode(node('x', withCilium(bad)));
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.equal(p.errors.length, 1, p.errors.map((e) => e.message).join('\n'));
    const e = p.errors[0]!;
    assert.equal(e.object, 'Node "x"');
    assert.equal(e.field, `metadata.annotations["${Annotation.ciliumInternalIP}"]`);
    assert.equal(e.value, bad);
    assert.match(e.message, /not an IP address/);
    assert.ok(e.message.includes(JSON.stringify(bad)), e.message);
  });
}

test("the contract's name, kilo.squat.ai/cni-compatibility-ip, is read too; Kilo's wins when both are set", () => {
  const both = (kilo: string, contract: string) => ({
    ...good,
    annotations: { [Annotation.ciliumInternalIP]: kilo, [Annotation.cniCompatibilityIP]: contract },
  });
  assert.equal(Annotation.cniCompatibilityIP, 'kilo.squat.ai/cni-compatibility-ip');
  assert.equal(kiloNode('x', both('', '10.2.1.181')).ciliumInternalIP?.text, '10.2.1.181');
  assert.equal(kiloNode('x', both('10.2.1.180', '10.2.1.181')).ciliumInternalIP?.text, '10.2.1.180');
});
