import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { KubeObject } from '../../../src/model/parse.js';
import { generatePrivateKey, publicKeyOf } from '../../../src/wireguard/keys.js';
import { netnsExec } from '../../../src/dataplane/exec.js';
import type { Lab } from './lab.js';
import { peerAllowedIP, peerKeepaliveSeconds, peerName, peerNs, peerPublicIP } from './layout.js';
import type { Endpoint } from './probe.js';
import { hasIPv6 } from './network-ipv6.js';
import { peerAllowedIPv6, peerPublicIPv6 } from './families.js';
import { cliArgv, startRecorded, stopProcess } from './processes.js';
import { inNodeNs, run, sleep } from './sh.js';
import { isAlive } from './state.js';

/**
 * The lab's Peer: a machine outside the cluster (a laptop) with nothing but a public address,
 * configured the way a user would: `kgctl showconf peer NAME` → wg-quick INI → `wg syncconf`.
 */

const port = 51820;
const address = peerAllowedIP.split('/')[0]!;
const addressIPv6 = peerAllowedIPv6.split('/')[0]!;

/**
 * The Peer's allowed IPs: IPv4's, and IPv6's with IPv6 (only it in an IPv6 lab). Its endpoint is
 * IPv6 in such a lab: every node has IPv6, some nothing else.
 */
function peerFamily(lab: Lab): { allowedIPs: string[]; endpoint: string } {
  const family = lab.options.ipFamily;
  if (!hasIPv6(family)) return { allowedIPs: [peerAllowedIP], endpoint: peerPublicIP };
  return {
    allowedIPs: family === 'ipv6' ? [peerAllowedIPv6] : [peerAllowedIP, peerAllowedIPv6],
    endpoint: peerPublicIPv6,
  };
}

const peerDir = (lab: Lab) => lab.state.path('peer');
/** The Peer's wireguard-go socket directory, bound over /var/run/wireguard in its namespace (wg needs it). */
export const peerRunDir = (lab: Lab) => lab.state.path('peer', 'run');
const runDir = peerRunDir;

