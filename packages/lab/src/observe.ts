import { spawn } from 'node:child_process';
import { run } from './sh.js';

/** Packets and bytes through an interface of a namespace (kilo0's count what went through the tunnel). */
export interface Counters {
  rxPackets: number;
  txPackets: number;
}

export function counters(ns: string, iface: string): Counters {
  const [link] = JSON.parse(run(['ip', '-n', ns, '-s', '-j', 'link', 'show', 'dev', iface])) as {
    stats64?: { rx: { packets: number }; tx: { packets: number } };
  }[];
  return { rxPackets: link?.stats64?.rx.packets ?? 0, txPackets: link?.stats64?.tx.packets ?? 0 };
}

export interface Capture {
  /** Stops the capture and returns one line per packet seen. */
  stop(): Promise<string[]>;
}

/**
 * Starts tcpdump inside a namespace and resolves once it listens, so nothing sent afterwards
 * is missed. The caller must stop() it (the lab's teardown kills it otherwise).
 */
export function capture(ns: string, iface: string, filter: string): Promise<Capture> {
  const child = spawn('ip', ['netns', 'exec', ns, 'tcpdump', '-i', iface, '-n', '-l', '-q', filter], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`tcpdump in ${ns} on ${iface} did not start: ${err.trim()}`));
    }, 15_000);
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      if (/listening on/.test(err)) {
        clearTimeout(timer);
        resolve({
          async stop() {
            // tcpdump flushes its line-buffered output on SIGINT; give the last packets a moment.
            await new Promise((r) => setTimeout(r, 300));
            child.kill('SIGINT');
            await exited;
            return out.split('\n').filter((l) => l.trim() !== '');
          },
        });
      }
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** Kilo's nftables table `inet kilo` of a node, as `nft list table` prints it (no handles); [] when there is none. */
export function kiloNftables(ns: string): string[] {
  return run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'table', 'inet', 'kilo'], { allowFail: true })
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** What of Kilo's a node's iptables hold (both families): its KILO- chains and the rules with a Kilo comment. */
export function kiloIptables(ns: string): string[] {
  return ['iptables-save', 'ip6tables-save']
    .flatMap((save) => run(['ip', 'netns', 'exec', ns, save], { allowFail: true }).split('\n'))
    .filter((l) => /\bKILO-|"Kilo:|--comment Kilo:/.test(l));
}

/**
 * What a node's kernel holds that Kilo may have written: routes (every table but local), next-hop
 * objects, rules, iptables (without counters), Kilo's nftables table, kilo0's addresses. Sorted
 * lines: two nodes with the same state give the same list whatever order it was written in. A
 * next hop's id is the order it was written in, so it is left out: a route through one is printed
 * with the next hop's gateway, device and flags instead of its id (`nhid[via … dev …]`).
 */
export function dataplaneFingerprint(ns: string): string[] {
  const { nexthops, route } = withoutNexthopIds(run(['ip', '-n', ns, 'nexthop', 'show'], { allowFail: true }));
  const lines = [
    ...run(['ip', '-n', ns, '-4', 'route', 'show', 'table', 'all'])
      .split('\n')
      .filter((l) => !/\btable local\b/.test(l))
      .map((l) => `route ${route(l)}`),
    ...nexthops.map((l) => `nexthop ${l}`),
    ...run(['ip', '-n', ns, '-4', 'rule', 'show'])
      .split('\n')
      .map((l) => `rule ${l}`),
    ...run(['ip', 'netns', 'exec', ns, 'iptables-save'])
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => `iptables ${l.replace(/\s*\[\d+:\d+\]$/, '')}`),
    ...kiloNftables(ns).map((l) => `nft ${l}`),
    ...run(['ip', '-n', ns, '-4', '-o', 'addr', 'show', 'dev', 'kilo0'], { allowFail: true })
      .split('\n')
      .map((l) =>
        l
          .replace(/^\d+:\s+/, '')
          .replace(/\\?\s+valid_lft.*$/, '')
          .replace(/\s*\\$/, ''),
      )
      .map((l) => `addr ${l}`),
  ];
  return lines
    .filter((l) => !/^\w+\s*$/.test(l))
    .map((l) => l.trim())
    .sort();
}

/**
 * `ip nexthop show`'s lines without their ids, and `route` to print a line of `ip route show` with
 * the next hop it goes through named by its gateway, device and flags (`nhid[via … dev …]`) instead
 * of its id: ids are allocated in the order of writing, so two machines (or one before a clean-up
 * and after) with the same routes may number them differently.
 */
export function withoutNexthopIds(nexthopShow: string): { nexthops: string[]; route: (line: string) => string } {
  const hops = new Map<string, string>();
  const nexthops = nexthopShow
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const [, id = '', rest = l.trim()] = /^id (\d+) (.*)$/.exec(l.trim()) ?? [];
      hops.set(id, rest.replace(/ (scope|proto) \S+/g, '').trim());
      return rest;
    });
  const route = (line: string) => line.replace(/\bnhid (\d+)/, (_, id: string) => `nhid[${hops.get(id) ?? '?'}]`);
  return { nexthops, route };
}
