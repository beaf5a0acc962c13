import { Cidr, IP } from './cidr.js';

/** Values by text; a text that does not parse is not kept. */
class Memo<V> {
  private readonly values = new Map<string, V>();
  private asked = 0;

  constructor(private readonly parse: (text: string) => V | null) {}

  /** Forgets everything once it holds more than twice what the pass that ended asked for. */
  nextPass(): void {
    if (this.values.size > 2 * this.asked) this.values.clear();
    this.asked = 0;
  }

  get(text: string): V | null {
    this.asked++;
    const v = this.values.get(text);
    if (v !== undefined) return v;
    const parsed = this.parse(text);
    if (parsed !== null) this.values.set(text, parsed);
    return parsed;
  }
}

/**
 * Parsed prefixes and addresses by their text, for an owner that sees the same texts on every pass
 * (a node's routes, reconciled on every cluster event; the kernel's, read on every resync), which
 * would otherwise parse them again each pass (docs/performance.md#address-memos). Its size follows
 * what a pass asks for (a churning cluster's old texts are dropped once they outnumber the live
 * ones), with no limit to guess. One per owner, never module state.
 */
export class AddressMemo {
  private readonly prefixes = new Memo((text) => Cidr.tryParsePrefix(text));
  private readonly addresses = new Memo((text) => IP.tryParse(text));

  /** Starts a pass (a reconcile, a read): the memo is sized by what the last one asked for. */
  nextPass(): void {
    this.prefixes.nextPass();
    this.addresses.nextPass();
  }

  /** `Cidr.tryParsePrefix(text)`. */
  prefix(text: string): Cidr | null {
    return this.prefixes.get(text);
  }

  /** `IP.tryParse(text)`. */
  address(text: string): IP | null {
    return this.addresses.get(text);
  }
}
