import type { PeerSettings, WireGuardDiff } from './diff.js';

/** Where a secret was written; `wg set` reads keys from files so they never reach an argv. */
export type SecretFile = (secret: string) => string;

/**
 * The kernel's argv limit (ARG_MAX, 2 MiB with the usual stack) counts every argument plus an
 * 8-byte pointer; staying well below it leaves room for the environment and the exec prefix.
 */
export const defaultArgvBudget = 512 * 1024;

function peerArgs(
  publicKey: string,
  kind: 'add' | 'update' | 'remove',
  set: PeerSettings | null,
  secretFile: SecretFile,
): string[] {
  const args = ['peer', publicKey];
  if (kind === 'remove' || !set) return [...args, 'remove'];
  if (set.endpoint !== undefined) args.push('endpoint', set.endpoint);
  // `allowed-ips` replaces the peer's whole list (wg sets replace-allowed-ips; verified on wireguard-go).
  if (set.allowedIPs !== undefined) args.push('allowed-ips', set.allowedIPs.join(','));
  if (set.persistentKeepalive !== undefined)
    args.push('persistent-keepalive', set.persistentKeepalive === 0 ? 'off' : String(set.persistentKeepalive));
  // An empty key file removes the preshared key.
  if (set.presharedKey !== undefined)
    args.push('preshared-key', set.presharedKey === null ? '/dev/null' : secretFile(set.presharedKey));
  return args;
}

function size(args: readonly string[]): number {
  return args.reduce((n, a) => n + Buffer.byteLength(a) + 1 + 8, 0);
}

/**
 * The `wg set` invocations for a diff: one, holding every change (wg set takes many `peer`
 * clauses), unless the argv would outgrow `budget`; then consecutive ones in the diff's order.
 * Interface settings must precede the first `peer` clause, so they open the first invocation.
 */
export function wgSetCommands(
  device: string,
  diff: WireGuardDiff,
  secretFile: SecretFile,
  budget = defaultArgvBudget,
): string[][] {
  const head = ['wg', 'set', device];
  const first = [...head];
  const i = diff.interface;
  if (i.listenPort !== undefined) first.push('listen-port', String(i.listenPort));
  if (i.fwmark !== undefined) first.push('fwmark', i.fwmark === 0 ? 'off' : `0x${i.fwmark.toString(16)}`);
  if (i.privateKey !== undefined) first.push('private-key', secretFile(i.privateKey));
  const commands: string[][] = [first];
  let current = first;
  let used = size(first);
  for (const p of diff.peers) {
    const args = peerArgs(p.publicKey, p.kind, p.kind === 'remove' ? null : p.set, secretFile);
    const n = size(args);
    if (used + n > budget && current.length > head.length) {
      current = [...head];
      commands.push(current);
      used = size(current);
    }
    current.push(...args);
    used += n;
  }
  return commands.filter((c) => c.length > head.length);
}
