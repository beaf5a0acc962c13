import { Cidr } from '../../net/cidr.js';
import { mainTableId } from '../routes/constants.js';
import { FakeKernelError, settle, type FakeMachine } from '../routes/fake.js';
import type { DefaultRoute, Host, HostAddress, HostLink } from './host.js';

/** What loading a module does to the machine (ipip: tunl0 appears, down). */
export type FakeModules = Record<string, (machine: FakeMachine) => void>;

/** The kernel gives loopback addresses scope host, wherever they are. */
const isLoopback = (c: Cidr) => (c.family === 4 ? c.ip.bytes[0] === 127 : c.ip.text === '::1');

/** The host over a FakeMachine: the interfaces and routes the fake dataplane writes to. */
export class FakeHost implements Host {
  /** Modules loaded so far. */
  readonly loaded = new Set<string>();

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
}
