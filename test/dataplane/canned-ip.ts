import type { Exec } from '../../src/dataplane/exec.js';

/**
 * An `ip` that answers as a machine holding `texts` would, for IprouteRoutes without a namespace:
 * `nexthop show` and `-4 route show` from `texts` (asked anew each read), every other listing empty.
 * Each `ip -batch`'s input goes to `wrote`; nothing else is run.
 */
export function cannedIp(
  texts: { nexthops: () => string; routes4: () => string },
  wrote: (input: string) => void,
): Exec {
  return {
    run: (argv, opts) => {
      const line = argv.join(' ');
      if (argv.includes('-batch')) wrote(opts?.input ?? '');
      const stdout = line.includes('nexthop show')
        ? texts.nexthops()
        : line.includes('-4 route show')
          ? texts.routes4()
          : line.includes(' show')
            ? '[]'
            : '';
      return Promise.resolve({ stdout, stderr: '' });
    },
    start: () => {
      throw new Error('nothing is started here');
    },
    wireGuardRunDir: '/nonexistent',
  };
}
