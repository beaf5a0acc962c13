import { Cidr } from '../../net/cidr.js';
import { ExecError, type Exec } from '../exec.js';
import type { DefaultRoute, Host, HostAddress, HostLink } from '../../host/host.js';

interface IpAddrJson {
  ifname: string;
  addr_info?: { local?: string; prefixlen?: number; scope?: string }[];
}

interface IpRouteJson {
  dev?: string;
  metric?: number;
  nexthops?: { dev?: string }[];
}

const addrArgv = (iface?: string) => ['ip', '-j', 'addr', 'show', ...(iface === undefined ? [] : ['dev', iface])];

const missing = (e: unknown) => e instanceof ExecError && /does not exist/.test(e.stderr);

/** The host through iproute2's JSON output (`ip -j`), on the machine or in a namespace. */
export class LinuxHost implements Host {
  constructor(private readonly exec: Exec) {}

  async addresses(iface?: string): Promise<HostAddress[]> {
    const argv = addrArgv(iface);
    const stdout = await this.exec.run(argv).then(
      (r) => r.stdout,
      (e: unknown) => {
        if (iface !== undefined && missing(e)) return '[]';
        throw e;
      },
    );
    const out: HostAddress[] = [];
    for (const link of JSON.parse(stdout || '[]') as IpAddrJson[]) {
      for (const a of link.addr_info ?? []) {
        if (a.local === undefined || a.prefixlen === undefined || a.scope === 'host') continue;
        const c = Cidr.tryParse(`${a.local}/${a.prefixlen}`);
        if (c) out.push({ iface: link.ifname, address: c });
      }
    }
    return out;
  }

  async link(name: string): Promise<HostLink | null> {
    const stdout = await this.exec.run(['ip', '-j', 'link', 'show', 'dev', name]).then(
      (r) => r.stdout,
      (e: unknown) => {
        if (missing(e)) return null;
        throw e;
      },
    );
    const link = stdout === null ? undefined : (JSON.parse(stdout || '[]') as { flags?: string[]; mtu?: number }[])[0];
    if (!link) return null;
    if (link.mtu === undefined) throw new Error(`interface ${name}: ip printed no MTU`);
    return { up: link.flags?.includes('UP') ?? false, mtu: link.mtu };
  }

  async defaultRoute(): Promise<DefaultRoute | null> {
    for (const family of ['-4', '-6']) {
      const stdout = await this.exec.run(['ip', '-j', family, 'route', 'show', 'default']).then(
        (r) => r.stdout,
        (e: unknown) => {
          // A kernel booted with IPv6 disabled simply has no IPv6 default route.
          if (family === '-6' && e instanceof ExecError && /Address family not supported/i.test(e.stderr)) return '[]';
          throw e;
        },
      );
      const routes = (JSON.parse(stdout || '[]') as IpRouteJson[]).sort((a, b) => (a.metric ?? 0) - (b.metric ?? 0));
      const iface = routes.map((r) => r.dev ?? r.nexthops?.find((n) => n.dev)?.dev).find((d) => d !== undefined);
      if (iface === undefined) continue;
      const link = await this.link(iface);
      if (!link) throw new Error(`default route interface ${iface} does not exist`);
      return { iface, mtu: link.mtu };
    }
    return null;
  }

  async bringUp(name: string): Promise<void> {
    await this.exec.run(['ip', 'link', 'set', 'dev', name, 'up']);
  }

  async loadModule(name: string): Promise<void> {
    await this.exec.run(['modprobe', name]);
  }

  ipv4Forwarding(): Promise<boolean | null> {
    return this.sysctlOn('/proc/sys/net/ipv4/ip_forward');
  }

  ipv6Forwarding(): Promise<boolean | null> {
    return this.sysctlOn('/proc/sys/net/ipv6/conf/all/forwarding');
  }

  private async sysctlOn(path: string): Promise<boolean | null> {
    return this.exec.run(['cat', path], { timeoutMs: 3_000 }).then(
      (r) => r.stdout.trim() === '1',
      () => null,
    );
  }

  wouldForward(from: string, to: string, iif: string): Promise<boolean> {
    return this.succeeds(['ip', 'route', 'get', to, 'from', from, 'iif', iif]);
  }

  ping(address: string): Promise<boolean> {
    return this.succeeds(['ping', '-n', '-q', '-c', '1', '-W', '1', address]);
  }

  /** A question (a route lookup, a ping) that changes nothing on the machine. */
  private succeeds(argv: string[]): Promise<boolean> {
    return this.exec.run(argv, { timeoutMs: 3_000 }).then(
      () => true,
      () => false,
    );
  }
}
