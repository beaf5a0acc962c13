/**
 * Property-based tests of issue 12 (fast-check): a few thousand generated and mutated clusters
 * through parse → plan. `npm run fuzz` runs the same properties with many more cases.
 */
import { test } from 'node:test';
import {
  admissionAnswers,
  droppingIsRemoving,
  invariantsHold,
  noExceptionEscapes,
  orderDoesNotMatter,
} from '../fuzz/properties.js';

test('every plan of a colliding cluster keeps the invariants (no catch-all, no own prefix in the tunnel, unique keys, allowed IPs and route destinations)', () => {
  invariantsHold(400);
});

test('broken values anywhere: only TopologyError escapes, errors are one short line, the invariants hold', () => {
  noExceptionEscapes(1000);
});

test('breaking one object plans exactly as removing it', () => {
  droppingIsRemoving(300);
});

test('the order of the objects does not change any plan', () => {
  orderDoesNotMatter(300);
});

test('the webhook answers every broken AdmissionReview with a short reason and allows only Peers the agent keeps whole', () => {
  admissionAnswers(1000);
});
