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
