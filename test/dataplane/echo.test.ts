/**
 * Which interface events are the echo of the last write (echo.ts), through DataplaneMemory as the
 * agent asks it: only an address the write added and the link as it left it after setting it up or
 * its MTU; never a change that can drop routes, another interface's, or what a later write undid.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataplaneMemory } from '../../src/dataplane/cache.js';
import { describeLinkOp, diffLink, type DesiredLink, type LinkState } from '../../src/dataplane/links.js';
import type { RoutingEvent } from '../../src/dataplane/monitor.js';

const address = (cidr: string, o: { name?: string; deleted?: boolean } = {}): RoutingEvent => ({
  kind: 'address',
  name: o.name ?? 'kilo0',
  deleted: o.deleted ?? false,
  family: cidr.includes(':') ? 6 : 4,
  cidr,
});
const link = (up: boolean, mtu: number | null, o: { name?: string; deleted?: boolean } = {}): RoutingEvent => ({
  kind: 'link',
  name: o.name ?? 'kilo0',
  deleted: o.deleted ?? false,
  up,
  mtu,
});

/** A memory that remembers kilo0's write from `from` to `to`, with the lines that write ran. */
function wrote(from: LinkState, to: DesiredLink, memory = new DataplaneMemory()): DataplaneMemory {
  memory.linkWrote(
    'kilo0',
    to,
    diffLink(from, to).map((op) => describeLinkOp('kilo0', op)),
  );
  return memory;
}

const created: LinkState = { up: false, mtu: 1420, addresses: [] };
const leader: DesiredLink = { address: '10.4.0.1/16', up: true, mtu: 1420 };

test('the first write’s address and link up are its echo; removals, downs, other values and interfaces are not', () => {
  const m = wrote(created, leader);
  assert.equal(m.explains(address('10.4.0.1/16')), true, 'the address it added');
  assert.equal(m.explains(link(true, 1420)), true, 'the link it set up, at the MTU it left');
  for (const [e, why] of [
    [address('10.4.0.1/16', { deleted: true }), 'its address removed'],
    [address('10.4.0.2/16'), 'another address'],
    [address('10.4.0.1/24'), 'its address at another prefix'],
    [address('10.4.0.1/16', { name: 'eth0' }), 'its address on another interface'],
    [link(false, 1420), 'the link down'],
    [link(true, 1420, { deleted: true }), 'the link deleted'],
    [link(true, 1380), 'another MTU'],
    [link(true, 1420, { name: 'eth0' }), 'another interface'],
    [{ kind: 'rule', deleted: false, family: 4 }, 'a rule'],
  ] as const)
    assert.equal(m.explains(e), false, why);
});

test('an interface the last write did not touch, or whose MTU it leaves alone, has no echo', () => {
  const unchanged = wrote({ up: true, mtu: 1420, addresses: ['10.4.0.1/16'] }, leader);
  assert.equal(unchanged.explains(address('10.4.0.1/16')), false, 'an address it did not add');
  assert.equal(unchanged.explains(link(true, 1420)), false, 'a link it did not set');
  const mtuAlone = wrote(created, { ...leader, mtu: null });
  assert.equal(mtuAlone.explains(link(true, 1420)), false, 'an MTU it did not choose');
  assert.equal(mtuAlone.explains(address('10.4.0.1/16')), true);
  const mtuOnly = wrote({ up: true, mtu: 1500, addresses: ['10.4.0.1/16'] }, leader);
  assert.equal(mtuOnly.explains(link(true, 1420)), true, 'the MTU it set');
  assert.equal(new DataplaneMemory().explains(address('10.4.0.1/16')), false, 'nothing remembered');
});

test('a late echo is judged against the interface’s last write at the time', () => {
  const m = wrote(created, leader);
  // The next write renumbered kilo0: the first one's address, reported late, is no longer the machine's.
  wrote({ up: true, mtu: 1420, addresses: ['10.4.0.1/16'] }, { ...leader, address: '10.4.0.2/16' }, m);
  assert.equal(m.explains(address('10.4.0.1/16')), false);
  assert.equal(m.explains(address('10.4.0.2/16')), true);
  m.linkWrote('kilo0', null, []);
  assert.equal(m.explains(address('10.4.0.2/16')), false, 'a failed write leaves nothing to echo');
  m.linkWrote('kilo0', leader, ['address add 10.4.0.1/16 dev kilo0']);
  m.forget();
  assert.equal(m.explains(address('10.4.0.1/16')), false, 'a forgotten write leaves nothing to echo');
});
