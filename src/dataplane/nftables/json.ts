import { Cidr } from '../../net/cidr.js';
import { nftCommentPrefix, nftTable, type NftBase, type NftChain, type NftRuleset, type NftSet } from './ruleset.js';

/**
 * Reads `nft -j list table inet kilo` back into the ruleset model of ruleset.ts: sets with their
 * elements as canonical CIDRs, chains with their hook and their rules in the text Kilo writes them
 * in. A rule made of expressions Kilo never writes reads as its JSON, so it differs from every rule
 * of the plan and its chain is rewritten.
 */

export interface ReadTable {
  ruleset: NftRuleset;
  /** Why the table is not Kilo's (a rule without a "Kilo:" comment); null when it is. */
  foreign: string | null;
}

type Json = Record<string, unknown>;

const obj = (x: unknown): Json => (typeof x === 'object' && x !== null ? (x as Json) : {});

/** An element or a match's right side: an address, a prefix, a set reference, a word. */
function valueText(x: unknown): string {
  if (typeof x === 'string' || typeof x === 'number') return String(x);
  const p = obj(obj(x)['prefix']);
  if (typeof p['addr'] === 'string' && typeof p['len'] === 'number') return `${p['addr']}/${p['len']}`;
  return JSON.stringify(x);
}

/** An interval set's element as Cidr.networkText (a lone address is its host prefix); else its JSON. */
function elementText(x: unknown): string {
  const text = valueText(obj(x)['elem'] !== undefined ? obj(obj(x)['elem'])['val'] : x);
  return Cidr.tryParsePrefix(text)?.networkText ?? text;
}

function exprText(e: unknown): string {
  const x = obj(e);
  const m = obj(x['match']);
  if (x['match'] !== undefined) {
    const left = obj(m['left']);
    const payload = obj(left['payload']);
    const meta = obj(left['meta']);
    const l =
      typeof payload['protocol'] === 'string'
        ? `${payload['protocol']} ${String(payload['field'])}`
        : typeof meta['key'] === 'string'
          ? `meta ${meta['key']}`
          : JSON.stringify(left);
    const op = m['op'] === '==' || m['op'] === 'in' ? '' : `${String(m['op'])} `;
    return `${l} ${op}${valueText(m['right'])}`;
  }
  if (x['jump'] !== undefined) return `jump ${String(obj(x['jump'])['target'])}`;
  // Its figures change with every packet; the rule stays the same (counterOf reads them).
  if (x['counter'] !== undefined) return 'counter';
  for (const verdict of ['accept', 'drop', 'return', 'masquerade']) if (verdict in x) return verdict;
  return JSON.stringify(e);
}

/** A listed rule in the text Kilo writes it in (ruleset.ts). */
export function ruleText(rule: Json): string {
  const exprs = Array.isArray(rule['expr']) ? rule['expr'] : [];
  const parts = exprs.map(exprText);
  if (typeof rule['comment'] === 'string') parts.push(`comment ${JSON.stringify(rule['comment'])}`);
  return parts.join(' ');
}

/** The counters of a listing's rules in `chain` (`nft -j list chain`), summed; null when it has none. */
export function countersOf(text: string, chain: string): { packets: number; bytes: number } | null {
  const items = (obj(JSON.parse(text))['nftables'] as unknown[] | undefined) ?? [];
  let found = false;
  let packets = 0;
  let bytes = 0;
  for (const item of items) {
    const r = obj(obj(item)['rule']);
    if (r['table'] !== nftTable || r['chain'] !== chain || !Array.isArray(r['expr'])) continue;
    for (const e of r['expr']) {
      const c = obj(obj(e)['counter']);
      if (typeof c['packets'] !== 'number' || typeof c['bytes'] !== 'number') continue;
      found = true;
      packets += c['packets'];
      bytes += c['bytes'];
    }
  }
  return found ? { packets, bytes } : null;
}

/** Parses `nft -j list table inet kilo`. */
export function parseTable(text: string): ReadTable {
  const items = (obj(JSON.parse(text))['nftables'] as unknown[] | undefined) ?? [];
  const sets: NftSet[] = [];
  const chains = new Map<string, NftChain>();
  let foreign: string | null = null;
  for (const item of items) {
    const i = obj(item);
    if (i['set'] !== undefined) {
      const s = obj(i['set']);
      if (s['table'] !== nftTable) continue;
      const elem = Array.isArray(s['elem']) ? s['elem'] : [];
      sets.push({
        name: String(s['name']),
        type: s['type'] === 'ipv6_addr' ? 'ipv6_addr' : 'ipv4_addr',
        elements: elem.map(elementText).sort(),
      });
      // A set of another type or without intervals is not one Kilo wrote: it never equals one of the plan's.
      if (s['type'] !== 'ipv4_addr' && s['type'] !== 'ipv6_addr') sets.at(-1)!.elements.push(JSON.stringify(s['type']));
      if (!(Array.isArray(s['flags']) && s['flags'].includes('interval')))
        sets.at(-1)!.elements.push('(no interval flag)');
    } else if (i['chain'] !== undefined) {
      const c = obj(i['chain']);
      if (c['table'] !== nftTable) continue;
      const base: NftBase | null =
        typeof c['hook'] === 'string'
          ? {
              type: c['type'] as NftBase['type'],
              hook: c['hook'] as NftBase['hook'],
              priority: Number(c['prio']),
              ...(c['policy'] !== 'accept' ? { policy: c['policy'] } : {}),
            }
          : null;
      chains.set(String(c['name']), { name: String(c['name']), base, rules: [] });
    } else if (i['rule'] !== undefined) {
      const r = obj(i['rule']);
      if (r['table'] !== nftTable) continue;
      const text = ruleText(r);
      if (typeof r['comment'] !== 'string' || !r['comment'].startsWith(nftCommentPrefix))
        foreign ??= `its chain ${String(r['chain'])} holds a rule that is not Kilo's: ${text}`;
      chains.get(String(r['chain']))?.rules.push(text);
    }
  }
  // A table someone declared with nothing in it holds nothing to break; one with only sets or
  // chains and no rule of Kilo's is someone else's.
  const rules = [...chains.values()].reduce((n, c) => n + c.rules.length, 0);
  if (foreign === null && rules === 0 && (sets.length > 0 || chains.size > 0))
    foreign = 'it has sets or chains but no rule of Kilo\'s ("Kilo:" comments)';
  return { ruleset: { sets, chains: [...chains.values()] }, foreign };
}
