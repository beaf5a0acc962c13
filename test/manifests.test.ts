/**
 * The manifests under manifests/: every document is a well-formed object, the Peer CRD's schema
 * refuses what the webhook refuses, RBAC is least privilege, the DaemonSets run `kg` with Kilo's
 * flags only, and the webhook is wired to the Service and the command that serve it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { healthPath, validatePath } from '../src/agent/webhook.js';
import { kgProgram } from '../src/cli/kg.js';
import { parseListenAddress, webhookCommand } from '../src/cli/webhook.js';
import { multiclusterCommand } from '../src/cli/multicluster.js';
import { isWireGuardKey, parsePeer } from '../src/model/parse.js';
import { encapsulations, granularities } from '../src/model/types.js';
import { Cidr, IP } from '../src/net/cidr.js';
import { badPeers, goodPeers } from './agent/peer-examples.js';
import { wgKey } from './helpers/cluster.js';

const root = join(import.meta.dirname, '..');
const dir = join(root, 'manifests');

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- manifests are untyped YAML; the tests check their shape */
type Doc = any;

interface Loaded {
  file: string;
  doc: Doc;
}

function loadAll(): Loaded[] {
  const out: Loaded[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const d of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      assert.deepEqual(
        d.errors.map((e) => e.message),
        [],
        `${file}: YAML errors`,
      );
      const doc: unknown = d.toJS();
      if (doc !== null) out.push({ file, doc });
    }
  }
  return out;
}

const docs = loadAll();
const inFile = (file: string) => docs.filter((d) => d.file === file).map((d) => d.doc);
const ofKind = (kind: string, file?: string) =>
  docs.filter((d) => d.doc.kind === kind && (file === undefined || d.file === file)).map((d) => d.doc);
const one = (kind: string, file?: string) => {
  const found = ofKind(kind, file);
  assert.equal(found.length, 1, `exactly one ${kind}${file ? ` in ${file}` : ''}`);
  return found[0];
};

/** The image every workload runs; its tag follows the package version. */
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const image = `ghcr.io/kilo-ts/kilo-ts:${version}`;

test('the expected manifest files are there', () => {
  const files = new Set(docs.map((d) => d.file));
  for (const f of [
    'crds.yaml',
    'kilo-rbac.yaml',
    'kilo-kernel.yaml',
    'kilo-userspace.yaml',
    'kilo-k3s-flannel.yaml',
    'webhook.yaml',
    'kilo-multicluster.yaml',
  ]) {
    assert.ok(files.has(f), f);
  }
});

test('every document has apiVersion, kind and metadata.name', () => {
  for (const { file, doc } of docs) {
    const where = `${file}: ${JSON.stringify(doc).slice(0, 80)}`;
    assert.equal(typeof doc.apiVersion, 'string', where);
    assert.match(doc.apiVersion, /^([a-z0-9.-]+\/)?v\d+((alpha|beta)\d+)?$/, where);
    assert.equal(typeof doc.kind, 'string', where);
    assert.match(doc.kind, /^[A-Z][A-Za-z]+$/, where);
    assert.equal(typeof doc.metadata?.name, 'string', where);
    assert.notEqual(doc.metadata.name, '', where);
  }
});

test(`every container runs ${image}, the image the Dockerfile builds`, () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  assert.ok(dockerfile.includes(`docker build -t ${image} .`), 'the Dockerfile says how to build the image');
  assert.match(dockerfile, /^ENTRYPOINT \["\/app\/bin\/kg"\]$/m);
  for (const { file, doc } of docs) {
    const pod = doc.spec?.template?.spec;
    if (!pod) continue;
    for (const c of [...(pod.initContainers ?? []), ...pod.containers])
      assert.equal(c.image, image, `${file}: ${c.name}`);
  }
});

test("every container but the CNI installer runs kg through the image's entrypoint, bin/kg's #! line (its malloc settings and V8 flags)", () => {
  for (const { file, doc } of docs) {
    const pod = doc.spec?.template?.spec;
    if (!pod) continue;
    for (const c of [...(pod.initContainers ?? []), ...pod.containers])
      if (c.name !== 'install-cni') assert.equal(c.command, undefined, `${file}: ${c.name} sets a command`);
  }
});

// ---------------------------------------------------------------------------------------------
// The Peer CRD

