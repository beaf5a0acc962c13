import type { KubeObject, ParsedObject, ParseMemoLike } from '../model/parse.js';
import type { KiloNode } from '../model/types.js';

/** A Node whose parse is its base's with another last-seen: made when a pass asks for it. */
interface Carried {
  current: object;
  base: KiloNode;
  lastSeen: number;
  made: ParsedObject | null;
  /** The settle() round that last asked for it. */
  asked: number;
}

/**
 * The agent's memo of each cached object's parse (parseCluster's `memo`), with heartbeats carried
 * over by node name. At 20,000 nodes ~667 heartbeats a second each replace a Node whose parse
 * differs only in last-seen; putting a copy of the parse under each new object in a WeakMap (its
 * table grows with every dead key until a full collection) cost more than the rest of a
 * heartbeat's handling (docs/performance.md). Here a heartbeat changes the node's one entry in
 * place, and the copy with the new last-seen is made when the next pass asks for that object, once.
 * Everything else (fresh parses, Peers) is kept by object, as before.
 */
export class ParseMemo implements ParseMemoLike {
  private readonly byObject = new WeakMap<object, ParsedObject>();
  private readonly carried = new Map<string, Carried>();
  private round = 0;
  private askedThisRound = 0;

  get(obj: object): ParsedObject | undefined {
    const c = this.carried.get(nameOf(obj));
    if (c !== undefined && c.current === obj) {
      if (c.asked !== this.round) {
        c.asked = this.round;
        this.askedThisRound++;
      }
      return (c.made ??= { kind: 'Node', parsed: { ok: true, value: { ...c.base, lastSeen: c.lastSeen } } });
    }
    return this.byObject.get(obj);
  }

  set(obj: object, parsed: ParsedObject): void {
    this.byObject.set(obj, parsed);
  }

  /**
   * `current` replaces `previous` and parses as it does with `lastSeen` (the caller checked that
   * only last-seen, or what no parse reads, moved). False when `previous`'s parse is not known to
   * be a valid Node: then `current` is parsed as usual.
   */
  carry(previous: KubeObject, current: KubeObject, lastSeen: number): boolean {
    const name = nameOf(current);
    if (name === '' || nameOf(previous) !== name) return false;
    const c = this.carried.get(name);
    let base: KiloNode;
    // A node that beat before since its last fresh parse: the same base, another last-seen.
    if (c !== undefined && c.current === previous) base = c.base;
    else {
      const before = this.byObject.get(previous);
      if (before?.kind !== 'Node' || !before.parsed.ok) return false;
      base = before.parsed.value;
    }
    if (c === undefined) this.carried.set(name, { current, base, lastSeen, made: null, asked: this.round - 1 });
    else {
      c.current = current;
      c.base = base;
      c.lastSeen = lastSeen;
      c.made = null;
    }
    return true;
  }

  /**
   * Called after each parse of the whole cluster: entries it did not ask for belong to objects that
   * are gone (a deleted node, or one replaced by a change that was parsed afresh) and are dropped.
   */
  settle(): void {
    if (this.askedThisRound < this.carried.size)
      for (const [name, c] of this.carried) if (c.asked !== this.round) this.carried.delete(name);
    this.round++;
    this.askedThisRound = 0;
  }

  /** How many nodes are carried (tests). */
  get carriedCount(): number {
    return this.carried.size;
  }
}

function nameOf(obj: object): string {
  const name = (obj as KubeObject).metadata?.name;
  return typeof name === 'string' ? name : '';
}
