import { Cidr } from '../net/cidr.js';
import { isWireGuardKey, parseEndpoint } from '../model/parse.js';

/**
 * wg-quick INI, in Kilo's layout: `[Interface]` then one `[Peer]` per peer, a blank line
 * between sections, peer keys in the order AllowedIPs, Endpoint, PersistentKeepalive,
 * PresharedKey, PublicKey. `Address` is a wg-quick key (`wg setconf` rejects it).
 */
export interface IniInterface {
  privateKey?: string | null;
  listenPort?: number | null;
  fwMark?: number | null;
  /** Interface addresses (CIDRs), wg-quick only. */
  address?: string[];
}

export interface IniPeer {
  /** A one-line `# …` comment right under `[Peer]`: who the peer is (a node, a segment, a Peer). */
  comment?: string | null;
  publicKey: string;
  presharedKey?: string | null;
  allowedIPs: string[];
  endpoint?: string | null;
  /** Seconds; 0 or absent = off (the line is omitted). */
  persistentKeepalive?: number;
}

export interface IniConfig {
  interface: IniInterface | null;
  peers: IniPeer[];
}

export function interfaceSection(i: IniInterface): string[] {
  const lines = ['[Interface]'];
  if (i.privateKey) lines.push(`PrivateKey = ${i.privateKey}`);
  if (i.listenPort) lines.push(`ListenPort = ${i.listenPort}`);
  if (i.fwMark) lines.push(`FwMark = 0x${i.fwMark.toString(16)}`);
  if (i.address && i.address.length > 0) lines.push(`Address = ${i.address.join(', ')}`);
  return lines;
}

export function peerSection(p: IniPeer): string[] {
  const lines = ['[Peer]'];
  // A name can hold nothing that ends the comment line, but a stray newline would inject keys.
  if (p.comment) lines.push(`# ${p.comment.replace(/[\r\n]+/g, ' ')}`);
  if (p.allowedIPs.length > 0) lines.push(`AllowedIPs = ${p.allowedIPs.join(', ')}`);
  if (p.endpoint) lines.push(`Endpoint = ${p.endpoint}`);
  if (p.persistentKeepalive) lines.push(`PersistentKeepalive = ${p.persistentKeepalive}`);
  if (p.presharedKey) lines.push(`PresharedKey = ${p.presharedKey}`);
  lines.push(`PublicKey = ${p.publicKey}`);
  return lines;
}

export function renderIni(config: IniConfig): string {
  const sections: string[][] = [];
  if (config.interface) sections.push(interfaceSection(config.interface));
  for (const p of config.peers) sections.push(peerSection(p));
  return sections.map((s) => `${s.join('\n')}\n`).join('\n');
}

/** A line of a WireGuard config that cannot be used; names the line, the key and the value. */
export class IniParseError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'IniParseError';
  }
}

/** wg-quick keys that only the wrapper script reads; accepted and ignored. */
const wgQuickOnly = new Set(['dns', 'mtu', 'table', 'preup', 'postup', 'predown', 'postdown', 'saveconfig']);

/**
 * Parses a wg(8) or wg-quick config (what `wg showconf` prints, or renderIni). Keys are
 * case-insensitive; AllowedIPs and Address may repeat and accumulate. Secret values never
 * appear in an error.
 */