/** Keywords the checker below understands; any other in the schema fails the test instead of being ignored. */
const known = new Set([
  'type',
  'description',
  'format',
  'required',
  'properties',
  'items',
  'minItems',
  'pattern',
  'minimum',
  'maximum',
  'minProperties',
  'maxLength',
]);

/**
 * Validates a value against the subset of OpenAPI v3 the CRD uses, as the API server would;
 * returns the paths of the failing values (`spec.allowedIPs[1]`). Unknown fields are pruned by
 * the API server, not refused, so they pass here too.
 */
function schemaErrors(schema: Doc, value: unknown, path: string): string[] {
  for (const k of Object.keys(schema))
    assert.ok(known.has(k), `schema keyword ${k} at ${path} is not checked by this test`);
  const fail = [path];
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail;
      const o = value as Record<string, unknown>;
      const errors: string[] = [];
      for (const r of schema.required ?? []) if (!(r in o)) errors.push(path ? `${path}.${r}` : r);
      if (schema.minProperties !== undefined && Object.keys(o).length < schema.minProperties) errors.push(path);
      for (const [k, sub] of Object.entries(schema.properties ?? {})) {
        if (k in o) errors.push(...schemaErrors(sub, o[k], path ? `${path}.${k}` : k));
      }
      return errors;
    }
    case 'array': {
      if (!Array.isArray(value)) return fail;
      if (schema.minItems !== undefined && value.length < schema.minItems) return fail;
      return value.flatMap((v, i) => schemaErrors(schema.items, v, `${path}[${i}]`));
    }
    case 'string':
      if (typeof value !== 'string') return fail;
      if (schema.maxLength !== undefined && value.length > schema.maxLength) return fail;
      if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) return fail;
      return [];
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) return fail;
      if (schema.minimum !== undefined && value < schema.minimum) return fail;
      if (schema.maximum !== undefined && value > schema.maximum) return fail;
      return [];
    default:
      assert.fail(`schema type ${schema.type} at ${path} is not checked by this test`);
  }
}

