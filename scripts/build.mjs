/**
 * `npm run build`: bin/kg and bin/kgctl each load one module, dist/cli/kg.js and dist/cli/kgctl.js,
 * bundled from src/ by esbuild. Node reads, resolves and compiles every module file separately:
 * unbundled, `kgctl plan` loaded about 200 files (zod alone 99) before doing any work, a third of
 * its whole time at 5,000 nodes.
 *
 * kg is an ES module: each `import()` of a command's body stays a separate chunk (dist/chunks/),
 * loaded only when that command runs.
 *
 * kgctl is one CommonJS script (dist/cli/kgctl-HASH.cjs), which dist/cli/kgctl.js compiles with a
 * V8 code cache the build writes after training runs (src/cli/kgctl-start.ts): Node 20 caches no
 * compiled ES module, and every start parsed the bundle, then compiled each function the plan ran,
 * ~40 ms of CPU in `kgctl plan` at 5,000 nodes (~0.35 s in all). Its lazy commands are in the script
 * too, evaluated only when they run; the two packages only they use, the Kubernetes client and
 * pino, are files beside it (dist/cli/kgctl-*.cjs), required when needed: in the script, the
 * client's 3 MB made every start ~50 ms slower even with the cache.
 *
 *   node scripts/build.mjs [--without-lab] [--outdir DIR] [--metafile FILE]
 *
 * --without-lab (the image): `kg lab` stays an import of ../lab/command.js, which the image does not
 * have, so there it says the lab is not part of it; the build fails if any file of src/lab got in.
 * Type checking is `npm run typecheck`'s: esbuild only strips the types.
 */
import { build, transform } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const withoutLab = args.includes('--without-lab');
const outdirAt = args.indexOf('--outdir');
const outdir = outdirAt >= 0 ? resolve(args[outdirAt + 1]) : join(root, 'dist');
const metafileAt = args.indexOf('--metafile');

/**
 * Bundled: small pure-JavaScript packages that every start loads, and the Kubernetes client (in the
 * chunk of the commands that talk to an API server): loaded from node_modules its 2,600 modules
 * cost `kg run` about 80 MB of RSS, bundled about 27. pino too: its 20 files took `kg apply` ~38 ms
 * of CPU to resolve and compile, bundled ~22; only its transports (which kilo-ts does not use) need
 * its files, run by name in worker threads. The rest stay in node_modules: prom-client and
 * Graphviz's WebAssembly are loaded only by the commands that use them, and the lab's tools by the lab.
 */
const bundled = new Set(['commander', 'zod', 'ipaddr.js', 'pino', '@kubernetes/client-node']);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((p) => !bundled.has(p));

/** `kg lab`'s door (src/cli/kg.ts), left as an import of a file the image does not have. */
const leaveOutLab = {
  name: 'leave-out-lab',
  setup(b) {
    b.onResolve({ filter: /\/lab\/command\.js$/ }, (a) => ({ path: a.path, external: true }));
  },
};

/**
 * Third-party code without its comments and indentation. V8 keeps a script's whole source for as
 * long as any of its functions lives (lazy compilation, toString): the Kubernetes client's chunk
 * was 5 MB of text, held as 9.5 MB because a few comments' non-ASCII characters made it a two-byte
 * string, in every agent for as long as it runs. Names stay (stack traces), and so do our own
 * sources' lines. zod keeps its indentation: minified whitespace loses the `@__PURE__` marks its
 * tree shaking relies on, and every kgctl and kg start then built all of zod's schema classes
 * (its chunk 77 → 147 KB); without it the comments go all the same.
 */
const compactThirdParty = {
  name: 'compact-third-party',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.(?:js|cjs|mjs)$/ }, async (a) => {
      const source = lazyChildProcess(a.path, readFileSync(a.path, 'utf8'));
      const { code } = await transform(source, {
        loader: 'js',
        minifyWhitespace: !/[\\/]node_modules[\\/]zod[\\/]/.test(a.path),
        charset: 'ascii',
        sourcefile: a.path,
      });
      return { contents: code, loader: 'js' };
    });
  },
};

/**
 * commander requires node:child_process (which loads net, dgram and their bindings, ~4 ms) when it
 * loads, for the executable subcommands kilo-ts does not have: it is required on first use instead.
 */
