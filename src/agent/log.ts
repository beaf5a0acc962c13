import { pino } from 'pino';
import type { Logger } from '../backend/source.js';

/** Kilo's levels: `all` logs everything, `none` nothing. */
export const logLevels = ['all', 'debug', 'info', 'warn', 'error', 'none'] as const;
export type LogLevel = (typeof logLevels)[number];

const pinoLevel = (level: LogLevel): string => (level === 'all' ? 'trace' : level === 'none' ? 'silent' : level);

/** Structured JSON logs on stderr (stdout stays free for command output). */
export function createLogger(level: LogLevel): Logger & { child(bindings: object): Logger } {
  return pino(
    { level: pinoLevel(level), base: { component: 'kg' }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination(2),
  );
}
