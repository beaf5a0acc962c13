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
