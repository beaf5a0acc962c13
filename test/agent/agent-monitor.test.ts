/**
 * How the agent learns the machine's state: with a routing monitor, a pass triggered by the
 * cluster trusts the last write (reads nothing), and a change the agent did not make sends the
 * next pass back to the machine. Without one every pass reads.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RoutingEvent } from '../../src/dataplane/monitor.js';
import type { KernelRoute } from '../../src/dataplane/routes/state.js';
import { NOW, peer, wgKey } from '../helpers/cluster.js';
import { eventually, settled, startHarness, type Harness } from './agent-harness.js';

const routeEvent = (r: KernelRoute, deleted: boolean): RoutingEvent => ({
  kind: 'route',
  deleted,
  family: r.family,
  dst: r.dst,
  table: r.table,
  metric: r.metric,
  gateway: r.gw,
  dev: r.dev,
  src: r.src,
  onlink: r.onlink,
  type: r.type,
});

// The route through kilo, not the fail-closed guard's blackhole at the same destination.
const kiloRoute = (h: Harness, dst: string) =>
  h.kernel.routes.find((r) => r.protocol === 107 && r.dst === dst && r.type === 'unicast');

/** A cluster event the agent must act on: a new Peer, then wait until it is configured. */
async function clusterEvent(h: Harness, name: string, ip: string): Promise<void> {
  h.api.addPeer(peer(name, { allowedIPs: [ip], endpoint: '192.0.2.7:51820' }));
  await eventually(`${name} is configured`, async () =>
    (await h.device.read()).peers.some((p) => p.publicKey === wgKey(name)),
  );
  await settled(h);
}

function fakeMonitor() {
  const m = { emit: (_e: RoutingEvent): void => {}, stopped: false };
  const watchRouting = (onEvent: (e: RoutingEvent) => void) => {
    m.emit = onEvent;
    return { stop: async () => void (m.stopped = true) };
  };
  return { m, watchRouting };
}

