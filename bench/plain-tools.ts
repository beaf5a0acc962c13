/**
 * bench:scale's baseline: what `kg apply` left in a network namespace, read back and turned into
 * the plain tools' input (a `wg setconf` file, `ip -batch` lines, `iptables-restore` files), so that
 * a script can write the same state in one go into a fresh namespace.
 *
 * Routes and rules are read as the agent reads them (`ip -N -j`, Kilo's protocol and priority) and
 * written back with the agent's own line renderer: under `-N` iproute2 prints a route's type as a
 * number (a blackhole as "6"), which a line rebuilt from `ip route`'s text took for a second
 * destination ("either "to" is duplicate"). Every dump is read whole, or the read fails: at 20,000
 * nodes `wg showconf` is ~3 MB, past spawnSync's default 1 MiB, and a cut dump made `wg setconf`
 * fail on its last, half-written line.
 */
import { spawnSync } from 'node:child_process';
import type { Family } from '../src/net/cidr.js';
import { kiloRouteProtocol, kiloRulePriority } from '../src/dataplane/routes/constants.js';
import { parseRoutes, parseRules, renderOp, renderOps } from '../src/dataplane/routes/iproute.js';

/** What `kg apply` wrote, as the tools print it. */
export interface Dumps {
  /** `wg showconf IFACE` (holds the interface's private key: written only to a 0600 file). */
  wg: string;
  /** `ip -N -j -F route show table all proto 107`, per family. */
  routes: Record<Family, string>;
  /** `ip -N -j -F rule show`, per family (Kilo's are those at priority 1107). */
  rules: Record<Family, string>;
  /** `ip -j addr show dev IFACE`: the interface's addresses and MTU. */
  link: string;
  iptables: string;
  ip6tables: string;
}

/** The plain tools' input for the same state. */
export interface PlainToolsInput {
  wgConf: string;
  /** One `ip -batch`: routes of both families (a route's family is its addresses') and IPv4 rules. */
  ipBatch: string[];
  /** IPv6 rules, which iproute2 takes only in an `ip -6 -batch`. */
  ip6Batch: string[];
  /** `ip addr add` arguments: ADDRESS/LENGTH. */
  addresses: string[];
  mtu: number;
  iptables: string;
  ip6tables: string;
}

interface IpLinkJson {
  mtu?: number;
  addr_info?: { family?: string; local?: string; prefixlen?: number }[];
}

/** Standard output of `argv`, whole; a failure, or output past the buffer, is an error naming the command. */
export function commandOutput(argv: string[]): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`${argv.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Reads what kg apply wrote to `iface` and the namespace's tables through `run` (a whole command's stdout). */
export function readDumps(run: (argv: string[]) => string, iface: string): Dumps {
  const ip = (family: Family, ...args: string[]) => run(['ip', '-N', '-j', `-${family}`, ...args]);
  const kilo = ['show', 'table', 'all', 'proto', String(kiloRouteProtocol)];
  return {
    wg: run(['wg', 'showconf', iface]),
    routes: { 4: ip(4, 'route', ...kilo), 6: ip(6, 'route', ...kilo) },
    rules: { 4: ip(4, 'rule', 'show'), 6: ip(6, 'rule', 'show') },
    link: run(['ip', '-j', 'addr', 'show', 'dev', iface]),
    iptables: run(['iptables-save']),
    ip6tables: run(['ip6tables-save']),
  };
}

/** The plain tools' input that writes what `d` shows, nothing dropped. */
export function plainToolsInput(d: Dumps): PlainToolsInput {
  const routes = ([4, 6] as const).flatMap((f) => parseRoutes(d.routes[f], f, kiloRouteProtocol));
  const rules = (f: Family) =>
    parseRules(d.rules[f], f, kiloRulePriority).map((rule) => renderOp({ kind: 'rule', action: 'add', rule }));
  const link = (JSON.parse(d.link) as IpLinkJson[])[0];
  if (!link?.mtu) throw new Error(`ip addr printed no link: ${d.link.slice(0, 100)}`);
  return {
    wgConf: d.wg,
    ipBatch: [...renderOps(routes.map((route) => ({ kind: 'route', action: 'add', route }))), ...rules(4)],
    ip6Batch: rules(6),
    addresses: (link.addr_info ?? [])
      .filter((a) => a.local !== undefined && !(a.family === 'inet6' && a.local.startsWith('fe80:')))
      .map((a) => `${a.local}/${a.prefixlen}`),
    mtu: link.mtu,
    iptables: d.iptables,
    ip6tables: d.ip6tables,
  };
}

/**
 * The script that writes `input` into a fresh namespace (files under `into`, named by `files`):
 * wireguard-go, the interface's addresses, MTU and state, `wg setconf`, one `ip -batch` (and an
 * `ip -6 -batch` of IPv6 rules when there are any), `iptables-restore` of each family.
 */
export function baselineScript(iface: string, input: PlainToolsInput, files: (name: string) => string): string {
  return (
    [
      'set -e',
      `wireguard-go ${iface}`,
      ...input.addresses.map((a) => `ip addr add ${a} dev ${iface}`),
      `ip link set ${iface} mtu ${input.mtu} up`,
      `wg setconf ${iface} ${files('wg.conf')}`,
      `ip -batch ${files('ip.batch')}`,
      ...(input.ip6Batch.length ? [`ip -6 -batch ${files('ip6.batch')}`] : []),
      `iptables-restore ${files('iptables')}`,
      `ip6tables-restore ${files('ip6tables')}`,
    ].join('\n') + '\n'
  );
}
