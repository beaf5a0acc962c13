import { isKey } from '../../wireguard/keys.js';
import type { WireGuardConfig } from '../types.js';
import { base64Keys, hex, zeroKey } from './uapi.js';

type Peer = WireGuardConfig['peers'][number];

/** The end of the line that starts at `from`. */
function lineEnd(text: string, from: number): number {
  const at = text.indexOf('\n', from);
  return at < 0 ? text.length : at;
}

/** Whether the value in text[from, to) is exactly `want`. */
function valueIs(text: string, from: number, to: number, want: string): boolean {
  return to - from === want.length && text.startsWith(want, from);
}

/** Whether the line text[from, to) is `key=…`; then the value starts at from + key.length + 1. */
function keyIs(text: string, from: number, eq: number, key: string): boolean {
  return eq - from === key.length && text.startsWith(key, from);
}

/** The interface lines (before the first peer) say what `config` says: private key, port, fwmark. */
function interfaceHolds(text: string, to: number, config: WireGuardConfig): boolean {
  const fwmark = config.fwmark ?? 0;
  // parseUapiGet reads numbers with Number(): text equal to String(n) reads back as n only for integers.
  if (!isKey(config.privateKey) || !Number.isInteger(config.listenPort) || !Number.isInteger(fwmark)) return false;
  const privateKey = hex(config.privateKey);
  if (privateKey === zeroKey) return false;
  const port = String(config.listenPort);
  const mark = String(fwmark);
  let keySeen = false;
  let portSeen = config.listenPort === 0;
  let markSeen = fwmark === 0;
  for (let from = 0; from < to;) {
    const end = lineEnd(text, from);
    const eq = text.indexOf('=', from);
    if (eq >= 0 && eq < end) {
      const value = eq + 1;
      if (keyIs(text, from, eq, 'private_key')) {
        if (!valueIs(text, value, end, privateKey)) return false;
        keySeen = true;
      } else if (keyIs(text, from, eq, 'listen_port')) {
        // Port 0 in the plan takes whatever port the device has.
        if (config.listenPort !== 0 && !valueIs(text, value, end, port)) return false;
        portSeen = true;
      } else if (keyIs(text, from, eq, 'fwmark')) {
        if (!valueIs(text, value, end, mark)) return false;
        markSeen = true;
      }
    }
    from = end + 1;
  }
  return keySeen && portSeen && markSeen;
}

/** The preshared key line a device holding `psk` prints; null when no line can say so. */
function presharedKeyLine(psk: string | null): string | null {
  if (psk === null) return zeroKey;
  const bytes = Buffer.from(psk, 'base64');
  // The full diff compares the plan's text (its digest): only the canonical text of a nonzero key is that key.
  if (bytes.toString('base64') !== psk) return null;
  const value = bytes.toString('hex');
  return value === zeroKey ? null : value;
}

