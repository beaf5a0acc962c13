/**
 * node's flags on a launcher's `#!/usr/bin/env -S node FLAGS` line (bin/kg's tune V8's heap, and
 * the build trains kg's code cache under exactly them: V8 rejects a cache made under other flags).
 * Whatever runs a launcher through node itself (`node bin/kg ...`: the lab, tests, benchmarks)
 * passes them first, so kg runs as the image runs it. Plain JavaScript: the build reads it before
 * anything is compiled.
 */
import { readFileSync } from 'node:fs';

/** The node flags of `launcher`'s `#!` line; none if it names none. */
export function nodeFlags(launcher) {
  const shebang = readFileSync(launcher, 'utf8').split('\n', 1)[0] ?? '';
  if (!/^#!.*\bnode\b/.test(shebang))
    throw new Error(`${launcher}: its first line does not run node: ${shebang.slice(0, 100)}`);
  return shebang
    .replace(/^#!.*?\bnode\b/, '')
    .split(' ')
    .filter(Boolean);
}

/** `launcher` as node's arguments, its own flags first: `[process.execPath, ...nodeArgv(bin/kg), ...args]`. */
export function nodeArgv(launcher) {
  return [...nodeFlags(launcher), launcher];
}
