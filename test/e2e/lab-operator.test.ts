/**
 * The lab as an operator drives it, through the CLI only: `kg lab up`, then kgctl on the host with
 * the kubeconfig the lab prints (the API server lives in a namespace of its own), `kg lab exec peer
 * -- wg show` (the Peer's wireguard-go socket is bound for it), `kg lab show` of a mesh that does
 * not converge (a finding: the failing pairs, exit 1), and `kg lab down`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureBuilt, kgctl, root } from '../cli/built.js';
import { eventually, skipLab } from './lab-helpers.js';
import { nodeCommand } from '../../scripts/node-flags.mjs';

// kg as the image runs it: its #! line's environment and node flags (scripts/node-flags.mjs).
const [kgFile, ...kgArgs] = nodeCommand(join(root, 'bin', 'kg'));
const kg = (...args: string[]) => spawnSync(kgFile, [...kgArgs, ...args], { encoding: 'utf8' });

test(
  'kg lab from the host: kgctl with the printed kubeconfig, wg show in the Peer, down',
  { skip: skipLab },
  async (t) => {
    ensureBuilt();
    const dir = join(mkdtempSync(join(tmpdir(), 'kilo-lab-op-')), 'state');
    const prefix = `klo${process.pid % 10000}-`;
    t.after(() => {
      kg('lab', 'down', '--state-dir', dir);
      rmSync(join(dir, '..'), { recursive: true, force: true });
    });
    const up = kg(
      'lab',
      'up',
      '--locations',
      '2',
      '--nodes',
      '1',
      '--peer',
      '--nat-location',
      '2',
      '--prefix',
      prefix,
      '--state-dir',
      dir,
      '--no-wait',
    );
    assert.equal(up.status, 0, up.stderr);
    const kubeconfig = /kubeconfig for kubectl and kgctl on this machine: (\S+)/.exec(up.stdout)?.[1];
    assert.ok(kubeconfig && existsSync(kubeconfig), up.stdout);
    assert.match(readFileSync(kubeconfig, 'utf8'), /server: "http:\/\/127\.0\.0\.1:\d+"/);

    // The agents publish their nodes, each when it is up (--no-wait): kgctl, reading them live from
    // this machine's namespace, plans loc1-n1 as soon as it is published, and with loc2-n1 once that is.
    type Plan = { granularity: string; encapsulate: string; peers: { names: string[] }[] };
    let plan = { status: null as number | null, stdout: '', stderr: '' };
    const planned = () => {
      plan = kgctl('plan', 'loc1-n1', '--kubeconfig', kubeconfig);
      return plan.status === 0 && (JSON.parse(plan.stdout) as Plan).peers.some((x) => x.names.includes('loc2-n1'));
    };
    await eventually('kgctl plan reads the lab, both nodes published, from the host', planned, 60_000);
    const p = JSON.parse(plan.stdout) as Plan;
    assert.equal(p.granularity, 'cross', 'the granularity the agents announce');
    // The lab's agents run with --encapsulate=never (kgctl's default is always): announced, followed.
    assert.equal(p.encapsulate, 'never', 'the flags the agents announce');

    // The Peer is configured once the mesh is shown; its wg then lists the nodes as peers.
    const shown = kg('lab', 'show', '--state-dir', dir, '--graph', join(dir, 'g.svg'));
    assert.equal(shown.status, 0, shown.stderr);
    // The matrix has the Peer as a column too (pods → the Peer), measured once the mesh converged.
    assert.match(shown.stdout, /^from\\to +loc1-n1 +loc2-n1 +peer *$/m, shown.stdout);
    assert.match(shown.stdout, /^loc1-n1 +- +ok +ok *$/m, shown.stdout);
    assert.match(shown.stdout, /^loc2-n1 +ok +- +ok *$/m, shown.stdout);
    assert.match(shown.stdout, /^peer +ok +ok +- *$/m, shown.stdout);
    assert.match(shown.stdout, /pod of loc2-n1 \(location loc2, behind NAT\)/, shown.stdout);
    const wg = kg('lab', 'exec', '--state-dir', dir, 'peer', '--', 'wg', 'show');
    assert.equal(wg.status, 0, wg.stderr);
    assert.match(wg.stdout, /^interface: kilo0$/m);
    assert.match(wg.stdout, /^peer: /m);

    // A mesh that does not converge is a finding, not a bug: progress while waiting, the pairs
    // that fail, exit 1. (loc2-n1's pod drops pings.)
    const drop = ['INPUT', '-p', 'icmp', '--icmp-type', 'echo-request', '-j', 'DROP'];
    assert.equal(kg('lab', 'exec', '--state-dir', dir, 'loc2-n1-pod', '--', 'iptables', '-I', ...drop).status, 0);
    const broken = kg('--log-level', 'debug', 'lab', 'show', '--state-dir', dir, '--timeout', '6');
    assert.equal(broken.status, 1, broken.stderr);
    assert.doesNotMatch(broken.stderr, /internal error/);
    assert.match(broken.stdout, /^ {2}\d+ s: \d+ of \d+ pairs got through; waiting for .*loc1-n1→loc2-n1/m);
    assert.match(
      broken.stdout,
      /the mesh did not converge within 6 s: 2 of 4 pairs never got through:\n {2}loc1-n1→loc2-n1\n {2}peer→loc2-n1\n/,
    );
    assert.equal(kg('lab', 'exec', '--state-dir', dir, 'loc2-n1-pod', '--', 'iptables', '-D', ...drop).status, 0);
    assert.equal(kg('lab', 'show', '--state-dir', dir, '--graph', join(dir, 'g.svg')).status, 0);

    // show and status read locations from the cluster as it is: a location renamed with kubectl.
    const annotate = spawnSync(
      'kubectl',
      ['--kubeconfig', kubeconfig, 'annotate', 'node', 'loc2-n1', 'kilo.squat.ai/location=remote', '--overwrite'],
      { encoding: 'utf8' },
    );
    assert.equal(annotate.status, 0, annotate.stderr);
    const status = kg('lab', 'status', '--state-dir', dir);
    assert.match(status.stdout, /behind NAT: remote/, status.stdout);
    assert.match(status.stdout, /^loc1-n1 +location loc1 /m, status.stdout);
    assert.match(status.stdout, /^loc2-n1 +location remote, behind NAT /m, status.stdout);
    const moved = kg('lab', 'show', '--state-dir', dir, '--graph', join(dir, 'g.svg'));
    assert.equal(moved.status, 0, moved.stderr);
    assert.match(moved.stdout, /pod of loc2-n1 \(location remote, behind NAT\)/, moved.stdout);

    const down = kg('lab', 'down', '--state-dir', dir);
    assert.equal(down.status, 0, down.stderr);
    assert.equal(
      spawnSync('sh', ['-c', `ip netns list | grep -c '^${prefix}'`], { encoding: 'utf8' }).stdout.trim(),
      '0',
    );
  },
);
