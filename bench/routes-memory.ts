/**
 * `node --expose-gc --import tsx bench/routes-memory.ts [gateways]` (no root): what the routes'
 * dataplane state keeps between passes and what a pass costs, at a 20,000-node cluster's size: two
 * routes through each gateway (a pod CIDR and a host route, by `nhid` through one of Kilo's next hops)
 * and the fail-closed guard's blackhole behind each, read back from `ip -j` texts made here (two equal
 * copies in turns, as a real read's output is a new string each time). Passes as the agent's resync
 * makes them: the first reads a machine that already holds the plan, the rest find it unchanged.
 * Prints the heap kept by the KiloRoutingTables (a GC before and after dropping it) and each pass's
 * CPU; asserts nothing. For an A/B, run it in the other tree.
 */
import type { PlanGuardRoute, PlanRoute, PlanRule } from '../src/mesh/types.js';
import { IprouteRoutes } from '../src/dataplane/routes/linux.js';
import { kiloNexthopBase } from '../src/dataplane/routes/nexthops.js';
import { KiloRoutingTables } from '../src/dataplane/routes/reconciler.js';
import { AddressMemo } from '../src/net/memo.js';
import { cannedIp } from '../test/dataplane/canned-ip.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const gateways = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 19_999);
const passes = 12;

const routes: PlanRoute[] = [];
const gw = (i: number) => `10.4.${i >> 8}.${i & 255}`;
for (let i = 1; i <= gateways; i++) {
  const host = `172.${16 + (i >> 12)}.${(i >> 4) & 255}.${(i & 15) * 16 + 1}/32`;
  for (const dst of [`10.${64 + (i >> 8)}.${i & 255}.0/24`, host])
    routes.push({ dst, gw: gw(i), dev: 'kilo', src: null, table: 'main', onlink: true });
}
const guard: PlanGuardRoute[] = routes.map((r) => ({ dst: r.dst, table: 'main' }));
const rules: PlanRule[] = [];
const devices = { kilo: 'kilo0', private: 'eth0', tunnel: null };

/** As `ip -N -j` prints them: a host route without its length, the main table and metric 0 left out. */
const printed = (dst: string) => (dst.endsWith('/32') ? dst.slice(0, -3) : dst);
const routesText = () =>
  JSON.stringify([
    ...routes.map((r, i) => ({
      dst: printed(r.dst),
      nhid: kiloNexthopBase + (i >> 1),
      gateway: r.gw,
      dev: 'kilo0',
      protocol: '107',
      scope: 'link',
      flags: ['onlink'],
    })),
    ...guard.map((g) => ({ type: 'blackhole', dst: printed(g.dst), protocol: '107', metric: 1, flags: [] })),
  ]);
const hopsText = () =>
  JSON.stringify(
    Array.from({ length: gateways }, (_, i) => ({
      id: kiloNexthopBase + i,
      gateway: gw(i + 1),
      dev: 'kilo0',
      scope: 'link',
      protocol: '107',
      flags: ['onlink'],
    })),
  );
const texts = { routes: [routesText(), routesText()], hops: [hopsText(), hopsText()] };
let turn = 0;
let batches = 0;
const exec = cannedIp(
  // Each read takes the other copy of each text (the routes' is asked first).
  { nexthops: () => texts.hops[turn % 2]!, routes4: () => texts.routes[turn++ % 2]! },
  () => batches++,
);

const mib = (n: number) => (n / 2 ** 20).toFixed(1);
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
const addresses = new AddressMemo();
let tables: KiloRoutingTables | null = new KiloRoutingTables(new IprouteRoutes(exec, addresses), undefined, addresses);
const cpu: number[] = [];
for (let pass = 0; pass < passes; pass++) {
  const before = process.cpuUsage();
  await tables.reconcile(routes, rules, devices, { guard });
  const used = process.cpuUsage(before);
  cpu.push((used.user + used.system) / 1000);
}
const held = heap();
tables = null;
const without = heap();
console.log(
  `${routes.length + guard.length} routes, ${gateways} next hops; texts ${mib(texts.routes[0]!.length)} + ${mib(texts.hops[0]!.length)} MiB`,
);
console.log(`kept by the routes' state between passes: ${mib(held - without)} MiB; batches written: ${batches}`);
console.log(`CPU per pass (ms): ${cpu.map((c) => c.toFixed(0)).join(' ')}`);
