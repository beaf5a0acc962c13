import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderFamily } from '../../src/dataplane/iptables/render.js';
import { iptablesRulesOf } from '../../src/dataplane/iptables/rules.js';
import type { Firewall } from '../../src/mesh/types.js';

/**
 * The iptables rendering of one representative intent, pinned: every kind of rule, both families,
 * each exception group. A change here changes what every node's kernel holds.
 */
const intent: Firewall = {
  masquerade: {
    podCIDRs: ['10.42.0.0/24'],
    allowedLocationIPs: ['192.168.50.0/24', 'fd50::/64'],
    peerAllowedIPs: ['10.5.0.0/31', 'fd05::1/128'],
    exceptions: [
      { reason: 'wireguard-ips', destinations: ['10.4.0.0/30'] },
      { reason: 'known-ips', destinations: ['10.42.0.0/23', '192.168.50.0/24', 'fd50::/64'] },
      { reason: 'peers', destinations: ['10.5.0.0/31', 'fd05::1/128'] },
      { reason: 'service-cidrs', destinations: ['10.43.0.0/16', 'fd43::/112'] },
    ],
  },
  forwardPodCIDRs: ['10.42.0.0/24', '10.42.1.0/24'],
  ipip: { sources: ['192.168.1.11/32', '192.168.1.12/32'] },
};

const empty = {
  nat: '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n',
  filter: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n',
};

const nat = (s: string) => `-m comment --comment "Kilo: ${s}"`;
const jumpNat = nat('jump to KILO-NAT chain');

test('iptables rendering of a representative intent, IPv4: the restore input for an empty machine', () => {
  assert.deepEqual(renderFamily(4, iptablesRulesOf(intent), empty).input.split('\n'), [
    '*nat',
    ':KILO-NAT - [0:0]',
    `-A KILO-NAT -d 10.4.0.0/30 ${nat('do not NAT packets destined for WireGuard IPs')} -j RETURN`,
    `-A KILO-NAT -d 10.42.0.0/23 ${nat('do not NAT packets destined for known IPs')} -j RETURN`,
    `-A KILO-NAT -d 192.168.50.0/24 ${nat('do not NAT packets destined for known IPs')} -j RETURN`,
    `-A KILO-NAT -d 10.5.0.0/31 ${nat('do not NAT packets destined for peers')} -j RETURN`,
    `-A KILO-NAT -d 10.43.0.0/16 ${nat('do not NAT packets destined for service CIDRs')} -j RETURN`,
    `-A KILO-NAT ${nat('NAT remaining packets')} -j MASQUERADE`,
    `-A POSTROUTING -s 10.42.0.0/24 ${jumpNat} -j KILO-NAT`,
    `-A POSTROUTING -d 192.168.50.0/24 ${jumpNat} -j KILO-NAT`,
    `-A POSTROUTING -s 10.5.0.0/31 ${jumpNat} -j KILO-NAT`,
    'COMMIT',
    '*filter',
    ':KILO-IPIP - [0:0]',
    `-A KILO-IPIP -s 192.168.1.11/32 ${nat('allow IPIP traffic')} -j ACCEPT`,
    `-A KILO-IPIP -s 192.168.1.12/32 ${nat('allow IPIP traffic')} -j ACCEPT`,
    `-A INPUT -p 4 ${nat('jump to IPIP chain')} -j KILO-IPIP`,
    `-A INPUT -p 4 ${nat('reject other IPIP traffic')} -j DROP`,
    `-A FORWARD -s 10.42.0.0/24 ${nat('forward packets from the pod subnet')} -j ACCEPT`,
    `-A FORWARD -d 10.42.0.0/24 ${nat('forward packets to the pod subnet')} -j ACCEPT`,
    `-A FORWARD -s 10.42.1.0/24 ${nat('forward packets from the pod subnet')} -j ACCEPT`,
    `-A FORWARD -d 10.42.1.0/24 ${nat('forward packets to the pod subnet')} -j ACCEPT`,
    'COMMIT',
    '',
  ]);
});

test('iptables rendering of a representative intent, IPv6: the same scaffolding, the IPv6 addresses only', () => {
  assert.deepEqual(renderFamily(6, iptablesRulesOf(intent), empty).input.split('\n'), [
    '*nat',
    ':KILO-NAT - [0:0]',
    `-A KILO-NAT -d fd50::/64 ${nat('do not NAT packets destined for known IPs')} -j RETURN`,
    `-A KILO-NAT -d fd05::1/128 ${nat('do not NAT packets destined for peers')} -j RETURN`,
    `-A KILO-NAT -d fd43::/112 ${nat('do not NAT packets destined for service CIDRs')} -j RETURN`,
    `-A KILO-NAT ${nat('NAT remaining packets')} -j MASQUERADE`,
    `-A POSTROUTING -d fd50::/64 ${jumpNat} -j KILO-NAT`,
    `-A POSTROUTING -s fd05::1/128 ${jumpNat} -j KILO-NAT`,
    'COMMIT',
    '*filter',
    ':KILO-IPIP - [0:0]',
    `-A INPUT -p 4 ${nat('jump to IPIP chain')} -j KILO-IPIP`,
    `-A INPUT -p 4 ${nat('reject other IPIP traffic')} -j DROP`,
    'COMMIT',
    '',
  ]);
});

test('no IPIP policy, no masquerade source, no forward rule: KILO-NAT and its MASQUERADE alone, no filter table', () => {
  const bare: Firewall = {
    masquerade: { podCIDRs: [], allowedLocationIPs: [], peerAllowedIPs: [], exceptions: [] },
    forwardPodCIDRs: [],
    ipip: null,
  };
  const rules = iptablesRulesOf(bare);
  assert.deepEqual(rules.chains, [
    { family: 4, table: 'nat', name: 'KILO-NAT' },
    { family: 6, table: 'nat', name: 'KILO-NAT' },
  ]);
  assert.deepEqual(
    rules.rules.map((r) => `${r.family} ${r.table} ${r.chain} ${r.args.join(' ')} ${r.position}`),
    ['4 nat KILO-NAT -j MASQUERADE append', '6 nat KILO-NAT -j MASQUERADE append'],
  );
});
