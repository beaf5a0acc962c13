/**
 * The kgctl command lines of Kilo's own documentation and end-to-end scripts (squat/kilo: README.md,
 * docs/*.md, e2e/*.sh), run through a shell as a Kilo user runs them: the built kgctl on PATH, its
 * output piped into kubectl, against two lab API servers. Each form is written here from reading
 * those files, with the file it comes from; each must mean what it means with Kilo's kgctl, and the
 * same as the form with every flag after the subcommand.
 *
 * Not here: `kgctl connect` (Kilo's docs/kgctl.md, e2e/kgctl.sh) joins the host's network and needs
 * root; its flag forms are parsed in flag-positions.test.ts, and test/e2e runs connect itself.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TestApiServer } from '../fixtures/apiserver.js';
import { node, peer, wgKey } from '../helpers/cluster.js';
import { Annotation } from '../../src/model/annotations.js';
import { skipUnless } from '../helpers/requirements.js';
import { ensureBuilt, root } from './built.js';

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
if (!hasKubectl)
  console.error('SKIPPED: kubectl is not installed (Debian: kubernetes-client); the multi-cluster forms do not run');

let api1: TestApiServer;
let api2: TestApiServer;
let dir = '';
let env: NodeJS.ProcessEnv = {};

/**
 * Runs `script` with bash -e -o pipefail (`plain`: as a user's shell runs it, where a failing command
 * in a loop does not stop it), kgctl and circo on PATH; fails the test on a non-zero exit.
 */
function sh(script: string, plain = false): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [...(plain ? [] : ['-e', '-o', 'pipefail']), '-c', script],
      { cwd: dir, env, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${script}\nexit ${String(error.code)}: ${stderr}\nstdout: ${stdout}`));
        else resolve(stdout);
      },
    );
  });
}

before(async () => {
  ensureBuilt();
  [api1, api2] = await Promise.all([TestApiServer.start(), TestApiServer.start()]);
  const now = Math.floor(Date.now() / 1000);
  // Cluster 1 announces location granularity (two locations), cluster 2 full (one location):
  // both as in Kilo's e2e (location-mesh.sh, full-mesh.sh).
  const nodes1 = [
    ['a', 'eu', '10.42.0.0/24', '192.168.0.1/24'],
    ['b', 'eu', '10.42.1.0/24', '192.168.0.2/24'],
    ['c', 'us', '10.42.2.0/24', '192.168.1.3/24'],
  ] as const;
  nodes1.forEach(([name, location, podCIDR, internalIP], i) =>
    api1.addNode(
      node(name, {
        location,
        podCIDR,
        internalIP,
        endpoint: `198.51.100.${i + 1}:51820`,
        granularity: 'location',
        lastSeen: now,
      }),
    ),
  );
  for (const [name, podCIDR, i] of [
    ['x', '10.52.0.0/24', 1],
    ['y', '10.52.1.0/24', 2],
  ] as const)
    api2.addNode(
      node(name, {
        location: 'asia',
        podCIDR,
        internalIP: `192.168.9.${i}/24`,
        endpoint: `203.0.113.${i}:51820`,
        granularity: 'full',
        lastSeen: now,
        // Its own WireGuard subnet, as two clusters joined must have (announced as a kilo-ts agent does).
        annotations: { [Annotation.meshFlags]: JSON.stringify({ subnet: '10.14.0.0/16' }) },
      }),
    );
  api1.addPeer(peer('squat', { allowedIPs: ['10.5.0.1/32'] }));
  api2.addPeer(peer('laptop', { allowedIPs: ['10.6.0.1/32'] }));

  dir = mkdtempSync(join(tmpdir(), 'kgctl-kilo-docs-'));
  writeFileSync(join(dir, 'kubeconfig-1'), api1.kubeconfigYaml());
  writeFileSync(join(dir, 'kubeconfig-2'), api2.kubeconfigYaml());
  // kgctl as installed; circo as Graphviz's (the same Graphviz, compiled to WebAssembly).
  writeFileSync(join(dir, 'kgctl'), `#!/bin/sh\nexec '${process.execPath}' '${join(root, 'bin', 'kgctl')}' "$@"\n`);
  const graphviz = import.meta.resolve('@hpcc-js/wasm-graphviz');
  writeFileSync(
    join(dir, 'circo.mjs'),
    [
      `import { Graphviz } from ${JSON.stringify(graphviz)};`,
      `if (process.argv[2] !== '-Tsvg') throw new Error('this circo draws -Tsvg only');`,
      'let dot = "";',
      'for await (const chunk of process.stdin) dot += chunk;',
      "process.stdout.write((await Graphviz.load()).layout(dot, 'svg', 'circo'));",
    ].join('\n'),
  );
  writeFileSync(join(dir, 'circo'), `#!/bin/sh\nexec '${process.execPath}' '${join(dir, 'circo.mjs')}' "$@"\n`);
  chmodSync(join(dir, 'kgctl'), 0o755);
  chmodSync(join(dir, 'circo'), 0o755);
  env = {
    ...process.env,
    PATH: `${dir}:${process.env['PATH'] ?? ''}`,
    HOME: dir,
    KUBECONFIG: join(dir, 'kubeconfig-1'),
    KUBECONFIG1: join(dir, 'kubeconfig-1'),
    KUBECONFIG2: join(dir, 'kubeconfig-2'),
    SERVICECIDR1: '10.43.0.0/16',
    SERVICECIDR2: '10.53.0.0/16',
  };
});

