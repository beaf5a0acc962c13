/**
 * Peer specs the webhook must allow and refuse. The manifest test runs the same ones against the
 * CRD's schema, so the API server's first line of defence and the webhook are checked on one list.
 */
import { wgKey } from '../helpers/cluster.js';

export interface PeerExample {
  name: string;
  spec: Record<string, unknown>;
}

export interface BadPeerExample extends PeerExample {
  /** The field the refusal must name. */
  field: string;
  /** The offending value, as it must appear in the refusal (JSON). */
  value: string;
}

export const goodPeers: PeerExample[] = [
  { name: 'laptop', spec: { allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('laptop') } },
  {
    name: 'office',
    spec: {
      allowedIPs: ['10.5.0.2/32', '192.168.50.0/24', 'fd00:5::/64'],
      publicKey: wgKey('office'),
      endpoint: { dnsOrIP: { ip: '203.0.113.9' }, port: 51820 },
      persistentKeepalive: 25,
      presharedKey: wgKey('office-psk'),
    },
  },
  {
    name: 'gateway',
    spec: {
      allowedIPs: ['10.5.0.3/32'],
      publicKey: wgKey('gateway'),
      endpoint: { dnsOrIP: { dns: 'vpn.example.com' }, port: 65535 },
      persistentKeepalive: 0,
    },
  },
  {
    name: 'v6',
    spec: {
      allowedIPs: ['2001:db8::1/128'],
      publicKey: wgKey('v6'),
      endpoint: { dnsOrIP: { ip: '2001:db8::9' }, port: 1 },
    },
  },
];

export const badPeers: BadPeerExample[] = [
  { name: 'no-allowed-ips', spec: { allowedIPs: [], publicKey: wgKey('a') }, field: 'spec.allowedIPs', value: '[]' },
  {
    name: 'bad-key',
    spec: { allowedIPs: ['10.5.0.1/32'], publicKey: 'not-a-wireguard-key=' },
    field: 'spec.publicKey',
    value: '"not-a-wireguard-key="',
  },
  {
    name: 'short-key',
    spec: { allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('b').slice(4) },
    field: 'spec.publicKey',
    value: JSON.stringify(wgKey('b').slice(4)),
  },
  {
    name: 'bad-cidr',
    spec: { allowedIPs: ['10.5.0.1/32', '10.5.0.300/32'], publicKey: wgKey('c') },
    field: 'spec.allowedIPs[1]',
    value: '"10.5.0.300/32"',
  },
  {
    name: 'bare-ip',
    spec: { allowedIPs: ['10.5.0.1'], publicKey: wgKey('d') },
    field: 'spec.allowedIPs[0]',
    value: '"10.5.0.1"',
  },
  {
    name: 'bad-port',
    spec: {
      allowedIPs: ['10.5.0.1/32'],
      publicKey: wgKey('e'),
      endpoint: { dnsOrIP: { ip: '203.0.113.9' }, port: 70000 },
    },
    field: 'spec.endpoint.port',
    value: '70000',
  },
  {
    name: 'zero-port',
    spec: { allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('f'), endpoint: { dnsOrIP: { ip: '203.0.113.9' }, port: 0 } },
    field: 'spec.endpoint.port',
    value: '0',
  },
  {
    name: 'bad-endpoint-ip',
    spec: {
      allowedIPs: ['10.5.0.1/32'],
      publicKey: wgKey('g'),
      endpoint: { dnsOrIP: { ip: '203.0.113' }, port: 51820 },
    },
    field: 'spec.endpoint.dnsOrIP.ip',
    value: '"203.0.113"',
  },
  {
    name: 'bad-endpoint-dns',
    spec: {
      allowedIPs: ['10.5.0.1/32'],
      publicKey: wgKey('h'),
      endpoint: { dnsOrIP: { dns: 'vpn_example.com' }, port: 51820 },
    },
    field: 'spec.endpoint.dnsOrIP.dns',
    value: '"vpn_example.com"',
  },
  {
    name: 'negative-keepalive',
    spec: { allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('i'), persistentKeepalive: -5 },
    field: 'spec.persistentKeepalive',
    value: '-5',
  },
];

let nested: unknown = '10.5.0.1/32';
// Deep enough to show the sketch is cut; JSON.stringify (the test's client) overflows near 10,000.
for (let i = 0; i < 2_000; i++) nested = [nested];

/**
 * Peers the CRD's schema lets through (or cannot judge: it checks types, not meaning) but that the
 * agent would drop or that would take a cluster down: the webhook refuses them.
 */
export const hostilePeers: BadPeerExample[] = [
  {
    name: 'catch-all-v4',
    spec: { allowedIPs: ['10.5.0.1/32', '0.0.0.0/0'], publicKey: wgKey('j') },
    field: 'spec.allowedIPs[1]',
    value: '"0.0.0.0/0"',
  },
  {
    name: 'catch-all-v6',
    spec: { allowedIPs: ['::/0'], publicKey: wgKey('k') },
    field: 'spec.allowedIPs[0]',
    value: '"::/0"',
  },
  {
    name: 'zero-padded-length',
    spec: { allowedIPs: ['10.5.0.0/024'], publicKey: wgKey('l') },
    field: 'spec.allowedIPs[0]',
    value: '"10.5.0.0/024"',
  },
  ...(
    [
      ['dns-number', { dns: 5 }, 'dns', '5'],
      ['dns-list', { dns: ['x'] }, 'dns', '["x"]'],
      ['dns-five-labels', { dns: '1.2.3.4.5' }, 'dns', '"1.2.3.4.5"'],
      ['dns-hex-ip', { dns: '0x1.2.3.4' }, 'dns', '"0x1.2.3.4"'],
      ['ip-number', { ip: 5 }, 'ip', '5'],
    ] as const
  ).map(([name, dnsOrIP, field, value]) => ({
    name,
    spec: { allowedIPs: ['10.5.0.1/32'], publicKey: wgKey(name), endpoint: { dnsOrIP, port: 51820 } },
    field: `spec.endpoint.dnsOrIP.${field}`,
    value,
  })),
  {
    name: 'nested-allowed-ip',
    spec: { allowedIPs: [nested], publicKey: wgKey('m') },
    field: 'spec.allowedIPs[0]',
    value: '[[[[…]]]]',
  },
  { name: 'key-number', spec: { allowedIPs: ['10.5.0.1/32'], publicKey: 5 }, field: 'spec.publicKey', value: '5' },
];
