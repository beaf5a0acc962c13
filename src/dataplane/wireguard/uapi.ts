import { createConnection } from 'node:net';
import { IP } from '../../net/cidr.js';
import { ownCopy, presharedKeyDigest, type ParsedDump } from '../../wireguard/dump.js';
import { publicKeyOf } from '../../wireguard/keys.js';
import { newPeerState } from '../../wireguard/state.js';
import type { WireGuardPeerState } from '../types.js';
import type { PeerSettings, WireGuardDiff } from './diff.js';

/**
 * wireguard-go's configuration socket (wireguard.com/xplatform): the same `set` and `get` that
 * `wg set` and `wg show dump` send, without starting a process (and, in a namespace, the four it
 * takes to get there). Keys travel hex-encoded over the socket and never touch a file or an argv.
 */

export const hex = (base64: string) => Buffer.from(base64, 'base64').toString('hex');
const base64 = (hexText: string) => Buffer.from(hexText, 'hex').toString('base64');

/**
 * Public keys from hex to base64 in one conversion, not one per peer (docs/performance.md#wireguard):
 * a 32-byte key and a zero byte are 33 bytes, exactly 44 base64 characters, of which the first 43
 * are the key's own and the last stands for its '=' padding.
 */
export function base64Keys(hex: readonly string[]): string[] {
  const bytes = Buffer.from(hex.join('00') + '00', 'hex');
  if (hex.some((k) => k.length !== 64) || bytes.length !== 33 * hex.length) return hex.map(base64);
  const text = bytes.toString('base64');
  return hex.map((_, i) => `${text.slice(44 * i, 44 * i + 43)}=`);
}
export const zeroKey = '0'.repeat(64);

/** Whether `wg set` would have to resolve the endpoint itself: the socket takes addresses only. */
function isAddressEndpoint(endpoint: string): boolean {
  const m = /^\[([^\]]+)\]:\d+$/.exec(endpoint) ?? /^([^:]+):\d+$/.exec(endpoint);
  return m !== null && IP.tryParse(m[1]!.split('%')[0]!) !== null;
}

/** Whether every endpoint in the diff is an address, so the socket can take the whole diff. */
export function uapiCanSet(diff: WireGuardDiff): boolean {
  return diff.peers.every(
    (p) => p.kind === 'remove' || p.set.endpoint === undefined || isAddressEndpoint(p.set.endpoint),
  );
}

function peerLines(set: PeerSettings): string[] {
  const lines: string[] = [];
  if (set.endpoint !== undefined) lines.push(`endpoint=${set.endpoint}`);
  if (set.persistentKeepalive !== undefined) lines.push(`persistent_keepalive_interval=${set.persistentKeepalive}`);
  if (set.presharedKey !== undefined)
    lines.push(`preshared_key=${set.presharedKey === null ? zeroKey : hex(set.presharedKey)}`);
  if (set.allowedIPs !== undefined)
    lines.push('replace_allowed_ips=true', ...set.allowedIPs.map((ip) => `allowed_ip=${ip}`));
  return lines;
}

/** The `set=1` request for a diff: interface settings first, then peers in the diff's order. */
export function uapiSetRequest(diff: WireGuardDiff): string {
  const lines = ['set=1'];
  const i = diff.interface;
  if (i.privateKey !== undefined) lines.push(`private_key=${hex(i.privateKey)}`);
  if (i.listenPort !== undefined) lines.push(`listen_port=${i.listenPort}`);
  if (i.fwmark !== undefined) lines.push(`fwmark=${i.fwmark}`);
  for (const p of diff.peers) {
    lines.push(`public_key=${hex(p.publicKey)}`);
    if (p.kind === 'remove') lines.push('remove=true');
    else {
      if (p.kind === 'update') lines.push('update_only=true');
      lines.push(...peerLines(p.set));
    }
  }
  return `${lines.join('\n')}\n\n`;
}

/** A request the device refused or a socket that failed; names the device, never a key. */
export class UapiError extends Error {
  constructor(
    device: string,
    what: string,
    /** The device answered with an error (as opposed to a socket that failed). */
    readonly refused = false,
  ) {
    super(`wireguard-go ${device}: ${what}`);
    this.name = 'UapiError';
  }
}

/** Sends one request and returns the response up to its `errno=` line; rejects on errno ≠ 0. */
export function uapiRequest(socketPath: string, device: string, request: string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    const chunks: Buffer[] = [];
    const fail = (what: string, refused = false) => {
      socket.destroy();
      reject(new UapiError(device, what, refused));
    };
    socket.setTimeout(timeoutMs, () => fail(`no answer on ${socketPath} within ${timeoutMs} ms`));
    socket.on('error', (e) => fail(`${socketPath}: ${e.message}`));
    let tail = '';
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      // A big device answers in many chunks: only the end can hold the closing `errno=` line.
      tail = (tail + d.toString('latin1')).slice(-64);
      if (!/(?:^|\n)errno=-?\d+\n\n$/.test(tail)) return;
      socket.end();
      const text = Buffer.concat(chunks).toString('utf8');
      const m = /(?:^|\n)errno=(-?\d+)\n\n$/.exec(text)!;
      if (m[1] === '0') resolve(text.slice(0, m.index));
      else fail(`the request was refused (errno ${m[1]})`, true);
    });
    socket.on('end', () => fail('the socket closed before the answer was complete'));
    socket.write(request);
  });
}

