/** Two lab clusters (`kg lab up --clusters 2`) for the multi-cluster e2e tests, and their pods' pairs. */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterKubeconfig, Lab } from '../../packages/lab/src/lab.js';
import { allPairs, type Pair } from '../../packages/lab/src/probe.js';
import type { Granularity } from '../../src/model/types.js';
import { ensureBuilt, root } from '../cli/built.js';

let counter = 0;

export async function upTwoClusters(granularity: Granularity): Promise<{ dir: string; labs: [Lab, Lab] }> {
  ensureBuilt();
  const id = `${process.pid % 10000}${counter++}`;
  const dir = join(tmpdir(), `kilo-lab-mc-${id}`);
  rmSync(dir, { recursive: true, force: true });
  const options = {
    locations: 2,
    nodesPerLocation: 2,
    granularity,
    natLocation: null,
    peer: false,
    prefix: `klm${id}-`,
  };
  return { dir, labs: (await Lab.upClusters(dir, options, 2)) as [Lab, Lab] };
}

/** Every pod of `a` to every pod of `b`. */
export const across = (a: Lab, b: Lab): Pair[] => allPairs(a.podEndpoints(), b.podEndpoints());

/** A shell's environment as Kilo's doc assumes it: kubectl and kilo-ts's kgctl on PATH, both kubeconfigs and service CIDRs. */
export function docEnv(dir: string, one: Lab, two: Lab): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: `${join(root, 'bin')}:${process.env['PATH'] ?? ''}`,
    KUBECONFIG1: clusterKubeconfig(dir, 1),
    KUBECONFIG2: clusterKubeconfig(dir, 2),
    SERVICECIDR1: one.plan.serviceCidr,
    SERVICECIDR2: two.plan.serviceCidr,
  };
}
