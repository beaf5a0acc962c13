import type { Granularity } from '../../../../src/model/types.js';
import type { Lab } from '../lab.js';
import { gatewayNs } from '../layout.js';
import { run, runAsync, sleep } from '../sh.js';
import type { ScheduledFault } from './schedule.js';

export interface FaultContext {
  lab: Lab;
  /** How long the API server stays unreachable (the issue's 60 s; shorter in the smoke run). */
  apiAwaySeconds: number;
  /** Called every second while the API server is away: the dataplane must not change. */
  whileAway: () => Promise<void>;
  /** Called when nodes or the Peer change: the traffic follows. */
  membershipChanged: () => void;
}

/** A route as `ip -j route show` prints it (`type` only for other types than unicast, `metric` only when not 0). */
interface KernelRouteJson {
  type?: string;
  dst: string;
  dev?: string;
  table?: string;
  metric?: number;
  /** Through a next-hop object of kg's (an IPv4 route with a gateway). */
  nhid?: number;
}

const pick = <T>(items: readonly T[], n: number): T => items[n % items.length]!;

/**
 * What a fault did; for a fault pings may not notice (an item deleted by hand), also whether the
 * agent has put it back: the mesh has recovered only then.
 */
export interface Done {
  what: string;
  repaired?: () => Promise<boolean>;
}

/** Performs one fault; resolves when it is over (the convergence window starts then). */
export async function perform(f: ScheduledFault, c: FaultContext): Promise<Done> {
  const done = await performOne(f, c);
  return typeof done === 'string' ? { what: done } : done;
}

