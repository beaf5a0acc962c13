/** Kilo's levels: `all` logs everything, `none` nothing. Apart from log.ts so flags need not load pino. */
export const logLevels = ['all', 'debug', 'info', 'warn', 'error', 'none'] as const;
export type LogLevel = (typeof logLevels)[number];
