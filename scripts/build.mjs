/**
 * `npm run build`: bin/kg and bin/kgctl each load one module, dist/cli/kg.js and dist/cli/kgctl.js,
 * bundled from src/ by esbuild. Node reads, resolves and compiles every module file separately:
 * unbundled, `kgctl plan` loaded about 200 files (zod alone 99) before doing any work, a third of
 * its whole time at 5,000 nodes.
 *
 * Each is one CommonJS script (dist/cli/NAME-HASH.cjs), which dist/cli/NAME.js compiles with a V8
 * code cache the build writes after training runs (src/cli/code-cache.ts, NAME-start.ts): Node 20
 * caches no compiled ES module, and every start parsed the bundle, then compiled each function the
 * command ran: ~40 ms of CPU in `kgctl plan` at 5,000 nodes (~0.35 s in all), ~80 ms in `kg apply`.
 * Their lazy commands are in the script too, evaluated only when they run; the packages only those
 * use are files beside it, required when needed: the Kubernetes client (dist/cli/kubernetes.cjs,
 * both CLIs'; in a script, its 3 MB made every start ~50 ms slower even with the cache) and, for
 * kgctl, pino (kg apply logs: kg keeps it in its script).
 *
 * kg's training runs `kg apply` against an in-memory machine (src/cli/kg-training.ts), under the V8
 * flags of bin/kg's `#!` line, read from there: V8 rejects a cache made under other flags (the
 * image's build stage has bin/ for this). Two caches: kg apply's, made under kgctl's one-shot
 * interrupt budget, and the agent's and other commands', under V8's default (kg-start.ts).
 *
 *   node scripts/build.mjs [--without-lab] [--outdir DIR] [--metafile FILE]
 *
 * --without-lab (the image): `kg lab` stays an import of packages/lab/src/command.js, which the image
 * does not have, so there it says the lab is not part of it; the build fails if any file of
 * packages/lab got in. Without it, kg's script holds the lab (a workspace package, packages/lab), as
 * lazy as the other commands.
 * Type checking is `npm run typecheck`'s: esbuild only strips the types.
 */
import { build, transform } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { nodeFlags } from './node-flags.mjs';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const withoutLab = args.includes('--without-lab');
const outdirAt = args.indexOf('--outdir');
const outdir = outdirAt >= 0 ? resolve(args[outdirAt + 1]) : join(root, 'dist');
const metafileAt = args.indexOf('--metafile');

/**
 * Bundled: small pure-JavaScript packages that every start loads, and the Kubernetes client (in a
 * file apart, for the commands that talk to an API server): loaded from node_modules its 2,600 modules
 * cost `kg run` about 80 MB of RSS, bundled about 27. pino too: its 20 files took `kg apply` ~38 ms
 * of CPU to resolve and compile, bundled ~22; only its transports (which kilo-ts does not use) need
 * its files, run by name in worker threads. The rest stay in node_modules: prom-client and
 * Graphviz's WebAssembly are loaded only by the commands that use them, and the lab's own packages
 * (packages/lab/package.json; not in the image, which has no packages/) by the lab.
 */
const bundled = new Set(['commander', 'zod', 'ipaddr.js', 'pino', '@kubernetes/client-node']);
const packageJson = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const pkg = packageJson(root);
const labDir = join(root, 'packages', 'lab');
const lab = existsSync(join(labDir, 'package.json')) ? packageJson(labDir) : {};
const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies, ...lab.dependencies }).filter(
  (p) => !bundled.has(p),
);

