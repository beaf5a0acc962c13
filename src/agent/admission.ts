/**
 * The validating admission review of kilo.squat.ai Peers: AdmissionReview v1 in, AdmissionReview v1
 * out. Pure: the HTTPS server in webhook.ts hands the parsed body here and writes back what it gets.
 */
import { showValue, shownValue, type ValidationError } from '../model/errors.js';
import { parsePeer } from '../model/parse.js';

export const admissionApiVersion = 'admission.k8s.io/v1';

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  /** Only on a denial: why, as the API server shows it to the user. */
  status?: { code: number; message: string };
}

export interface AdmissionReviewOut {
  apiVersion: typeof admissionApiVersion;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** The outcome of one request: a review to answer with, or a request that is not a review at all. */
export type Review =
  { ok: true; review: AdmissionReviewOut; operation: string; peer: string } | { ok: false; message: string };

/** The API server shows a denial to the user: a few lines' worth is enough to fix the Peer. */
export const maxDenialLength = 1024;

/**
 * One clause per rejected value: object, field, reason and the value, already cut and with
 * secrets withheld by ValidationError; the whole reason capped at maxDenialLength.
 */
export function denialReason(errors: readonly ValidationError[]): string {
  const text = errors.map((e) => e.message).join('; ');
  return text.length > maxDenialLength ? `${text.slice(0, maxDenialLength)}…` : text;
}

const operations = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;
type Operation = (typeof operations)[number];

function isOperation(v: unknown): v is Operation {
  return typeof v === 'string' && (operations as readonly string[]).includes(v);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A check beyond the Peer itself (the Nodes' pod CIDRs: webhook-nodes.ts): the errors of the Peer
 * named `name` with this `spec`, each naming the Peer, the field and the value.
 */
export type PeerCheck = (name: string, spec: unknown) => readonly ValidationError[];

/**
 * Reviews a decoded AdmissionReview body. Anything that is not an AdmissionReview v1 with a request
 * uid and, for CREATE and UPDATE, an object, is a bad request: the API server sent something we do
 * not understand, and answering "allowed" to it would let an unvalidated Peer through.
 */
export function reviewPeerAdmission(body: unknown, check?: PeerCheck): Review {
  if (!isRecord(body)) return { ok: false, message: 'request body is not a JSON object' };
  if (body['apiVersion'] !== admissionApiVersion || body['kind'] !== 'AdmissionReview') {
    return {
      ok: false,
      message: `want apiVersion ${admissionApiVersion} kind AdmissionReview, got apiVersion ${showValue(body['apiVersion'])} kind ${showValue(body['kind'])}`,
    };
  }
  const request = body['request'];
  if (!isRecord(request)) return { ok: false, message: 'AdmissionReview has no request' };
  const uid = request['uid'];
  if (typeof uid !== 'string' || uid === '')
    return { ok: false, message: `AdmissionReview request.uid is not a string: ${showValue(uid)}` };
  const operation = request['operation'];
  // The operation becomes a metric label: only the API server's four, never a client's invention.
  if (!isOperation(operation))
    return {
      ok: false,
      message: `AdmissionReview request.operation is not one of ${operations.join(', ')}: ${showValue(operation)}`,
    };
  const answer = (allowed: boolean, message?: string): AdmissionReviewOut => ({
    apiVersion: admissionApiVersion,
    kind: 'AdmissionReview',
    response: message === undefined ? { uid, allowed } : { uid, allowed, status: { code: 400, message } },
  });

  // Deleting a Peer needs no validation; the webhook is only registered for CREATE and UPDATE,
  // but an operator widening the rules must not lock Peers in place.
  if (operation === 'DELETE' || operation === 'CONNECT') return { ok: true, review: answer(true), operation, peer: '' };

  const object = request['object'];
  if (!isRecord(object))
    return { ok: false, message: `AdmissionReview request.object is not an object: ${showValue(object)}` };
  // For the log only: parsePeer checks the name.
  const name = isRecord(object['metadata']) ? String(shownValue(object['metadata']['name']) ?? '') : '';
  if (
    object['kind'] !== 'Peer' ||
    typeof object['apiVersion'] !== 'string' ||
    !object['apiVersion'].startsWith('kilo.squat.ai/')
  ) {
    const got = `${showValue(object['apiVersion'])} ${showValue(object['kind'])}`;
    return {
      ok: true,
      review: answer(false, `this webhook validates kilo.squat.ai Peers, got ${got}`),
      operation,
      peer: name,
    };
  }
  const parsed = parsePeer(object);
  // Every problem in one refusal: the Peer's own, then the check's.
  const more = check?.(name, object['spec']) ?? [];
  if (parsed.ok && more.length === 0) return { ok: true, review: answer(true), operation, peer: name };
  const errors = parsed.ok ? more : [...parsed.errors, ...more];
  return { ok: true, review: answer(false, denialReason(errors)), operation, peer: name };
}
