/** A Peer review in memory, as the webhook answers it: the response part only. */
import assert from 'node:assert/strict';
import { reviewPeerAdmission, type PeerCheck } from '../../src/agent/admission.js';

/** The response to a CREATE of Peer "p" with this spec (uid "u"), with `check` if given. */
export function reviewSpec(spec: Record<string, unknown>, check?: PeerCheck) {
  const r = reviewPeerAdmission(
    {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        operation: 'CREATE',
        object: { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name: 'p' }, spec },
      },
    },
    check,
  );
  assert.ok(r.ok);
  return r.review.response;
}
