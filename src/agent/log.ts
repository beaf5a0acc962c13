import type * as Pino from 'pino';
import type { Logger } from '../backend/source.js';

import { logs, type LogLevel } from './log-levels.js';

export { logLevels, type LogLevel } from './log-levels.js';

const pinoLevel = (level: LogLevel): string => (level === 'all' ? 'trace' : level === 'none' ? 'silent' : level);

/**
 * pino, loaded by the first line written, not when kg loads (docs/performance.md#lazy-loading).
 * Required, not import()ed: the line is written when it is logged. kg's bundle is CommonJS
 * (scripts/build.mjs), where esbuild bundles this `require`; run from source (an ES module) there is
 * no `require`, and pino comes from node_modules.
 */
function load(): typeof Pino.pino {
  const pino =
    typeof require === 'function'
      ? // eslint-disable-next-line @typescript-eslint/no-require-imports
        (require('pino') as typeof Pino)
      : (process.getBuiltinModule('node:module').createRequire(import.meta.url)('pino') as typeof Pino);
  return pino.pino;
}

/**
 * Structured JSON logs on stderr (stdout stays free for command output). `sync`: each line written
 * before the call returns, for a process that ends itself at once when done (kg apply).
 */
export function createLogger(level: LogLevel, options: { sync?: boolean } = {}): Logger {
  let out: Logger | undefined;
  const pino = (): Logger => {
    if (out) return out;
    const p = load();
    return (out = p(
      { level: pinoLevel(level), base: { component: 'kg' }, timestamp: p.stdTimeFunctions.isoTime },
      p.destination(options.sync ? { dest: 2, sync: true } : 2),
    ));
  };
  const method =
    (name: keyof Logger) =>
    (obj: object, msg: string): void => {
      if (logs(level, name)) pino()[name](obj, msg);
    };
  return { debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error') };
}