function countsOf(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/** A peer's lines text[from, to) (after its public_key line) say what `peer` says. */
function peerHolds(text: string, from: number, to: number, peer: Peer): boolean {
  if (!Number.isInteger(peer.persistentKeepalive)) return false;
  const psk = presharedKeyLine(peer.presharedKey);
  if (psk === null) return false;
  const keepalive = String(peer.persistentKeepalive);
  const want = peer.allowedIPs;
  // Each allowed IP the device lists takes one of the plan's, once: the same lists in some order.
  // A location's leader has hundreds (location granularity): those are counted, not searched.
  const counts = want.length > 30 ? countsOf(want) : null;
  let taken = 0;
  let ips = 0;
  let pskSeen = peer.presharedKey === null;
  let endpointSeen = peer.endpoint === null;
  let keepaliveSeen = peer.persistentKeepalive === 0;
  while (from < to) {
    const end = lineEnd(text, from);
    const eq = text.indexOf('=', from);
    const value = eq + 1;
    // By the key's length first: most lines (handshake, counters, version) are none of these.
    switch (eq < 0 || eq > end ? -1 : eq - from) {
      case 10:
        if (!text.startsWith('allowed_ip', from)) break;
        ips++;
        if (counts) {
          const ip = text.slice(value, end);
          const left = counts.get(ip);
          if (!left) return false;
          counts.set(ip, left - 1);
        } else {
          let i = 0;
          while (i < want.length && ((taken >> i) & 1 || !valueIs(text, value, end, want[i]!))) i++;
          if (i === want.length) return false;
          taken |= 1 << i;
        }
        break;
      case 8:
        if (!text.startsWith('endpoint', from)) break;
        // A null endpoint is wherever WireGuard last saw the peer: any.
        if (peer.endpoint !== null && !valueIs(text, value, end, peer.endpoint)) return false;
        endpointSeen = true;
        break;
      case 13:
        if (!text.startsWith('preshared_key', from)) break;
        if (!valueIs(text, value, end, psk)) return false;
        pskSeen = true;
        break;
      case 29:
        if (!text.startsWith('persistent_keepalive_interval', from)) break;
        if (!valueIs(text, value, end, keepalive)) return false;
        keepaliveSeen = true;
        break;
    }
    from = end + 1;
  }
  return ips === want.length && pskSeen && endpointSeen && keepaliveSeen;
}

/** What is left to diff: the answer's interface lines and unsettled peers, and the config's unsettled peers. */
export interface Unsettled {
  text: string;
  config: WireGuardConfig;
}

/**
 * Compares wireguard-go's answer to `get=1` with `config` on the text, peer by peer, without building
 * peer states (kg apply, 5,000 peers): null when the device holds exactly the config; else what is
 * left to diff, whose diffWireGuard(parseUapiGet(text), config) is the whole answer's. A peer settled
 * here (the device prints the config's own texts for it) has no writes in the whole diff; every other
 * peer, and the interface, are in what is left, as they are. Texts this cannot split peer by peer
 * (a key listed twice, in the answer or in the config) are left whole.
 */
export function uapiUnsettled(text: string, config: WireGuardConfig): Unsettled | null {
  const whole = { text, config };
  const want = new Map<string, Peer>();
  for (const p of config.peers) {
    // Two peers at one key are the full diff's error to report.
    if (want.has(p.publicKey)) return whole;
    want.set(p.publicKey, p);
  }
  const peerAt = (from: number) => {
    const at = text.indexOf('\npublic_key=', from);
    return at < 0 ? -1 : at + 1;
  };
  const first = text.startsWith('public_key=') ? 0 : peerAt(0);
  const header = first < 0 ? text.length : first;
  const interfaceSettled = interfaceHolds(text, header, config);
  const starts: number[] = [];
  const keys: string[] = [];
  for (let at = first; at >= 0; at = peerAt(at)) {
    starts.push(at);
    keys.push(text.slice(at + 'public_key='.length, lineEnd(text, at)));
  }
  // The keys as parseUapiGet makes them: the same conversion, so the same peers match.
  const publicKeys = base64Keys(keys);
  // parseUapiGet's last peer at a key is the one diffed: not what a peer-by-peer split would give.
  if (new Set(publicKeys).size !== publicKeys.length) return whole;
  const left = [text.slice(0, header)];
  for (let i = 0; i < starts.length; i++) {
    const peer = want.get(publicKeys[i]!);
    const end = i + 1 < starts.length ? starts[i + 1]! : text.length;
    if (peer && peerHolds(text, lineEnd(text, starts[i]!) + 1, end, peer)) want.delete(peer.publicKey);
    else left.push(text.slice(starts[i], end));
  }
  if (interfaceSettled && left.length === 1 && want.size === 0) return null;
  // The config's order, as the whole diff reads it.
  return { text: left.join(''), config: { ...config, peers: config.peers.filter((p) => want.has(p.publicKey)) } };
}

/** Whether the device holds exactly `config` (uapiUnsettled finds nothing to diff). */
export function uapiHolds(text: string, config: WireGuardConfig): boolean {
  return uapiUnsettled(text, config) === null;
}
