/**
 * What the build runs to write kg's V8 code cache (scripts/build.mjs, kg-start.ts): `kg apply`,
 * the real command, first and unchanged, on a small cluster in each granularity, against an
 * in-memory host (the fakes the dataplane's contract tests hold to the real one). Nothing on
 * this machine is touched: an image build has no network namespace to write to. What it compiles
 * (commander, the snapshot's read, parse, plan, the reconcile's diffs, the log) is what a real
 * apply, and an agent's first pass, would compile again at every start.
 */
import { FakeHost } from '../dataplane/host/fake.js';
import { createFakeFirewall } from '../dataplane/iptables/fake.js';
import { FakeLinks, FakeKernel, fakeRoutingTables } from '../dataplane/routes/fake.js';
import { FakeWireGuardDevice } from '../dataplane/wireguard/fake.js';
import type { ApplyHost } from './apply.js';

type Run = (host: () => ApplyHost, argv: string[]) => Promise<void>;

/** An empty host but for the node's own network: eth0 holding node-00's internal IP, the default route. */
function inMemory(): ApplyHost {
  const kernel = new FakeKernel();
  kernel.addLink('eth0', { addresses: ['172.16.0.1/24'] });
  const route = { family: 4, table: 254, metric: 0, src: null, onlink: false, type: 'unicast', protocol: 3 } as const;
  kernel.routeAdd({ ...route, dst: '0.0.0.0/0', gw: '172.16.0.254', dev: 'eth0' });
  const firewall = createFakeFirewall().tables;
  let device: FakeWireGuardDevice | undefined;
  return {
    // Loading ipip makes tunl0, as the kernel does: the encapsulation's routes go through it.
    host: new FakeHost(kernel, { ipip: (m) => m.addLink('tunl0', { up: false }) }),
    dataplane: (o) => {
      device ??= new FakeWireGuardDevice(o.interfaceName);
      if (!kernel.links.has(o.interfaceName)) kernel.addLink(o.interfaceName, { up: false, mtu: 1420 });
      return { device, links: new FakeLinks(kernel), routes: fakeRoutingTables(kernel), firewall };
    },
  };
}

/** `dir` holds the build's cluster.json (scripts/build.mjs); the key file goes there too. */
export async function trainApply(dir: string, run: Run): Promise<void> {
  for (const granularity of ['cross', 'location']) {
    const host = inMemory();
    const argv = [
      'apply',
      ...['--cluster', `${dir}/cluster.json`, '--hostname', 'node-00', '--key-file', `${dir}/key`],
      ...['--mesh-granularity', granularity, '--log-level', 'info'],
    ];
    // First, then unchanged: the two ways through the reconcile.
    for (let i = 0; i < 2; i++) {
      await run(() => host, argv);
      if (process.exitCode) throw new Error(`kg apply (training, ${granularity}) failed`);
    }
  }
}
