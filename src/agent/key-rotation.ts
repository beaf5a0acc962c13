import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from '../backend/source.js';
import { Annotation } from '../model/annotations.js';
import { generatePrivateKey, publicKeyOf } from '../wireguard/keys.js';

/** How `kg` rotates its WireGuard key (docs/key-rotation.md); without it the key is kept for life. */
export interface KeyRotationOptions {
  /** Rotate once the key is this old (ms); 0: only when asked (kilo.squat.ai/rotate-key). */
  periodMs: number;
  /** When the key the agent starts with was made (ms since the epoch): its file's modification time. */
  keyCreatedAtMs: number;
  /**
   * Makes `privateKey` the one the next start reads (replaceKeyFile); throws when it cannot, and
   * then the node keeps its key. Called before the device switches, so a crash in between restarts
   * with the key the node was switching to.
   */
  persist(privateKey: string): void;
  /**
   * Makes the device start a handshake with each of these addresses' peers (handshake-primer.ts):
   * called once the device holds a new key, before the key is published. Tests record the calls.
   */
  startHandshakes?: (addresses: string[]) => Promise<void>;
  /** Tests give known keys. */
  generate?: () => string;
}

type Phase =
  | { kind: 'idle' }
  /** The next key is made and published as next-key; the pass after the publish switches. */
  | { kind: 'announcing'; next: string; request: string | null; announced: boolean }
  /** The device is handed the next key; it is published as the key once a pass applied it. */
  | { kind: 'switching'; request: string | null };

/**
 * The node's WireGuard key and its rotation, as passes see it. The order is what makes a rotation
 * cost no packet (docs/key-rotation.md#the-order): the device switches first and the key is published
 * only after, so every peer still holds the old key while this node's new handshakes are refused and
 * its packets wait in WireGuard's queue; a peer that learns the new key replaces the old peer entry
 * and the queued packets go.
 */
export class KeyRotation {
  private phase: Phase = { kind: 'idle' };
  private device: string;
  private published: string;
  private createdAt: number;
  /** The request value the last rotation served; published as key-rotated once the key is. */
  private served: string | undefined;
  private readonly rotations: Counter | null;

  constructor(
    privateKey: string,
    private readonly options: KeyRotationOptions | null,
    private readonly log: Logger,
    registry: Registry | null,
    private readonly clock: () => number,
  ) {
    this.device = privateKey;
    this.published = publicKeyOf(privateKey);
    this.createdAt = options?.keyCreatedAtMs ?? clock();
    if (!registry || !options) {
      this.rotations = null;
      return;
    }
    this.rotations = new Counter({
      name: 'kilo_key_rotations_total',
      help: "Rotations of the node's WireGuard key completed (the new key applied and published).",
      registers: [registry],
    });
    const age = () => Math.max(0, (this.clock() - this.createdAt) / 1000);
    new Gauge({
      name: 'kilo_key_age_seconds',
      help: "Age of the node's WireGuard key in use.",
      registers: [registry],
      collect() {
        this.set(age());
      },
    });
  }

  /** The private key the device is to hold. Secret: never logged, published or printed. */
  get deviceKey(): string {
    return this.device;
  }

  /** The public key to publish as kilo.squat.ai/key: the one the device held at the last applied pass. */
  get publicKey(): string {
    return this.published;
  }

  /** kilo.squat.ai/next-key: the public key of the rotation under way; null (removed) otherwise. */
  get nextPublicKey(): string | null {
    if (this.phase.kind === 'announcing') return publicKeyOf(this.phase.next);
    if (this.phase.kind === 'switching') return publicKeyOf(this.device);
    return null;
  }

  /** kilo.squat.ai/key-rotated: the request the last rotation served (undefined: leave it as it is). */
  get acknowledged(): string | undefined {
    return this.served;
  }

  /** A rotation is under way: the pass must plan, publish and apply (no check-in-only shortcut). */
  get busy(): boolean {
    return this.phase.kind !== 'idle';
  }

  /** When the period makes the next rotation due (ms since the epoch); null without a period. */
  get dueAt(): number | null {
    return this.options && this.options.periodMs > 0 ? this.createdAt + this.options.periodMs : null;
  }

  /**
   * The start of a pass, with the local Node's annotations: starts a rotation that is due (period or
   * request), or switches the device to the announced key once its announcement was published.
   */
  step(annotations: Readonly<Record<string, string>>): void {
    if (!this.options) return;
    const phase = this.phase;
    if (phase.kind === 'idle') {
      const request = pendingRequest(annotations, this.served);
      const due = this.dueAt;
      if (request === null && !(due !== null && this.clock() >= due)) return;
      const next = (this.options.generate ?? generatePrivateKey)();
      this.phase = { kind: 'announcing', next, request, announced: false };
      this.log.info(
        { nextKey: publicKeyOf(next), reason: request !== null ? 'requested' : 'period' },
        'key rotation: announcing the next key',
      );
      return;
    }
    if (phase.kind !== 'announcing' || !phase.announced) return;
    try {
      this.options.persist(phase.next);
    } catch (e) {
      // The key file keeps the old key, and so does the device: the rotation is dropped, next-key goes.
      this.phase = { kind: 'idle' };
      this.log.error({ err: (e as Error).message }, 'key rotation: cannot write the key file: keeping the key');
      return;
    }
    this.device = phase.next;
    this.phase = { kind: 'switching', request: phase.request };
  }

  /** The pass published what nextPublicKey said: an announced key may be switched to by the next pass. */
  publishedNext(): boolean {
    if (this.phase.kind !== 'announcing' || this.phase.announced) return false;
    this.phase.announced = true;
    return true;
  }

  /** A pass applied the plan without errors: the switched key is the device's and is published now. */
  applied(): boolean {
    if (this.phase.kind !== 'switching') return false;
    const before = this.published;
    this.published = publicKeyOf(this.device);
    if (this.phase.request !== null) this.served = this.phase.request;
    this.phase = { kind: 'idle' };
    this.createdAt = this.clock();
    this.rotations?.inc();
    this.log.info({ from: before, to: this.published }, 'key rotation: switched to the next key');
    return true;
  }
}

/** The rotate-key request not yet served: a non-empty value other than the acknowledged one. */
function pendingRequest(annotations: Readonly<Record<string, string>>, served: string | undefined): string | null {
  const asked = annotations[Annotation.rotateKey]?.trim() ?? '';
  if (asked === '' || asked === served || asked === annotations[Annotation.keyRotated]) return null;
  return asked;
}
