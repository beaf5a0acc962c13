import { pino } from 'pino';
import type { Logger } from '../backend/source.js';

import type { LogLevel } from './log-levels.js';

export { logLevels, type LogLevel } from './log-levels.js';

const pinoLevel = (level: LogLevel): string => (level === 'all' ? 'trace' : level === 'none' ? 'silent' : level);

/** Structured JSON logs on stderr (stdout stays free for command output). */
export function createLogger(level: LogLevel): Logger & { child(bindings: object): Logger } {
  return pino(
    { level: pinoLevel(level), base: { component: 'kg' }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination(2),
  );
}
