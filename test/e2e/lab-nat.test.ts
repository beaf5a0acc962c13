/**
 * Two nodes behind one NAT gateway that does not hairpin (the lab's gateway only masquerades
 * outgoing packets: a packet from its LAN to its own public address goes nowhere). In `full`
 * each is the other's WireGuard peer. The nodes outside have seen both at the gateway's public
 * address and published that as their discovered endpoints; dialling it from inside the NAT
 * needs hairpinning. Restarting both mates with clean-up, their own discovered endpoints gone,
 * recreates deterministically what a fresh lab hit now and then (the outside nodes published
 * before the mates' first handshake): before the fix they dialled each other at the gateway
 * forever.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { eventually, nodeKey, skipLab, upLab } from './lab-helpers.js';

describe('lab: two nodes behind one NAT without hairpinning', { skip: skipLab, timeout: 400_000 }, () => {
  test('full: the mates dial each other on their LAN, the other nodes dial them at the gateway', async (t) => {
    const lab = await upLab(t, { granularity: 'full', peer: false });
    await lab.converge(120_000);
    const mates = ['loc2-n1', 'loc2-n2'];
    const keys = await Promise.all(mates.map((m) => nodeKey(lab, m)));
    const gateway = '198.18.2.1:';
    await eventually(
      'location 1 has published the gateway address of both mates',
      async () => {
        const n = (await lab.api.list('nodes')).find((o) => o.metadata?.name === 'loc1-n1');
        const seen = n?.metadata?.annotations?.[Annotation.discoveredEndpoints] ?? '{}';
        const d = JSON.parse(seen) as Record<string, { IP: string }>;
        return keys.every((k) => d[k]?.IP === gateway.slice(0, -1));
      },
      60_000,
    );

    await Promise.all(mates.map((m) => lab.stopAgent(m)));
    for (const m of mates)
      await lab.api.patch('nodes', m, { metadata: { annotations: { [Annotation.discoveredEndpoints]: null } } });
    const offsets = new Map(mates.map((m) => [m, lab.agentLogSize(m)]));
    for (const m of mates) lab.startAgent(m);
    await lab.waitAgentsSynced(offsets);
    const { ms } = await lab.converge(60_000, { peer: false });
    console.log(`NAT mates restarted: every pod reaches every pod ${(ms / 1000).toFixed(1)} s later`);

    const endpoints = (node: string) =>
      new Map(
        lab
          .exec(node, ['wg', 'show', 'kilo0', 'endpoints'])
          .stdout.trim()
          .split('\n')
          .map((l) => l.split('\t') as [string, string]),
      );
    assert.equal(endpoints('loc2-n1').get(keys[1]!), '192.168.2.12:51820', 'loc2-n1 dials loc2-n2 on the LAN');
    assert.equal(endpoints('loc2-n2').get(keys[0]!), '192.168.2.11:51820', 'loc2-n2 dials loc2-n1 on the LAN');
    for (const k of keys)
      assert.ok(endpoints('loc1-n1').get(k)?.startsWith(gateway), 'loc1-n1 dials each mate at the gateway');
  });
});
