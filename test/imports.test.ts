/**
 * The dependency direction of src/ (ARCHITECTURE.md, "What each folder may import") and of the lab
 * (packages/lab, a workspace package beside the product), read from the sources' import graph: every import, export-from and dynamic import(), type-only ones included
 * (a type pointing the wrong way is a dependency pointing the wrong way).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import ts from 'typescript';
import { nodeCommand, nodeFlags } from '../scripts/node-flags.mjs';

const root = join(import.meta.dirname, '..');

interface Edge {
  to: string;
  dynamic: boolean;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : name.endsWith('.ts') ? [p] : [];
  });
}

/** A file's imports of other files of the repository, as paths relative to it. */
function importsOf(file: string): Edge[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const edges: Edge[] = [];
  const add = (spec: ts.Expression | undefined, dynamic: boolean): void => {
    if (spec === undefined || !ts.isStringLiteralLike(spec) || !spec.text.startsWith('.')) return;
    const to = relative(root, resolve(dirname(join(root, file)), spec.text)).replace(/\.js$/, '.ts');
    edges.push({ to, dynamic });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier, false);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      add(node.arguments[0], true);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, false);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

/** The lab: a workspace package, which imports the product's modules by relative path. */
const labDir = 'packages/lab';
const inLab = (file: string): boolean => file.startsWith(`${labDir}/`);

const graph = new Map(
  [...sources(join(root, 'src')), ...sources(join(root, labDir))].map((f) => [
    relative(root, f),
    importsOf(relative(root, f)),
  ]),
);
/** The folder of src/ a file is in (src/mesh/plan.ts: mesh); '' for files outside src/. */
const folderOf = (file: string): string => (file.startsWith('src/') ? file.split('/')[1]! : '');

/** The one door from the product into the lab: `kg lab`, loaded only when it runs. */
const labDoor = { from: 'src/cli/kg.ts', to: `${labDir}/src/command.ts` };

/** The files reachable from an entry point, with the import chain that reaches each. */
function reachable(entry: string): Map<string, string[]> {
  const chains = new Map<string, string[]>([[entry, [entry]]]);
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const { to, dynamic } of graph.get(file) ?? []) {
      if (dynamic && file === labDoor.from && to === labDoor.to) continue;
      if (chains.has(to)) continue;
      chains.set(to, [...chains.get(file)!, to]);
      queue.push(to);
    }
  }
  return chains;
}

describe('the agent and kgctl do not carry the lab', () => {
  for (const entry of ['src/cli/kg.ts', 'src/cli/kgctl.ts'])
    test(`nothing under ${labDir} is reachable from ${entry}`, () => {
      const chains = reachable(entry);
      assert.ok(chains.has('src/agent/agent.ts') || entry.endsWith('kgctl.ts'), 'the walk reaches the agent');
      assert.ok(chains.has('src/mesh/plan.ts'), 'the walk reaches the plan');
      const lab = [...chains].filter(([f]) => inLab(f)).map(([, chain]) => chain.join(' → '));
      assert.deepEqual(lab, [], `the import chains into ${labDir}`);
    });

  test('kg reaches the lab only through the dynamic import of `kg lab`', () => {
    assert.ok(graph.has(labDoor.to), `the walk reads ${labDir}`);
    const door = graph.get(labDoor.from)!.filter((e) => inLab(e.to));
    assert.deepEqual(door, [{ to: labDoor.to, dynamic: true }]);
    const others = [...graph]
      .filter(([from]) => !inLab(from) && from !== labDoor.from)
      .flatMap(([from, edges]) => edges.filter((e) => inLab(e.to)).map((e) => `${from} → ${e.to}`));
    assert.deepEqual(others, [], 'only the lab imports the lab');
  });
});

/**
 * What each folder of src/ may import besides itself (a folder, or one file of it). The pure core
 * (net, model, mesh) imports no I/O; the dataplane never decides topology, so it does not import
 * the agent; nothing of the product imports the lab (above); and no folder imports, through others,
 * one that imports it.
 */
export const mayImport: Record<string, string[]> = {
  net: [],
  model: ['net'],
  host: ['net'],
  wireguard: ['net'],
  encapsulation: ['net', 'model', 'host'],
  mesh: ['net', 'model', 'encapsulation'],
  graph: ['mesh'],
  backend: ['net', 'model'],
  dataplane: ['net', 'model', 'host', 'mesh', 'wireguard'],
  election: ['net', 'model', 'host', 'mesh', 'backend'],
  agent: ['net', 'model', 'host', 'encapsulation', 'mesh', 'wireguard', 'graph', 'backend', 'dataplane', 'election'],
  multicluster: ['net', 'model', 'mesh', 'backend'],
  cli: [
    'net',
    'model',
    'host',
    'encapsulation',
    'mesh',
    'wireguard',
    'graph',
    'backend',
    'dataplane',
    'election',
    'agent',
    'multicluster',
  ],
};

