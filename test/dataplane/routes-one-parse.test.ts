import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IprouteRoutes } from '../../src/dataplane/routes/linux.js';
import { kiloNexthopBase } from '../../src/dataplane/routes/nexthops.js';
import { defaultOwnership, routeKey, type KernelRoute } from '../../src/dataplane/routes/state.js';
import { cannedIp } from './canned-ip.js';

/**
 * A route read whose text changed is parsed once: the reader's parse (parseRoutes) records the
 * next hop of each route printed by `nhid`, and Kilo's next hops take their routes from it, not
 * from a second JSON.parse of the same megabytes (docs/performance.md). Counted by wrapping
 * JSON.parse, the texts canned: an `ip` that answers as Linux would, no namespace needed.
 */

const used = kiloNexthopBase;
const unused = kiloNexthopBase + 1;
const routes4 = JSON.stringify([
  { dst: '10.42.1.0/24', nhid: used, gateway: '10.4.0.1', dev: 'kilo0', protocol: '107', flags: ['onlink'] },
  { dst: '10.42.2.0/24', nhid: used, gateway: '10.4.0.1', dev: 'kilo0', protocol: '107', flags: ['onlink'] },
  { dst: '10.4.0.0/16', dev: 'kilo0', protocol: '107', flags: [] },
]);
const nexthops = JSON.stringify([
  { id: used, gateway: '10.4.0.1', dev: 'kilo0', flags: ['onlink'], protocol: '107' },
  { id: unused, gateway: '10.4.0.9', dev: 'kilo0', flags: ['onlink'], protocol: '107' },
]);

/** How many times `run` has JSON.parse read `text`. */
async function parsesOf(text: string, run: () => Promise<void>): Promise<number> {
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = (s: string, reviver?: Parameters<typeof JSON.parse>[1]): unknown => {
    if (s === text) parses++;
    return parse(s, reviver);
  };
  try {
    await run();
  } finally {
    JSON.parse = parse;
  }
  return parses;
}

const route = (dst: string, gw: string | null, onlink: boolean): KernelRoute => ({
  family: 4,
  dst,
  table: 254,
  metric: 0,
  gw,
  dev: 'kilo0',
  src: null,
  onlink,
  type: 'unicast',
  protocol: 107,
});

test("a changed route read is parsed once: the next hops take their routes from the reader's parse", async () => {
  const batches: string[] = [];
  const kernel = new IprouteRoutes(
    cannedIp({ nexthops: () => nexthops, routes4: () => routes4 }, (input) => batches.push(input)),
  );
  const planned = [
    route('10.42.1.0/24', '10.4.0.1', true),
    route('10.42.2.0/24', '10.4.0.1', true),
    route('10.4.0.0/16', null, false),
  ];
  const expected = new Map(planned.map((r) => [routeKey(r), r]));
  // A pass as the reconciler makes it: read, parse for the diff, then an apply with nothing to write.
  const pass = async () => {
    const routing = (await kernel.read(defaultOwnership)).parse(expected);
    assert.deepEqual(routing.routes, planned);
    assert.ok(routing.routes.every((r, i) => r === planned[i]));
    // The next hop no route uses is found from the routes' ids, and deleted.
    assert.equal(kernel.stale(), true);
    assert.deepEqual((await kernel.apply([])).failures, []);
  };
  assert.equal(await parsesOf(routes4, pass), 1);
  assert.deepEqual(batches, [`nexthop del id ${unused}\n`]);
  // A reader digests from its second read on (kg apply reads once): the same text is parsed once more,
  // then known by its digest and parsed by neither.
  assert.equal(await parsesOf(routes4, pass), 1);
  assert.equal(await parsesOf(routes4, pass), 0);
  assert.deepEqual(batches, Array<string>(3).fill(`nexthop del id ${unused}\n`));
});
