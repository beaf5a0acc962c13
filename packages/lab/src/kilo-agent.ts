import { existsSync, mkdirSync } from 'node:fs';
import type { Granularity } from '../../../src/model/types.js';

/**
 * Kilo's own agent (Go, `kg`) on a lab node, for mixed clusters. What it needs there (see
 * ../shared/kilo/README.md): a userspace WireGuard interface made beforehand, since the lab has no
 * kernel module (`--create-interface=false`), wgctrl finding its socket in /var/run/wireguard, and
 * its key directory /var/lib/kilo. The node's directory is bound there, so Kilo's `key` is the
 * file kilo-ts's `--key-file` names: a node switched between them keeps its public key, as a real
 * node with /var/lib/kilo mounted from the host does.
 */
export const kiloKeyDir = '/var/lib/kilo';

/**
 * What Kilo logs (at info level) as it starts its mesh: its caches sync a moment later; it logs
 * nothing at info level once they have.
 */
export const kiloStartedLine = 'Starting Kilo network mesh';

export interface KiloAgentArgs {
  binary: string;
  hostname: string;
  kubeconfig: string;
  granularity: Granularity;
}

/** Kilo's flags for a lab node: the lab's own choices for kilo-ts, in Kilo's spelling. */
export function kiloArgv(a: KiloAgentArgs): string[] {
  return [
    a.binary,
    '--hostname',
    a.hostname,
    '--kubeconfig',
    a.kubeconfig,
    '--mesh-granularity',
    a.granularity,
    '--encapsulate=never',
    '--create-interface=false',
    '--interface',
    'kilo0',
    // No CNI configuration on lab nodes: their pod network is made by the lab.
    '--cni=false',
    '--listen',
    '127.0.0.1:1107',
  ];
}

/**
 * `ip netns exec NS` with the node's wireguard directory over /var/run/wireguard and its own
 * directory over /var/lib/kilo (inside the private mount namespace `ip netns exec` makes); starts
 * wireguard-go for kilo0 unless the interface is there (a kilo-ts agent before it may have left
 * it, as on a real node) and waits for its socket, which Kilo opens at once.
 */
export function inKiloNodeNs(ns: string, runDir: string, keyDir: string, argv: readonly string[]): string[] {
  const script = [
    'mount --bind "$0" /var/run/wireguard',
    'mount --bind "$1" /var/lib/kilo',
    '{ ip link show kilo0 >/dev/null 2>&1 || wireguard-go kilo0 >>"$1/wireguard-go.log" 2>&1; }',
    'i=0; until [ -S /var/run/wireguard/kilo0.sock ]; do i=$((i+1)); [ $i -lt 400 ] || exit 1; sleep 0.05; done',
    'shift',
    'exec "$@"',
  ].join(' && ');
  return ['ip', 'netns', 'exec', ns, 'sh', '-c', script, runDir, keyDir, ...argv];
}

/** Makes the host's /var/lib/kilo as a mount point; true when this call created it. */
export function ensureKiloKeyMountPoint(): boolean {
  if (existsSync(kiloKeyDir)) return false;
  mkdirSync(kiloKeyDir, { recursive: true, mode: 0o700 });
  return true;
}
