/**
 * What a launcher's `#!` line asks of node: `#!/usr/bin/env node` or `#!/usr/bin/env -S [NAME=VALUE
 * ...] node [FLAGS ...]`. bin/kg's sets glibc's malloc through the environment and tunes V8's heap
 * with flags, and the build trains kg's code cache under exactly those flags (V8 rejects a cache
 * made under other flags). Whatever runs a launcher through node itself (`node bin/kg ...`: the
 * lab, tests, benchmarks) runs it through `nodeCommand`, the line's environment and flags first,
 * so kg runs as the image runs it. Plain JavaScript: the build reads it before anything is compiled.
 */
import { readFileSync } from 'node:fs';

/** An assignment env makes before the program: NAME=VALUE. */
const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;

/** `launcher`'s `#!` line: env's path, the environment it sets, node's flags. */
export function nodeLaunch(launcher) {
  const line = readFileSync(launcher, 'utf8').split('\n', 1)[0] ?? '';
  const bad = (why) => new Error(`${launcher}: its first line ${why}: ${line.slice(0, 200)}`);
  const program = line.startsWith('#!') ? line.slice(2).trim() : '';
  const words = program === '' ? [] : program.split(/[ \t]+/);
  const envPath = words.shift();
  if (envPath === undefined || !/(^|\/)env$/.test(envPath)) throw bad('does not run node through env');
  // env -S splits the rest itself: quotes, escapes and ${NAME} would mean something to it; the
  // simple words kg's line needs mean the same to both.
  if (words[0] === '-S') words.shift();
  else if (words.length > 1) throw bad('passes node more than one word without env -S');
  const odd = words.find((w) => /["'\\$#]/.test(w));
  if (odd !== undefined)
    throw bad(`has ${JSON.stringify(odd)}, which env -S would read otherwise than a split on spaces`);
  const env = {};
  while (words.length > 0 && assignment.test(words[0])) {
    const [, name, value] = assignment.exec(words.shift());
    env[name] = value;
  }
  if (words.shift() !== 'node') throw bad('does not run node');
  return { envPath, env, flags: words };
}

/** The node flags of `launcher`'s `#!` line; none if it names none. */
export function nodeFlags(launcher) {
  return nodeLaunch(launcher).flags;
}

/**
 * The command that runs `launcher` as its `#!` line does, with this process's node: env with the
 * line's assignments (none: node straight), node's flags from the line, then `rest` (more of node's
 * flags, then the script; `launcher` itself by default). Append the launcher's own arguments. env
 * execs node, so the PID started is node's.
 */
export function nodeCommand(launcher, rest = [launcher]) {
  const { envPath, env, flags } = nodeLaunch(launcher);
  const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  const node = [process.execPath, ...flags, ...rest];
  return assignments.length > 0 ? [envPath, ...assignments, ...node] : node;
}
