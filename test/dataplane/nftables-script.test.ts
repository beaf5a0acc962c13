import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeNftables } from '../../src/dataplane/nftables/fake.js';
import { parseTable } from '../../src/dataplane/nftables/json.js';
import { nftRulesetOf, type NftRuleset } from '../../src/dataplane/nftables/ruleset.js';
import { nftScript } from '../../src/dataplane/nftables/script.js';
import { planA, planB } from './firewall-plans.js';

const sorted = (r: NftRuleset): NftRuleset => ({
  sets: [...r.sets].sort((a, b) => (a.name < b.name ? -1 : 1)),
  chains: [...r.chains].sort((a, b) => (a.name < b.name ? -1 : 1)),
});
const copy = (r: NftRuleset): NftRuleset => JSON.parse(JSON.stringify(r)) as NftRuleset;

/**
 * Writes `from` into a fake nftables (which refuses what the kernel refuses: a set deleted while a
 * rule uses it, a chain deleted while not empty or jumped to, overlapping intervals), then runs the
 * script from it to `to` as one transaction; returns the script, after checking the table then
 * equals `to` and a second diff finds nothing.
 */
function through(from: NftRuleset, to: NftRuleset): ReturnType<typeof nftScript> {
  const nft = new FakeNftables();
  nft.script(nftScript(from, null).text);
  const script = nftScript(to, parseTable(nft.list('inet', 'kilo')).ruleset);
  nft.script(script.text);
  const after = parseTable(nft.list('inet', 'kilo'));
  assert.equal(after.foreign, null);
  assert.deepEqual(sorted(after.ruleset), sorted(to));
  assert.deepEqual(nftScript(to, after.ruleset), { text: '', changes: [] });
  return script;
}

const lines = (text: string) => text.split('\n').filter((l) => l !== '');

