/**
 * The mesh explains itself (issue 39): a node annotated into a location whose LAN it is not on.
 * `kgctl status` names the pairs and the reason within 30 s, /health on the affected nodes says
 * degraded, `kg lab show` exits 1 with the same reasons; undoing the mistake clears all three.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { kgctl, root } from '../cli/built.js';
import { nodeCommand } from '../../scripts/node-flags.mjs';
import { eventually, skipLab, upLab } from './lab-helpers.js';

// kg as the image runs it: its #! line's environment and node flags (scripts/node-flags.mjs).
const [kgFile, ...kgArgs] = nodeCommand(join(root, 'bin', 'kg'));
const kg = (...args: string[]) => spawnSync(kgFile, [...kgArgs, ...args], { encoding: 'utf8' });

const reason =
  "loc1-n2 ↔ loc2-n1 (private): loc1-n2's internal IP 192.168.1.12/24 is not on loc2-n1's network 192.168.2.0/24: same location loc2, different LANs (use subnet granularity, or fix the location)";

test(
  'a location mistake: kgctl status, /health and kg lab show say it; undone, they clear',
  { skip: skipLab },
  async (t) => {
    const lab = await upLab(t, { natLocation: null, peer: false });
    await lab.converge(120_000);
    const move = (location: string) => {
      const r = spawnSync(
        'kubectl',
        [
          '--kubeconfig',
          lab.kubeconfig,
          'annotate',
          'node',
          'loc1-n2',
          `kilo.squat.ai/location=${location}`,
          '--overwrite',
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
    };
    const status = () => kgctl('status', '--kubeconfig', lab.kubeconfig);
    const health = (node: string) => lab.agentGet(node, '/health');
    assert.match(status().stdout, /^every planned pair works/m);

    move('loc2');
    const since = Date.now();
    let shown = '';
    await eventually('kgctl status names the pair and the reason', () => {
      shown = status().stdout;
      return shown.includes(reason);
    });
    assert.match(shown, /^planned but not working: 2 pairs$/m, shown);
    assert.ok(shown.includes(reason.replaceAll('loc2-n1', 'loc2-n2')), shown);
    for (const n of ['loc1-n2', 'loc2-n1', 'loc2-n2'])
      await eventually(`/health on ${n} says degraded`, () => {
        const h = health(n);
        return h.ok && /^degraded: .*loc1-n2's internal IP 192\.168\.1\.12\/24 is not on/.test(h.body);
      });
    assert.ok(Date.now() - since < 30_000, `${Date.now() - since} ms`);
    // The agents on both sides warn once, whatever the passes since.
    for (const n of ['loc1-n2', 'loc2-n1']) {
      const log = readFileSync(join(lab.nodeDir(n), 'kg.log'), 'utf8');
      const warned = log
        .split('\n')
        .filter((l) => l.includes("location mistake: loc1-n2's internal IP 192.168.1.12/24"));
      assert.equal(warned.length, n === 'loc1-n2' ? 2 : 1, `${n}: ${warned.join('\n')}`);
    }
    assert.equal(health('loc1-n1').body, 'ok\n', 'loc1-n1 lost no planned path');
    // The agents' own summaries reach kgctl status too: loc2-n1's probes.
    await eventually('kgctl status shows the agents judging their paths', () =>
      /^loc2-n1 +loc2 +yes +yes +\S+ +\d+ recent, \d+ stale, \d+ never +\d+ ok, 1 failing, \d+ unknown$/m.test(
        status().stdout,
      ),
    );

    const broken = kg('lab', 'show', '--state-dir', lab.state.dir, '--timeout', '5');
    assert.equal(broken.status, 1, broken.stderr);
    assert.doesNotMatch(broken.stderr, /internal error/);
    assert.match(broken.stdout, /the mesh did not converge within 5 s/);
    assert.match(broken.stdout, /what kgctl status says/);
    assert.ok(broken.stdout.includes(reason), broken.stdout);

    move('loc1');
    await eventually('kgctl status says every planned pair works', () =>
      /^every planned pair works/m.test(status().stdout),
    );
    for (const n of ['loc1-n1', 'loc1-n2', 'loc2-n1', 'loc2-n2'])
      await eventually(`/health on ${n} is ok`, () => health(n).body === 'ok\n');
    const fixed = kg('lab', 'show', '--state-dir', lab.state.dir, '--timeout', '60');
    assert.equal(fixed.status, 0, fixed.stdout + fixed.stderr);
  },
);
