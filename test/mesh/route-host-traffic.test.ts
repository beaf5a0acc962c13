import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { renderPlanText } from '../../src/cli/plan-text.js';
import { planOf } from '../../src/mesh/compute.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import { hostTable, type Plan } from '../../src/mesh/types.js';
import { parseCluster } from '../../src/model/parse.js';
import { snapshotNow } from '../../src/model/ready.js';
import { Cidr } from '../../src/net/cidr.js';
import { planFor, routeLines, sorted, twoLocations } from '../helpers/cluster.js';

const on = { routeHostTraffic: true, encapsulate: 'never' as const };
const off = { routeHostTraffic: false, encapsulate: 'never' as const };
const markRule = { src: null, dst: null, table: hostTable, iif: null, fwmark: 0x453, invert: true };

/** us-a's endpoint is its internal IP, so in `location` too a remote leader is reached at one. */
const cluster = () => twoLocations({ 'us-a': { endpoint: '10.8.0.1:51821' } });

const hostRoutes = (p: Plan) => routeLines(p).filter((l) => l.includes(`table ${hostTable}`));
const mainHostRoutes = (p: Plan) =>
  routeLines(p).filter((l) => /^10\.[18]\.\d+\.\d+\/32 via 10\.4\./.test(l) && !l.includes('table'));

describe('--route-host-traffic: plans', () => {
  // Per granularity: the WireGuard endpoints that are internal IPs, and the node seen from eu-a.
  const cases = [
    {
      granularity: 'cross' as const,
      // eu-a's WireGuard peers are us-a and us-b; both endpoints are internal IPs.
      withFlag: ['10.8.0.1/32 via 10.4.0.4', '10.8.0.2/32 via 10.4.0.5'],
    },
    {
      granularity: 'subnet' as const,
      withFlag: ['10.1.1.3/32 via 10.4.0.3', '10.8.0.1/32 via 10.4.0.4', '10.8.0.2/32 via 10.4.0.5'],
    },
    {
      granularity: 'full' as const,
      withFlag: [
        '10.1.0.2/32 via 10.4.0.2',
        '10.1.1.3/32 via 10.4.0.3',
        '10.8.0.1/32 via 10.4.0.4',
        '10.8.0.2/32 via 10.4.0.5',
      ],
    },
    {
      granularity: 'location' as const,
      // One segment us (leader us-a at its internal IP) holds both us nodes.
      withFlag: ['10.8.0.1/32 via 10.4.0.2', '10.8.0.2/32 via 10.4.0.2'],
    },
  ];
  for (const c of cases) {
    test(`${c.granularity}: the mark, the rule, and every remote internal IP in table 1108 (endpoints too)`, () => {
      const p = planFor(cluster(), 'eu-a', { granularity: c.granularity, ...on });
      assert.equal(p.leader, true);
      assert.equal(p.fwmark, 0x453);
      assert.deepEqual(p.rules, [markRule]);
      assert.deepEqual(
        sorted(hostRoutes(p)),
        c.withFlag.map((x) => `${x} dev kilo src 10.1.0.1 table 1108 onlink`),
      );
      assert.deepEqual(mainHostRoutes(p), [], 'no internal-IP route over WireGuard left in main');

      // Without the flag: no mark, no rule; the internal IPs that are endpoints have no route at all.
      const q = planFor(cluster(), 'eu-a', { granularity: c.granularity, ...off });
      assert.equal(q.fwmark, null);
      assert.deepEqual(q.rules, []);
      assert.deepEqual(hostRoutes(q), []);
      const endpoints = new Set(q.peers.map((x) => x.endpoint?.replace(/:\d+$/, '/32')));
      const expectMain = c.withFlag.filter((x) => !endpoints.has(x.split(' ')[0]));
      assert.deepEqual(
        sorted(mainHostRoutes(q)),
        expectMain.map((x) => `${x} dev kilo src 10.1.0.1 onlink`),
      );
      assert.ok(expectMain.length < c.withFlag.length, 'the case has an endpoint that is an internal IP');
      // Everything else is the same plan.
      const rest = (x: Plan) =>
        routeLines(x).filter((l) => !hostRoutes(x).includes(l) && !mainHostRoutes(x).includes(l));
      assert.deepEqual(rest(p), rest(q));
      assert.deepEqual(p.peers, q.peers);
      assert.deepEqual(p.firewall, q.firewall);
    });
  }

  test('location: a non-leader runs no WireGuard: no mark, no rule, its routes unchanged by the flag', () => {
    const p = planFor(cluster(), 'eu-b', { granularity: 'location', ...on });
    const q = planFor(cluster(), 'eu-b', { granularity: 'location', ...off });
    assert.equal(p.leader, false);
    assert.equal(p.fwmark, null);
    assert.deepEqual(p.rules, []);
    assert.deepEqual(p.routes, q.routes);
    // It still sends the remote internal IPs to its leader, which routes them on over WireGuard.
    assert.ok(routeLines(p).includes('10.8.0.1/32 via 10.1.0.1 dev private onlink'));
  });

  test('with encapsulation the mark rule sits beside the encapsulation rules, in its own table', () => {
    const p = planFor(cluster(), 'eu-a', { granularity: 'cross', routeHostTraffic: true, encapsulate: 'always' });
    assert.deepEqual(
      p.rules.filter((r) => r.table !== hostTable).map((r) => r.table),
      [1107, 1107, 1107, 1107],
    );
    assert.deepEqual(
      p.rules.filter((r) => r.table === hostTable),
      [markRule],
    );
  });

  test('kgctl plan text shows the mark, the rule and the table-1108 routes', () => {
    const text = renderPlanText(planFor(cluster(), 'eu-a', { granularity: 'subnet', ...on }));
    assert.match(text, /^FwMark = 0x453$/m);
    assert.match(text, /^not fwmark 0x453 lookup 1108$/m);
    assert.match(text, /^10\.1\.1\.3\/32 via 10\.4\.0\.3 dev kilo onlink src 10\.1\.0\.1 table 1108$/m);
    const plain = renderPlanText(planFor(cluster(), 'eu-a', { granularity: 'subnet', ...off }));
    assert.doesNotMatch(plain, /FwMark|fwmark|1108/);
  });
});

