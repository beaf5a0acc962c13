import { hostExec, type Exec } from '../../src/dataplane/exec.js';
import type { TestNamespace } from '../helpers/netns.js';

/**
 * Runs `ip` commands as `ip -n NS …`: the same commands in the same namespace, without the
 * mount-namespace wrapper netnsExec needs for wireguard-go (about half the cost per process here).
 */
export function ipExec(ns: TestNamespace): Exec {
  const host = hostExec();
  return {
    run: (argv, opts) =>
      argv[0] === 'ip' ? host.run(['ip', '-n', ns.name, ...argv.slice(1)], opts) : ns.exec.run(argv, opts),
    start: (argv) => ns.exec.start(argv),
    wireGuardRunDir: ns.runDir,
  };
}
