/**
 * Black-box tests of the built `kgctl`: exit code, stdout and stderr, as a user sees them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
import type { Plan } from '../../src/mesh/types.js';
import type { IniConfig } from '../../src/wireguard/ini.js';
import { parseIni } from '../helpers/wg-ini.js';
import { ensureBuilt, example, kgctl, type Run } from './built.js';

let dir = '';
before(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'kgctl-test-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const exampleText = readFileSync(example, 'utf8');
const exampleList = parse(exampleText) as {
  items: { kind: string; metadata: { name: string; annotations?: Record<string, string> } }[];
};

function write(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function ok(r: Run): string {
  assert.equal(r.stderr, '', 'no warnings or errors');
  assert.equal(r.status, 0);
  return r.stdout;
}

/** A user error: exit 1, nothing on stdout, exactly one line on stderr, no stack trace. */
function userError(r: Run, message: RegExp): void {
  assert.equal(r.status, 1, `exit code (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${JSON.stringify(r.stderr)}`);
  assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
  assert.match(r.stderr, message);
}

const plan = (...args: string[]): Plan => JSON.parse(ok(kgctl('plan', ...args, '--cluster', example))) as Plan;

describe('kgctl plan', () => {
  test('-o json: granularity auto reads cross from the nodes; WireGuard to every node in another location', () => {
    const p = plan('gcp-use-2');
    assert.equal(p.node, 'gcp-use-2');
    assert.equal(p.granularity, 'cross');
    // `leader` (the conformance vectors' field) is true on every node in cross: each is its own segment.
    assert.equal(p.leader, true);
    assert.deepEqual(p.segment, { leader: 'gcp-use-2', nodes: ['gcp-use-2'], leaderReason: 'annotation' });
    assert.deepEqual(
      p.peers.map((x) => x.names.join()),
      [
        'aws-euw-1',
        'aws-euw-2',
        'aws-euw-3',
        'aws-euw-4',
        'office-1',
        'office-2',
        'office-3',
        'office-4',
        'alice-laptop',
        'backup-server',
      ],
    );
    // Inside the location: pod CIDRs routed in the clear (IPIP by default), never through kilo.
    const gcp1 = p.routes.find((r) => r.dst === '10.42.4.0/24')!;
    assert.deepEqual([gcp1.gw, gcp1.dev], ['10.142.0.2', 'tunnel']);
  });

  test('-o yaml is the same plan as -o json', () => {
    const yaml = parse(ok(kgctl('plan', 'office-1', '-o', 'yaml', '--cluster', example)));
    assert.deepEqual(yaml, plan('office-1'));
  });

  test('-o text: wg showconf, ip route, ip rule and iptables lines; the private key only by path', () => {
    const text = ok(kgctl('plan', 'gcp-use-2', '-o', 'text', '--cluster', example));
    assert.match(
      text,
      /^\[Interface\]\nPrivateKey = \(read from \/var\/lib\/kilo\/key\)\nListenPort = 51820\nAddress = 10\.4\.0\.6\/16$/m,
    );
    assert.match(
      text,
      /^\[Peer\]\n# aws-euw-1\nAllowedIPs = 10\.42\.0\.0\/24, 172\.31\.20\.11\/32, 10\.4\.0\.1\/32\n/m,
    );
    assert.match(text, /^10\.42\.0\.0\/24 via 10\.4\.0\.1 dev kilo onlink src 10\.142\.0\.3$/m);
    assert.match(text, /^10\.142\.0\.2\/32 via 10\.142\.0\.2 dev tunnel onlink table 1107$/m);
    assert.match(text, /^from 10\.42\.5\.0\/24 to 10\.142\.0\.2\/32 lookup 1107$/m);
    assert.match(text, /^iif kilo to 10\.142\.0\.2\/32 lookup 1107$/m);
    assert.match(text, /^\*nat\n:KILO-NAT - \[0:0\]$/m);
    assert.match(text, /^-A KILO-NAT -d 10\.5\.0\.1\/32 -m comment --comment "Kilo: [^"]+" -j RETURN$/m);
    assert.match(text, /^-A KILO-NAT -m comment --comment "Kilo: NAT remaining packets" -j MASQUERADE$/m);
    // The headings say what the agent writes: the routes' protocol and the rules' priority.
    assert.match(text, /^# ip route \(proto 107\)$/m);
    assert.match(text, /^# ip rule \(priority 1107\)$/m);
    assert.match(text, /^# kgctl plan gcp-use-2: granularity cross, encapsulate always, a segment of its own/);
  });

  test('--local=false: no routes inside the location, only WireGuard', () => {
    const p = plan('gcp-use-2', '--local=false');
    assert.ok(p.routes.length > 0);
    assert.ok(
      p.routes.every((r) => r.dev === 'kilo'),
      JSON.stringify(p.routes.filter((r) => r.dev !== 'kilo')),
    );
    assert.deepEqual(p.rules, []);
  });

  test('--local with no value means true', () => {
    assert.deepEqual(plan('gcp-use-2', '--local'), plan('gcp-use-2'));
  });

  test('--mesh-granularity location overrides what the nodes announce; auto reads them', () => {
    const p = plan('aws-euw-2', '--mesh-granularity', 'location');
    assert.equal(p.granularity, 'location');
    assert.equal(p.leader, false);
    assert.deepEqual(p.segment, {
      leader: 'aws-euw-1',
      nodes: ['aws-euw-1', 'aws-euw-2', 'aws-euw-3', 'aws-euw-4'],
      leaderReason: 'annotation',
    });
    assert.deepEqual(p.peers, []);
    assert.equal(plan('aws-euw-2', '--mesh-granularity', 'auto').granularity, 'cross');
  });
});

describe('kgctl reads every snapshot shape', () => {
  test('a JSON List, a YAML List and multi-document YAML give the same plan', () => {
    const expected = ok(kgctl('plan', 'office-4', '--cluster', example));
    const json = write('cross.json', JSON.stringify(exampleList));
    const multi = write('cross-multi.yaml', exampleList.items.map((i) => stringify(i)).join('---\n'));
    assert.equal(parseAllDocuments(readFileSync(multi, 'utf8')).length, exampleList.items.length);
    for (const file of [json, multi]) {
      assert.equal(ok(kgctl('plan', 'office-4', '--cluster', file)), expected, file);
    }
  });

  test('a malformed node is named in a warning (object, field, value) and the others still plan', () => {
    const items = structuredClone(exampleList.items);
    const bad = items.find((i) => i.metadata.name === 'aws-euw-3')!;
    bad.metadata.annotations!['kilo.squat.ai/internal-ip'] = '172.31.300.13/20';
    const file = write('malformed.yaml', stringify({ apiVersion: 'v1', kind: 'List', items }));
    const r = kgctl('plan', 'gcp-use-2', '--cluster', file);
    assert.equal(r.status, 0, r.stderr);
    const warnings = r.stderr.trimEnd().split('\n');
    assert.equal(warnings.length, 1, r.stderr);
    assert.match(
      warnings[0]!,
      /^warning: .*Node "aws-euw-3".*metadata\.annotations\["kilo\.squat\.ai\/internal-ip"\].*"172\.31\.300\.13\/20"/,
    );
    const p = JSON.parse(r.stdout) as Plan;
    assert.equal(p.peers.length, 9);
    assert.ok(!p.peers.some((x) => x.names.includes('aws-euw-3')));
  });
});

describe('kgctl showconf', () => {
  test('node: wg-quick INI without a private key', () => {
    const out = ok(kgctl('showconf', 'node', 'aws-euw-1', '--cluster', example));
    assert.match(out, /^\[Interface\]\nListenPort = 51820\nAddress = 10\.4\.0\.1\/16\n\n\[Peer\]\n/);
    assert.doesNotMatch(out, /PrivateKey/);
  });

  test('node -o json (without --as-peer): the same config as structured data', () => {
    const args = ['showconf', 'node', 'office-2', '--cluster', example];
    const structured = JSON.parse(ok(kgctl(...args, '-o', 'json'))) as IniConfig;
    const ini = parseIni(ok(kgctl(...args)));
    assert.deepEqual(structured.interface, ini.interface);
    assert.deepEqual(
      structured.peers.map((p) => [p.comment, p.publicKey, p.allowedIPs, p.endpoint ?? null]),
      ini.peers.map((p) => [p.comment, p.publicKey, p.allowedIPs, p.endpoint ?? null]),
    );
  });

  test('node --as-peer -o json: a Peer object named after the node', () => {
    const obj = JSON.parse(ok(kgctl('showconf', 'node', 'gcp-use-1', '--as-peer', '-o', 'json', '--cluster', example)));
    assert.equal(obj.kind, 'Peer');
    assert.equal(obj.metadata.name, 'gcp-use-1');
    assert.deepEqual(obj.spec.endpoint, { dnsOrIP: { ip: '203.0.113.21' }, port: 51820 });
  });

  test('peer: one [Peer] per segment and per other Peer', () => {
    const out = ok(kgctl('showconf', 'peer', 'backup-server', '--cluster', example));
    assert.equal(out.match(/^\[Peer\]$/gm)?.length, 13);
    assert.doesNotMatch(out, /\[Interface\]/);
  });

  test('--allowed-ips without --as-peer is refused', () => {
    userError(
      kgctl('showconf', 'node', 'aws-euw-1', '--allowed-ips', '10.0.0.0/8', '--cluster', example),
      /--allowed-ips only applies with --as-peer/,
    );
  });
});

describe('kgctl user errors: one line, exit 1, no stack trace', () => {
  test('unknown node (plan)', () =>
    userError(
      kgctl('plan', 'nope', '--cluster', example),
      /^kgctl: node "nope" not found among the \d+ valid Nodes; nearest: "[^"]+"(, "[^"]+")*$/m,
    ));
  test("the command-line library's errors start with kgctl: too", () => {
    userError(kgctl('plan', '--nosuch'), /^kgctl: unknown option '--nosuch'$/m);
    userError(kgctl('frobnicate'), /^kgctl: unknown command 'frobnicate'$/m);
  });
  test('unknown node (plan): the nearest names, by edit distance', () =>
    userError(
      kgctl('plan', 'office-01', '--cluster', example),
      /^kgctl: node "office-01" not found among the 12 valid Nodes; nearest: "office-1"$/m,
    ));
  test('unknown node (showconf)', () =>
    userError(kgctl('showconf', 'node', 'nope', '--cluster', example), /node "nope" not found/));
  test('unknown Peer', () => userError(kgctl('showconf', 'peer', 'bob', '--cluster', example), /Peer "bob" not found/));
  test('non-leader node in location granularity', () =>
    userError(
      kgctl('showconf', 'node', 'gcp-use-3', '--mesh-granularity', 'location', '--cluster', example),
      /"gcp-use-3" is not a leader: "gcp-use-1" runs WireGuard/,
    ));
  test("--as-peer on a non-leader: as Kilo's kgctl, a note on stderr, nothing on stdout, exit 0", () => {
    // Kilo's documented loop pipes every node's --as-peer into kubectl; under `set -o pipefail` a
    // non-zero exit would stop it at the first node that leads no location.
    for (const output of [[], ['-o', 'yaml']]) {
      const r = kgctl(
        'showconf',
        'node',
        'gcp-use-3',
        '--as-peer',
        ...output,
        '--mesh-granularity',
        'location',
        '--cluster',
        example,
      );
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^kgctl: node "gcp-use-3" is not a leader: "gcp-use-1" runs WireGuard for location/);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1);
    }
  });
  test('unreadable cluster file', () => {
    const missing = join(dir, 'missing.yaml');
    userError(
      kgctl('plan', 'a', '--cluster', missing),
      new RegExp(`cannot read cluster file ${missing.replace(/[.]/g, '\\.')}: ENOENT`),
    );
  });
  test('a cluster file that is not YAML', () =>
    userError(kgctl('plan', 'a', '--cluster', write('bad.yaml', 'items: [unclosed\n')), /not valid YAML or JSON/));
  test('no --cluster', () => userError(kgctl('plan', 'a'), /pass --cluster FILE/));
  test('--local=maybe', () =>
    userError(kgctl('plan', 'a', '--local=maybe', '--cluster', example), /--local: want true or false, got "maybe"/));
  test('--mesh-granularity nope', () =>
    userError(
      kgctl('plan', 'a', '--mesh-granularity', 'nope', '--cluster', example),
      /--mesh-granularity: want one of location, full, cross, subnet, auto, got "nope"/,
    ));
  test('--allowed-ips not a CIDR', () =>
    userError(
      kgctl('showconf', 'node', 'aws-euw-1', '--as-peer', '--allowed-ips', '10.0.0.0/8,10.1/99', '--cluster', example),
      /--allowed-ips: not a CIDR: "10.1\/99"/,
    ));
  test('unknown output format', () =>
    userError(kgctl('showconf', 'node', 'aws-euw-1', '-o', 'xml', '--cluster', example), /xml/));
});
