/**
 * /metrics stays bounded (issue 37): at 5,000 WireGuard peers the default page is under 200 KB and
 * no bigger than at 50, whatever the handshakes; the per-peer series come only with
 * --metrics-per-peer. Sizes, never times.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AgentMetrics, staleHandshakeSeconds } from '../../src/agent/metrics.js';
import { ElectionMetrics } from '../../src/election/metrics.js';
import type { WireGuardState } from '../../src/dataplane/types.js';

const now = 1_764_662_400;
const bound = 200 * 1024;

function key(i: number): string {
  const b = Buffer.alloc(32);
  b.writeUInt32BE(i);
  return b.toString('base64');
}

/** A device of `n` peers: a third handshaken recently, a third long ago, a third never. */
function device(n: number): WireGuardState {
  const peers = Array.from({ length: n }, (_, i) => ({
    publicKey: key(i),
    endpoint: `100.64.${i >> 8}.${i & 0xff}:51820`,
    allowedIPs: [`10.42.${i & 0xff}.0/24`],
    persistentKeepalive: 0,
    hasPresharedKey: false,
    latestHandshake: [now - 5, now - 10 * staleHandshakeSeconds, 0][i % 3]!,
    rxBytes: 1_000_000 + i,
    txBytes: 2_000_000 + i,
  }));
  return { publicKey: null, listenPort: 51820, fwmark: 0, peers };
}

/** The page an agent serves with `peers` peers, its other metrics set as a pass sets them. */
async function page(peers: number, perPeer = false): Promise<string> {
  const m = new AgentMetrics({ perPeer });
  new ElectionMetrics(m.registry);
  m.nodes.set(peers);
  m.peers.set(10);
  m.reconciles.inc(1000);
  m.dropped.inc({ kind: 'Node' });
  m.observeDevice(device(peers), now);
  return m.registry.metrics();
}

describe('/metrics size', () => {
  test('at 5,000 peers the default page is under 200 KB, as small as at 50, and sums the device up', async () => {
    const big = await page(5000);
    const small = await page(50);
    assert.ok(Buffer.byteLength(big) < bound, `${Buffer.byteLength(big)} bytes at 5,000 peers`);
    // The same series either way: only the digits of the values may differ.
    assert.ok(Buffer.byteLength(big) - Buffer.byteLength(small) < 100, 'the page grows with the mesh');
    assert.ok(!big.includes('public_key='), 'a per-peer series without --metrics-per-peer');
    assert.match(big, /^kilo_wireguard_peers\{handshake="recent"\} 1667$/m);
    assert.match(big, /^kilo_wireguard_peers\{handshake="stale"\} 1667$/m);
    assert.match(big, /^kilo_wireguard_peers\{handshake="never"\} 1666$/m);
    // Σ 1,000,000 + i and Σ 2,000,000 + i over i < 5,000.
    assert.match(big, /^kilo_wireguard_receive_bytes 5012497500$/m);
    assert.match(big, /^kilo_wireguard_transmit_bytes 10012497500$/m);
  });

  test('--metrics-per-peer adds three series per peer', async () => {
    const text = await page(5000, true);
    assert.equal(text.match(/public_key="/g)?.length, 3 * 5000);
    assert.ok(Buffer.byteLength(text) > bound, 'the per-peer page is the unbounded one');
  });
});
