/**
 * The image's node_modules: only the packages the bundle leaves outside (scripts/build.mjs's
 * external ones: the metrics, YAML output, Graphviz's WebAssembly) and what they depend on. The
 * bundle already carries the rest: a production `npm prune` kept all of them, the Kubernetes client's
 * 57 MB among them, which no `require` of dist/ ever reaches (docs/image.md).
 *
 *   node scripts/image-node-modules.mjs DIST FROM TO
 *
 * Reads every script of DIST/cli for `require("PACKAGE")`, follows each package's dependencies in
 * FROM (a node_modules), and copies them to TO. A package a script requires that FROM does not
 * have is one the bundled code tries and does without (ws's bufferutil, node-fetch's encoding), as
 * it did with the full node_modules: it is named on stderr, not copied.
 */
import { builtinModules } from 'node:module';
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dist, from, to] = process.argv.slice(2);
if (!dist || !from || !to) {
  console.error('usage: node scripts/image-node-modules.mjs DIST FROM TO');
  process.exit(2);
}

const builtins = new Set(builtinModules);
/** `@scope/name` or `name` of a bare specifier; null for a builtin or a relative path. */
function packageOf(specifier) {
  if (specifier.startsWith('node:') || specifier.startsWith('.') || specifier.startsWith('/')) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return builtins.has(name) ? null : name;
}

const cli = join(dist, 'cli');
const required = new Set();
for (const file of readdirSync(cli).filter((f) => /\.c?js$/.test(f)))
  for (const m of readFileSync(join(cli, file), 'utf8').matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)) {
    const name = packageOf(m[1]);
    if (name) required.add(name);
  }

/**
 * The closure, as Node resolves it: a dependency is looked up in the node_modules beside its
 * dependent first, then in each one above it, up to FROM's. A nested one comes with the directory
 * of the package that holds it; only FROM's own packages are copied one by one.
 */
const copied = new Set();
const missing = [];
const seen = new Set();
const queue = [...required].map((name) => ({ name, dirs: [from] }));
while (queue.length > 0) {
  const { name, dirs } = queue.shift();
  const at = dirs.find((d) => existsSync(join(d, name, 'package.json')));
  if (at === undefined) {
    missing.push(name);
    continue;
  }
  const dir = join(at, name);
  if (seen.has(dir)) continue;
  seen.add(dir);
  if (at === from) copied.add(name);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies }))
    queue.push({ name: dep, dirs: [join(dir, 'node_modules'), ...dirs] });
}
for (const name of [...copied].sort()) cpSync(join(from, name), join(to, name), { recursive: true });
console.error(`image-node-modules: ${[...copied].sort().join(', ')}`);
if (missing.length > 0)
  console.error(`image-node-modules: required but not installed: ${[...new Set(missing)].sort().join(', ')}`);
