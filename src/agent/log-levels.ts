/** Kilo's levels: `all` logs everything, `none` nothing. Apart from log.ts so flags need not load pino. */
export const logLevels = ['all', 'debug', 'info', 'warn', 'error', 'none'] as const;
export type LogLevel = (typeof logLevels)[number];

/** Whether a logger at `level` writes lines of level `line` (a line not written need not be made). */
export function logs(level: LogLevel, line: 'debug' | 'info' | 'warn' | 'error'): boolean {
  return logLevels.indexOf(level) <= logLevels.indexOf(line);
}