describe('crds.yaml: the Peer CRD', () => {
  const crd = one('CustomResourceDefinition', 'crds.yaml');
  const v1alpha1 = crd.spec.versions.find((v: Doc) => v.name === 'v1alpha1');
  const schema = v1alpha1?.schema?.openAPIV3Schema;
  const spec = schema?.properties?.spec;
  const patterns = {
    cidr: spec?.properties?.allowedIPs?.items?.pattern as string,
    ip: spec?.properties?.endpoint?.properties?.dnsOrIP?.properties?.ip?.pattern as string,
    dns: spec?.properties?.endpoint?.properties?.dnsOrIP?.properties?.dns?.pattern as string,
    publicKey: spec?.properties?.publicKey?.pattern as string,
    presharedKey: spec?.properties?.presharedKey?.pattern as string,
  };

  test('is kilo.squat.ai/v1alpha1 Peer, cluster-scoped, served and stored', () => {
    assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(crd.metadata.name, 'peers.kilo.squat.ai');
    assert.equal(crd.spec.group, 'kilo.squat.ai');
    assert.deepEqual(crd.spec.names, { kind: 'Peer', listKind: 'PeerList', plural: 'peers', singular: 'peer' });
    assert.equal(crd.spec.scope, 'Cluster');
    assert.equal(v1alpha1.served, true);
    assert.equal(v1alpha1.storage, true);
  });

  test('requires allowedIPs (at least one) and publicKey', () => {
    assert.deepEqual(schema.required, ['spec']);
    assert.deepEqual([...spec.required].sort(), ['allowedIPs', 'publicKey']);
    assert.equal(spec.properties.allowedIPs.minItems, 1);
    assert.deepEqual(schemaErrors(schema, { spec: { allowedIPs: ['10.5.0.1/32'] } }, ''), ['spec.publicKey']);
    assert.deepEqual(schemaErrors(schema, { spec: { publicKey: wgKey('k') } }, ''), ['spec.allowedIPs']);
  });

  test('its patterns are anchored and use nothing Go (RE2) lacks: no lookaround, no backreferences', () => {
    for (const [name, p] of Object.entries(patterns)) {
      assert.equal(typeof p, 'string', `${name} has a pattern`);
      assert.ok(p.startsWith('^') && p.endsWith('$'), `${name} is anchored`);
      assert.doesNotMatch(p, /\(\?[=!<]/, `${name}: lookaround`);
      assert.doesNotMatch(p, /\\[1-9]/, `${name}: backreference`);
    }
  });

  test('accepts every Peer the webhook accepts', () => {
    for (const p of goodPeers) {
      const peer = { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name: p.name }, spec: p.spec };
      assert.ok(parsePeer(peer).ok, `${p.name}: the webhook accepts it`);
      assert.deepEqual(schemaErrors(schema, peer, ''), [], p.name);
    }
  });

  test('refuses every Peer the webhook refuses, at the same field', () => {
    for (const p of badPeers) {
      const peer = { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name: p.name }, spec: p.spec };
      assert.ok(!parsePeer(peer).ok, `${p.name}: the webhook refuses it`);
      assert.deepEqual(schemaErrors(schema, peer, ''), [p.field], p.name);
    }
  });

  test('the CIDR and IP patterns agree with the parser', () => {
    const cidrs = [
      '10.0.0.0/8',
      '10.5.0.1/32',
      '0.0.0.0/0',
      '255.255.255.255/32',
      '192.168.1.7/24',
      '100.64.0.0/10',
      'fd00::/8',
      '::/0',
      '::1/128',
      '2001:db8::/32',
      '2001:db8:0:0:0:0:0:1/128',
      'fe80::1:2:3:4/64',
      '1:2:3:4:5:6:7::/112',
      '::ffff:10.0.0.1/128',
      '1:2:3:4:5:6:10.0.0.1/128',
      '10.0.0.0',
      '10.0.0.256/8',
      '10.0.0.0/33',
      '1.2.3/24',
      '01.2.3.4/8',
      '2001:db8::/129',
      '2001:db8:::/32',
      '1::2::3/64',
      '12345::/16',
      'fe80::1%eth0/64',
      'abc',
      '',
      ' 10.0.0.0/8',
      '10.0.0.0/8 ',
      '10.0.0.0/-1',
      // A leading zero in the prefix length: both refuse it (the parser since it refuses '/024').
      '10.0.0.0/08',
    ];
    const cidr = new RegExp(patterns.cidr);
    for (const c of cidrs) assert.equal(cidr.test(c), Cidr.tryParse(c) !== null, c);
    const ip = new RegExp(patterns.ip);
    for (const c of cidrs.map((s) => s.split('/')[0]!)) assert.equal(ip.test(c), IP.tryParse(c) !== null, c);
    // A written-out form the parser takes and the schema does not; nobody writes it in a Peer.
    for (const c of ['2001:db8::1.2.3.4/128']) {
      assert.ok(Cidr.tryParse(c) !== null && !cidr.test(c), `${c}: the known gap`);
    }
  });

  test('the key patterns agree with the parser', () => {
    const keys = [
      wgKey('a'),
      wgKey('b'),
      'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
      wgKey('c').slice(1),
      `${wgKey('d')}=`,
      wgKey('e').replace('=', ''),
      wgKey('f').replace(/^./, '-'),
      'not-a-wireguard-key=',
      '',
      `${wgKey('g').slice(0, 42)}==`,
    ];
    for (const name of ['publicKey', 'presharedKey'] as const) {
      const re = new RegExp(patterns[name]);
      for (const k of keys) assert.equal(re.test(k), isWireGuardKey(k), `${name}: ${k}`);
    }
  });

  test('the DNS pattern and maxLength agree with the parser', () => {
    const names = [
      'vpn.example.com',
      'vpn.example.com.',
      'a',
      'a-b.c-d',
      `${'a'.repeat(63)}.com`,
      `${'a'.repeat(64)}.com`,
      '-vpn.example.com',
      'vpn-.example.com',
      'vpn_x.example.com',
      'vpn..example.com',
      `${'a.'.repeat(126)}aa`,
      `${'a.'.repeat(126)}a`,
      '',
    ];
    const dns = spec.properties.endpoint.properties.dnsOrIP.properties.dns;
    for (const n of names) {
      const peer = {
        metadata: { name: 'p' },
        spec: { allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('p'), endpoint: { dnsOrIP: { dns: n }, port: 51820 } },
      };
      const webhook = parsePeer(peer).ok;
      assert.equal(schemaErrors(dns, n, 'dns').length === 0, webhook, `${JSON.stringify(n)} (length ${n.length})`);
    }
  });

  test('ports are 1-65535 and persistentKeepalive is at least 0', () => {
    const endpoint = spec.properties.endpoint;
    assert.deepEqual(endpoint.required, ['dnsOrIP', 'port']);
    assert.deepEqual([endpoint.properties.port.minimum, endpoint.properties.port.maximum], [1, 65535]);
    assert.equal(spec.properties.persistentKeepalive.minimum, 0);
    assert.equal(endpoint.properties.dnsOrIP.minProperties, 1);
  });
});

