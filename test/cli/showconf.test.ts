import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { loadSnapshot } from '../../src/backend/snapshot.js';
import {
  asPeerIni,
  nodeAsPeer,
  peerAsPeer,
  peerConfig,
  peerObject,
  requireLeader,
} from '../../src/cli/showconf-conf.js';
import { topologyOf } from '../../src/mesh/compute.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import { TopologyError } from '../../src/mesh/topology.js';
import { parseCluster, parsePeer, type KubeObject } from '../../src/model/parse.js';
import { snapshotNow } from '../../src/model/ready.js';
import type { Granularity } from '../../src/model/types.js';
import { Cidr } from '../../src/net/cidr.js';
import { parseIni } from '../helpers/wg-ini.js';
import { assertGolden } from '../helpers/golden.js';
import { ensureBuilt, example, kgctl } from './built.js';

const cluster = parseCluster(loadSnapshot(example));
const now = snapshotNow(cluster.nodes);
const topology = (node: string, granularity: Granularity = 'cross') =>
  topologyOf(cluster, node, { ...defaultMeshOptions, granularity }, now);
const key = (name: string) => cluster.nodes.find((n) => n.name === name)!.key!;

before(ensureBuilt);

describe('showconf golden output on examples/cross.yaml', () => {
  const cases: [string, string[]][] = [
    ['showconf-node-gcp-use-2.conf', ['showconf', 'node', 'gcp-use-2']],
    ['showconf-node-office-3.conf', ['showconf', 'node', 'office-3']],
    ['showconf-node-aws-euw-1-location.conf', ['showconf', 'node', 'aws-euw-1', '--mesh-granularity', 'location']],
    [
      'showconf-node-office-3-as-peer.conf',
      ['showconf', 'node', 'office-3', '--as-peer', '--allowed-ips', '10.96.0.0/12'],
    ],
    ['showconf-node-aws-euw-1-as-peer.yaml', ['showconf', 'node', 'aws-euw-1', '--as-peer', '-o', 'yaml']],
    ['showconf-peer-alice-laptop.conf', ['showconf', 'peer', 'alice-laptop']],
    [
      'showconf-peer-alice-laptop-location.conf',
      ['showconf', 'peer', 'alice-laptop', '--mesh-granularity', 'location'],
    ],
    ['showconf-peer-backup-server-as-peer.json', ['showconf', 'peer', 'backup-server', '--as-peer', '-o', 'json']],
    ['plan-gcp-use-2.txt', ['plan', 'gcp-use-2', '-o', 'text']],
    ['plan-aws-euw-2-location.txt', ['plan', 'aws-euw-2', '-o', 'text', '--mesh-granularity', 'location']],
    ['plan-gcp-use-2-nftables.txt', ['plan', 'gcp-use-2', '-o', 'text', '--firewall', 'nftables']],
    [
      'plan-aws-euw-2-location-nftables.txt',
      ['plan', 'aws-euw-2', '-o', 'text', '--mesh-granularity', 'location', '--firewall', 'nftables'],
    ],
  ];
  for (const [golden, args] of cases) {
    test(`kgctl ${args.join(' ')}`, () => {
      const r = kgctl(...args, '--cluster', example);
      assert.equal(r.stderr, '');
      assert.equal(r.status, 0);
      assertGolden(golden, r.stdout);
    });
  }
});

