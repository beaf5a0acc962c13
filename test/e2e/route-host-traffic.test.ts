/**
 * --route-host-traffic end to end: two office subnets whose router forwards only WireGuard's UDP
 * port between them, nodes with internal addresses only (each node's endpoint is its internal IP),
 * `subnet` granularity, the built `kg apply` in every node namespace.
 *
 *   a-1 192.168.1.1 ─┐                       ┌─ b-1 192.168.2.1
 *   a-2 192.168.1.2 ─┴ br1 .1.254  router  .2.254 br2 ┴─ b-2 192.168.2.2
 *                        FORWARD: policy DROP, only udp 51820 between br1 and br2
 *
 * Without the flag a TCP service on b-1's host network is unreachable from a-1 while WireGuard
 * itself works; with it the service answers and the router sees only UDP 51820; turning the flag
 * off and cleaning up leave no mark rule, no table-1108 route and no firewall mark behind.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import type { KubeObject } from '../../src/model/parse.js';
import { node } from '../helpers/cluster.js';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { Lab, namespacePids, oraclePlan, until, type ApplyRun, type LabNode } from './dataplane-lab.js';

const mesh = ['--mesh-granularity', 'subnet', '--encapsulate', 'never'];
const service = { ip: '192.168.2.1', port: 9100 };

interface Office {
  name: string;
  node: LabNode;
  ip: string;
}

function cluster(offices: readonly Office[]): KubeObject[] {
  return offices.map((o, i) =>
    node(o.name, {
      internalIP: `${o.ip}/24`,
      endpoint: `${o.ip}:51820`,
      podCIDR: `10.42.${i + 1}.0/24`,
      key: o.node.publicKey,
    }),
  );
}

/** The router: a bridge per subnet, forwarding on, and a firewall that passes only WireGuard between them. */
function buildNetwork(router: TestNamespace, offices: readonly Office[]): void {
  router.sh(
    [
      'sysctl -qw net.ipv4.ip_forward=1',
      'ip link add br1 type bridge && ip addr add 192.168.1.254/24 dev br1 && ip link set br1 up',
      'ip link add br2 type bridge && ip addr add 192.168.2.254/24 dev br2 && ip link set br2 up',
      'iptables -P FORWARD DROP',
      // Bridged frames inside one subnet pass FORWARD too where br_netfilter is loaded.
      'iptables -A FORWARD -i br1 -o br1 -j ACCEPT',
      'iptables -A FORWARD -i br2 -o br2 -j ACCEPT',
      'iptables -A FORWARD -p udp --dport 51820 -j ACCEPT',
      'iptables -A FORWARD -p udp --sport 51820 -j ACCEPT',
    ].join(' && '),
  );
  for (const [i, o] of offices.entries()) {
    const bridge = o.ip.startsWith('192.168.1.') ? 'br1' : 'br2';
    const gw = o.ip.replace(/\.\d+$/, '.254');
    spawnOk('ip', [
      'link',
      'add',
      'eth0',
      'netns',
      o.node.ns.name,
      'type',
      'veth',
      'peer',
      'name',
      `port${i}`,
      'netns',
      router.name,
    ]);
    router.sh(`ip link set port${i} master ${bridge} && ip link set port${i} up`);
    o.node.ns.sh(`ip addr add ${o.ip}/24 dev eth0 && ip link set eth0 up && ip route add default via ${gw}`);
  }
}

