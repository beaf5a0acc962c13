/**
 * `node --import tsx bench/routes-nexthops.ts [gateways] [--wireguard-go]` (root): the kernel's cost
 * of a 20,000-node first apply's routes, two per gateway, written as the routes backend writes them:
 * plain (`route replace DST via GW dev kilo0 onlink table 254 metric M proto 107`, one `ip -batch`)
 * and through next-hop objects (`nexthop add id N via GW dev kilo0 onlink proto 107`, then the routes
 * by `nhid N`), for IPv4 and IPv6, each in a fresh namespace whose kilo0 is a veth (or wireguard-go's
 * tun: it hears every route change). Prints wall and system seconds of each `ip -batch`; asserts nothing.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const gateways = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 19_000);
const wireguardGo = process.argv.includes('--wireguard-go');
const dir = mkdtempSync(join(tmpdir(), 'kts-bench-nexthops-'));
const firstId = 107 * 2 ** 24;

/** The lines: next hops (or none) and two routes through each gateway. */
function lines(family: 4 | 6, through: 'via' | 'nhid'): { hops: string[]; routes: string[] } {
  const hops: string[] = [];
  const routes: string[] = [];
  for (let i = 1; i <= gateways; i++) {
    const gw = family === 4 ? `10.4.${i >> 8}.${i & 255}` : `fd00:4::${i.toString(16)}`;
    const dsts =
      family === 4
        ? [`10.${128 + (i >> 8)}.${i & 255}.0/24`, `172.16.${i >> 8}.${i & 255}`]
        : [`fd10:${i.toString(16)}::/64`, `fd20::${i.toString(16)}`];
    const tail = ` table 254 metric ${family === 4 ? 0 : 1024} proto 107`;
    if (through === 'nhid') hops.push(`nexthop add id ${firstId + i} via ${gw} dev kilo0 onlink proto 107`);
    const how = through === 'nhid' ? `nhid ${firstId + i}` : `via ${gw} dev kilo0 onlink`;
    for (const dst of dsts) routes.push(`route replace ${dst} ${how}${tail}`);
  }
  return { hops, routes };
}

/** One `ip -force -batch` in `ns`: wall and system seconds. */
function batch(ns: string, name: string, text: string[]): string {
  const file = join(dir, `${name}.txt`);
  const times = join(dir, 'time.txt');
  writeFileSync(file, `${text.join('\n')}\n`);
  const r = spawnSync('/usr/bin/time', ['-f', '%e %S', '-o', times, 'ip', '-n', ns, '-force', '-batch', file], {
    encoding: 'utf8',
  });
  const failed = (r.stderr.match(/Command failed/g) ?? []).length;
  const [wall, sys] = readFileSync(times, 'utf8').trim().split('\n').at(-1)!.split(' ');
  return `${wall} s (sys ${sys})${failed > 0 ? `, ${failed} failed: ${r.stderr.split('\n')[0]}` : ''}`;
}

function namespace(n: number): { ns: string; done: () => void } {
  const ns = `ktnhb-${process.pid}-${n}`;
  execFileSync('ip', ['netns', 'add', ns]);
  let wg: ChildProcess | undefined;
  const sh = (cmd: string) => execFileSync('ip', ['-n', ns, ...cmd.split(' ')]);
  try {
    if (wireguardGo) {
      wg = spawn('ip', ['netns', 'exec', ns, 'wireguard-go', '-f', 'kilo0'], { stdio: 'ignore' });
      for (let i = 0; i < 100 && spawnSync('ip', ['-n', ns, 'link', 'show', 'kilo0']).status !== 0; i++)
        spawnSync('sleep', ['0.05']);
    } else {
      sh('link add kilo0 type veth peer name kilo1');
      sh('link set kilo1 up');
    }
    sh('addr add 10.4.255.254/16 dev kilo0');
    sh('addr add fd00:4::ffff/64 dev kilo0 nodad');
    sh('link set kilo0 up');
  } catch (e) {
    wg?.kill();
    execFileSync('ip', ['netns', 'del', ns]);
    throw e;
  }
  return {
    ns,
    done: () => {
      wg?.kill();
      execFileSync('ip', ['netns', 'del', ns]);
    },
  };
}

let n = 0;
try {
  const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`${gateways} gateways, ${2 * gateways} routes, kilo0 ${wireguardGo ? "wireguard-go's tun" : 'a veth'}`);
  for (const family of [4, 6] as const)
    for (const through of ['via', 'nhid'] as const) {
      const { ns, done } = namespace(n++);
      try {
        const { hops, routes } = lines(family, through);
        const before = load();
        const hopsTime = hops.length > 0 ? `next hops ${batch(ns, 'hops', hops)}, ` : '';
        console.log(`IPv${family} ${through}: ${hopsTime}routes ${batch(ns, 'routes', routes)} (load ${before})`);
      } finally {
        done();
      }
    }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