function lazyChildProcess(path, source) {
  if (!/[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/.test(path)) return source;
  const eager = "const childProcess = require('node:child_process');";
  if (!source.includes(eager)) throw new Error(`build: ${path} no longer requires node:child_process as expected`);
  return source.replace(eager, "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };");
}

const bundle = (entry) =>
  build({
    absWorkingDir: root,
    entryPoints: [entry],
    outbase: 'src',
    outdir,
    entryNames: '[dir]/[name]',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external,
    plugins: withoutLab ? [leaveOutLab, compactThirdParty] : [compactThirdParty],
    // commander is CommonJS and requires node:events: an ES module has no `require` of its own.
    banner: {
      js: "import { createRequire as __kiloRequire } from 'node:module';\nconst require = __kiloRequire(import.meta.url);",
    },
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
/** kgctl's packages that only lazy commands use: each a CommonJS file beside the script, not in it. */
const kgctlApart = { '@kubernetes/client-node': 'kgctl-kubernetes.cjs', pino: 'kgctl-pino.cjs' };

const cjs = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  metafile: true,
  logLevel: 'warning',
};

/** kgctl: the script, the packages apart, the entry that compiles the script with its code cache, the training. */
async function bundleKgctl() {
  const cli = join(outdir, 'cli');
  const script = await build({
    ...cjs,
    absWorkingDir: root,
    entryPoints: ['src/cli/kgctl.ts'],
    outfile: join(cli, 'kgctl.cjs'),
    external,
    plugins: [
      {
        name: 'kgctl-apart',
        setup(b) {
          b.onResolve({ filter: /^(@kubernetes\/client-node|pino)$/ }, (a) => ({
            path: `./${kgctlApart[a.path]}`,
            external: true,
          }));
        },
      },
      compactThirdParty,
    ],
    // The loader wraps the script in a function: strict, as the ES modules it is built from.
    banner: { js: `"use strict";\nconst __kiloImportMetaUrl = require("node:url").pathToFileURL(__filename).href;` },
    define: { 'import.meta.url': '__kiloImportMetaUrl', 'import.meta.dirname': '__dirname' },
    // import() of a package left outside (yaml, Graphviz) becomes require(): a script compiled with
    // a code cache has no dynamic import callback (and Node 20's for vm scripts is experimental).
    supported: { 'dynamic-import': false },
    sourcemap: 'external',
    write: false,
  });
  // Named by content, and its cache with it: V8 checks a cache against the source's length only.
  const js = script.outputFiles.find((f) => f.path.endsWith('.cjs'));
  const map = script.outputFiles.find((f) => f.path.endsWith('.map'));
  const apart = await Promise.all(
    Object.entries(kgctlApart).map(([pkg, file]) =>
      build({
        ...cjs,
        absWorkingDir: root,
        stdin: { contents: apartEntry(pkg, js.text), resolveDir: root, loader: 'js' },
        outfile: join(cli, file),
        plugins: [compactThirdParty],
      }),
    ),
  );
  const name = `kgctl-${createHash('sha256').update(js.contents).digest('hex').slice(0, 12)}.cjs`;
  writeFileSync(join(cli, name), `${js.text}//# sourceMappingURL=${name}.map\n`);
  writeFileSync(join(cli, `${name}.map`), map.contents);
  for (const ext of ['', '.map']) {
    const key = relative(root, join(cli, `kgctl.cjs${ext}`));
    script.metafile.outputs[relative(root, join(cli, `${name}${ext}`))] = script.metafile.outputs[key];
    delete script.metafile.outputs[key];
  }
  const start = await build({
    absWorkingDir: root,
    entryPoints: ['src/cli/kgctl-start.ts'],
    outfile: join(cli, 'kgctl.js'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    define: { KGCTL_BUNDLE: JSON.stringify(name) },
    metafile: true,
    logLevel: 'warning',
  });
  train(join(cli, 'kgctl.js'));
  return {
    metafile: {
      inputs: Object.assign({}, ...[...apart, script, start].map((r) => r.metafile.inputs)),
      outputs: Object.assign({}, ...[...apart, script, start].map((r) => r.metafile.outputs)),
    },
    // Not in the metafile, written above: the cache.
    extra: [join(cli, name.replace(/\.cjs$/, '.cache'))],
  };
}

/**
 * A package apart: the Kubernetes client is an ES module, whose every export a CommonJS file would
 * keep (7 MB instead of 3), so only the names the script reads.
 */
function apartEntry(pkg, script) {
  if (pkg !== '@kubernetes/client-node') return `module.exports = require(${JSON.stringify(pkg)});`;
  const names = [...new Set([...script.matchAll(/\bimport_client_node\d*\.(\w+)/g)].map((m) => m[1]))];
  if (names.length === 0)
    throw new Error('build: kgctl reads nothing of the Kubernetes client, or no longer as expected');
  return `export { ${names.join(', ')} } from '@kubernetes/client-node';`;
}

/**
 * Runs kgctl's commands on a small cluster, then writes the code cache of everything they compiled.
 * In a process of its own with no V8 flags, as bin/kgctl runs: V8 rejects a cache made under others.
 */
function train(entry) {
  const dir = mkdtempSync(join(tmpdir(), 'kts-build-'));
  try {
    const cluster = join(dir, 'cluster.json');
    writeFileSync(cluster, JSON.stringify(trainingCluster()));
    const runs = [
      ['plan', 'node-00', '--cluster', cluster, '-o', 'json'],
      ['plan', 'node-05', '--cluster', cluster, '-o', 'text'],
      ['showconf', 'node', 'node-01', '--cluster', cluster],
      ['graph', '--cluster', cluster],
    ];
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import(${JSON.stringify(pathToFileURL(entry).href)}).then((m) => m.writeCodeCache(${JSON.stringify(runs)}))`,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] },
    );
    // A kgctl error sets the exit code; a warning of Node's own (NODE_OPTIONS) is no failure.
    if (r.status !== 0) throw new Error(`build: kgctl's training failed (${r.status}): ${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Twelve nodes in three locations of a cross mesh, and a Peer: every step of a plan runs. */
function trainingCluster() {
  const key = (i) => Buffer.alloc(32, i + 1).toString('base64');
  const items = [];
  for (let i = 0; i < 12; i++)
    items.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `node-${String(i).padStart(2, '0')}`,
        labels: { 'topology.kubernetes.io/region': `region-${i % 3}` },
        annotations: {
          'kilo.squat.ai/key': key(i),
          'kilo.squat.ai/endpoint': `100.64.0.${i + 1}:51820`,
          'kilo.squat.ai/internal-ip': `172.16.${i % 3}.${i + 1}/24`,
          'kilo.squat.ai/last-seen': '1764662400',
          'kilo.squat.ai/granularity': 'cross',
        },
      },
      spec: { podCIDR: `10.42.${i}.0/24` },
    });
  items.push({
    apiVersion: 'kilo.squat.ai/v1alpha1',
    kind: 'Peer',
    metadata: { name: 'peer-0' },
    spec: { allowedIPs: ['10.5.0.1/32'], publicKey: key(100), persistentKeepalive: 10 },
  });
  return { apiVersion: 'v1', kind: 'List', items };
}

const results = await Promise.all([bundle('src/cli/kg.ts'), bundleKgctl()]);
// One metafile for both: a chunk both write is the same file (named by its content).
const result = {
  metafile: {
    inputs: Object.assign({}, ...results.map((r) => r.metafile.inputs)),
    outputs: Object.assign({}, ...results.map((r) => r.metafile.outputs)),
  },
};

if (withoutLab) {
  const lab = Object.keys(result.metafile.inputs).filter((f) => f.startsWith('src/lab/'));
  if (lab.length > 0) {
    console.error(`build --without-lab: the bundle holds ${lab.join(', ')} (${relative(root, outdir)})`);
    process.exit(1);
  }
}
// Files of earlier builds (chunks are named by content) go once the new ones are in place, so that
// a kg or kgctl running meanwhile never finds its entry gone.
const written = new Set([
  ...Object.keys(result.metafile.outputs).map((o) => join(root, o)),
  ...results.flatMap((r) => r.extra ?? []),
]);
for (const dir of ['cli', 'chunks'].map((d) => join(outdir, d)))
  for (const name of existsSync(dir) ? readdirSync(dir) : [])
    if (!written.has(join(dir, name))) rmSync(join(dir, name), { force: true });
// What went where, and which import is static: test/imports.test.ts reads it.
if (metafileAt >= 0) writeFileSync(args[metafileAt + 1], JSON.stringify(result.metafile));
