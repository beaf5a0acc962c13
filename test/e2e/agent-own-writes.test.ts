/**
 * The routing monitor's report of the agent's own writes, for real: `ip monitor` in kg's namespace
 * reports the address kg's first write adds to kilo0 and the link it sets up, and that echo must
 * not start a second full pass (at 20,000 nodes that pass was the agent's RSS peak). kilo0's address
 * deleted by hand still must: the kernel flushes the routes through kilo0 without a word, and the
 * pass puts the address and the routes back.
 *
 * The built kg, as node `a`, in a namespace of the test's own (agent-namespace.ts), at debug level:
 * its passes ("reconcile pass", trustLastWrite) and the monitor's interface events it judged
 * ("routing event", beside the monitor's ready and lost) are read from its log.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotation } from '../../src/model/annotations.js';
import { node, peer, wgKey } from '../helpers/cluster.js';
import { skipNoNetns } from '../helpers/netns.js';
import { agentNamespace } from './agent-namespace.js';
import { eventually } from './lab-helpers.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface LogLine {
  msg?: string;
  [field: string]: unknown;
}

function parsed(lines: readonly string[]): LogLine[] {
  return lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as LogLine];
    } catch {
      return [];
    }
  });
}

test(
  'kg in a namespace: its own address and link writes start no second full pass; kilo0’s address deleted by hand does',
  { skip: skipNoNetns, timeout: 180_000 },
  async (t) => {
    const lab = await agentNamespace(t, 'kt-ownw');
    const { ns, api } = lab;
    api.addNode(node('a', { location: 'eu', key: null, lastSeen: null, podCIDR: '10.42.0.0/24' }));
    const b = { location: 'us', endpoint: '203.0.113.2:51820', internalIP: '192.168.1.2/24', podCIDR: '10.42.1.0/24' };
    api.addNode(node('b', { ...b, lastSeen: nowSeconds() }));
    // b checks in as a live agent would: it must not go stale while the test runs on a loaded machine.
    const refresher = setInterval(
      () => api.patchNode('b', { metadata: { annotations: { [Annotation.lastSeen]: String(nowSeconds()) } } }),
      10_000,
    );
    t.after(() => clearInterval(refresher));

    const kg = lab.startKg(['--resync-period', '10m', '--log-level', 'debug']);
    const log = () => parsed(kg.log);
    const tail = () => kg.log.slice(-15).join('\n');
    const fullPasses = () => log().filter((l) => l.msg === 'reconcile pass' && l['trustLastWrite'] === false);
    const ownAddress = (l: LogLine) => {
      const c = l['change'] as { kind?: string; name?: string; cidr?: string; deleted?: boolean } | undefined;
      return c?.kind === 'address' && c.name === 'kilo0' && c.cidr === '10.4.0.1/16' && c.deleted === false;
    };
    const routedToB = () => /10\.42\.1\.0\/24 .*dev kilo0/.test(ns.sh('ip route show table all proto 107'));

    await eventually('kg applies: b is a peer and routed', () => routedToB(), 90_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${tail()}`);
    });
    // The monitor's report of the address the first write added, judged (ours or not).
    await eventually('kg judged the monitor’s report of kilo0’s address', () => log().some(ownAddress), 60_000).catch(
      (e: Error) => {
        throw new Error(`${e.message}\n${tail()}`);
      },
    );
    // A cluster change after it: its pass is the one a resync asked by that report would have made.
    api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));
    await eventually('laptop is a WireGuard peer', () => ns.sh('wg show kilo0 peers').includes(wgKey('laptop')));
    const interfaceEvent = (l: LogLine) => ['address', 'link'].includes((l['change'] as { kind?: string }).kind ?? '');
    const events = log().filter(
      (l) => (l.msg === 'routing event' || l.msg?.startsWith('routing changed')) && interfaceEvent(l),
    );
    // What the monitor really reports of the first write (printed for the record).
    console.log(events.map((l) => `${l.msg} ${JSON.stringify(l['change'])} ours=${String(l['ours'])}`).join('\n'));
    assert.equal(fullPasses().length, 1, `passes that read the machine:\n${JSON.stringify(fullPasses())}\n${tail()}`);
    assert.deepEqual(
      events.filter((l) => l['ours'] !== true),
      [],
      'a report of the first write was taken for a change outside kilo',
    );

    // kilo0's address deleted by hand: the kernel flushes b's route with it, silently.
    ns.sh('ip addr del 10.4.0.1/16 dev kilo0');
    await eventually(
      'the address and b’s route are back',
      () => /10\.4\.0\.1\/16/.test(ns.sh('ip -br addr show kilo0')) && routedToB(),
      60_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${tail()}`);
    });
    await eventually('the pass that put it back read the machine', () => fullPasses().length === 2);
  },
);
