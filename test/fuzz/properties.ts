/**
 * The properties of issue 12 over generated clusters, shared by `npm test` (a few thousand cases)
 * and `npm run fuzz` (as many as asked, with counts). Each returns the number of plans it checked.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planOf, topologyOf } from '../../src/mesh/compute.js';
import { planNode } from '../../src/mesh/plan.js';
import { TopologyError } from '../../src/mesh/topology.js';
import type { MeshOptions } from '../../src/mesh/options.js';
import { ValidationError } from '../../src/model/errors.js';
import { parseCluster, parsePeer } from '../../src/model/parse.js';
import { maxDenialLength, reviewPeerAdmission } from '../../src/agent/admission.js';
import { granularities } from '../../src/model/types.js';
import { NOW, meshOptions } from '../helpers/cluster.js';
import { admissionReviewArb, clusterArb, mutate, mutatedClusterArb } from './arbitraries.js';
import { planViolations } from './invariants.js';

const hostnames = ['a', 'b', 'c', 'd', 'e', 'f'];

const optionSets: Partial<MeshOptions>[] = [
  {},
  { encapsulate: 'crosssubnet', local: true },
  { encapsulate: 'never', routeHostTraffic: true },
  { compatibility: 'cilium', local: false },
  { compatibility: 'flannel' },
];

export interface Counts {
  cases: number;
  plans: number;
  refusals: number;
}

/** Plans every node of the objects sees, asserting the invariants; only TopologyError may escape. */
function planEverywhere(objects: readonly unknown[], counts: Counts, optionIndex: number): void {
  const cluster = parseCluster(objects);
  for (const e of cluster.errors) {
    assert.ok(e instanceof ValidationError);
    assert.ok(!e.message.includes('\n') && e.message.length <= 600, e.message);
  }
  for (const granularity of granularities) {
    const options = meshOptions({ ...optionSets[optionIndex % optionSets.length], granularity });
    for (const host of hostnames) {
      let t;
      try {
        t = topologyOf(cluster, host, options, NOW);
      } catch (e) {
        if (!(e instanceof TopologyError)) throw e;
        counts.refusals++;
        continue;
      }
      const plan = planNode(t, options);
      counts.plans++;
      assert.deepEqual(planViolations(plan, t), [], `${host} ${granularity}`);
    }
  }
}

/** Valid clusters, colliding often: every plan of every node keeps the invariants. */
export function invariantsHold(numRuns: number, seed?: number): Counts {
  const counts: Counts = { cases: 0, plans: 0, refusals: 0 };
  fc.assert(
    fc.property(clusterArb, fc.nat(), (objects, o) => {
      counts.cases++;
      planEverywhere(objects, counts, o);
    }),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
  return counts;
}

/** Broken objects anywhere: no exception but TopologyError escapes, and the invariants still hold. */
export function noExceptionEscapes(numRuns: number, seed?: number): Counts {
  const counts: Counts = { cases: 0, plans: 0, refusals: 0 };
  fc.assert(
    fc.property(mutatedClusterArb, fc.nat(), (objects, o) => {
      counts.cases++;
      planEverywhere(objects, counts, o);
    }),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
  return counts;
}

type Outcome = { plan: unknown } | { refused: true };

function outcome(objects: readonly unknown[], host: string, options: MeshOptions): Outcome {
  try {
    return { plan: planOf(parseCluster(objects), host, options, NOW) };
  } catch (e) {
    if (e instanceof TopologyError) return { refused: true };
    throw e;
  }
}

/** Breaking one object (a wrong type where it is surely read) plans exactly as removing it. */
export function droppingIsRemoving(numRuns: number, seed?: number): Counts {
  const counts: Counts = { cases: 0, plans: 0, refusals: 0 };
  fc.assert(
    fc.property(clusterArb, fc.nat(), fc.constantFrom(...granularities), (objects, i, granularity) => {
      counts.cases++;
      const k = i % objects.length;
      const victim = objects[k]!;
      const broken =
        victim.kind === 'Node'
          ? mutate(victim, ['metadata', 'annotations', 'kilo.squat.ai/key'], 5)
          : mutate(victim, ['spec', 'allowedIPs'], 5);
      const withBroken = objects.map((o, j) => (j === k ? broken : o));
      const without = objects.filter((_, j) => j !== k);
      const options = meshOptions({ granularity });
      for (const host of hostnames) {
        const a = outcome(withBroken, host, options);
        const b = outcome(without, host, options);
        if ('plan' in a) counts.plans++;
        else counts.refusals++;
        assert.deepEqual(a, b, host);
      }
    }),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
  return counts;
}

/** The same objects in another order give the same plans: every agent agrees whatever it read first. */
export function orderDoesNotMatter(numRuns: number, seed?: number): Counts {
  const counts: Counts = { cases: 0, plans: 0, refusals: 0 };
  fc.assert(
    fc.property(
      clusterArb.chain((objects) =>
        fc.tuple(fc.constant(objects), fc.shuffledSubarray(objects, { minLength: objects.length })),
      ),
      fc.constantFrom(...granularities),
      ([objects, shuffled], granularity) => {
        counts.cases++;
        const options = meshOptions({ granularity });
        for (const host of hostnames) {
          const a = outcome(objects, host, options);
          if ('plan' in a) counts.plans++;
          else counts.refusals++;
          assert.deepEqual(outcome(shuffled, host, options), a, host);
        }
      },
    ),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
  return counts;
}

/**
 * The webhook's review of broken AdmissionReviews: never an exception (a 500), every answer one
 * short line, and a Peer it allows is one the agent keeps whole (no value dropped, no catch-all).
 * Counts: `plans` are the allowed reviews, `refusals` the denials and bad requests.
 */
export function admissionAnswers(numRuns: number, seed?: number): Counts {
  const counts: Counts = { cases: 0, plans: 0, refusals: 0 };
  fc.assert(
    fc.property(admissionReviewArb, (body) => {
      counts.cases++;
      const r = reviewPeerAdmission(body);
      if (!r.ok) {
        counts.refusals++;
        assert.ok(!r.message.includes('\n') && r.message.length <= 600, r.message);
        return;
      }
      const { response } = r.review;
      const request = (body as { request: { uid: unknown; object: unknown } }).request;
      assert.equal(response.uid, request.uid);
      if (!response.allowed) {
        counts.refusals++;
        const message = response.status?.message ?? '';
        assert.ok(!message.includes('\n') && message.length <= maxDenialLength + 1, message);
        return;
      }
      counts.plans++;
      const parsed = parsePeer(request.object);
      assert.ok(parsed.ok, 'an allowed Peer parses');
      assert.ok(
        parsed.value.allowedIPs.every((c) => c.prefix > 0),
        'an allowed Peer has no catch-all allowed IP',
      );
    }),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
  return counts;
}