export function parseIni(text: string): IniConfig {
  const config: IniConfig = { interface: null, peers: [] };
  let section: 'interface' | 'peer' | null = null;
  let peer: (Partial<IniPeer> & { allowedIPs: string[]; line: number }) | null = null;
  let peerHasKeys = false;

  const finishPeer = () => {
    if (!peer) return;
    if (!peer.publicKey) throw new IniParseError(peer.line, '[Peer]: PublicKey: missing');
    const { line: _line, ...rest } = peer;
    config.peers.push(rest as IniPeer);
    peer = null;
  };

  text.split(/\r?\n/).forEach((raw, index) => {
    const n = index + 1;
    const trimmed = raw.trim();
    if (trimmed.startsWith('#')) {
      if (section === 'peer' && peer && !peerHasKeys && peer.comment === undefined)
        peer.comment = trimmed.slice(1).trim();
      return;
    }
    const line = trimmed.replace(/\s*#.*$/, '');
    if (line === '') return;

    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      const name = header[1]!.toLowerCase();
      finishPeer();
      if (name === 'interface') {
        if (config.interface) throw new IniParseError(n, 'a second [Interface] section');
        config.interface = {};
        section = 'interface';
      } else if (name === 'peer') {
        peer = { allowedIPs: [], line: n };
        peerHasKeys = false;
        section = 'peer';
      } else {
        throw new IniParseError(n, `unknown section [${header[1]}]`);
      }
      return;
    }

    const eq = line.indexOf('=');
    if (eq <= 0) throw new IniParseError(n, `not a section header or "Key = value": ${JSON.stringify(line)}`);
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    const where = `[${section === 'peer' ? 'Peer' : 'Interface'}]: ${key}`;
    const bad = (reason: string, shown: string = JSON.stringify(value)) =>
      new IniParseError(n, `${where}: ${reason}: ${shown}`);

    if (section === 'interface') {
      const i = config.interface!;
      switch (key.toLowerCase()) {
        case 'privatekey':
          if (!isWireGuardKey(value)) throw bad('not a WireGuard key (base64 of 32 bytes)', '(value hidden)');
          i.privateKey = value;
          return;
        case 'listenport':
          i.listenPort = port(value, bad);
          return;
        case 'fwmark':
          if (value === 'off') i.fwMark = 0;
          else if (/^(0x[0-9a-f]{1,8}|\d{1,10})$/i.test(value) && Number(value) <= 0xffffffff) i.fwMark = Number(value);
          else throw bad('not a firewall mark (number, 0x-hex or off)');
          return;
        case 'address':
          i.address = [...(i.address ?? []), ...cidrs(value, bad)];
          return;
        default:
          if (wgQuickOnly.has(key.toLowerCase())) return;
          throw bad('unknown key');
      }
    }
    if (section === 'peer' && peer) {
      peerHasKeys = true;
      switch (key.toLowerCase()) {
        case 'publickey':
          if (!isWireGuardKey(value)) throw bad('not a WireGuard key (base64 of 32 bytes)');
          peer.publicKey = value;
          return;
        case 'presharedkey':
          if (!isWireGuardKey(value)) throw bad('not a WireGuard key (base64 of 32 bytes)', '(value hidden)');
          peer.presharedKey = value;
          return;
        case 'allowedips':
          peer.allowedIPs.push(...cidrs(value, bad));
          return;
        case 'endpoint':
          if (!parseEndpoint(value)) throw bad('not an endpoint (ip:port, [ipv6]:port or dns-name:port)');
          peer.endpoint = value;
          return;
        case 'persistentkeepalive':
          if (value === 'off') peer.persistentKeepalive = 0;
          else if (/^\d{1,5}$/.test(value) && Number(value) <= 65535) peer.persistentKeepalive = Number(value);
          else throw bad('not a keepalive interval (0-65535 seconds or off)');
          return;
        default:
          throw bad('unknown key');
      }
    }
    throw new IniParseError(n, `${JSON.stringify(key)} outside of any section`);
  });
  finishPeer();
  return config;
}

function port(value: string, bad: (reason: string) => IniParseError): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw bad('not a port (0-65535)');
  return Number(value);
}

function cidrs(value: string, bad: (reason: string, shown?: string) => IniParseError): string[] {
  const out: string[] = [];
  for (const part of value.split(',')) {
    const text = part.trim();
    if (text === '') continue;
    if (!Cidr.tryParse(text)) throw bad('not a CIDR', JSON.stringify(text));
    out.push(text);
  }
  return out;
}
