import { Cidr, IP } from '../../net/cidr.js';
import { mainTableId } from '../routes/constants.js';
import { FakeKernelError, settle, type FakeMachine } from '../routes/fake.js';
import type { DefaultRoute, Host, HostAddress, HostLink } from '../../host/host.js';

/** What loading a module does to the machine (ipip: tunl0 appears, down). */
export type FakeModules = Record<string, (machine: FakeMachine) => void>;

/** The kernel gives loopback addresses scope host, wherever they are. */
const isLoopback = (c: Cidr) => (c.family === 4 ? c.ip.bytes[0] === 127 : c.ip.text === '::1');

/** The host over a FakeMachine: the interfaces and routes the fake dataplane writes to. */
export class FakeHost implements Host {
  /** Modules loaded so far. */
  readonly loaded = new Set<string>();
  /** net.ipv4.ip_forward; null: it cannot be read. */
  forwarding: boolean | null = true;
  /** Whether an address answers a ping; by default the machine's own addresses do. */
  answers: (address: string) => boolean = (address) => this.isOwn(address);

  constructor(
    readonly machine: FakeMachine,
    private readonly modules: FakeModules = {},
  ) {}

  addresses(iface?: string): Promise<HostAddress[]> {
    return settle(() =>
      [...this.machine.links]
        .filter(([name]) => iface === undefined || name === iface)
        .flatMap(([name, l]) => l.addresses.map((a) => ({ iface: name, address: Cidr.parse(a) })))
        .filter((a) => !isLoopback(a.address)),
    );
  }

  link(name: string): Promise<HostLink | null> {
    return settle(() => {
      const l = this.machine.links.get(name);
      return l ? { up: l.up, mtu: l.mtu } : null;
    });
  }

  defaultRoute(): Promise<DefaultRoute | null> {
    return settle(() => {
      for (const dst of ['0.0.0.0/0', '::/0']) {
        const route = this.machine.routes
          .filter((r) => r.table === mainTableId && r.dst === dst && r.dev !== null)
          .sort((a, b) => a.metric - b.metric)[0];
        if (route) return { iface: route.dev!, mtu: this.machine.link(route.dev!).mtu };
      }
      return null;
    });
  }

  bringUp(name: string): Promise<void> {
    return settle(() => {
      if (!this.machine.link(name).up) this.machine.setUp(name, true);
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
      load(this.machine);
      this.loaded.add(name);
    });
  }

  ipv4Forwarding(): Promise<boolean | null> {
    return settle(() => this.forwarding);
  }

  /** Forwarding on, `iif` present, and `to` inside an up interface's prefix or a main-table route. */
  wouldForward(_from: string, to: string, iif: string): Promise<boolean> {
    return settle(() => {
      const ip = IP.tryParse(to);
      if (!ip || this.forwarding !== true || !this.machine.links.has(iif)) return false;
      const connected = [...this.machine.links.values()].some(
        (l) => l.up && l.addresses.some((a) => Cidr.parse(a).contains(ip)),
      );
      return (
        connected ||
        this.machine.routes.some((r) => r.table === mainTableId && Cidr.tryParse(r.dst)?.contains(ip) === true)
      );
    });
  }

  ping(address: string): Promise<boolean> {
    return settle(() => this.answers(address));
  }

  private isOwn(address: string): boolean {
    const ip = IP.tryParse(address);
    return (
      ip !== null && [...this.machine.links.values()].some((l) => l.addresses.some((a) => Cidr.parse(a).ip.equals(ip)))
    );
  }
}
