import { pino } from 'pino';
import type { Logger } from '../backend/source.js';

export const logLevels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof logLevels)[number];

/** Structured JSON logs on stderr (stdout stays free for command output). */
export function createLogger(level: LogLevel): Logger & { child(bindings: object): Logger } {
  return pino({ level, base: { component: 'kg' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination(2));
}
