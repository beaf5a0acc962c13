import type { WireGuardPeerState, WireGuardState } from './state.js';
import { isKey } from './keys.js';

/**
 * What `wg show IFACE dump` says about a device. The private key it prints is dropped here; the
 * preshared keys are kept only as digests, so a changed preshared key can be noticed without the
 * secret outliving the parse.
 */
export interface ParsedDump {
  state: WireGuardState;
  /** public key → digest of the peer's preshared key (only peers that have one). */
  presharedKeyDigests: Map<string, string>;
}

/** A line of `wg show dump` output that cannot be read; never quotes a secret column. */
export class DumpParseError extends Error {
  constructor(line: number, field: string, value: string | null, reason: string) {
    super(`wg show dump, line ${line}: field ${field}: ${reason}${value === null ? '' : `: ${JSON.stringify(value)}`}`);
    this.name = 'DumpParseError';
  }
}

/** A digest of a preshared key, for comparing without keeping it. */
export function presharedKeyDigest(presharedKey: string): string {
  // node:crypto only when a peer has a preshared key: docs/performance.md#lazy-loading.
  return process
    .getBuiltinModule('node:crypto')
    .createHash('sha256')
    .update('kilo-ts psk\0')
    .update(presharedKey)
    .digest('hex');
}

const none = '(none)';

function count(text: string, line: number, field: string): number {
  if (!/^\d+$/.test(text)) throw new DumpParseError(line, field, text, 'not a non-negative integer');
  return Number(text);
}

function publicKey(text: string, line: number, field: string): string {
  if (!isKey(text)) throw new DumpParseError(line, field, text, 'not a base64 WireGuard key');
  return ownCopy(text);
}

/**
 * A copy of a value cut out of a device's answer: a cut would keep the whole answer alive, the
 * interface's private key among it, while the device's state is remembered
 * (docs/performance.md#the-heap).
 */
export function ownCopy(value: string): string {
  return Buffer.from(value, 'latin1').toString('latin1');
}

/**
 * Parses the output of `wg show IFACE dump` (one interface: no interface-name column).
 * Peers come back ordered by public key: WireGuard lists them in no stable order.
 * @throws DumpParseError naming the line and field.
 */
export function parseDump(text: string): ParsedDump {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const head = lines[0];
  if (head === undefined) throw new DumpParseError(1, 'interface', null, 'empty output');
  const iface = head.split('\t');
  if (iface.length !== 4)
    throw new DumpParseError(1, 'interface', null, `expected 4 tab-separated columns, got ${iface.length}`);
  const [privateKey, pub, port, mark] = iface as [string, string, string, string];
  if (privateKey !== none && !isKey(privateKey))
    throw new DumpParseError(1, 'private-key', null, 'not a base64 WireGuard key');
  let fwmark = 0;
  if (mark !== 'off') {
    if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(mark)) throw new DumpParseError(1, 'fwmark', mark, 'not a number or "off"');
    fwmark = Number(mark);
  }
  const state: WireGuardState = {
    publicKey: pub === none ? null : publicKey(pub, 1, 'public-key'),
    listenPort: count(port, 1, 'listen-port'),
    fwmark,
    peers: [],
  };
  const presharedKeyDigests = new Map<string, string>();
  lines.slice(1).forEach((l, i) => {
    const n = i + 2;
    const cols = l.split('\t');
    if (cols.length !== 8)
      throw new DumpParseError(n, 'peer', null, `expected 8 tab-separated columns, got ${cols.length}`);
    const [key, psk, endpoint, allowed, handshake, rx, tx, keepalive] = cols as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const peer: WireGuardPeerState = {
      publicKey: publicKey(key, n, 'public-key'),
      endpoint: endpoint === none ? null : ownCopy(endpoint),
      allowedIPs: allowed === none ? [] : allowed.split(',').map(ownCopy),
      persistentKeepalive: keepalive === 'off' ? 0 : count(keepalive, n, 'persistent-keepalive'),
      hasPresharedKey: psk !== none,
      latestHandshake: count(handshake, n, 'latest-handshake'),
      rxBytes: count(rx, n, 'transfer-rx'),
      txBytes: count(tx, n, 'transfer-tx'),
    };
    if (psk !== none) {
      if (!isKey(psk)) throw new DumpParseError(n, 'preshared-key', null, 'not a base64 WireGuard key');
      presharedKeyDigests.set(peer.publicKey, presharedKeyDigest(psk));
    }
    state.peers.push(peer);
  });
  state.peers.sort((a, b) => (a.publicKey < b.publicKey ? -1 : a.publicKey > b.publicKey ? 1 : 0));
  return { state, presharedKeyDigests };
}
