import { Cidr, IP } from '../../net/cidr.js';
import { mainTableId } from '../routes/constants.js';
import { FakeKernelError, settle, type FakeKernel } from '../routes/fake.js';
import type { DefaultRoute, Host, HostAddress, HostLink } from '../../host/host.js';

/** What loading a module does to the kernel (ipip: tunl0 appears, down). */
export type FakeModules = Record<string, (kernel: FakeKernel) => void>;

/** The kernel gives loopback addresses scope host, wherever they are. */
const isLoopback = (c: Cidr) => (c.family === 4 ? c.ip.bytes[0] === 127 : c.ip.text === '::1');

/** The host over a FakeKernel: the interfaces and routes the fake dataplane writes to. */
export class FakeHost implements Host {
  /** Modules loaded so far. */
  readonly loaded = new Set<string>();
  /** net.ipv4.ip_forward; null: it cannot be read. */
  forwarding: boolean | null = true;
  /** net.ipv6.conf.all.forwarding; null: it cannot be read. */
  forwarding6: boolean | null = true;
  /** Whether an address answers a ping; by default the host’s own addresses do. */
  answers: (address: string) => boolean = (address) => this.isOwn(address);

  constructor(
    readonly kernel: FakeKernel,
    private readonly modules: FakeModules = {},
  ) {}

  addresses(iface?: string): Promise<HostAddress[]> {
    return settle(() =>
      [...this.kernel.links]
        .filter(([name]) => iface === undefined || name === iface)
        .flatMap(([name, l]) => l.addresses.map((a) => ({ iface: name, address: Cidr.parse(a) })))
        .filter((a) => !isLoopback(a.address)),
    );
  }

  link(name: string): Promise<HostLink | null> {
    return settle(() => {
      const l = this.kernel.links.get(name);
      return l ? { up: l.up, mtu: l.mtu } : null;
    });
  }

  defaultRoute(): Promise<DefaultRoute | null> {
    return settle(() => {
      for (const dst of ['0.0.0.0/0', '::/0']) {
        const route = this.kernel.routes
          .filter((r) => r.table === mainTableId && r.dst === dst && r.dev !== null)
          .sort((a, b) => a.metric - b.metric)[0];
        if (route) return { iface: route.dev!, mtu: this.kernel.link(route.dev!).mtu };
      }
      return null;
    });
  }

  bringUp(name: string): Promise<void> {
    return settle(() => {
      if (!this.kernel.link(name).up) this.kernel.setUp(name, true);
    });
  }

  loadModule(name: string): Promise<void> {
    return settle(() => {
      if (this.loaded.has(name)) return;
      const load =
        this.modules[name] ??
        ((): never => {
          throw new FakeKernelError(`modprobe: FATAL: Module ${name} not found`);
        });
      load(this.kernel);
      this.loaded.add(name);
    });
  }

  ipv4Forwarding(): Promise<boolean | null> {
    return settle(() => this.forwarding);
  }

  ipv6Forwarding(): Promise<boolean | null> {
    return settle(() => this.forwarding6);
  }

  /** Forwarding on, `iif` present, and `to` inside an up interface's prefix or a main-table route. */
  wouldForward(_from: string, to: string, iif: string): Promise<boolean> {
    return settle(() => {
      const ip = IP.tryParse(to);
      if (!ip || this.forwarding !== true || !this.kernel.links.has(iif)) return false;
      const connected = [...this.kernel.links.values()].some(
        (l) => l.up && l.addresses.some((a) => Cidr.parse(a).contains(ip)),
      );
      return (
        connected ||
        this.kernel.routes.some((r) => r.table === mainTableId && Cidr.tryParse(r.dst)?.contains(ip) === true)
      );
    });
  }

  ping(address: string): Promise<boolean> {
    return settle(() => this.answers(address));
  }

  private isOwn(address: string): boolean {
    const ip = IP.tryParse(address);
    return (
      ip !== null && [...this.kernel.links.values()].some((l) => l.addresses.some((a) => Cidr.parse(a).ip.equals(ip)))
    );
  }
}