/**
 * Parses a `get=1` answer into the state `wg show dump` gives. The private key is dropped at once
 * (only its public key is kept); preshared keys survive only as digests.
 */
export function parseUapiGet(text: string): ParsedDump {
  const state: ParsedDump['state'] = { publicKey: null, listenPort: 0, fwmark: 0, peers: [] };
  const presharedKeyDigests = new Map<string, string>();
  let peer: WireGuardPeerState | null = null;
  // Endpoints and allowed IPs are kept as cuts of `text` first, then copied out all at once (see
  // ownCopy: a cut would keep the whole answer alive): one copy, not one per value (thousands).
  const endpoints: [WireGuardPeerState, string][] = [];
  // Each peer's allowed IPs are one run of `ips`: [peer, first, end].
  const ips: string[] = [];
  const allowed: [WireGuardPeerState, number, number][] = [];
  const publicKeys: string[] = [];
  const digests: [WireGuardPeerState, string][] = [];
  // The answer is scanned in place, not split: at 20,000 nodes it is ~210,000 lines, and a string
  // per line, per key and per value was most of a resync's read (docs/performance.md). Only the
  // values kept are cut out, and the counters are read as digits.
  for (let pos = 0; pos < text.length;) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    const at = text.indexOf('=', pos);
    const line = pos;
    pos = nl + 1;
    if (at < 0 || at > nl) continue;
    const from = at + 1;
    if (keyIs(text, line, at, 'public_key')) {
      // Its base64 key is filled in after the loop (see base64Keys).
      peer = newPeerState('');
      state.peers.push(peer);
      publicKeys.push(text.slice(from, nl));
      continue;
    }
    if (!peer) {
      if (keyIs(text, line, at, 'private_key')) {
        const value = text.slice(from, nl);
        if (value !== zeroKey) state.publicKey = publicKeyOf(base64(value));
      } else if (keyIs(text, line, at, 'listen_port')) state.listenPort = numberAt(text, from, nl);
      else if (keyIs(text, line, at, 'fwmark')) state.fwmark = numberAt(text, from, nl);
      continue;
    }
    if (keyIs(text, line, at, 'allowed_ip')) {
      const run = allowed.at(-1);
      if (run?.[0] === peer) run[2]++;
      else allowed.push([peer, ips.length, ips.length + 1]);
      ips.push(text.slice(from, nl));
    } else if (keyIs(text, line, at, 'endpoint')) endpoints.push([peer, text.slice(from, nl)]);
    else if (keyIs(text, line, at, 'last_handshake_time_sec')) peer.latestHandshake = numberAt(text, from, nl);
    else if (keyIs(text, line, at, 'rx_bytes')) peer.rxBytes = numberAt(text, from, nl);
    else if (keyIs(text, line, at, 'tx_bytes')) peer.txBytes = numberAt(text, from, nl);
    else if (keyIs(text, line, at, 'persistent_keepalive_interval'))
      peer.persistentKeepalive = numberAt(text, from, nl);
    else if (keyIs(text, line, at, 'preshared_key')) {
      const value = text.slice(from, nl);
      if (value !== zeroKey) {
        peer.hasPresharedKey = true;
        digests.push([peer, presharedKeyDigest(base64(value))]);
      }
    }
  }
  base64Keys(publicKeys).forEach((k, i) => (state.peers[i]!.publicKey = k));
  for (const [p, digest] of digests) presharedKeyDigests.set(p.publicKey, digest);
  const copied = (cuts: string[]) => (cuts.length === 0 ? [] : ownCopy(cuts.join('\n')).split('\n'));
  const ownEndpoints = copied(endpoints.map(([, e]) => e));
  endpoints.forEach(([p], i) => (p.endpoint = ownEndpoints[i]!));
  const ownIPs = copied(ips);
  for (const [p, from, end] of allowed) p.allowedIPs = ownIPs.slice(from, end);
  // As parseDump: WireGuard lists peers in no stable order.
  state.peers.sort((a, b) => (a.publicKey < b.publicKey ? -1 : a.publicKey > b.publicKey ? 1 : 0));
  return { state, presharedKeyDigests };
}

/** Whether the line from `line` has `key` before its first '=' (at `at`). */
function keyIs(text: string, line: number, at: number, key: string): boolean {
  return at - line === key.length && text.startsWith(key, line);
}

/** `Number(text.slice(from, to))`, read in place when it is up to 15 digits (every counter of a device). */
function numberAt(text: string, from: number, to: number): number {
  if (to - from > 15) return Number(text.slice(from, to));
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return Number(text.slice(from, to));
    n = n * 10 + d;
  }
  return n;
}
