/** A WireGuard device as `wg show dump` (or its UAPI socket) describes it; private keys never kept. */
export interface WireGuardPeerState {
  publicKey: string;
  endpoint: string | null;
  allowedIPs: string[];
  persistentKeepalive: number;
  /** Whether a preshared key is set; its value is never read back. */
  hasPresharedKey: boolean;
  /** Unix seconds, 0 = never. */
  latestHandshake: number;
  rxBytes: number;
  txBytes: number;
}

export interface WireGuardState {
  publicKey: string | null;
  listenPort: number;
  fwmark: number;
  peers: WireGuardPeerState[];
}

/** A peer as a device reports one it has just been given: nothing set yet, never handshaken. */
export function newPeerState(publicKey: string): WireGuardPeerState {
  return {
    publicKey,
    endpoint: null,
    allowedIPs: [],
    persistentKeepalive: 0,
    hasPresharedKey: false,
    latestHandshake: 0,
    rxBytes: 0,
    txBytes: 0,
  };
}