/**
 * What the lab (packages/lab) may import of the repository besides itself: the product's folders
 * but cli and graph (it runs agents and kg, and checks their plans), and the node flags of bin/'s
 * #! lines, which it passes when it runs kg through node.
 */
export const labMayImport = [...mayImport['cli']!.filter((f) => f !== 'graph'), 'scripts/node-flags.mjs'];

test('each folder of src/ imports only what ARCHITECTURE.md allows it', () => {
  const folders = new Set([...graph.keys()].filter((f) => !inLab(f)).map(folderOf));
  assert.deepEqual(
    [...folders].filter((f) => !(f in mayImport)),
    [],
    'every folder has a rule',
  );
  const wrong: string[] = [];
  for (const [from, edges] of graph) {
    if (inLab(from)) continue;
    for (const { to } of edges) {
      const [a, b] = [folderOf(from), folderOf(to)];
      if (a === b || mayImport[a]!.includes(b) || mayImport[a]!.includes(to)) continue;
      if (from === labDoor.from && to === labDoor.to) continue;
      wrong.push(`${from} → ${to}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test(`${labDir} imports of the repository only itself and what its rule allows`, () => {
  const edges = [...graph].filter(([from]) => inLab(from)).flatMap(([from, e]) => e.map(({ to }) => ({ from, to })));
  assert.ok(
    edges.some(({ to }) => folderOf(to) === 'agent'),
    'the walk sees the lab import the product',
  );
  const wrong = edges
    .filter(({ to }) => !inLab(to) && !labMayImport.includes(folderOf(to)) && !labMayImport.includes(to))
    .map(({ from, to }) => `${from} → ${to}`);
  assert.deepEqual(wrong, []);
});

/** A cycle of `edges` (its first folder repeated at its end), or null when there is none. */
export function findCycle(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] | null {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (folder: string): string[] | null => {
    const at = path.indexOf(folder);
    if (at >= 0) return [...path.slice(at), folder];
    if (done.has(folder)) return null;
    path.push(folder);
    for (const to of [...(edges.get(folder) ?? [])].sort()) {
      const cycle = visit(to);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(folder);
    return null;
  };
  for (const folder of [...edges.keys()].sort()) {
    const cycle = visit(folder);
    if (cycle) return cycle;
  }
  return null;
}

/** Folder → the other folders of src/ it imports: every edge of the graph, the lab's door included. */
function folderGraph(): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const [from, imports] of graph)
    for (const { to } of imports) {
      const [a, b] = [folderOf(from), folderOf(to)];
      if (a === b || !to.startsWith('src/')) continue;
      edges.set(a, (edges.get(a) ?? new Set()).add(b));
    }
  return edges;
}

describe('the folders of src/ import each other without a cycle', () => {
  test('findCycle finds the cycle mesh → election → mesh had, and none once it is cut', () => {
    const before = new Map([
      ['mesh', new Set(['election', 'model'])],
      ['election', new Set(['mesh', 'backend'])],
      ['backend', new Set(['model'])],
    ]);
    assert.deepEqual(findCycle(before), ['election', 'mesh', 'election']);
    before.get('mesh')!.delete('election');
    assert.equal(findCycle(before), null);
  });

  test('the imports have no cycle of folders', () => {
    const edges = folderGraph();
    assert.ok(edges.get('agent')?.has('mesh'), 'the graph has the folders');
    assert.equal(findCycle(edges)?.join(' → ') ?? null, null);
  });

  test('the rules allow no cycle of folders', () => {
    const rules = new Map(
      Object.entries(mayImport).map(([folder, allowed]) => [
        folder,
        // A file of src/ stands for its folder; a file outside src/ (scripts/) is no folder of it.
        new Set(allowed.flatMap((a) => (!a.includes('/') ? [a] : a.startsWith('src/') ? [folderOf(a)] : []))),
      ]),
    );
    assert.equal(findCycle(rules)?.join(' → ') ?? null, null);
  });
});

test('ARCHITECTURE.md states the same rules', () => {
  const whole = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const start = whole.indexOf('\n## What each folder may import\n');
  assert.ok(start >= 0, 'ARCHITECTURE.md has the section');
  const doc = whole.slice(start, whole.indexOf('\n## ', start + 1));
  for (const [folder, allowed] of Object.entries(mayImport)) {
    const line = new RegExp(`^\\| \`src/${folder}/\` +\\| (.*?) +\\|$`, 'm').exec(doc);
    assert.ok(line, `ARCHITECTURE.md has a row for src/${folder}/ in "What each folder may import"`);
    const named = line[1] === 'nothing' ? [] : line[1]!.split(', ').map((s) => s.replace(/`/g, ''));
    assert.deepEqual(named, allowed, `src/${folder}/`);
  }
});

/** The packages a file imports for its values at load time (not type-only, not import()). */
function staticPackagesOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  return source.statements.flatMap((s) =>
    ts.isImportDeclaration(s) &&
    !s.importClause?.isTypeOnly &&
    ts.isStringLiteralLike(s.moduleSpecifier) &&
    !s.moduleSpecifier.text.startsWith('.')
      ? [s.moduleSpecifier.text]
      : [],
  );
}

/** The files an entry point loads before any command runs: static imports only. */
function loadedAtStart(entry: string): Map<string, string[]> {
  const chains = new Map<string, string[]>([[entry, [entry]]]);
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift())
    for (const { to } of (graph.get(file) ?? []).filter((e) => !e.dynamic && !isTypeOnly(file, e.to))) {
      if (chains.has(to)) continue;
      chains.set(to, [...chains.get(file)!, to]);
      queue.push(to);
    }
  return chains;
}

/** True when every import of `to` in `from` is `import type` (erased at build). */
function isTypeOnly(from: string, to: string): boolean {
  const source = ts.createSourceFile(from, readFileSync(join(root, from), 'utf8'), ts.ScriptTarget.Latest, false);
  const target = (spec: string) => relative(root, resolve(dirname(join(root, from)), spec)).replace(/\.js$/, '.ts');
  const imports = source.statements.filter(
    (s): s is ts.ImportDeclaration | ts.ExportDeclaration =>
      (ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) &&
      s.moduleSpecifier !== undefined &&
      ts.isStringLiteralLike(s.moduleSpecifier) &&
      target(s.moduleSpecifier.text) === to,
  );
  return (
    imports.length > 0 &&
    imports.every((s) => (ts.isImportDeclaration(s) ? (s.importClause?.isTypeOnly ?? false) : s.isTypeOnly))
  );
}

// The Kubernetes client takes seconds and ~80 MB to load; prom-client is the agent's and the webhook's.
const heavy: Record<string, string[]> = {
  'src/cli/kg.ts': ['@kubernetes/client-node', 'prom-client', '@hpcc-js/wasm-graphviz'],
  // node:crypto takes ~10 ms: kgctl's plan and graph touch no key; node:child_process ~4 ms.
  'src/cli/kgctl.ts': [
    '@kubernetes/client-node',
    'prom-client',
    '@hpcc-js/wasm-graphviz',
    'pino',
    'node:crypto',
    'node:child_process',
  ],
};

describe('kg and kgctl start without what only some commands use', () => {
  for (const [entry, packages] of Object.entries(heavy))
    test(`${entry} loads none of ${packages.join(', ')} at start`, () => {
      const chains = loadedAtStart(entry);
      assert.ok(chains.has('src/mesh/compute.ts') || chains.has('src/cli/apply.ts'), 'the walk reaches the commands');
      const found = [...chains].flatMap(([file, chain]) =>
        staticPackagesOf(file)
          .filter((p) => packages.includes(p))
          .map((p) => `${chain.join(' → ')} → ${p}`),
      );
      assert.deepEqual(found, []);
    });
});

interface Metafile {
  inputs: Record<string, unknown>;
  outputs: Record<
    string,
    { imports: { path: string; kind: string; external?: boolean }[]; inputs: Record<string, unknown> }
  >;
}

/** Three nodes in two locations: a snapshot to plan from. */
function threeNodes(): string {
  const node = (name: string, i: number) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'topology.kubernetes.io/region': `region-${i % 2}` },
      annotations: {
        'kilo.squat.ai/key': Buffer.alloc(32, i + 1).toString('base64'),
        'kilo.squat.ai/endpoint': `100.64.0.${i + 1}:51820`,
        'kilo.squat.ai/internal-ip': `172.16.${i % 2}.${i + 1}/24`,
        'kilo.squat.ai/last-seen': '1764662400',
      },
    },
    spec: { podCIDR: `10.42.${i}.0/24` },
  });
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: ['a', 'b', 'c'].map(node) });
}

/** The bundle as the image has it (scripts/build.mjs --without-lab): what the source graph above promises, in the artifact. */
describe('the bundle the image runs', () => {
  let dir: string;
  let meta: Metafile;
  let cluster: string;
  let probe: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kts-bundle-'));
    const r = spawnSync(
      process.execPath,
      [
        join(root, 'scripts', 'build.mjs'),
        '--without-lab',
        '--outdir',
        join(dir, 'dist'),
        '--metafile',
        join(dir, 'meta.json'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    // bin/ and package.json beside that dist/, to run kg as the image does.
    cpSync(join(root, 'bin'), join(dir, 'bin'), { recursive: true });
    cpSync(join(root, 'package.json'), join(dir, 'package.json'));
    meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Metafile;
    cluster = join(dir, 'cluster.json');
    writeFileSync(cluster, threeNodes());
    probe = join(dir, 'probe.cjs');
    // At exit, on a line of its own: the files required (the packages kept apart are files beside
    // the scripts), the built-in modules loaded, and in which order the command helper was started
    // (`/bin/sh -s`) and a bundle compiled (kg's start reads both from the modules patched here).
    writeFileSync(
      probe,
      [
        'const order = [];',
        'const patched = new Set();',
        'const builtin = process.getBuiltinModule;',
        'process.getBuiltinModule = function (id) {',
        '  const m = builtin.call(process, id);',
        "  if (id === 'node:child_process' && !patched.has(id)) {",
        '    const spawn = m.spawn;',
        "    m.spawn = function (file, args) { if (file === '/bin/sh' && args && args[0] === '-s') order.push('helper'); return spawn.apply(this, arguments); };",
        "  } else if (id === 'node:vm' && !patched.has(id))",
        "    m.Script = class extends m.Script { constructor(...a) { order.push('bundle'); super(...a); } };",
        '  patched.add(id);',
        '  return m;',
        '};',
        // And whether V8 took kg's code cache, asked of the loader bin/kg required.
        "const rejected = () => { const kg = Object.keys(require.cache).find((f) => f.endsWith('/dist/cli/kg.js')); return kg && require.cache[kg].exports.codeCacheRejected(); };",
        "process.on('exit', () => process.stderr.write('\\n' + JSON.stringify([Object.keys(require.cache), process.moduleLoadList, order, rejected()])));",
      ].join('\n'),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test(`holds no file of ${labDir}`, () => {
    assert.ok(Object.keys(meta.inputs).includes('src/mesh/plan.ts'), 'the bundle holds the plan');
    assert.deepEqual(
      Object.keys(meta.inputs).filter((f) => f.startsWith('packages/lab/')),
      [],
    );
  });

  const key = (o: string) => relative(dir, join(root, o));
  /** The packages bundled into the files of `outputs`. */
  const bundledIn = (outputs: Iterable<string>) =>
    [...outputs].flatMap((o) =>
      Object.keys(meta.outputs[o]!.inputs).flatMap((f) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f)?.[1] ?? []),
    );

  test('kgctl is one script that holds none of the packages only some commands use', () => {
    const scripts = Object.keys(meta.outputs).filter((o) => /^dist\/cli\/kgctl-[0-9a-f]+\.cjs$/.test(key(o)));
    assert.equal(scripts.length, 1, 'the bundle has one kgctl script');
    assert.ok(Object.keys(meta.outputs[scripts[0]!]!.inputs).includes('src/mesh/plan.ts'), 'the script holds the plan');
    assert.deepEqual(
      [...new Set(bundledIn(scripts))].filter((p) => heavy['src/cli/kgctl.ts']!.includes(p)),
      [],
    );
  });

  test('kgctl plan loads none of the packages only some commands use, nor node:crypto or node:child_process', () => {
    const entry = pathToFileURL(join(dir, 'dist', 'cli', 'kgctl.js')).href;
    const r = spawnSync(
      process.execPath,
      [
        '--require',
        probe,
        '-e',
        `import(${JSON.stringify(entry)}).then((m) => m.main(process.argv.slice(1)))`,
        '--',
      ].concat(['plan', 'a', '--cluster', cluster, '-o', 'json']),
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const [files, builtins] = JSON.parse(r.stderr) as [string[], string[]];
    assert.ok(JSON.parse(r.stdout).node === 'a', 'the plan printed');
    assert.deepEqual(
      files.filter((f) => /node_modules|(kubernetes|kgctl-pino)\.cjs$/.test(f)),
      [],
    );
    assert.deepEqual(
      builtins.filter((b) => /^NativeModule (crypto|child_process)$/.test(b)),
      [],
    );
  });

  test('kg is one script that holds none of the packages only some commands use', () => {
    const scripts = Object.keys(meta.outputs).filter((o) => /^dist\/cli\/kg-[0-9a-f]+\.cjs$/.test(key(o)));
    assert.equal(scripts.length, 1, 'the bundle has one kg script');
    assert.ok(Object.keys(meta.outputs[scripts[0]!]!.inputs).includes('src/cli/apply.ts'), 'the script holds kg apply');
    assert.deepEqual(
      [...new Set(bundledIn(scripts))].filter((p) => heavy['src/cli/kg.ts']!.includes(p)),
      [],
    );
  });

  test('kg apply and the agent start their command helper before the bundle; help and other commands start none', () => {
    const entry = pathToFileURL(join(dir, 'dist', 'cli', 'kg.js')).href;
    // A flag no command has: each stops at commander's usage error, before it runs anything.
    const cases: [string[], string[]][] = [
      [['--help'], ['bundle']],
      [['apply', '--help'], ['bundle']],
      [['--no-such-flag', '--help'], ['bundle']],
      [['webhook', '--no-such-flag'], ['bundle']],
      [
        ['apply', '--no-such-flag'],
        ['helper', 'bundle'],
      ],
      [
        ['run', '--no-such-flag'],
        ['helper', 'bundle'],
      ],
      [['--no-such-flag'], ['helper', 'bundle']],
    ];
    for (const [argv, expected] of cases) {
      const r = spawnSync(
        process.execPath,
        [
          '--require',
          probe,
          '--input-type=module',
          '-e',
          `const kg = await import(${JSON.stringify(entry)}); await kg.main(${JSON.stringify(argv)})`,
        ],
        { encoding: 'utf8' },
      );
      const [, , order] = JSON.parse(r.stderr.slice(r.stderr.lastIndexOf('\n[') + 1)) as [unknown, unknown, string[]];
      assert.deepEqual(order, expected, argv.join(' '));
    }
  });

  test("kg apply, run as bin/kg runs it, loads no ES module, starts its helper first, loads none of the agent's packages nor node:crypto nor pino, and takes its code cache", () => {
    // bin/kg's environment and V8 flags: the build trained kg apply's code cache under the flags, and V8 takes it only under the same.
    const flags = nodeFlags(join(root, 'bin', 'kg'));
    assert.ok(flags.length > 0, "bin/kg's #! line names node's flags");
    // A node the snapshot does not hold: kg apply reads and plans the snapshot, then stops before any
    // write. The node's key is there already, as on every apply but the first.
    const key = join(dir, 'key');
    writeFileSync(key, `${Buffer.alloc(32, 9).toString('base64')}\n`, { mode: 0o600 });
    const argv = ['apply', '--cluster', cluster, '--hostname', 'nosuch', '--key-file', key, '--interface', 'ktsprobe0'];
    const [file, ...args] = nodeCommand(join(root, 'bin', 'kg'), ['--require', probe, join(dir, 'bin', 'kg')]);
    const r = spawnSync(file, [...args, ...argv], { encoding: 'utf8' });
    assert.match(r.stderr, /node "nosuch" not found among the 3 valid Nodes/);
    const [files, builtins, order, rejected] = JSON.parse(r.stderr.slice(r.stderr.lastIndexOf('\n[') + 1)) as [
      string[],
      string[],
      string[],
      boolean,
    ];
    assert.equal(rejected, false, 'V8 took the code cache');
    // bin/kg and the loader are CommonJS: no ES module (Node's ES module loader costs ~8 ms first).
    assert.deepEqual(
      builtins.filter((b) => b === 'NativeModule internal/modules/esm/module_job'),
      [],
    );
    // Started while kg loads, it is there for kg apply's first read.
    assert.deepEqual(order, ['helper', 'bundle'], 'the command helper is started before the bundle is loaded');
    assert.deepEqual(
      files.filter((f) => /node_modules|kubernetes\.cjs$/.test(f)),
      [],
    );
    // The Kubernetes client's, the metrics' and the webhook's; node:crypto (~10 ms) only for a key;
    // pino's worker_threads and assert only with the first line logged (src/agent/log.ts).
    assert.deepEqual(
      builtins.filter((b) => /^NativeModule (https?|http2|tls|crypto|worker_threads|assert)$/.test(b)),
      [],
    );
  });
});
