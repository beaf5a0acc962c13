/**
 * system-packages.txt is the one list of Debian packages: README's setup line installs exactly its
 * runtime and dev packages, .ci/run the same (through scripts/system-packages.sh), and the Dockerfile
 * its runtime and image packages, with the list and its reader inside the build context.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The list's packages of the given roles, read here independently of the shell script. */
function listed(...roles: string[]): string[] {
  return read('system-packages.txt')
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .map((line) => line.split(/\s+/))
    .filter(([name, role]) => name && role && roles.includes(role))
    .map(([name]) => name!);
}

/** What a `$(…)` in an install command expands to, run from the repository's root as CI and docker do. */
function expand(line: string): string[] {
  const sub = /\$\(([^)]*)\)/.exec(line);
  assert.ok(sub, `the install command uses the list: ${line}`);
  return execFileSync('sh', ['-c', sub[1]!], { cwd: root, encoding: 'utf8' }).trim().split(/\s+/);
}

/** The (first) line that installs packages; in README, the setup step's (the one that builds). */
function installLine(text: string, file: string, building = false): string {
  const line = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .find((l) => /apt-get install/.test(l) && (!building || /npm run build\s*$/.test(l)));
  assert.ok(line, `${file} installs packages`);
  return line;
}

test('the list names every package once, each with a known role', () => {
  const rows = read('system-packages.txt')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'));
  const names = rows.map((r) => r.split(/\s+/)[0]);
  assert.equal(new Set(names).size, names.length);
  for (const r of rows)
    assert.match(r, /^[a-z0-9.+-]+\s+(runtime|image|dev)\s+# \S/, `row "${r}" has a role and a why`);
  assert.ok(listed('runtime').includes('wireguard-go'));
});

test("README's setup line installs the runtime and dev packages, after apt-get update", () => {
  const line = installLine(read('README.md'), 'README.md', true);
  assert.match(line, /^\s*apt-get update && apt-get install -y /);
  const packages = line
    .replace(/^.*apt-get install -y /, '')
    .replace(/&&.*$/, '')
    .trim()
    .split(/\s+/);
  assert.deepEqual(packages, listed('runtime', 'dev'));
});

test('.ci/run installs the runtime and dev packages, after apt-get update', () => {
  const text = read('.ci/run');
  assert.ok(text.indexOf('apt-get update') < text.indexOf('apt-get install'));
  assert.deepEqual(expand(installLine(text, '.ci/run')), listed('runtime', 'dev'));
});

test('the Dockerfile installs the runtime and image packages from files in its build context', () => {
  const text = read('Dockerfile');
  const finalStage = text.slice(text.lastIndexOf('\nFROM '));
  // The image is what scripts/image-rootfs.sh copies out of the stage that installs them.
  const system = text.slice(text.indexOf(' AS system\n'), text.lastIndexOf('\nFROM '));
  assert.deepEqual(expand(installLine(system, 'Dockerfile')), listed('runtime', 'image'));
  assert.match(finalStage, /^\nFROM scratch\nCOPY --from=system \/rootfs \/\n/);
  // Every file the image copies from the context must survive .dockerignore (last matching rule wins).
  const rules = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const negated = l.startsWith('!');
      const glob = (negated ? l.slice(1) : l).replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*');
      return { negated, re: new RegExp(`^${glob}(/.*)?$`) };
    });
  const ignored = (path: string): boolean => rules.reduce((out, r) => (r.re.test(path) ? !r.negated : out), false);
  const copied = [...text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
  assert.ok(copied.includes('system-packages.txt') && copied.includes('scripts/system-packages.sh'));
  for (const path of copied) assert.ok(!ignored(path), `${path} is in the build context`);
  assert.ok(ignored('scripts/demo.sh'), 'the rules are read: other scripts stay out');
});

test('the reader refuses to run without a role', () => {
  assert.throws(() => execFileSync(join(root, 'scripts', 'system-packages.sh'), { stdio: 'pipe' }), /usage/);
});
