/**
 * `npm run test:image`: what the built image holds (docs/image.md#what-is-in-the-image). At most
 * 150 MB uncompressed; no package both in the bundle and in node_modules; the packages the bundle
 * leaves outside load (Graphviz's WebAssembly, yaml; prom-client is the DaemonSet runs' /metrics);
 * kg and kgctl take the code caches the build trained with the base's node, with the image's
 * (stripped) node; and the tools kg runs are there and start.
 *
 * Needs the image (built by `npm run image`, which `npm run test:image` runs first) and buildah.
 * Set KILO_IMAGE to test another tag.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { nodeLaunch } from '../../scripts/node-flags.mjs';
import { buildah } from './kubelet.js';

const root = join(import.meta.dirname, '..', '..');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const image = process.env['KILO_IMAGE'] ?? `ghcr.io/kilo-ts/kilo-ts:${version}`;

/** issue 37's bound, in buildah's units (`buildah images` says MB for 10^6 bytes). */
const maxBytes = 150_000_000;

/** Runs argv in the image's root (chrooted), with the image's PATH (and `env`). */
function inImage(
  rootfs: string,
  argv: string[],
  input?: string,
  env: Record<string, string> = {},
): { status: number | null; stdout: string; stderr: string } {
  return spawnSync('chroot', [rootfs, ...argv], {
    encoding: 'utf8',
    input,
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', NODE_ENV: 'production', ...env },
    timeout: 60_000,
  });
}

/** The packages of a node_modules directory, scoped ones as `@scope/name`, nested ones too. */
function packagesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((e) => !e.startsWith('.'))
    .flatMap((e) => (e.startsWith('@') ? readdirSync(join(dir, e)).map((s) => `${e}/${s}`) : [e]))
    .flatMap((p) => [p, ...packagesIn(join(dir, p, 'node_modules'))]);
}

/** Two nodes of two locations and a Peer, as YAML (the yaml package reads it). */
const cluster = [
  'apiVersion: v1',
  'kind: List',
  'items:',
  ...[0, 1].flatMap((i) => [
    '- apiVersion: v1',
    '  kind: Node',
    '  metadata:',
    `    name: node-${i}`,
    `    labels: {topology.kubernetes.io/region: region-${i}}`,
    '    annotations:',
    `      kilo.squat.ai/key: ${Buffer.alloc(32, i + 1).toString('base64')}`,
    `      kilo.squat.ai/endpoint: 100.64.0.${i + 1}:51820`,
    `      kilo.squat.ai/internal-ip: 172.16.${i}.1/24`,
    "      kilo.squat.ai/last-seen: '1764662400'",
    `  spec: {podCIDR: 10.42.${i}.0/24}`,
  ]),
  '',
].join('\n');

describe(`the image ${image}`, () => {
  let ctr = '';
  let rootfs = '';
  before(() => {
    ctr = buildah(['from', '--pull-never', image]);
    rootfs = buildah(['mount', ctr]);
  });
  // Its own writable copy of the image, removed (with its mount) however the tests went.
  after(() => {
    if (ctr) spawnSync('buildah', ['rm', ctr], { timeout: 60_000 });
  });

  test(`is at most ${maxBytes / 1e6} MB uncompressed`, () => {
    const manifest = JSON.parse(
      (JSON.parse(buildah(['inspect', '--type', 'image', image])) as { Manifest: string }).Manifest,
    ) as { layers: { size: number }[] };
    const bytes = manifest.layers.reduce((sum, l) => sum + l.size, 0);
    assert.ok(bytes <= maxBytes, `${(bytes / 1e6).toFixed(1)} MB > ${maxBytes / 1e6} MB (docs/image.md)`);
  });

  test('holds no package in node_modules that the bundle already carries', () => {
    // esbuild names each bundled module's file in a comment: `// node_modules/zod/v4/core/core.js`.
    const cli = join(rootfs, 'app', 'dist', 'cli');
    const bundled = new Set(
      readdirSync(cli)
        .filter((f) => f.endsWith('.cjs'))
        .flatMap((f) => [
          ...readFileSync(join(cli, f), 'utf8').matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm),
        ])
        .map((m) => m[1]!),
    );
    assert.ok(bundled.has('@kubernetes/client-node') && bundled.has('zod'), `the bundle: ${[...bundled].join(', ')}`);
    const installed = packagesIn(join(rootfs, 'app', 'node_modules'));
    assert.deepEqual(
      installed.filter((p) => bundled.has(p)),
      [],
      `node_modules holds ${installed.join(', ')}`,
    );
  });

  test('runs the packages the bundle leaves outside: Graphviz (kgctl graph -o svg) and yaml', () => {
    writeFileSync(join(rootfs, 'tmp', 'cluster.yaml'), cluster);
    const svg = inImage(rootfs, ['/app/bin/kgctl', 'graph', '--cluster', '/tmp/cluster.yaml', '-o', 'svg']);
    assert.equal(svg.status, 0, svg.stderr);
    assert.match(svg.stdout, /<svg[\s\S]*node&#45;1[\s\S]*<\/svg>/);
    const plan = inImage(rootfs, ['/app/bin/kgctl', 'plan', 'node-0', '--cluster', '/tmp/cluster.yaml', '-o', 'yaml']);
    assert.equal(plan.status, 0, plan.stderr);
    assert.match(plan.stdout, /10\.42\.1\.0\/24/);
  });

  test("takes the code caches the build trained (the image's node, stripped, is the same V8)", () => {
    // Asked of the loaders as the image runs them: /app/bin/kg through its #! line (env -S with
    // glibc's malloc settings, node with the V8 flags the cache was trained under), which must
    // reach node; a module required first asks.
    writeFileSync(
      join(rootfs, 'tmp', 'kg-probe.cjs'),
      "const k = require('/app/dist/cli/kg.js'); process.on('exit', () => process.stderr.write('\\n' + JSON.stringify({ rejected: k.codeCacheRejected(), env: process.env, flags: process.execArgv })));",
    );
    const kg = inImage(rootfs, ['/app/bin/kg', '--version'], undefined, {
      NODE_OPTIONS: '--require=/tmp/kg-probe.cjs',
    });
    assert.equal(kg.status, 0, kg.stderr);
    const got = JSON.parse(kg.stderr.slice(kg.stderr.lastIndexOf('\n') + 1)) as {
      rejected: boolean;
      env: Record<string, string>;
      flags: string[];
    };
    assert.equal(got.rejected, false, `kg: ${kg.stderr}`);
    const { env, flags } = nodeLaunch(join(root, 'bin', 'kg'));
    assert.equal(got.env['MALLOC_ARENA_MAX'], '2');
    for (const [name, value] of Object.entries(env)) assert.equal(got.env[name], value, name);
    assert.deepEqual(got.flags, flags);
  });

  test('has the tools kg runs, each starting', () => {
    for (const argv of [
      ['sh', '-c', 'echo sh'],
      ['ip', '-V'],
      ['iptables', '-V'],
      ['iptables-legacy', '-V'],
      ['ip6tables-restore', '-V'],
      ['nft', '--version'],
      ['wg', '--version'],
      ['wireguard-go', '--version'],
      ['modprobe', '--version'],
      ['cat', '/etc/passwd'],
      ['env', '-S', 'node -e 0'],
    ]) {
      const r = inImage(rootfs, argv);
      assert.equal(r.status, 0, `${argv.join(' ')}: ${r.stderr}`);
    }
  });
});
