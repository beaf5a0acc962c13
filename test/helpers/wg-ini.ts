/**
 * Reads WireGuard configs back in tests: what `kgctl showconf` and the agent write must be a config
 * wg(8) and wg-quick accept. The product only writes them (src/wireguard/ini.ts).
 */
import { isWireGuardKey, parseEndpoint } from '../../src/model/parse.js';
import { Cidr } from '../../src/net/cidr.js';
import type { IniConfig, IniPeer } from '../../src/wireguard/ini.js';

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