async function performOne(f: ScheduledFault, c: FaultContext): Promise<string | Done> {
  const { lab } = c;
  const node = pick(lab.nodes, f.target);
  switch (f.kind) {
    case 'agent-kill':
      await lab.stopAgent(node.name, 'SIGKILL');
      lab.startAgent(node.name, { cleanUp: false });
      return `${node.name}: SIGKILL, restarted with --clean-up=false`;
    case 'agent-term-clean-up':
      await lab.stopAgent(node.name, 'SIGTERM');
      lab.startAgent(node.name, { cleanUp: true });
      return `${node.name}: SIGTERM (its --clean-up as started), restarted with --clean-up=true`;
    case 'apiserver-restart':
      await lab.restartApiServer('SIGKILL');
      return 'SIGKILL, restarted on its state file';
    case 'apiserver-away': {
      lab.setApiServerReachable(false);
      try {
        const end = Date.now() + c.apiAwaySeconds * 1000;
        while (Date.now() < end) {
          const t0 = Date.now();
          await c.whileAway();
          await sleep(Math.max(0, 1000 - (Date.now() - t0)));
        }
      } finally {
        lab.setApiServerReachable(true);
      }
      return `unreachable for ${c.apiAwaySeconds} s`;
    }
    case 'node-rejoin': {
      await lab.removeNode(node.name);
      c.membershipChanged();
      await sleep(5000);
      const { node: back } = await lab.addNode(node.location);
      c.membershipChanged();
      return `${node.name} left, ${back.name} joined (pod CIDR ${back.podCIDR})`;
    }
    case 'peer-readd':
      await lab.removePeer();
      await sleep(5000);
      await lab.addPeer();
      return 'Peer deleted, created again 5 s later';
    case 'uplink-flap': {
      // A node's public uplink, or the NAT gateway's: down 10 s, then up with its default route
      // back (the kernel drops routes through a link that goes down; DHCP would restore it).
      const targets = [
        ...lab.nodes.filter((n) => n.publicIP).map((n) => ({ ns: n.ns, l: n.location, what: n.name })),
        ...(lab.options.natLocation
          ? [
              {
                ns: gatewayNs(lab.options.prefix, lab.options.natLocation),
                l: lab.options.natLocation,
                what: 'NAT gateway',
              },
            ]
          : []),
      ];
      const t = pick(targets, f.target);
      run(['ip', '-n', t.ns, 'link', 'set', 'pub0', 'down']);
      await sleep(10_000);
      run(['ip', '-n', t.ns, 'link', 'set', 'pub0', 'up']);
      run(['ip', '-n', t.ns, 'route', 'replace', 'default', 'via', `198.18.${t.l}.254`]);
      return `${t.what}: pub0 down 10 s`;
    }
    case 'route-deleted': {
      for (let i = 0; i < lab.nodes.length; i++) {
        const n = pick(lab.nodes, f.target + i);
        const r = await runAsync(['ip', '-n', n.ns, '-j', 'route', 'show', 'table', 'all', 'proto', '107']);
        // Kilo's routes to a next hop, not the fail-closed guard's blackholes beside them (`type`
        // is printed for those only): the fault is a route the traffic takes going missing.
        const routes = (JSON.parse(r.stdout || '[]') as KernelRouteJson[]).filter((x) => x.type === undefined);
        if (routes.length === 0) continue;
        const victim = pick(routes, f.target);
        const table = victim.table ?? 'main';
        // Named exactly (type, next hop, metric): Linux takes an IPv4 delete without a metric as any
        // metric, and would remove the guard at the same destination instead once the route is gone.
        // A route through a next-hop object matches no `dev` (nor `via`), only its `nhid`.
        const exact = ['unicast', victim.dst, 'table', table, 'proto', '107'];
        if (victim.nhid !== undefined) exact.push('nhid', String(victim.nhid));
        else if (victim.dev) exact.push('dev', victim.dev);
        if (victim.metric !== undefined) exact.push('metric', String(victim.metric));
        run(['ip', '-n', n.ns, 'route', 'del', ...exact]);
        return {
          what: `${n.name}: route ${victim.dst}${victim.dev ? ` dev ${victim.dev}` : ''} table ${table}`,
          repaired: async () => {
            const r = await runAsync(['ip', '-n', n.ns, '-j', 'route', 'show', 'table', table, 'proto', '107']);
            return (JSON.parse(r.stdout || '[]') as KernelRouteJson[]).some(
              (x) => x.type === undefined && x.dst === victim.dst,
            );
          },
        };
      }
      return 'no node had a Kilo route';
    }
    case 'iptables-rule-deleted': {
      for (let i = 0; i < lab.nodes.length; i++) {
        const n = pick(lab.nodes, f.target + i);
        const save = await runAsync(['ip', 'netns', 'exec', n.ns, 'iptables-save', '-t', 'nat']);
        const rules = save.stdout.split('\n').filter((l) => /^-A (KILO-\S+|POSTROUTING .*-j KILO-)/.test(l));
        if (rules.length === 0) continue;
        const victim = pick(rules, f.target);
        // iptables-save quotes as a shell does: let one parse it back into arguments.
        run(['ip', 'netns', 'exec', n.ns, 'sh', '-c', `iptables -t nat ${victim.replace(/^-A /, '-D ')}`]);
        return {
          what: `${n.name}: nat ${victim.slice(0, 100)}`,
          repaired: async () => {
            const r = await runAsync(['ip', 'netns', 'exec', n.ns, 'iptables-save', '-t', 'nat']);
            return r.code === 0 && r.stdout.split('\n').includes(victim);
          },
        };
      }
      return 'no node had a Kilo iptables rule';
    }
    case 'granularity-switch': {
      const order: Granularity[] = ['cross', 'full', 'location'];
      const next = order[(order.indexOf(lab.options.granularity) + 1) % order.length]!;
      const from = lab.options.granularity;
      await lab.restartAgents(next);
      return `${from} → ${next}`;
    }
    case 'annotation-burst': {
      let slow = 0;
      for (let i = 0; i < 100; i++) {
        const n = pick(lab.nodes, f.target + i);
        const patch = { metadata: { annotations: { 'chaos.kilo-ts.test/burst': String(i) } } };
        // The lab's client gives up after 10 s; a second try tells a slow server from a dead one.
        await lab.api.patch('nodes', n.name, patch).catch(() => (slow++, lab.api.patch('nodes', n.name, patch)));
      }
      return `100 annotation updates over the nodes${slow ? ` (${slow} took over 10 s and were sent again)` : ''}`;
    }
  }
}