describe('nftScript', () => {
  test('no table: one script that creates it whole, one change line', () => {
    const want = nftRulesetOf(planA());
    const s = nftScript(want, null);
    assert.equal(lines(s.text)[0], 'add table inet kilo');
    assert.equal(s.changes.length, 1);
    assert.match(s.changes[0]!, /^nftables: create table inet kilo \(16 sets, \d+ elements, 4 chains, \d+ rules\)$/);
  });

  test('the table equals the plan: an empty script and no change', () => {
    const want = nftRulesetOf(planA());
    assert.deepEqual(nftScript(want, copy(want)), { text: '', changes: [] });
  });

  test('A to B and back: only sets edited and chains refilled that differ; the fake applies both', () => {
    const a = nftRulesetOf(planA());
    const b = nftRulesetOf(planB());
    const ab = through(a, b);
    assert.doesNotMatch(ab.text, /add table|delete table/);
    assert.ok(ab.changes.length > 0);
    through(b, a);
  });

  test('a prefix that grows into its neighbour: the delete comes before the add, in one transaction', () => {
    const from = nftRulesetOf(planA());
    const to = copy(from);
    const set = to.sets.find((s) => s.name === 'forward-v4')!;
    assert.deepEqual(set.elements, ['10.42.0.0/23', '10.42.2.0/24']);
    set.elements = ['10.42.0.0/22'];
    const s = through(from, to);
    const del = lines(s.text).findIndex((l) => l.startsWith('delete element inet kilo forward-v4'));
    const add = lines(s.text).findIndex((l) => l.startsWith('add element inet kilo forward-v4'));
    assert.ok(del >= 0 && add > del, s.text);
    assert.deepEqual(s.changes, ['nftables: set forward-v4: 1 elements added, 2 deleted']);
  });

  test('thousands of elements: split over lines of at most 2,000', () => {
    const want = copy(nftRulesetOf(planA()));
    const set = want.sets.find((s) => s.name === 'masquerade-sources-v4')!;
    set.elements = Array.from({ length: 4500 }, (_, i) => `10.${100 + (i >> 8)}.${i & 255}.0/24`).sort();
    const adds = lines(nftScript(want, null).text).filter((l) =>
      l.startsWith('add element inet kilo masquerade-sources-v4 '),
    );
    assert.deepEqual(
      adds.map((l) => l.split(', ').length),
      [2000, 2000, 500],
    );
    const s = through(nftRulesetOf(planA()), want);
    assert.ok(
      s.changes.includes('nftables: set masquerade-sources-v4: 4500 elements added, 2 deleted'),
      s.changes.join('\n'),
    );
  });

  test('a chain the plan no longer has (KILO-IPIP gone) is flushed, then deleted, after the rules that use its sets', () => {
    const from = copy(nftRulesetOf(planA()));
    from.chains.push({ name: 'old', base: null, rules: ['ip saddr @ipip-sources-v4 accept comment "Kilo: old"'] });
    from.chains
      .find((c) => c.name === 'input')!
      .rules.push('ip saddr @ipip-sources-v4 jump old comment "Kilo: to old"');
    const s = through(from, nftRulesetOf(planA()));
    const t = lines(s.text);
    assert.ok(t.indexOf('flush chain inet kilo old') < t.indexOf('delete chain inet kilo old'));
    assert.ok(
      t.indexOf('flush chain inet kilo input') < t.indexOf('delete chain inet kilo old'),
      'the jump goes first',
    );
    assert.ok(s.changes.includes('nftables: remove chain old (1 rules)'), s.changes.join('\n'));
  });

  test('a set the plan no longer has is deleted after the chains that use it are emptied', () => {
    const from = copy(nftRulesetOf(planA()));
    from.sets.push({ name: 'stale-v4', type: 'ipv4_addr', elements: ['198.18.0.0/24'] });
    from.chains.find((c) => c.name === 'forward')!.rules.unshift('ip saddr @stale-v4 accept comment "Kilo: stale"');
    const s = through(from, nftRulesetOf(planA()));
    const t = lines(s.text);
    assert.ok(t.indexOf('flush chain inet kilo forward') < t.indexOf('delete set inet kilo stale-v4'));
    assert.ok(s.changes.includes('nftables: remove set stale-v4 (1 elements)'));
  });

  test("a base chain at another hook or priority is replaced (a chain's base cannot be changed in place)", () => {
    const from = copy(nftRulesetOf(planA()));
    from.chains.find((c) => c.name === 'forward')!.base!.priority = 10;
    const s = through(from, nftRulesetOf(planA()));
    const t = lines(s.text);
    const del = t.indexOf('delete chain inet kilo forward');
    assert.ok(t.indexOf('flush chain inet kilo forward') < del && del >= 0);
    assert.ok(t.findIndex((l) => l.startsWith('add chain inet kilo forward {')) > del);
    assert.ok(
      s.changes.some((c) => /^nftables: replace chain forward /.test(c)),
      s.changes.join('\n'),
    );
  });

  test('rules in another order are refilled; a rule deleted by hand is back', () => {
    const from = copy(nftRulesetOf(planA()));
    const nat = from.chains.find((c) => c.name === 'kilo-nat')!;
    nat.rules.reverse();
    through(from, nftRulesetOf(planA()));
    const missing = copy(nftRulesetOf(planA()));
    missing.chains.find((c) => c.name === 'postrouting')!.rules.shift();
    const s = through(missing, nftRulesetOf(planA()));
    assert.ok(s.changes.some((c) => /^nftables: refill chain postrouting \(\d+ rules, was \d+\)$/.test(c)));
  });

  test('a set of the wrong type or with elements that are no prefixes is recreated, and the chains using it refilled', () => {
    const want = nftRulesetOf(planA());
    const current = copy(want);
    current.sets.find((s) => s.name === 'forward-v4')!.elements.push('10.9.0.1-10.9.0.7');
    const s = nftScript(want, current);
    const t = lines(s.text);
    const del = t.indexOf('delete set inet kilo forward-v4');
    assert.ok(del > t.indexOf('flush chain inet kilo forward'), s.text);
    assert.ok(t.indexOf('add set inet kilo forward-v4 { type ipv4_addr; flags interval; }') > del);
    assert.ok(
      t.some((l) => l.startsWith('add rule inet kilo forward ')),
      'forward refilled',
    );
    assert.ok(s.changes.includes('nftables: create set forward-v4 (2 elements)'), s.changes.join('\n'));
  });
});