function privateKey(lab: Lab): string {
  const file = `${peerDir(lab)}/key`;
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(peerDir(lab), { recursive: true, mode: 0o700 });
  const key = generatePrivateKey();
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The Peer as a ping source of `family` (named `peer/v6` for IPv6 in a dual-stack lab). */
export function peerEndpoint(lab: Lab, family: 4 | 6 = 4): Endpoint {
  const ns = peerNs(lab.options.prefix);
  if (family === 4) return { name: 'peer', ns, ip: address, source: address, family };
  const name = lab.options.ipFamily === 'dual' ? 'peer/v6' : 'peer';
  return { name, ns, ip: addressIPv6, source: addressIPv6, family };
}

/** The Peer object, as `kubectl apply` of a Peer manifest would create it. */
export async function createPeerObject(lab: Lab): Promise<void> {
  const publicKey = publicKeyOf(privateKey(lab));
  lab.state.state.peerPublicKey = publicKey;
  lab.state.save();
  const peer = {
    apiVersion: 'kilo.squat.ai/v1alpha1',
    kind: 'Peer',
    metadata: { name: peerName },
    spec: {
      allowedIPs: peerFamily(lab).allowedIPs,
      publicKey,
      endpoint: { dnsOrIP: { ip: peerFamily(lab).endpoint }, port },
      persistentKeepalive: peerKeepaliveSeconds,
    },
  } as KubeObject;
  await lab.api.create('peers', peer);
}

function peerExec(lab: Lab, argv: readonly string[], input?: string): string {
  return run(inNodeNs(peerNs(lab.options.prefix), runDir(lab), argv), input === undefined ? {} : { input });
}

/** Starts the Peer's wireguard-go (once) and waits for its interface. */
async function ensureDevice(lab: Lab): Promise<void> {
  const p = lab.state.state.made.find((m) => m.kind === 'process' && m.what === 'wireguard-go peer');
  if (p && p.kind === 'process' && isAlive(p)) return;
  mkdirSync(runDir(lab), { recursive: true, mode: 0o700 });
  const exec = netnsExec(peerNs(lab.options.prefix), runDir(lab));
  const argv = ['env', 'WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1', 'wireguard-go', '-f', 'kilo0'];
  startRecorded(
    lab.state,
    'wireguard-go peer',
    [
      'ip',
      'netns',
      'exec',
      peerNs(lab.options.prefix),
      'sh',
      '-c',
      'mount --bind "$0" /var/run/wireguard && exec "$@"',
      exec.wireGuardRunDir,
      ...argv,
    ],
    `${peerDir(lab)}/wireguard-go.log`,
  );
  const deadline = Date.now() + 10_000;
  while (!existsSync(`${runDir(lab)}/kilo0.sock`)) {
    if (Date.now() > deadline)
      throw new Error(`the Peer's wireguard-go did not create its socket; see ${peerDir(lab)}/wireguard-go.log`);
    await sleep(20);
  }
  for (const ip of peerFamily(lab).allowedIPs)
    run(['ip', '-n', peerNs(lab.options.prefix), 'addr', 'replace', ip, 'dev', 'kilo0']);
  run(['ip', '-n', peerNs(lab.options.prefix), 'link', 'set', 'kilo0', 'up']);
}

/**
 * Stops the Peer's wireguard-go (its interface, sessions and routes go with it): the next
 * configurePeer starts from nothing, as an owner re-importing `kgctl showconf peer` after a
 * granularity change would. Until then its old sessions and routes would carry its packets for
 * addresses the new configuration gives to another peer into the wrong tunnel.
 */
export async function resetPeerDevice(lab: Lab): Promise<void> {
  const p = lab.state.state.made.find((m) => m.kind === 'process' && m.what === 'wireguard-go peer');
  if (p && p.kind === 'process') await stopProcess(p, 'SIGTERM', 5000);
  lab.state.forget((m) => m.kind === 'process' && m.what === 'wireguard-go peer');
  run(['ip', '-n', peerNs(lab.options.prefix), 'link', 'del', 'kilo0'], { allowFail: true });
}

/** `kgctl showconf peer` against the API server's objects, without the lines `wg` rejects. */
export function peerConfigFromKgctl(lab: Lab): { ini: string; allowedIPs: string[] } {
  const r = run(
    [
      ...cliArgv('kgctl'),
      'showconf',
      'peer',
      peerName,
      '--cluster',
      lab.clusterFile,
      '--mesh-granularity',
      lab.options.granularity,
    ],
    { allowFail: true },
  );
  const allowedIPs: string[] = [];
  const kept: string[] = [];
  for (const line of r.split('\n')) {
    // Address and DNS are wg-quick's, not wg's: `wg setconf` rejects them.
    if (/^\s*(Address|DNS|MTU)\s*=/i.test(line)) continue;
    const m = /^\s*AllowedIPs\s*=\s*(.*)$/i.exec(line);
    if (m)
      allowedIPs.push(
        ...m[1]!
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
    kept.push(line);
  }
  return { ini: kept.join('\n'), allowedIPs };
}

/**
 * Public keys of the Peer's WireGuard peers with a live session (a handshake in the last
 * 180 s) and the endpoint WireGuard learned for them.
 */
function liveSessions(lab: Lab): Set<string> {
  const now = Math.floor(Date.now() / 1000);
  const dump = peerExec(lab, ['wg', 'show', 'kilo0', 'dump']).trim().split('\n').slice(1);
  return new Set(
    dump
      .map((l) => l.split('\t'))
      .filter((f) => f[2] !== '(none)' && Number(f[4]) > 0 && now - Number(f[4]) < 180)
      .map((f) => f[0]!),
  );
}

/**
 * Leaves out the Endpoint of every peer with a live session: behind NAT, the endpoint a node
 * reaches the Peer from is a mapping of its own (not the one it reaches other nodes from, which
 * is what the cluster knows), and WireGuard learned it from the node's keepalives. `wg syncconf`
 * leaves an endpoint it is not given alone.
 */
function keepLiveEndpoints(ini: string, live: ReadonlySet<string>): string {
  return ini
    .split(/(?=^\[Peer\])/m)
    .map((section) => {
      const key = /^\s*PublicKey\s*=\s*(\S+)/m.exec(section)?.[1];
      return key && live.has(key) ? section.replace(/^\s*Endpoint\s*=.*\n?/m, '') : section;
    })
    .join('');
}

/**
 * Applies the Peer's current configuration: peers by `wg syncconf` (sessions of unchanged peers
 * survive), a route per allowed IP as wg-quick would add. Without a Peer object, no peers.
 */
export async function configurePeer(lab: Lab): Promise<void> {
  await ensureDevice(lab);
  const peers = await lab.api.list('peers');
  const present = peers.some((p) => p.metadata?.name === peerName);
  const { ini, allowedIPs } = present ? peerConfigFromKgctl(lab) : { ini: '', allowedIPs: [] };
  const peerSections = keepLiveEndpoints(ini.replace(/^[\s\S]*?(?=^\[Peer\])/m, ''), liveSessions(lab));
  const conf = [
    `[Interface]`,
    `PrivateKey = ${privateKey(lab)}`,
    `ListenPort = ${port}`,
    '',
    ini.includes('[Peer]') ? peerSections : '',
  ].join('\n');
  const file = `${peerDir(lab)}/wg.conf`;
  writeFileSync(file, conf, { mode: 0o600 });
  peerExec(lab, ['wg', 'syncconf', 'kilo0', file]);
  const ns = peerNs(lab.options.prefix);
  const want = new Set(allowedIPs);
  const current = ['-4', '-6'].flatMap((f) =>
    run(['ip', '-n', ns, f, 'route', 'show', 'dev', 'kilo0'])
      .split('\n')
      // The kernel's own (IPv6's link-local, an address's prefix) stay.
      .filter((l) => l.trim() !== '' && !l.includes('proto kernel'))
      .map((l) => l.trim().split(' ')[0]!),
  );
  for (const c of current)
    if (!want.has(c) && !want.has(`${c}/32`) && !want.has(`${c}/128`))
      run(['ip', '-n', ns, 'route', 'del', c, 'dev', 'kilo0'], { allowFail: true });
  // A route's source is the Peer's allowed IP of the route's family.
  for (const c of want)
    run(['ip', '-n', ns, 'route', 'replace', c, 'dev', 'kilo0', 'src', c.includes(':') ? addressIPv6 : address]);
}
