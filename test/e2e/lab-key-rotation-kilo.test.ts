/**
 * Key rotation in a mixed cluster (docs/key-rotation.md#in-a-mixed-cluster): Kilo's own agent on
 * loc1-n1, kilo-ts on the others; cross, 2 locations × 2 nodes, location 2 behind NAT. The kilo-ts
 * nodes of location 2 (Kilo's node's WireGuard peers) rotate their keys under traffic: Kilo's agent,
 * which does not read next-key, must replace their peers with the new keys. The pings lost between
 * Kilo's node and the rotating nodes, and the longest round trip, are printed: the cost.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ping } from '../../packages/lab/src/probe.js';
import { sleep } from '../../packages/lab/src/sh.js';
import { lossOf, rotate, startPinger, type Pinger } from './key-rotation-helpers.js';
import { skipNoKilo, unpackKilo } from './kilo-agent.js';
import { skipLab, upLab, wgPeers } from './lab-helpers.js';

describe("lab: key rotation beside Kilo's agent", { skip: skipLab || skipNoKilo(), timeout: 900_000 }, () => {
  test('Kilo on loc1-n1: the rotating kilo-ts nodes behind NAT reach it under their new keys', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'kilo-ts-kilo-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const lab = await upLab(t, { granularity: 'cross', peer: false, kiloAgents: { 'loc1-n1': unpackKilo(dir) } });
    await lab.converge(150_000);
    const kilo = lab.node('loc1-n1');
    const pingers: Pinger[] = [];
    t.after(() => {
      for (const p of pingers) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    });
    for (const other of ['loc2-n1', 'loc2-n2'].map((n) => lab.node(n))) {
      pingers.push(startPinger(kilo.podNs, other.podIP, `${kilo.name}→${other.name}`));
      pingers.push(startPinger(other.podNs, kilo.podIP, `${other.name}→${kilo.name}`));
    }
    await sleep(2000);
    const done: string[] = [];
    for (const [i, name] of ['loc2-n1', 'loc2-n2'].entries()) {
      // rotate() waits until every peer, Kilo's node among them, holds the new key and none the old.
      const r = await rotate(lab, name, `kilo-${i + 1}`);
      assert.ok(wgPeers(lab, kilo.name).includes(r.to), `Kilo's node holds ${name}'s new key`);
      done.push(`${name} in ${r.ms} ms`);
      // Past the 5 s a Kilo node may wait for a NAT node's next handshake.
      await sleep(7000);
    }
    await Promise.all(
      pingers.map(
        (p) => new Promise<void>((resolve) => (p.child.once('close', () => resolve()), p.child.kill('SIGINT'))),
      ),
    );
    console.log(
      `rotations beside Kilo (request to every peer, Kilo's included, holding the new key): ${done.join(', ')}`,
    );
    for (const p of pingers) {
      const f = lossOf(p);
      console.log(
        `  ${p.pair}: ${f.lost} lost of ${f.answered + f.lost}, longest round trip ${f.maxRttMs} ms (${f.where})`,
      );
      assert.ok(f.answered >= 50, `${p.pair}: pinged through the rotations (${f.answered} replies)`);
    }
    for (const other of ['loc2-n1', 'loc2-n2'].map((n) => lab.node(n))) {
      assert.ok(
        await ping(kilo.podNs, other.podIP, { waitSeconds: 2 }),
        `${kilo.name} reaches ${other.name} at the end`,
      );
      assert.ok(
        await ping(other.podNs, kilo.podIP, { waitSeconds: 2 }),
        `${other.name} reaches ${kilo.name} at the end`,
      );
    }
  });
});
