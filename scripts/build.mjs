/**
 * `npm run build`: bin/kg and bin/kgctl each load one ES module, dist/cli/kg.js and
 * dist/cli/kgctl.js, bundled from src/ by esbuild. Node reads, resolves and compiles every module
 * file separately: unbundled, `kgctl plan` loaded about 200 files (zod alone 99) before doing any
 * work, a third of its whole time at 5,000 nodes. Each `import()` of a command's body stays a
 * separate chunk (dist/chunks/), loaded only when that command runs.
 *
 *   node scripts/build.mjs [--without-lab] [--outdir DIR] [--metafile FILE]
 *
 * --without-lab (the image): `kg lab` stays an import of ../lab/command.js, which the image does not
 * have, so there it says the lab is not part of it; the build fails if any file of src/lab got in.
 * Type checking is `npm run typecheck`'s: esbuild only strips the types.
 */
import { build, transform } from 'esbuild';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const withoutLab = args.includes('--without-lab');
const outdirAt = args.indexOf('--outdir');
const outdir = outdirAt >= 0 ? args[outdirAt + 1] : join(root, 'dist');
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

const result = await build({
  absWorkingDir: root,
  entryPoints: ['src/cli/kg.ts', 'src/cli/kgctl.ts'],
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

if (withoutLab) {
  const lab = Object.keys(result.metafile.inputs).filter((f) => f.startsWith('src/lab/'));
  if (lab.length > 0) {
    console.error(`build --without-lab: the bundle holds ${lab.join(', ')} (${relative(root, outdir)})`);
    process.exit(1);
  }
}
// Files of earlier builds (chunks are named by content) go once the new ones are in place, so that
// a kg or kgctl running meanwhile never finds its entry gone.
const written = new Set(Object.keys(result.metafile.outputs).map((o) => join(root, o)));
for (const dir of ['cli', 'chunks'].map((d) => join(outdir, d)))
  for (const name of existsSync(dir) ? readdirSync(dir) : [])
    if (!written.has(join(dir, name)) && !written.has(join(dir, name.replace(/\.map$/, ''))))
      rmSync(join(dir, name), { force: true });
// What went where, and which import is static: test/imports.test.ts reads it.
if (metafileAt >= 0) writeFileSync(args[metafileAt + 1], JSON.stringify(result.metafile));