/** `kg lab`'s door (src/cli/kg.ts), left as an import of a file the image does not have. */
const leaveOutLab = {
  name: 'leave-out-lab',
  setup(b) {
    b.onResolve({ filter: /\/packages\/lab\/src\/command\.js$/ }, (a) => ({ path: a.path, external: true }));
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

/** Packages that only some commands use: each a CommonJS file beside the scripts, not in them. */
const apart = { '@kubernetes/client-node': 'kubernetes.cjs', pino: 'kgctl-pino.cjs' };

/**
 * kg and kgctl: the entry that bin/ requires (src/cli/NAME-start.ts), the bundle it runs, and what
 * that bundle leaves apart. kg keeps pino in its script (kg apply logs), kgctl apart (only its
 * live commands log). kg's training runs under bin/kg's V8 flags: a cache made under others is
 * rejected.
 */
const clis = {
  kg: { start: 'src/cli/kg-start.ts', define: 'KG_BUNDLE', apart: ['@kubernetes/client-node'], train: trainKg },
  kgctl: { start: 'src/cli/kgctl-start.ts', define: 'KGCTL_BUNDLE', apart: Object.keys(apart), train: trainKgctl },
};

const cjs = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  metafile: true,
  logLevel: 'warning',
};

/** One CLI's script (not written yet: it is named by its content). */
function script(name) {
  return build({
    ...cjs,
    absWorkingDir: root,
    entryPoints: [`src/cli/${name}.ts`],
    outfile: join(outdir, 'cli', `${name}.cjs`),
    external,
    plugins: [
      {
        name: 'apart',
        setup(b) {
          b.onResolve({ filter: /^(@kubernetes\/client-node|pino)$/ }, (a) =>
            clis[name].apart.includes(a.path) ? { path: `./${apart[a.path]}`, external: true } : undefined,
          );
        },
      },
      ...(withoutLab ? [leaveOutLab] : []),
      compactThirdParty,
    ],
    // The loader wraps the script in a function: strict, as the ES modules it is built from.
    banner: { js: `"use strict";\nconst __kiloImportMetaUrl = require("node:url").pathToFileURL(__filename).href;` },
    define: {
      'import.meta.url': '__kiloImportMetaUrl',
      'import.meta.dirname': '__dirname',
      // The lab's runs from source (never from this script) resolve tsx.
      'import.meta.resolve': 'require.resolve',
    },
    // import() of a package left outside (yaml, Graphviz) becomes require(): a script compiled with
    // a code cache has no dynamic import callback (and Node 20's for vm scripts is experimental).
    // An import() of our own code stays lazy: evaluated when it runs.
    supported: { 'dynamic-import': false },
    sourcemap: 'external',
    write: false,
  });
}

/** Both CLIs: their scripts, the packages apart, the entries that run each script with its code cache, the training. */
async function bundleClis() {
  const cli = join(outdir, 'cli');
  const names = Object.keys(clis);
  const scripts = await Promise.all(names.map(script));
  const texts = scripts.map((r) => r.outputFiles.find((f) => f.path.endsWith('.cjs')).text);
  const apartFiles = await Promise.all(
    Object.entries(apart).map(([pkg, file]) =>
      build({
        ...cjs,
        absWorkingDir: root,
        stdin: { contents: apartEntry(pkg, texts), resolveDir: root, loader: 'js' },
        outfile: join(cli, file),
        plugins: [compactThirdParty],
      }),
    ),
  );
  const results = [...apartFiles];
  // dist/cli/NAME.js are CommonJS, as bin/ is (bin/package.json): a start through an ES module
  // loads Node's ES module loader first (~8 ms before kg's command helper is started, measured).
  // An ES module's import() of them still finds main and the rest (esbuild marks the exports).
  const cjsScope = join(cli, 'package.json');
  writeFileSync(cjsScope, '{ "type": "commonjs" }\n');
  const extra = [cjsScope];
  for (const [i, name] of names.entries()) {
    const r = scripts[i];
    // Named by content, and its cache with it: V8 checks a cache against the source's length only.
    const js = r.outputFiles.find((f) => f.path.endsWith('.cjs'));
    const map = r.outputFiles.find((f) => f.path.endsWith('.map'));
    const text = asciiOnly(js.text);
    const file = `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 12)}.cjs`;
    writeFileSync(join(cli, file), `${text}//# sourceMappingURL=${file}.map\n`);
    writeFileSync(join(cli, `${file}.map`), map.contents);
    for (const ext of ['', '.map']) {
      const key = relative(root, join(cli, `${name}.cjs${ext}`));
      r.metafile.outputs[relative(root, join(cli, `${file}${ext}`))] = r.metafile.outputs[key];
      delete r.metafile.outputs[key];
    }
    const start = await build({
      absWorkingDir: root,
      entryPoints: [clis[name].start],
      outfile: join(cli, `${name}.js`),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      define: { [clis[name].define]: JSON.stringify(file), 'import.meta.dirname': '__dirname' },
      metafile: true,
      logLevel: 'warning',
    });
    results.push(r, start);
    // Not in the metafile, written by the training: the caches.
    extra.push(...clis[name].train(join(cli, `${name}.js`), join(cli, file)));
  }
  return {
    metafile: {
      inputs: Object.assign({}, ...results.map((r) => r.metafile.inputs)),
      outputs: Object.assign({}, ...results.map((r) => r.metafile.outputs)),
    },
    extra,
  };
}

/**
 * The script in ASCII: one character past it (a dash in a comment of ours, a box-drawing character in
 * a regular expression) made Node read all 570 KB of kgctl's script as a two-byte string, 1.1 MB,
 * decoded and copied at every start (~2 ms of kgctl's; docs/performance.md, "kgctl plan at 5,000
 * nodes, phase by phase"). esbuild's `charset: 'ascii'` leaves comments and regular expressions
 * alone. `\uXXXX` means the same UTF-16 unit in a string, a template, a regular expression or an
 * identifier, and is text in a comment; only those lines' columns in the source map move.
 */
function asciiOnly(text) {
  return text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A package apart: the Kubernetes client is an ES module, whose every export a CommonJS file would
 * keep (7 MB instead of 3), so only the names the scripts read.
 */
function apartEntry(pkg, scripts) {
  if (pkg !== '@kubernetes/client-node') return `module.exports = require(${JSON.stringify(pkg)});`;
  const names = [
    ...new Set(scripts.flatMap((s) => [...s.matchAll(/\bimport_client_node\d*\.(\w+)/g)].map((m) => m[1]))),
  ];
  if (names.length === 0)
    throw new Error('build: kg and kgctl read nothing of the Kubernetes client, or no longer as expected');
  return `export { ${names.sort().join(', ')} } from '@kubernetes/client-node';`;
}

/** Runs `code` (an ES module's text) in a node of its own with `flags`; fails the build if it fails. */
function trainingRun(what, flags, code) {
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', code], {
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // An error sets the exit code; a warning of Node's own (NODE_OPTIONS) is no failure.
  if (r.status !== 0) throw new Error(`build: ${what}'s training failed (${r.status}): ${r.stderr}`);
}

/** In a temporary directory: the training cluster written, `f(dir)`, the directory removed. */
function withCluster(f) {
  const dir = mkdtempSync(join(tmpdir(), 'kts-build-'));
  try {
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify(trainingCluster()));
    return f(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs kgctl's commands on a small cluster, then writes the code cache of everything they compiled.
 * In a process of its own with no V8 flags, as bin/kgctl runs: V8 rejects a cache made under others.
 */
function trainKgctl(entry, script) {
  withCluster((dir) => {
    const cluster = join(dir, 'cluster.json');
    const runs = [
      ['plan', 'node-00', '--cluster', cluster, '-o', 'json'],
      ['plan', 'node-05', '--cluster', cluster, '-o', 'text'],
      ['showconf', 'node', 'node-01', '--cluster', cluster],
      ['graph', '--cluster', cluster],
    ];
    trainingRun(
      'kgctl',
      [],
      `import(${JSON.stringify(pathToFileURL(entry).href)}).then((m) => m.writeCodeCache(${JSON.stringify(runs)}))`,
    );
  });
  return [script.replace(/\.cjs$/, '.cache')];
}

/**
 * kg's two caches (src/cli/kg-start.ts): `kg apply`'s and the other commands', each written after
 * `kg apply` ran on a small cluster against an in-memory machine (src/cli/kg-training.ts), under
 * the V8 flags of bin/kg's `#!` line, as bin/kg runs.
 */
function trainKg(entry, script) {
  const flags = nodeFlags(join(root, 'bin', 'kg'));
  return withCluster((dir) =>
    ['apply', 'run'].map((command) => {
      trainingRun(
        `kg ${command}`,
        flags,
        `import(${JSON.stringify(pathToFileURL(entry).href)}).then((m) => m.writeCodeCache(${JSON.stringify(command)}, ${JSON.stringify(dir)}))`,
      );
      return script.replace(/\.cjs$/, command === 'apply' ? '.apply.cache' : '.cache');
    }),
  );
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

const result = await bundleClis();

if (withoutLab) {
  const labFiles = Object.keys(result.metafile.inputs).filter((f) => f.startsWith('packages/lab/'));
  if (labFiles.length > 0) {
    console.error(`build --without-lab: the bundle holds ${labFiles.join(', ')} (${relative(root, outdir)})`);
    process.exit(1);
  }
}
// Files of earlier builds (chunks are named by content) go once the new ones are in place, so that
// a kg or kgctl running meanwhile never finds its entry gone.
const written = new Set([...Object.keys(result.metafile.outputs).map((o) => join(root, o)), ...result.extra]);
for (const dir of ['cli', 'chunks'].map((d) => join(outdir, d)))
  for (const name of existsSync(dir) ? readdirSync(dir) : [])
    if (!written.has(join(dir, name))) rmSync(join(dir, name), { force: true });
// Earlier builds' ES module chunks: since kg is a script too, nothing is written there.
rmSync(join(outdir, 'chunks'), { recursive: true, force: true });
// What went where, and which import is static: test/imports.test.ts reads it.
if (metafileAt >= 0) writeFileSync(args[metafileAt + 1], JSON.stringify(result.metafile));