/** The shared vectors (see test/conformance): every plan with the flag off is the plan of before. */
const vectors = process.env['KILO_CONFORMANCE_DIR'] ?? join(import.meta.dirname, '../../../shared/conformance/vectors');

describe('--route-host-traffic over the conformance vectors', { skip: !existsSync(vectors) && 'no vectors' }, () => {
  const files = existsSync(vectors)
    ? readdirSync(vectors)
        .filter((f) => f.endsWith('.json'))
        .sort()
    : [];
  test('off: no mark, no mark rule, nothing in table 1108; on: the same plan with host routes moved', () => {
    let moved = 0;
    let added = 0;
    for (const file of files) {
      const v = JSON.parse(readFileSync(join(vectors, file), 'utf8'));
      const c = parseCluster(v.cluster.items);
      const options = {
        ...defaultMeshOptions,
        granularity: v.options.meshGranularity,
        subnet: Cidr.parse(v.options.subnet),
        encapsulate: v.options.encapsulate,
        local: v.options.local,
      };
      const now = snapshotNow(c.nodes);
      const q = planOf(c, v.options.node, options, now);
      const p = planOf(c, v.options.node, { ...options, routeHostTraffic: true }, now);
      assert.equal(q.fwmark, null, file);
      assert.ok(
        q.rules.every((r) => !('fwmark' in r) && !('invert' in r)),
        file,
      );
      assert.ok(
        q.routes.every((r) => r.table !== hostTable),
        file,
      );

      assert.equal(p.fwmark, p.leader ? 0x453 : null, file);
      assert.deepEqual(p.rules, p.leader ? [...q.rules, markRule] : q.rules, file);
      assert.deepEqual(p.peers, q.peers, file);
      assert.deepEqual(p.firewall, q.firewall, file);
      // Main keeps every route but the internal-IP ones over WireGuard, which all move to 1108;
      // 1108 adds only those whose internal IP is a WireGuard endpoint.
      const key = (r: Plan['routes'][number]) => JSON.stringify({ ...r, table: 'main' });
      const inHost = new Set(p.routes.filter((r) => r.table === hostTable).map(key));
      const leftMain = q.routes.filter((r) => !inHost.has(key(r)));
      assert.deepEqual(
        p.routes.filter((r) => r.table !== hostTable),
        leftMain,
        file,
      );
      const endpointIPs = new Set(q.peers.map((x) => x.endpoint && x.endpoint.replace(/^\[?(.*?)\]?:\d+$/, '$1')));
      for (const r of p.routes.filter((x) => x.table === hostTable)) {
        assert.equal(r.dev, 'kilo', file);
        assert.ok(r.dst.endsWith('/32') || r.dst.endsWith('/128'), `${file}: ${r.dst}`);
        if (q.routes.some((x) => key(x) === key(r))) moved++;
        else {
          assert.ok(endpointIPs.has(r.dst.replace(/\/(32|128)$/, '')), `${file}: ${r.dst} is new but no endpoint`);
          added++;
        }
      }
    }
    assert.ok(files.length > 0 && moved > 0 && added > 0, `vectors ${files.length}, moved ${moved}, added ${added}`);
  });
});