after(async () => {
  await Promise.all([api1?.close(), api2?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const peerKeys = new Set(['PublicKey', 'PresharedKey', 'AllowedIPs', 'Endpoint', 'PersistentKeepalive']);
const interfaceKeys = new Set(['PrivateKey', 'ListenPort', 'FwMark']);

/** The keys of a wg(8) configuration (what `wg setconf` reads): anything else is an error there. */
function assertWgSetconf(ini: string): void {
  let section = '';
  for (const line of ini.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    if (/^\[(Interface|Peer)\]$/.test(line)) section = line;
    else {
      const key = line.split('=')[0]!.trim();
      assert.ok((section === '[Peer]' ? peerKeys : interfaceKeys).has(key), `${section} ${key}: wg setconf refuses it`);
    }
  }
}

describe("Kilo's documented kgctl command lines, unchanged", () => {
  test('README.md, docs/vpn.md, docs/vpn-server.md: showconf peer NAME > peer.ini, a file wg setconf reads', async () => {
    // $KUBECONFIG names cluster 1, as a Kilo user's shell does.
    await sh('PEER=squat; kgctl showconf peer $PEER > peer.ini');
    const ini = readFileSync(join(dir, 'peer.ini'), 'utf8');
    assertWgSetconf(ini);
    // One [Peer] per location of cluster 1 (eu, us).
    assert.equal(ini.match(/^\[Peer\]$/gm)?.length, 2, ini);
    assert.equal(ini, await sh('kgctl showconf peer squat --kubeconfig $KUBECONFIG1'));
  });

  test("docs/vpn.md: the routes loop reads showconf peer's AllowedIPs with grep and cut", async () => {
    const ips = (
      await sh(`PEER=squat
        for ip in $(kgctl showconf peer $PEER | grep AllowedIPs | cut -f 3- -d ' ' | tr -d ','); do
          echo "$ip"
        done`)
    )
      .trim()
      .split('\n');
    for (const cidr of ['10.42.0.0/24', '10.42.1.0/24', '10.42.2.0/24']) assert.ok(ips.includes(cidr), ips.join(' '));
    for (const ip of ips) assert.match(ip, /^[0-9.]+\/\d+$/);
  });

  test('README.md, docs/kgctl.md, docs/topology.md: kgctl graph | circo -Tsvg > cluster.svg', async () => {
    const dot = await sh('kgctl graph');
    assert.match(dot, /^digraph kilo \{/);
    await sh('kgctl graph | circo -Tsvg > cluster.svg');
    const svg = readFileSync(join(dir, 'cluster.svg'), 'utf8');
    assert.match(svg, /<svg[\s>]/);
    for (const name of ['a', 'b', 'c', 'squat']) assert.match(svg, new RegExp(`<title>[^<]*\\b${name}\\b`), name);
  });

  test('docs/kgctl.md: showconf node NODE prints the INI its agent sets', async () => {
    const ini = await sh('NODE=a; kgctl showconf node $NODE');
    assert.match(ini, /^\[Interface\]\nListenPort = 51820$/m);
    assert.equal(ini.match(/^\[Peer\]$/gm)?.length, 2, ini);
    assert.equal(ini, await sh('kgctl showconf node a --kubeconfig=$KUBECONFIG1'));
  });

  test('e2e/location-mesh.sh, e2e/full-mesh.sh: kgctl --kubeconfig=… graph, auto as the announced granularity', async () => {
    const k1 = await sh('kgctl --kubeconfig="$KUBECONFIG1" graph');
    assert.equal(k1, await sh('kgctl --kubeconfig="$KUBECONFIG1" graph --mesh-granularity location'));
    const k2 = await sh('kgctl --kubeconfig="$KUBECONFIG2" graph');
    assert.equal(k2, await sh('kgctl --kubeconfig="$KUBECONFIG2" graph --mesh-granularity full'));
    // The flag is read: the other granularity draws another graph.
    assert.notEqual(k2, await sh('kgctl --kubeconfig="$KUBECONFIG2" graph --mesh-granularity location'));
    assert.equal(k2, await sh('kgctl --mesh-granularity=full graph --kubeconfig "$KUBECONFIG2"'));
  });

  test('e2e/lib.sh: kgctl --kubeconfig=… showconf peer PEER --mesh-granularity=G, auto the same', async () => {
    for (const [kubeconfig, name, granularity] of [
      ['$KUBECONFIG1', 'squat', 'location'],
      ['$KUBECONFIG2', 'laptop', 'full'],
    ] as const) {
      await sh(
        `kgctl --kubeconfig=${kubeconfig} showconf peer ${name} --mesh-granularity=${granularity} > ${name}.ini`,
      );
      const ini = readFileSync(join(dir, `${name}.ini`), 'utf8');
      assertWgSetconf(ini);
      assert.equal(ini, await sh(`kgctl --kubeconfig=${kubeconfig} showconf peer ${name}`));
      assert.equal(
        ini,
        await sh(`kgctl --mesh-granularity ${granularity} --kubeconfig ${kubeconfig} showconf peer ${name}`),
      );
    }
    // Full granularity: a [Peer] per node of cluster 2 (x and y), where location would merge them.
    assert.equal(readFileSync(join(dir, 'laptop.ini'), 'utf8').match(/^\[Peer\]$/gm)?.length, 2);
  });

  // Last: these add each cluster's nodes as Peers of the other, which the forms above would then show.
  test(
    'README.md, docs/multi-cluster-services.md, e2e/multi-cluster.sh: each node of one cluster as a Peer of the other, both ways',
    { skip: skipUnless(hasKubectl, 'needs kubectl (Debian: kubernetes-client)') },
    async () => {
      // The loop over `kubectl get no -o name`, flags before the subcommand, piped into kubectl apply.
      // Node b follows a in location eu: as with Kilo's kgctl, it is no Peer (showconf says it is no
      // leader and prints nothing, so that kubectl applies nothing), and the loop goes on.
      await sh(
        `
        for n in $(kubectl --kubeconfig $KUBECONFIG1 get no -o name | cut -d'/' -f2); do
          kgctl --kubeconfig $KUBECONFIG1 showconf node $n --as-peer -o yaml --allowed-ips $SERVICECIDR1 | kubectl --kubeconfig $KUBECONFIG2 apply -f -
        done
        for n in $(kubectl --kubeconfig $KUBECONFIG2 get no -o name | cut -d'/' -f2); do
          kgctl --kubeconfig $KUBECONFIG2 showconf node $n --as-peer -o yaml --allowed-ips $SERVICECIDR2 | kubectl --kubeconfig $KUBECONFIG1 apply -f -
        done`,
        true,
      );
      // Cluster 2 now has cluster 1's nodes as Peers, and back; each with its service range.
      for (const [to, from, cidr] of [
        [api2, ['a', 'c'], '10.43.0.0/16'],
        [api1, ['x', 'y'], '10.53.0.0/16'],
      ] as const) {
        for (const name of from) {
          const spec = to.peer(name)?.spec as { publicKey?: string; allowedIPs?: string[] } | undefined;
          assert.equal(spec?.publicKey, wgKey(name), `Peer ${name}`);
          assert.ok(spec?.allowedIPs?.includes(cidr), `Peer ${name}: ${spec?.allowedIPs?.join(', ')}`);
        }
      }
      assert.equal(api2.peer('b'), undefined);
      // The leader of a location carries its location's pod ranges (a and b are one location).
      const eu = (api2.peer('a')?.spec as { allowedIPs: string[] }).allowedIPs;
      assert.ok(eu.includes('10.42.0.0/24') && eu.includes('10.42.1.0/24'), eu.join(', '));
      // The same as every flag after the subcommand.
      const before = await sh(
        'kgctl --kubeconfig $KUBECONFIG1 showconf node a --as-peer -o yaml --allowed-ips $SERVICECIDR1',
      );
      const afterForm = await sh(
        'kgctl showconf node a --as-peer -o yaml --allowed-ips $SERVICECIDR1 --kubeconfig $KUBECONFIG1',
      );
      assert.equal(before, afterForm);
      assert.match(before, /^kind: Peer$/m);
    },
  );

  test(
    'docs/kgctl.md: showconf node --as-peer --output yaml into the other cluster',
    { skip: skipUnless(hasKubectl, 'needs kubectl (Debian: kubernetes-client)') },
    async () => {
      const out = await sh(
        'NODE=x; kgctl --kubeconfig $KUBECONFIG2 showconf node $NODE --as-peer --output yaml | kubectl --kubeconfig $KUBECONFIG1 apply -f -',
      );
      assert.match(out, /^peer\.kilo\.squat\.ai\/x (created|configured|unchanged)$/m);
      assert.equal(
        await sh('kgctl --kubeconfig $KUBECONFIG2 showconf node x --as-peer --output yaml'),
        await sh('kgctl showconf node x --as-peer --output=yaml --kubeconfig=$KUBECONFIG2'),
      );
    },
  );
});