describe('showconf node', () => {
  test('the config parses back and has a [Peer] for every node in another location and every Peer', () => {
    const r = kgctl('showconf', 'node', 'office-3', '--cluster', example);
    const conf = parseIni(r.stdout);
    assert.equal(conf.interface?.privateKey, undefined);
    assert.deepEqual(
      conf.peers.map((p) => p.comment),
      [
        'aws-euw-1',
        'aws-euw-2',
        'aws-euw-3',
        'aws-euw-4',
        'gcp-use-1',
        'gcp-use-2',
        'gcp-use-3',
        'gcp-use-4',
        'alice-laptop (Peer)',
        'backup-server (Peer)',
      ],
    );
    // Behind NAT: the node's own keepalive on every peer.
    assert.ok(conf.peers.every((p) => p.persistentKeepalive === 25));
  });

  test('a non-leader (location granularity) has no WireGuard config and the error names its leader', () => {
    assert.throws(
      () => requireLeader(topology('aws-euw-2', 'location')),
      (e: unknown) =>
        e instanceof TopologyError &&
        /"aws-euw-2" is not a leader: "aws-euw-1" runs WireGuard for location "eu-west-1"/.test(e.message),
    );
  });

  test('--as-peer: the segment seen from outside; extra allowed IPs appended once', () => {
    const p = nodeAsPeer(topology('aws-euw-1', 'location'), [Cidr.parse('10.96.0.0/12'), Cidr.parse('10.42.1.0/24')]);
    assert.equal(p.publicKey, key('aws-euw-1'));
    assert.deepEqual(p.allowedIPs, [
      '10.42.0.0/24',
      '172.31.20.11/32',
      '10.42.1.0/24',
      '172.31.40.12/32',
      '10.42.2.0/24',
      '172.31.5.13/32',
      '10.42.3.0/24',
      '172.31.20.14/32',
      '10.4.0.1/32',
      '10.96.0.0/12',
    ]);
    assert.equal(asPeerIni(p).peers[0]!.endpoint, '198.51.100.11:51820');
  });

  test('--as-peer behind NAT: the endpoint the mesh dials (discovered), not the private announced one', () => {
    assert.equal(asPeerIni(nodeAsPeer(topology('office-2'), [])).peers[0]!.endpoint, '192.0.2.7:40002');
  });

  test('--as-peer -o yaml is a Peer object that parses as a valid Peer', () => {
    const obj = parse(
      kgctl('showconf', 'node', 'aws-euw-1', '--as-peer', '-o', 'yaml', '--cluster', example).stdout,
    ) as KubeObject;
    assert.equal(obj.apiVersion, 'kilo.squat.ai/v1alpha1');
    assert.equal(obj.kind, 'Peer');
    const parsed = parsePeer(obj);
    assert.ok(parsed.ok, JSON.stringify(parsed));
    assert.equal(parsed.value.name, 'aws-euw-1');
    assert.equal(parsed.value.publicKey, key('aws-euw-1'));
    assert.equal(parsed.value.endpoint?.ip?.text, '198.51.100.11');
    assert.deepEqual(
      parsed.value.allowedIPs.map((c) => c.networkText),
      ['10.42.0.0/24', '172.31.20.11/32', '10.4.0.1/32'],
    );
  });
});

describe('showconf peer', () => {
  test('every segment with the Peer keepalive and preshared key; other Peers without the key', () => {
    const psk = 'cHJlc2hhcmVkLWtleS1mb3ItdGVzdHMtb25seS0xMjM=';
    const peers = cluster.peers.map((p) => (p.name === 'alice-laptop' ? { ...p, presharedKey: psk } : p));
    const t = topologyOf({ ...cluster, peers }, 'aws-euw-1', { ...defaultMeshOptions, granularity: 'location' }, now);
    const conf = peerConfig(t, 'alice-laptop');
    assert.deepEqual(
      conf.peers.map((p) => [p.comment, p.persistentKeepalive, p.presharedKey ?? null]),
      [
        ['aws-euw-1, aws-euw-2, aws-euw-3, aws-euw-4', 10, psk],
        ['office-1, office-2, office-3, office-4', 10, psk],
        ['gcp-use-1, gcp-use-2, gcp-use-3, gcp-use-4', 10, psk],
        ['backup-server (Peer)', 10, null],
      ],
    );
    // Segments in key order (location:eu-west-1, location:office, location:us-east1). The
    // office leader roams behind NAT: the Peer dials where the mesh last saw it.
    assert.equal(conf.peers[1]!.endpoint, '192.0.2.7:40001');
    assert.equal(conf.interface, null);
  });

  test('an unknown Peer is an error naming it', () => {
    assert.throws(() => peerConfig(topology('aws-euw-1'), 'bob'), /Peer "bob" is not a ready Peer/);
  });

  test('--as-peer carries the Peer as it is, plus extra allowed IPs, and round-trips as a Peer object', () => {
    const backup = cluster.peers.find((p) => p.name === 'backup-server')!;
    const obj = peerObject(
      peerAsPeer(backup, [Cidr.parse('172.20.0.0/24'), Cidr.parse('10.6.0.0/16')]),
    ) as unknown as KubeObject;
    const parsed = parsePeer(obj);
    assert.ok(parsed.ok);
    assert.deepEqual(
      parsed.value.allowedIPs.map((c) => c.networkText),
      ['10.5.0.2/32', '172.20.0.0/24', '10.6.0.0/16'],
    );
    assert.equal(parsed.value.endpoint?.dns, 'backup.example.com');
    assert.equal(parsed.value.endpoint?.port, 51820);
  });
});
