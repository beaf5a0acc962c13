import { spawnSync } from 'node:child_process';
import { routerNs } from './layout.js';
import { run } from './sh.js';

/**
 * Drops UDP between two locations' public subnets on the internet router (both ways), as a
 * firewall between two sites does: their WireGuard cannot reach each other directly, while the API
 * server and every other location still can (issue 34's `kg lab block A B`; docs/relays.md).
 * Idempotent: blocking twice inserts nothing more, unblocking what is not blocked does nothing.
 */
export function setLocationsBlocked(
  o: { prefix: string; internetPrefix?: string },
  a: number,
  b: number,
  blocked: boolean,
): void {
  const ns = routerNs(o.internetPrefix ?? o.prefix);
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    const rule = ['FORWARD', '-s', `198.18.${from}.0/24`, '-d', `198.18.${to}.0/24`, '-p', 'udp', '-j', 'DROP'];
    const has = spawnSync('ip', ['netns', 'exec', ns, 'iptables', '-C', ...rule]).status === 0;
    if (blocked && !has) run(['ip', 'netns', 'exec', ns, 'iptables', '-I', ...rule]);
    if (!blocked && has) run(['ip', 'netns', 'exec', ns, 'iptables', '-D', ...rule]);
  }
}