describe('agent: trusting the last write', () => {
  test('with a monitor a cluster event reads nothing; the report of a foreign delete brings the route back', async (t) => {
    const { m, watchRouting } = fakeMonitor();
    const h = await startHarness(t, { deps: { watchRouting } });
    m.emit({ kind: 'ready' });
    await settled(h);
    const route = kiloRoute(h, '10.42.2.0/24');
    assert.ok(route, 'the route to c’s pods is there');

    h.kernel.routeDel(route);
    await clusterEvent(h, 'phone', '10.5.0.7/32');
    assert.equal(kiloRoute(h, '10.42.2.0/24'), undefined, 'the pass trusted its last write: it did not look');

    m.emit(routeEvent(route, true));
    await eventually(
      'the monitor’s report makes a pass read and restore the route',
      () => kiloRoute(h, '10.42.2.0/24') !== undefined,
    );
    await settled(h);

    // The echo of the agent's own writes is no reason to read.
    const passes = h.agent.status.reconciles;
    for (const r of h.kernel.routes.filter((x) => x.protocol === 107)) m.emit(routeEvent(r, false));
    m.emit(routeEvent({ ...route, dst: '10.42.200.0/24' }, true));
    await sleep(150);
    await settled(h);
    assert.equal(h.agent.status.reconciles, passes, 'no pass for changes the last write accounts for');

    // A route of Kilo's protocol it did not write, an interface change, a monitor back from a blind spell: read.
    for (const e of [
      routeEvent({ ...route, dst: '10.42.201.0/24' }, false),
      { kind: 'link', name: 'kilo0', deleted: false, up: false, mtu: 1420 } as const,
      { kind: 'ready' } as const,
    ]) {
      const before = h.agent.status.reconciles;
      m.emit(e);
      await eventually(`a pass after ${e.kind}`, () => h.agent.status.reconciles > before);
      await settled(h);
    }
    await h.agent.stop();
    assert.equal(m.stopped, true, 'the monitor stops with the agent');
  });

  test('a roaming peer keeps the endpoint WireGuard learned through a pass that reads nothing', async (t) => {
    const { m, watchRouting } = fakeMonitor();
    const h = await startHarness(t, { deps: { watchRouting } });
    m.emit({ kind: 'ready' });
    h.api.addPeer(peer('phone', { allowedIPs: ['10.5.0.7/32'], endpoint: '192.0.2.7:51820', keepalive: 25 }));
    await eventually('phone is configured', async () =>
      (await h.device.read()).peers.some((p) => p.publicKey === wgKey('phone')),
    );
    await settled(h);
    // Its session is live, from behind a NAT; the next full pass reads that.
    h.device.handshake(wgKey('phone'), NOW);
    h.device.learnEndpoint(wgKey('phone'), '198.18.2.1:40000');
    m.emit({ kind: 'ready' });
    await settled(h);

    let reads = 0;
    const read = h.device.read.bind(h.device);
    h.device.read = () => (reads++, read());
    h.api.addPeer(peer('tablet', { allowedIPs: ['10.5.0.8/32'], endpoint: '192.0.2.8:51820' }));
    await eventually(
      'tablet is added',
      () => h.agent.status.lastResult?.wireGuard.added.includes(wgKey('tablet')) === true,
    );
    await settled(h);
    assert.equal(reads, 0, 'a pass trusting the last write read WireGuard');
    h.device.read = read;
    const phone = (await h.device.read()).peers.find((p) => p.publicKey === wgKey('phone'));
    assert.equal(phone?.endpoint, '198.18.2.1:40000', 'the announced endpoint was written over the live session');
  });

  test('the first pass that writes reads the machine, even after a pass that waited for the local node', async (t) => {
    const { watchRouting } = fakeMonitor();
    // The local node starts bare (see bareLocalNode): the first pass only publishes its annotations.
    const h = await startHarness(t, { deps: { watchRouting } });
    await settled(h);
    const passes = h.log.entries.filter((e) => e.msg === 'reconcile pass').map((e) => e.obj);
    const firstWrite = passes.find((p) => (p['writes'] as number) > 0);
    assert.ok(firstWrite, 'no pass wrote');
    assert.equal(firstWrite['trustLastWrite'], false, 'the first write trusted a write that never happened');
  });

  test('the echo of its own address and link writes starts no pass; a foreign address, another MTU, a removal do', async (t) => {
    const { m, watchRouting } = fakeMonitor();
    // As kg's monitor: subscribed before the first pass (the cluster is still being listed).
    const watch = (onEvent: (e: RoutingEvent) => void) => {
      const w = watchRouting(onEvent);
      queueMicrotask(() => m.emit({ kind: 'ready' }));
      return w;
    };
    const h = await startHarness(t, { deps: { watchRouting: watch }, agent: { mtu: 1420 }, start: false });
    // The kernel's report of each write to kilo0, delivered as `ip monitor`'s would be: once the write
    // is made, while the pass that made it still runs (the agent holds it until the pass is over).
    const echoes: RoutingEvent[] = [];
    const echo = (e: RoutingEvent) => {
      echoes.push(e);
      setImmediate(() => m.emit(e));
    };
    const k = h.kernel;
    const [addAddress, setUp, setMTU] = [k.addAddress.bind(k), k.setUp.bind(k), k.setMTU.bind(k)];
    k.addAddress = (name, address) => {
      addAddress(name, address);
      echo({ kind: 'address', name, deleted: false, family: address.includes(':') ? 6 : 4, cidr: address });
    };
    const linkEcho = (name: string) => echo({ kind: 'link', name, deleted: false, ...k.link(name) });
    k.setUp = (name, up) => (setUp(name, up), linkEcho(name));
    k.setMTU = (name, mtu) => (setMTU(name, mtu), linkEcho(name));

    await h.agent.start();
    await eventually('the agent applied a plan', () => h.agent.status.plan !== null && h.agent.status.lastReconcileOk);
    await settled(h);
    const own = k.link('kilo0').addresses[0]!;
    assert.deepEqual(
      echoes.map((e) => e.kind),
      ['address', 'link'],
      'the first write added kilo0’s address and set it up',
    );
    const passes = () => h.log.entries.filter((e) => e.msg === 'reconcile pass').map((e) => e.obj);
    const firstWrite = passes().findIndex((p) => (p['writes'] as number) > 0);
    const readsAfter = passes()
      .slice(firstWrite + 1)
      .filter((p) => p['trustLastWrite'] === false);
    assert.deepEqual(readsAfter, [], 'a pass after the first write read the machine again');
    const judged = () =>
      h.log.entries
        .filter((e) => e.msg === 'routing event' && (e.obj['change'] as RoutingEvent).kind !== 'ready')
        .map((e) => e.obj['ours']);
    assert.deepEqual(judged(), [true, true], 'both echoes were judged the write’s own');

    // Delivered late (after the pass that wrote them): still the last write's.
    const before = h.agent.status.reconciles;
    for (const e of echoes) m.emit(e);
    await sleep(150);
    await settled(h);
    assert.equal(h.agent.status.reconciles, before, 'a late echo started a pass');

    // Not the last write's: each starts a pass that reads the machine.
    const readsNow = () => passes().filter((p) => p['trustLastWrite'] === false).length;
    const foreign: RoutingEvent[] = [
      { kind: 'address', name: 'kilo0', deleted: false, family: 4, cidr: '10.99.0.1/32' },
      { kind: 'address', name: 'eth1', deleted: false, family: 4, cidr: own },
      { kind: 'link', name: 'kilo0', deleted: false, up: true, mtu: 1380 },
    ];
    for (const e of foreign) {
      const reads = readsNow();
      m.emit(e);
      await eventually(`a pass that reads after ${JSON.stringify(e)}`, () => readsNow() > reads);
      await settled(h);
    }
    // kilo0's address removed by hand (the kernel flushes the routes through it silently): put back.
    const reads = readsNow();
    k.delAddress('kilo0', own);
    m.emit({ kind: 'address', name: 'kilo0', deleted: true, family: 4, cidr: own });
    await eventually('the address is back', () => k.link('kilo0').addresses.includes(own));
    await settled(h);
    assert.ok(readsNow() > reads, 'the address came back without a pass that read');
  });

  test('a blind spell that began during a pass is made up by the next pass, not one at once; one long after a pass reads at once', async (t) => {
    const { m, watchRouting } = fakeMonitor();
    const h = await startHarness(t, { deps: { watchRouting } });
    m.emit({ kind: 'ready' });
    await settled(h);
    const passes = () => h.log.entries.filter((e) => e.msg === 'reconcile pass').map((e) => e.obj);
    const route = kiloRoute(h, '10.42.2.0/24')!;

    // The monitor overflows while a pass writes (a first apply's burst): 'lost' and 'ready' reach
    // the agent during that pass. Someone's delete may be among what was dropped.
    const k = h.kernel;
    const routeAdd = k.routeAdd.bind(k);
    let overflowed = false;
    k.routeAdd = (r, nexthop) => {
      routeAdd(r, nexthop);
      if (overflowed) return;
      overflowed = true;
      k.routeDel(route);
      m.emit({ kind: 'lost', reason: 'ip monitor: netlink receive error No buffer space available' });
      m.emit({ kind: 'ready' });
    };
    await clusterEvent(h, 'phone', '10.5.0.7/32');
    assert.ok(overflowed, 'the pass wrote a route');
    const after = h.agent.status.reconciles;
    await sleep(200);
    await settled(h);
    assert.equal(h.agent.status.reconciles, after, 'a pass at once after a blind spell of the agent’s own pass');
    assert.equal(kiloRoute(h, '10.42.2.0/24'), undefined, 'nothing read the machine yet');

    // The next pass, whatever starts it, reads everything and puts the dropped delete right.
    await clusterEvent(h, 'tablet', '10.5.0.8/32');
    assert.equal(passes().at(-1)?.['trustLastWrite'], false, 'the pass after the blind spell trusted its last write');
    assert.ok(kiloRoute(h, '10.42.2.0/24'), 'the route deleted in the blind spell is back');

    // Reported just after a pass (ip monitor says so once it has drained what it had): the same.
    const before = h.agent.status.reconciles;
    m.emit({ kind: 'lost', reason: 'ip monitor: netlink receive error No buffer space available' });
    m.emit({ kind: 'ready' });
    await sleep(200);
    await settled(h);
    assert.equal(h.agent.status.reconciles, before, 'a pass at once after a blind spell reported just after a pass');
    await clusterEvent(h, 'watch', '10.5.0.10/32');
    assert.equal(passes().at(-1)?.['trustLastWrite'], false, 'the next pass trusted its last write');

    // A blind spell long after any pass (over 2 s): read at once.
    await sleep(2_100);
    const idle = h.agent.status.reconciles;
    m.emit({ kind: 'lost', reason: 'ip monitor exited' });
    m.emit({ kind: 'ready' });
    await eventually('a pass after a blind spell while idle', () => h.agent.status.reconciles > idle);
    await settled(h);
    assert.equal(passes().at(-1)?.['trustLastWrite'], false, 'that pass read the machine');
  });

  test('without a monitor every pass reads: a deleted route comes back with the next cluster event', async (t) => {
    const h = await startHarness(t);
    await settled(h);
    const route = kiloRoute(h, '10.42.2.0/24')!;
    h.kernel.routeDel(route);
    await clusterEvent(h, 'phone', '10.5.0.7/32');
    assert.ok(kiloRoute(h, '10.42.2.0/24'), 'read and restored');
  });
});