// ---------------------------------------------------------------------------------------------
// RBAC

/** A role's grants as `group/resource:verb`; a rule with resourceNames or nonResourceURLs fails. */
function grantsOf(role: Doc): Set<string> {
  const grants = new Set<string>();
  for (const rule of role.rules) {
    assert.deepEqual(
      Object.keys(rule).sort(),
      ['apiGroups', 'resources', 'verbs'],
      'no resourceNames or nonResourceURLs',
    );
    for (const g of rule.apiGroups)
      for (const r of rule.resources) for (const v of rule.verbs) grants.add(`${g}/${r}:${v}`);
  }
  return grants;
}

function assertBinds(binding: Doc, role: Doc, sa: Doc, kind = 'ClusterRole'): void {
  assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind, name: role.metadata.name });
  assert.deepEqual(binding.subjects, [
    { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
  ]);
}

describe('kilo-rbac.yaml: least privilege', () => {
  const sa = one('ServiceAccount', 'kilo-rbac.yaml');
  const role = one('ClusterRole', 'kilo-rbac.yaml');
  const binding = one('ClusterRoleBinding', 'kilo-rbac.yaml');

  test('grants exactly nodes get/list/watch/patch and peers get/list/watch', () => {
    const grants = grantsOf(role);
    assert.deepEqual([...grants].sort(), [
      '/nodes:get',
      '/nodes:list',
      '/nodes:patch',
      '/nodes:watch',
      'kilo.squat.ai/peers:get',
      'kilo.squat.ai/peers:list',
      'kilo.squat.ai/peers:watch',
    ]);
    assert.ok(![...grants].some((g) => g.includes('*')), 'no wildcard');
  });

  test('binds that role to the ServiceAccount', () => assertBinds(binding, role, sa));

  test("grants Leases in the agent's own namespace only, for the Lease election", () => {
    const leases = one('Role', 'kilo-rbac.yaml');
    const bound = one('RoleBinding', 'kilo-rbac.yaml');
    assert.equal(leases.metadata.namespace, sa.metadata.namespace);
    assert.deepEqual(leases.rules, [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'watch', 'create', 'update'],
      },
    ]);
    assert.equal(bound.metadata.namespace, sa.metadata.namespace);
    assertBinds(bound, leases, sa, 'Role');
  });

  test('no other manifest grants anything (but the multi-cluster controller and the webhook their own, below)', () => {
    for (const kind of ['ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding']) {
      const own = [...inFile('kilo-rbac.yaml'), ...inFile('kilo-multicluster.yaml'), ...inFile('webhook.yaml')];
      assert.deepEqual(
        ofKind(kind).filter((d) => !own.includes(d)),
        [],
        kind,
      );
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The kg DaemonSets

/** `kg`'s flags, as Kilo's docs/kg.md lists them. */
const kgFlags = new Set([
  'hostname',
  'mesh-granularity',
  'interface',
  'subnet',
  'port',
  'encapsulate',
  'compatibility',
  'local',
  'cni',
  'cni-path',
  'internal-cidr',
  'service-cidr',
  'topology-label',
  'resync-period',
  'clean-up',
  'clean-up-interface',
  'create-interface',
  'mtu',
  'iptables-forward-rules',
  'prioritise-private-addresses',
  'listen',
  'log-level',
  'kubeconfig',
  'master',
]);
const boolFlags = new Set([
  'local',
  'cni',
  'clean-up',
  'clean-up-interface',
  'create-interface',
  'iptables-forward-rules',
  'prioritise-private-addresses',
]);

/** `--flag=value` / `--flag` → [flag, value]; fails on anything else (a positional, `-x`). */
function flagsOf(args: readonly string[], where: string): Map<string, string> {
  const flags = new Map<string, string>();
  for (const a of args) {
    const m = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(a);
    assert.ok(m, `${where}: ${JSON.stringify(a)} is not --flag[=value]`);
    assert.ok(!flags.has(m[1]!), `${where}: --${m[1]} given twice`);
    flags.set(m[1]!, m[2] ?? 'true');
  }
  return flags;
}

function checkFlagValue(flag: string, value: string, where: string): void {
  const w = `${where}: --${flag}=${value}`;
  if (boolFlags.has(flag)) assert.match(value, /^(true|false)$/, w);
  if (flag === 'mesh-granularity') assert.ok((granularities as readonly string[]).includes(value), w);
  if (flag === 'encapsulate') assert.ok((encapsulations as readonly string[]).includes(value), w);
  if (flag === 'compatibility') assert.match(value, /^(flannel|cilium)$/, w);
  if (flag === 'log-level') assert.match(value, /^(all|debug|info|warn|error|none)$/, w);
  if (flag === 'subnet' || flag === 'service-cidr' || flag === 'internal-cidr') assert.ok(Cidr.tryParse(value), w);
  if (flag === 'listen') assert.equal(parseListenAddress('listen', value).port, 1107, w);
}

const daemonSets = docs.filter((d) => d.doc.kind === 'DaemonSet');

test('the kernel, userspace and k3s-flannel manifests each hold one kg DaemonSet', () => {
  assert.deepEqual(daemonSets.map((d) => d.file).sort(), [
    'kilo-k3s-flannel.yaml',
    'kilo-kernel.yaml',
    'kilo-userspace.yaml',
  ]);
});

for (const { file, doc: ds } of daemonSets) {
  describe(`${file}: the kg DaemonSet`, () => {
    const pod = ds.spec.template.spec;
    const kg = pod.containers.find((c: Doc) => c.name === 'kilo');
    const mounts = new Map<string, Doc>(kg.volumeMounts.map((m: Doc) => [m.mountPath, m]));
    const volumes = new Map<string, Doc>(pod.volumes.map((v: Doc) => [v.name, v]));
    const hostPathAt = (mountPath: string) => volumes.get(mounts.get(mountPath)?.name)?.hostPath;

    test('runs as the RBAC ServiceAccount, in its namespace, on the host network', () => {
      const sa = one('ServiceAccount', 'kilo-rbac.yaml');
      assert.equal(pod.serviceAccountName, sa.metadata.name);
      assert.equal(ds.metadata.namespace, sa.metadata.namespace);
      assert.equal(pod.hostNetwork, true);
      for (const [k, v] of Object.entries(ds.spec.selector.matchLabels))
        assert.equal(ds.spec.template.metadata.labels[k], v, k);
    });

    test('gives kg the time its stop takes: a pass under way, then clean-up (docs/shutdown.md)', () => {
      assert.ok(
        pod.terminationGracePeriodSeconds >= 90,
        `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds}`,
      );
    });

    test("runs kg (the image's entrypoint) with Kilo's flags only", () => {
      assert.ok(kg, 'a container named kilo');
      assert.equal(kg.command, undefined, 'the entrypoint is kg');
      const flags = flagsOf(kg.args, file);
      for (const [flag, value] of flags) {
        assert.ok(kgFlags.has(flag), `${file}: kg has no flag --${flag}`);
        checkFlagValue(flag, value, file);
      }
    });

    test('every flag it passes is one our kg agent takes', () => {
      const agent = kgProgram().commands.find((c) => c.name() === 'run');
      assert.ok(agent, 'kg has its agent command');
      const options = new Set(agent.options.map((o) => o.long));
      for (const flag of flagsOf(kg.args, file).keys()) assert.ok(options.has(`--${flag}`), `${file}: --${flag}`);
      // And it accepts their values: parse them as the container would, without running the agent.
      agent.exitOverride().action(() => {});
      const args = (kg.args as string[]).map((a) => a.replace('$(NODE_NAME)', 'node-a'));
      assert.doesNotThrow(() => agent.parse(args, { from: 'user' }), file);
    });

    test('passes the node name from spec.nodeName as --hostname', () => {
      assert.equal(flagsOf(kg.args, file).get('hostname'), '$(NODE_NAME)');
      const env = kg.env.find((e: Doc) => e.name === 'NODE_NAME');
      assert.deepEqual(env?.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } });
    });

    test('probes /health on 1107 and exposes the metrics port', () => {
      for (const probe of [kg.livenessProbe, kg.readinessProbe]) {
        assert.equal(probe?.httpGet?.path, '/health');
        assert.equal(probe?.httpGet?.port, 1107);
      }
      assert.ok(kg.ports.some((p: Doc) => p.containerPort === 1107 && p.name === 'metrics'));
    });

    test('mounts the key directory, kernel modules (read-only) and the xtables lock from the host', () => {
      for (const m of kg.volumeMounts) assert.ok(volumes.has(m.name), `volume ${m.name} is defined`);
      assert.equal(hostPathAt('/var/lib/kilo')?.path, '/var/lib/kilo');
      assert.equal(hostPathAt('/lib/modules')?.path, '/lib/modules');
      assert.equal(mounts.get('/lib/modules').readOnly, true);
      assert.equal(hostPathAt('/run/xtables.lock')?.path, '/run/xtables.lock');
      assert.equal(hostPathAt('/run/xtables.lock')?.type, 'FileOrCreate');
      assert.ok(
        kg.securityContext?.privileged === true ||
          ['NET_ADMIN', 'NET_RAW'].every((c) => kg.securityContext?.capabilities?.add?.includes(c)),
        'may change the network',
      );
    });

    test('kubeconfig, when given, is a file mounted into the container', () => {
      const path = flagsOf(kg.args, file).get('kubeconfig');
      if (path === undefined) return;
      const dirs = [...mounts.keys()].filter((m) => path === m || path.startsWith(`${m}/`));
      assert.ok(dirs.length > 0, `${path} is mounted`);
    });
  });
}

describe('kilo-kernel.yaml and kilo-userspace.yaml: kg manages the CNI', () => {
  for (const file of ['kilo-kernel.yaml', 'kilo-userspace.yaml']) {
    test(`${file}: the init container installs the conflist where kg looks for it`, () => {
      const ds = one('DaemonSet', file);
      const pod = ds.spec.template.spec;
      const kg = pod.containers.find((c: Doc) => c.name === 'kilo');
      const flags = flagsOf(kg.args, file);
      assert.notEqual(flags.get('cni'), 'false');
      const cniPath = flags.get('cni-path') ?? '/etc/cni/net.d/10-kilo.conflist';
      const cniDir = cniPath.slice(0, cniPath.lastIndexOf('/'));
      const mount = kg.volumeMounts.find((m: Doc) => m.mountPath === cniDir);
      assert.ok(mount, `kg mounts ${cniDir}`);
      assert.equal(pod.volumes.find((v: Doc) => v.name === mount.name)?.hostPath?.path, cniDir);
      const install = pod.initContainers.find((c: Doc) => c.name === 'install-cni');
      const env = new Map<string, Doc>(install.env.map((e: Doc) => [e.name, e]));
      assert.equal(env.get('CNI_CONF_NAME').value, cniPath.slice(cniPath.lastIndexOf('/') + 1));
      const ref = env.get('CNI_NETWORK_CONFIG').valueFrom.configMapKeyRef;
      const cm = ofKind('ConfigMap', file).find((c) => c.metadata.name === ref.name);
      const conf = JSON.parse(cm.data[ref.key]) as { plugins: { type: string }[] };
      assert.deepEqual(
        conf.plugins.map((p) => p.type),
        ['bridge', 'portmap'],
      );
      // The init container copies these plugins out of the image.
      for (const p of conf.plugins) assert.ok(install.command.join(' ').includes(`/usr/lib/cni/${p.type}`), p.type);
    });
  }

  test('kilo-userspace.yaml gives wireguard-go /dev/net/tun', () => {
    const pod = one('DaemonSet', 'kilo-userspace.yaml').spec.template.spec;
    const kg = pod.containers.find((c: Doc) => c.name === 'kilo');
    const mount = kg.volumeMounts.find((m: Doc) => m.mountPath === '/dev/net/tun');
    assert.ok(mount);
    assert.deepEqual(pod.volumes.find((v: Doc) => v.name === mount.name)?.hostPath, {
      path: '/dev/net/tun',
      type: 'CharDevice',
    });
    assert.notEqual(
      flagsOf(kg.args, 'kilo-userspace.yaml').get('create-interface'),
      'false',
      'kg creates the interface',
    );
  });
});

test("kilo-k3s-flannel.yaml runs kg with exactly the seed's setup", () => {
  const ds = one('DaemonSet', 'kilo-k3s-flannel.yaml');
  const kg = ds.spec.template.spec.containers.find((c: Doc) => c.name === 'kilo');
  assert.deepEqual([...kg.args].sort(), [
    '--cni=false',
    '--compatibility=flannel',
    '--hostname=$(NODE_NAME)',
    '--kubeconfig=/etc/kubernetes/kubeconfig',
    '--local=false',
    '--mesh-granularity=cross',
  ]);
  const pod = ds.spec.template.spec;
  const mount = kg.volumeMounts.find((m: Doc) => m.mountPath === '/etc/kubernetes/kubeconfig');
  assert.equal(pod.volumes.find((v: Doc) => v.name === mount.name)?.hostPath?.path, '/etc/rancher/k3s/k3s.yaml');
  assert.ok(!kg.volumeMounts.some((m: Doc) => m.mountPath === '/etc/cni/net.d'), 'flannel owns the CNI configuration');
});

// ---------------------------------------------------------------------------------------------
// The webhook

describe('webhook.yaml', () => {
  const config = one('ValidatingWebhookConfiguration', 'webhook.yaml');
  const service = one('Service', 'webhook.yaml');
  const deployment = one('Deployment', 'webhook.yaml');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];

  test('validates Peer CREATE and UPDATE, AdmissionReview v1, without side effects', () => {
    assert.equal(config.webhooks.length, 1);
    const hook = config.webhooks[0];
    assert.deepEqual(hook.rules, [
      {
        apiGroups: ['kilo.squat.ai'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['peers'],
        scope: 'Cluster',
      },
    ]);
    assert.deepEqual(hook.admissionReviewVersions, ['v1']);
    assert.equal(hook.sideEffects, 'None');
    assert.equal(hook.failurePolicy, 'Fail');
  });

  test('the caBundle is a placeholder kubectl refuses until it is filled in', () => {
    const ca = config.webhooks[0].clientConfig.caBundle as string;
    assert.ok(!/^[A-Za-z0-9+/]*={0,2}$/.test(ca) || ca.length % 4 !== 0, 'not valid base64');
    assert.ok(
      readFileSync(join(dir, 'webhook.yaml'), 'utf8').includes(`s|${ca}|$(base64 -w0 ca.crt)|`),
      'says how to fill it',
    );
  });

  test('calls the Service, which reaches the port kg webhook listens on, at the path it serves', () => {
    const svc = config.webhooks[0].clientConfig.service;
    assert.deepEqual([svc.name, svc.namespace], [service.metadata.name, service.metadata.namespace]);
    assert.equal(svc.path, validatePath);
    const port = service.spec.ports.find((p: Doc) => p.port === (svc.port ?? 443));
    assert.ok(port, `the Service has port ${svc.port ?? 443}`);
    const target = container.ports.find((p: Doc) => p.name === port.targetPort || p.containerPort === port.targetPort);
    assert.ok(target, `the container has port ${port.targetPort}`);
    const flags = flagsOf(container.args.slice(1), 'webhook.yaml');
    assert.equal(parseListenAddress('listen', flags.get('listen') ?? ':8443').port, target.containerPort);
    for (const [k, v] of Object.entries(service.spec.selector))
      assert.equal(deployment.spec.template.metadata.labels[k], v);
    assert.equal(deployment.metadata.namespace, service.metadata.namespace);
  });

  test("runs `kg webhook` with that command's flags, the certificate from the mounted Secret", () => {
    assert.equal(container.command, undefined, 'the entrypoint is kg');
    assert.equal(container.args[0], 'webhook');
    const known = new Set(webhookCommand().options.map((o) => o.long!.slice(2)));
    const flags = flagsOf(container.args.slice(1), 'webhook.yaml');
    for (const f of flags.keys()) assert.ok(known.has(f), `kg webhook has no flag --${f}`);
    const secretMount = container.volumeMounts.find(
      (m: Doc) => pod.volumes.find((v: Doc) => v.name === m.name)?.secret,
    );
    assert.ok(secretMount, 'a Secret is mounted');
    for (const f of ['cert-file', 'key-file']) assert.ok(flags.get(f)?.startsWith(`${secretMount.mountPath}/`), f);
  });

  test('reads Nodes and nothing else, as its own ServiceAccount, with --check-pod-cidrs on', () => {
    const sa = one('ServiceAccount', 'webhook.yaml');
    const role = one('ClusterRole', 'webhook.yaml');
    assert.deepEqual([...grantsOf(role)].sort(), ['/nodes:list', '/nodes:watch']);
    assertBinds(one('ClusterRoleBinding', 'webhook.yaml'), role, sa);
    assert.equal(pod.serviceAccountName, sa.metadata.name);
    assert.equal(deployment.metadata.namespace, sa.metadata.namespace);
    assert.notEqual(pod.automountServiceAccountToken, false, 'the token is mounted');
    const check = webhookCommand().options.find((o) => o.long === '--check-pod-cidrs');
    assert.equal(check?.defaultValue, true, 'the check is on by default');
    const flags = flagsOf(container.args.slice(1), 'webhook.yaml');
    assert.ok(!flags.has('kubeconfig') && !flags.has('master'), 'in-cluster: the ServiceAccount token');
    assert.ok([undefined, 'true'].includes(flags.get('check-pod-cidrs')), 'not turned off');
  });

  test('probes /healthz over HTTPS on the webhook port', () => {
    for (const probe of [container.livenessProbe, container.readinessProbe]) {
      assert.equal(probe.httpGet.path, healthPath);
      assert.equal(probe.httpGet.scheme, 'HTTPS');
      assert.equal(probe.httpGet.port, container.ports.find((p: Doc) => p.name === 'webhook').containerPort);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The multi-cluster controller

describe('kilo-multicluster.yaml', () => {
  const file = 'kilo-multicluster.yaml';
  const sa = one('ServiceAccount', file);
  const role = one('ClusterRole', file);
  const binding = one('ClusterRoleBinding', file);
  const deployment = one('Deployment', file);
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];

  test('grants exactly what kg multicluster reads and writes, no wildcard', () => {
    const grants = grantsOf(role);
    const writes = (r: string) => ['create', 'delete', 'list', 'update'].map((v) => `${r}:${v}`);
    assert.deepEqual(
      [...grants].sort(),
      [
        '/nodes:list',
        '/nodes:watch',
        ...writes('/services'),
        ...writes('discovery.k8s.io/endpointslices'),
        ...writes('kilo.squat.ai/peers'),
        'kilo.squat.ai/peers:watch',
      ].sort(),
    );
  });

  test('binds that role to its ServiceAccount, which the Deployment runs as', () => {
    assertBinds(binding, role, sa);
    assert.equal(pod.serviceAccountName, sa.metadata.name);
    assert.equal(deployment.metadata.namespace, sa.metadata.namespace);
  });

  test('one replica, never two at once: one writer per link', () => {
    assert.equal(deployment.spec.replicas, 1);
    assert.equal(deployment.spec.strategy.type, 'Recreate');
  });

  test("runs `kg multicluster` with that command's flags, the remote kubeconfig from the mounted Secret", () => {
    assert.equal(container.command, undefined, 'the entrypoint is kg');
    assert.equal(container.args[0], 'multicluster');
    const known = new Set(multiclusterCommand().options.map((o) => o.long!.slice(2)));
    const flags = flagsOf(container.args.slice(1), file);
    for (const f of flags.keys()) assert.ok(known.has(f), `kg multicluster has no flag --${f}`);
    for (const f of ['service-cidr', 'remote-service-cidr']) assert.ok(Cidr.tryParse(flags.get(f)!), f);
    assert.notEqual(flags.get('name'), flags.get('remote-name'));
    const remote = flags.get('remote-kubeconfig')!;
    const mount = container.volumeMounts.find((m: Doc) => remote.startsWith(`${m.mountPath}/`));
    assert.ok(mount, `${remote} is on a mounted volume`);
    assert.ok(pod.volumes.find((v: Doc) => v.name === mount.name)?.secret?.secretName, 'from a Secret');
    assert.ok(
      readFileSync(join(dir, file), 'utf8').includes(
        `secret generic ${pod.volumes[0].secret.secretName} --from-file=kubeconfig=`,
      ),
      'says how to make the Secret',
    );
  });
});
