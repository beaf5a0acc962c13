/**
 * `node --import tsx bench/relay-lab.ts [--runs N] [--fault kill|uplink]`: relays in the lab
 * (issue 34; docs/relays.md). Four locations of one public node each, cross granularity; a pod of
 * location 1 pings a pod of location 2 every 100 ms. Each run:
 *
 * - block: UDP dropped between locations 1 and 2 → the pings come back through a relay (outage:
 *   pings lost × 100 ms);
 * - relay killed: the pair's relay dies (`kill`: its agent SIGKILLed and its wireguard-go killed;
 *   `uplink`: its public interface down) → the pings come back through the other relay (outage as
 *   above); the relay is then repaired and the mesh left to converge;
 * - unblock → both ends carry each other's pods on the direct peer entry again (`wg show`, polled).
 *
 * Prints p50 and max of each with the machine's load; asserts nothing. Needs root, network
 * namespaces and wireguard-go.
 */
import { rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setLocationsBlocked } from '../packages/lab/src/block.js';
import { pinger, summary } from '../packages/lab/src/failover.js';
import { Lab } from '../packages/lab/src/lab.js';
import { carrier, killNode, publishedKeys } from '../packages/lab/src/relay-paths.js';
import { ipBatch, sleep } from '../packages/lab/src/sh.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
};
const runs = Number(arg('runs', '5'));
const fault = arg('fault', 'kill');
if (fault !== 'kill' && fault !== 'uplink') throw new Error(`--fault: kill or uplink, got ${JSON.stringify(fault)}`);
const timeoutMs = 120_000;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

const dir = join(tmpdir(), `kilo-relay-bench-${process.pid}`);
rmSync(dir, { recursive: true, force: true });
const lab = await Lab.up(dir, {
  locations: 4,
  nodesPerLocation: 1,
  granularity: 'cross',
  natLocation: null,
  peer: false,
  prefix: `krb${process.pid % 1000}-`,
});
const [a, b] = ['loc1-n1', 'loc2-n1'];
const [pa, pb] = [lab.node(a), lab.node(b)];

/** Waits until `ok`, polling; false after the timeout. */
async function until(ok: () => Promise<boolean>, ms = timeoutMs): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await ok()) return true;
    await sleep(200);
  }
  return false;
}

/**
 * Pings lost × 100 ms while `fault` acts: the pinger's replies before it are the baseline; the run
 * ends once `recovered` holds and 20 more replies came (null when it never recovered).
 */
async function outage(act: () => Promise<void>, recovered: () => Promise<boolean>): Promise<number | null> {
  const p = pinger(pa.podNs, pb.podIP);
  let seqs: number[] = [];
  let ok = false;
  let before = 0;
  try {
    if (!(await until(async () => p.replies() >= 10, 30_000))) throw new Error(`no replies from ${b}'s pod`);
    before = p.replies();
    await act();
    ok = await until(recovered);
    if (ok) {
      const at = p.replies();
      ok = await until(async () => p.replies() >= at + 20, 30_000);
    }
  } finally {
    seqs = await p.stop();
  }
  if (!ok) return null;
  const start = seqs[before - 1]!;
  const answered = new Set(seqs.filter((s) => s > start));
  let lost = 0;
  for (let s = start + 1; s <= seqs[seqs.length - 1]!; s++) if (!answered.has(s)) lost++;
  return lost * 100;
}

const figures = { block: [] as (number | null)[], killed: [] as (number | null)[], unblock: [] as (number | null)[] };
try {
  await lab.converge(180_000);
  const keys = await publishedKeys(lab);
  const via = async () => [await carrier(lab, a, b, keys), await carrier(lab, b, a, keys)];
  const relayed = async (besides?: string) => {
    const [x, y] = await via();
    return x !== null && x === y && ![a, b, besides].includes(x);
  };
  for (let i = 1; i <= runs; i++) {
    const block = await outage(
      async () => setLocationsBlocked(lab.options, 1, 2, true),
      () => relayed(),
    );
    const relay = (await via())[0]!;
    const killed = await outage(
      async () => {
        if (fault === 'kill') await killNode(lab, relay);
        else ipBatch(lab.node(relay).ns, ['link set pub0 down']);
      },
      () => relayed(relay),
    );
    if (fault === 'kill') lab.startAgent(relay);
    else {
      const n = lab.node(relay);
      ipBatch(n.ns, ['link set pub0 up', `route replace default via 198.18.${n.site}.254`]);
    }
    await lab.converge(180_000);
    setLocationsBlocked(lab.options, 1, 2, false);
    const t0 = Date.now();
    const direct = await until(async () => (await via()).join() === [b, a].join());
    const unblock = direct ? Date.now() - t0 : null;
    await lab.converge(180_000);
    figures.block.push(block);
    figures.killed.push(killed);
    figures.unblock.push(unblock);
    const s = (ms: number | null) => (ms === null ? 'never' : `${(ms / 1000).toFixed(1)} s`);
    console.error(
      `run ${i}: block → relayed ${s(block)}; relay ${relay} ${fault === 'kill' ? 'killed' : 'uplink down'} → moved ${s(killed)}; unblock → direct ${s(unblock)} (load ${load()})`,
    );
    // Long enough for the ends' WireGuard sessions of this run to age like any other run's.
    await sleep(5000);
  }
} finally {
  setLocationsBlocked(lab.options, 1, 2, false);
  if (process.env['KILO_RELAY_BENCH_KEEP']) console.error(`kept the lab: ${dir} (kg lab down --state-dir ${dir})`);
  else await lab.down();
}

console.log(`| ${runs} runs, 4 locations × 1 node, cross | p50 | max | never |`);
console.log('| --- | --- | --- | --- |');
for (const [name, xs] of [
  ['block → through a relay (outage)', figures.block],
  [
    `relay ${fault === 'kill' ? 'killed (agent and wireguard-go)' : 'uplink down'} → another relay (outage)`,
    figures.killed,
  ],
  ['unblock → direct again', figures.unblock],
] as const) {
  const done = xs.filter((x): x is number => x !== null);
  const s = summary(done);
  console.log(
    `| ${name} | ${(s.p50 / 1000).toFixed(1)} s | ${(s.max / 1000).toFixed(1)} s | ${xs.length - done.length} |`,
  );
}
console.log(`\nload average at the end: ${load()}`);