function spawnOk(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Runs a command in a namespace (no WireGuard socket needed), returns status and output. */
function inNs(ns: TestNamespace, argv: string[]): { status: number | null; out: string; stdout: string } {
  const r = spawnSync('ip', ['netns', 'exec', ns.name, ...argv], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}`, stdout: r.stdout };
}

/** A TCP client on `from`'s host network: the service's greeting, or null when it does not answer in 3 s. */
function fetchService(from: TestNamespace): string | null {
  const script = `const s = require('node:net').connect(${service.port}, '${service.ip}');
    let got = ''; s.setTimeout(3000, () => process.exit(2));
    s.on('data', (d) => (got += d)); s.on('end', () => { process.stdout.write(got); process.exit(0); });
    s.on('error', (e) => { process.stderr.write(e.message); process.exit(1); });`;
  const r = inNs(from, [process.execPath, '-e', script]);
  return r.status === 0 ? r.out : null;
}

function ping(ns: TestNamespace, ip: string): boolean {
  // The first packet waits for the handshake; retries absorb a slow, loaded machine.
  return inNs(ns, ['sh', '-c', `ping -c 1 -W 3 ${ip} || ping -c 1 -W 3 ${ip} || ping -c 2 -W 3 ${ip}`]).status === 0;
}

/** Rules at Kilo's priority and Kilo's routes in table 1108, as `ip` prints them. */
function markState(ns: TestNamespace): { rules: string[]; hostRoutes: string[]; kiloRoutes: number; fwmark: string } {
  const rules = ['-4', '-6'].flatMap((f) =>
    inNs(ns, ['ip', f, 'rule', 'show', 'priority', '1107'])
      .out.split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => `${f} ${l.trim()}`),
  );
  const hostRoutes = ['-4', '-6'].flatMap((f) =>
    // A table that was never used "does not exist" (on stderr): no routes.
    inNs(ns, ['ip', f, 'route', 'show', 'table', '1108'])
      .stdout.split('\n')
      // Through a next-hop object: `nhid` without its id, the order it was written in.
      .map((l) => l.trim().replace(/\bnhid \d+/, 'nhid'))
      .filter((l) => l !== ''),
  );
  const kiloRoutes = ['-4', '-6']
    .map(
      (f) =>
        inNs(ns, ['ip', f, 'route', 'show', 'table', 'all', 'proto', '107'])
          .out.split('\n')
          .filter((l) => l.trim()).length,
    )
    .reduce((a, b) => a + b, 0);
  const fwmark = ns.sh('wg show kilo0 fwmark').trim();
  return { rules, hostRoutes, kiloRoutes, fwmark };
}

function assertApplied(run: ApplyRun, what: string): void {
  assert.equal(run.status, 0, `${what}: kg apply exits 0\n${run.stderr}`);
  assert.deepEqual(run.errors, [], `${what}: no errors logged`);
}

test(
  '--route-host-traffic: host traffic crosses a firewall that passes only WireGuard',
  { skip: skipNoNetns },
  async (t) => {
    const lab = new Lab();
    const router = createNamespace('kte2er');
    const started: ChildProcess[] = [];
    t.after(async () => {
      for (const c of started) if (c.exitCode === null && c.pid) spawnSync('kill', ['-9', String(c.pid)]);
      for (const pid of namespacePids(router.name)) spawnSync('kill', ['-9', String(pid)]);
      router.destroy();
      await lab.destroy();
    });

    const offices: Office[] = [
      { name: 'a-1', ip: '192.168.1.1' },
      { name: 'a-2', ip: '192.168.1.2' },
      { name: 'b-1', ip: '192.168.2.1' },
      { name: 'b-2', ip: '192.168.2.2' },
    ].map((o) => ({ ...o, node: lab.node(o.name) }));
    const [a1, , b1] = offices as [Office, Office, Office, Office];
    buildNetwork(router, offices);
    const snapshot = lab.writeCluster(cluster(offices));
    const applyAll = async (flags: string[], what: string) => {
      const runs = await Promise.all(offices.map((o) => lab.apply(o.node, snapshot, [...mesh, ...flags])));
      runs.forEach((r, i) => assertApplied(r, `${what} on ${offices[i]!.name}`));
    };

    // A service on b-1's host network (node-exporter, kubelet), bound to its internal IP.
    const server = spawn(
      'ip',
      [
        'netns',
        'exec',
        b1.node.ns.name,
        process.execPath,
        '-e',
        `require('node:net').createServer((s) => s.end('hello from b-1\\n')).listen(${service.port}, '${service.ip}', () => console.log('listening'))`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    started.push(server);
    let serverOut = '';
    server.stdout.on('data', (d: Buffer) => (serverOut += d.toString()));
    await until('the service on b-1 to listen', () => serverOut.includes('listening'));
    const b1WireGuardIP = oraclePlan(snapshot, 'b-1', mesh).wireGuardIP!.split('/')[0]!;
    // Without the flag a-1 has its pod routes only: none to the internal IPs, which are all endpoints;
    // and the fail-closed guard behind them.
    const plain = oraclePlan(snapshot, 'a-1', mesh);
    const plainRoutes = plain.routes.length + (plain.guard ?? []).length;

    // 1. Without the flag: WireGuard works between the subnets, host traffic to b-1 does not pass.
    await applyAll([], 'without the flag');
    assert.ok(ping(a1.node.ns, b1WireGuardIP), 'a-1 reaches b-1 over WireGuard without the flag');
    assert.equal(fetchService(a1.node.ns), null, 'without the flag the router drops host traffic');
    assert.deepEqual(markState(a1.node.ns), { rules: [], hostRoutes: [], kiloRoutes: plainRoutes, fwmark: 'off' });

    // 2. With the flag: the service answers across the firewall, and the router sees only WireGuard.
    await applyAll(['--route-host-traffic'], 'with the flag');
    const on = markState(a1.node.ns);
    assert.deepEqual(on.rules, [
      '-4 1107:\tnot from all fwmark 0x453 lookup 1108',
      '-6 1107:\tnot from all fwmark 0x453 lookup 1108',
    ]);
    assert.deepEqual(on.hostRoutes.sort(), [
      `192.168.2.1 nhid via ${b1WireGuardIP} dev kilo0 proto 107 src 192.168.1.1 onlink`,
      `192.168.2.2 nhid via ${oraclePlan(snapshot, 'b-2', mesh).wireGuardIP!.split('/')[0]} dev kilo0 proto 107 src 192.168.1.1 onlink`,
      // The fail-closed guard: while kilo0 is away, host traffic to them is dropped, not sent in the clear.
      'blackhole 192.168.2.1 proto 107 metric 1',
      'blackhole 192.168.2.2 proto 107 metric 1',
    ]);
    assert.equal(on.fwmark, '0x453');

    const capture = join(lab.dir, 'router.pcap');
    const dump = spawn(
      'ip',
      [
        'netns',
        'exec',
        router.name,
        'tcpdump',
        '-i',
        'any',
        '-nn',
        '-U',
        '--immediate-mode',
        '-Z',
        'root',
        '-w',
        capture,
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    started.push(dump);
    let dumpErr = '';
    dump.stderr.on('data', (d: Buffer) => (dumpErr += d.toString()));
    await until('tcpdump on the router to listen', () => dumpErr.includes('listening on'));
    const greeting = fetchService(a1.node.ns);
    assert.ok(ping(a1.node.ns, b1WireGuardIP), 'WireGuard itself still works with the flag (no loop)');
    dump.kill('SIGINT');
    await until('tcpdump to stop', () => dump.exitCode !== null || dump.signalCode !== null);
    assert.equal(greeting, 'hello from b-1\n', 'with the flag the service on b-1 answers a-1');
    const count = (filter: string) =>
      inNs(router, ['tcpdump', '-nn', '-r', capture, filter])
        .out.split('\n')
        .filter((l) => /^\d\d:/.test(l)).length;
    assert.ok(count('udp port 51820') > 0, 'the router forwarded WireGuard');
    assert.equal(count('tcp'), 0, 'no TCP crossed the router');
    assert.equal(count('ip and not udp port 51820'), 0, 'nothing but WireGuard crossed the router');

    // 3. The flag turned off again: rule, table-1108 routes and mark go; the service is cut off again.
    await applyAll([], 'the flag turned off');
    assert.deepEqual(markState(a1.node.ns), { rules: [], hostRoutes: [], kiloRoutes: plainRoutes, fwmark: 'off' });
    assert.equal(fetchService(a1.node.ns), null, 'the flag off: host traffic is dropped again');
    assert.ok(ping(a1.node.ns, b1WireGuardIP), 'WireGuard still works after the flag went off');

    // 4. Clean-up: kg apply --watch with the flag, then SIGTERM: no mark rule and no Kilo route remain.
    const watchers = offices.map((o) => lab.start(o.node, snapshot, [...mesh, '--route-host-traffic', '--watch']));
    // Generous: a loaded machine takes many seconds to start four agents.
    await until(
      'every watching kg to apply',
      () => watchers.every((w) => w.stderr().includes('"msg":"applied"')),
      120_000,
    );
    assert.equal(fetchService(a1.node.ns), 'hello from b-1\n', 'the watching agents route host traffic');
    for (const w of watchers) w.child.kill('SIGTERM');
    const runs = await Promise.all(watchers.map((w) => w.done));
    runs.forEach((r, i) => assertApplied(r, `kg apply --watch on ${offices[i]!.name}`));
    for (const o of offices) {
      const after = markState(o.node.ns);
      assert.deepEqual(after.rules, [], `${o.name}: no rule at priority 1107 after clean-up`);
      assert.deepEqual(after.hostRoutes, [], `${o.name}: table 1108 is empty after clean-up`);
      assert.equal(after.kiloRoutes, 0, `${o.name}: no route with Kilo's protocol after clean-up`);
    }
  },
);
