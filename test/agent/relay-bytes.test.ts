import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { RelayedTraffic } from '../../src/agent/relay-bytes.js';

async function totals(registry: Registry): Promise<{ bytes: number; packets: number }> {
  const value = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;
  return { bytes: await value('kilo_relayed_bytes_total'), packets: await value('kilo_relayed_packets_total') };
}

test('kilo_relayed_bytes_total counts the rule’s increases; a reset or a new rule is a new start, never a decrease', async () => {
  const registry = new Registry();
  const r = new RelayedTraffic(registry);
  // A restarted agent finds its rule with an earlier run's figures: where it starts, not counted.
  r.observe({ packets: 50, bytes: 5000 });
  assert.deepEqual(await totals(registry), { bytes: 0, packets: 0 });
  r.observe({ packets: 60, bytes: 6000 });
  assert.deepEqual(await totals(registry), { bytes: 1000, packets: 10 });
  // The rule made again (deleted by hand and restored): its figures start from 0, all of them new.
  r.observe({ packets: 4, bytes: 400 });
  assert.deepEqual(await totals(registry), { bytes: 1400, packets: 14 });
  // Not relaying, then relaying again: the new rule's first figures are all new.
  r.observe(null);
  r.observe({ packets: 2, bytes: 200 });
  assert.deepEqual(await totals(registry), { bytes: 1600, packets: 16 });
  r.observe({ packets: 2, bytes: 200 });
  assert.deepEqual(await totals(registry), { bytes: 1600, packets: 16 });
});

test('a reading that fails is skipped; a node that relays nothing reads nothing', async () => {
  const registry = new Registry();
  const r = new RelayedTraffic(registry);
  const debug: string[] = [];
  const log = { debug: (_: object, m: string) => void debug.push(m) };
  let reads = 0;
  const firewall = (count: { packets: number; bytes: number } | Error) => ({
    readRelayed: () => {
      reads++;
      return count instanceof Error ? Promise.reject(count) : Promise.resolve(count);
    },
  });
  await r.pass(false, firewall({ packets: 9, bytes: 9 }), log);
  assert.equal(reads, 0);
  await r.pass(true, firewall({ packets: 1, bytes: 100 }), log);
  await r.pass(true, firewall(new Error('nft: no')), log);
  await r.pass(true, firewall({ packets: 3, bytes: 300 }), log);
  assert.deepEqual(await totals(registry), { bytes: 300, packets: 3 });
  assert.equal(debug.length, 1);
});
