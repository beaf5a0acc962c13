import type { WireGuardPeerState } from '../../src/dataplane/types.js';

/** A peer as a read of the device shows it: its learned endpoint and its latest handshake (unix seconds). */
export const peerState = (publicKey: string, endpoint: string | null, latestHandshake: number): WireGuardPeerState => ({
  publicKey,
  endpoint,
  allowedIPs: [],
  persistentKeepalive: 0,
  hasPresharedKey: false,
  latestHandshake,
  rxBytes: 0,
  txBytes: 0,
});
