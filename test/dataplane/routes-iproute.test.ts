import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFailures, runBatch } from '../../src/dataplane/routes/batch.js';
import { parseRoutes, parseRules, renderOp } from '../../src/dataplane/routes/iproute.js';
import { ExecError, type Exec } from '../../src/dataplane/exec.js';

test('routes from ip -N -j: host routes, default, tables, metrics, flags, multipath', () => {
  const v4 = parseRoutes(
    JSON.stringify([
      { dst: '10.1.1.1', gateway: '192.168.1.3', dev: 'priv0', table: '1107', flags: ['onlink'] },
      { dst: 'default', gateway: '192.168.1.254', dev: 'priv0', metric: 100, flags: [] },
      { type: 'blackhole', dst: '10.9.0.0/16', table: 'main', flags: [] },
      { dst: '10.8.0.0/16', nexthops: [{ dev: 'a' }, { dev: 'b' }], flags: [] },
    ]),
    4,
    107,
  );
  assert.deepEqual(
    v4.map((r) => [r.dst, r.table, r.metric, r.gw, r.dev, r.onlink, r.type, r.protocol]),
    [
      ['10.1.1.1/32', 1107, 0, '192.168.1.3', 'priv0', true, 'unicast', 107],
      ['0.0.0.0/0', 254, 100, '192.168.1.254', 'priv0', false, 'unicast', 107],
      ['10.9.0.0/16', 254, 0, null, null, false, 'blackhole', 107],
      ['10.8.0.0/16', 254, 0, null, null, false, 'unicast', 107],
    ],
  );
  const v6 = parseRoutes(
    JSON.stringify([{ dst: 'fd00:0:0::5', dev: 'kilo0', metric: 1024, protocol: '4', prefsrc: 'fd00::1' }]),
    6,
    107,
  );
  assert.deepEqual([v6[0]!.dst, v6[0]!.src, v6[0]!.protocol], ['fd00::5/128', 'fd00::1', 4]);
});

test('rules from ip -N -j: only the given priority, lengths, all', () => {
  const json = JSON.stringify([
    { priority: 0, src: 'all', table: '255' },
    { priority: 1107, src: '10.42.1.0', srclen: 24, dst: '192.168.1.3', table: '1107' },
    { priority: 1107, src: 'all', dst: '192.168.1.3', iif: 'kilo0', table: '1107' },
  ]);
  assert.deepEqual(
    parseRules(json, 4, 1107).map((r) => [r.src, r.dst, r.iif, r.table]),
    [
      ['10.42.1.0/24', '192.168.1.3/32', null, 1107],
      [null, '192.168.1.3/32', 'kilo0', 1107],
    ],
  );
});

test('a delete line names table, metric and protocol, so only a route of ours can match', () => {
  const route = {
    family: 4 as const,
    dst: '10.42.3.0/24',
    table: 254,
    metric: 0,
    gw: '192.168.1.3',
    dev: 'priv0',
    src: null,
    onlink: true,
    type: 'unicast',
    protocol: 107,
  };
  assert.equal(
    renderOp({ kind: 'route', action: 'del', route }),
    'route del unicast 10.42.3.0/24 table 254 metric 0 proto 107',
  );
  assert.equal(
    renderOp({ kind: 'route', action: 'replace', route }),
    'route replace 10.42.3.0/24 via 192.168.1.3 dev priv0 onlink table 254 metric 0 proto 107',
  );
});

test('batch failures are paired with the message printed before them', () => {
  const stderr =
    'Error: Nexthop has invalid gateway.\nCommand failed -:2\nCannot find device "nosuch"\nCommand failed -:4\n';
  assert.deepEqual(parseFailures(stderr), [
    { index: 1, message: 'Nexthop has invalid gateway' },
    { index: 3, message: 'Cannot find device "nosuch"' },
  ]);
});

test('when ip gives up without naming a line, the lines after the last named one are unconfirmed', async () => {
  const exec: Exec = {
    run: (argv) =>
      Promise.reject(
        new ExecError(
          argv,
          255,
          '',
          'RTNETLINK answers: File exists\nCommand failed -:1\nError: argument "x" is wrong\n',
        ),
      ),
    start: () => {
      throw new Error('unused');
    },
    wireGuardRunDir: '/nonexistent',
  };
  const { failures } = await runBatch(exec, ['a', 'b', 'c']);
  assert.deepEqual(
    failures.map((f) => f.index),
    [0, 1, 2],
  );
  assert.equal(failures[0]!.message, 'File exists');
  assert.match(failures[1]!.message, /not confirmed, ip -batch gave up: Error: argument "x" is wrong/);
});

test('routes read against the expected ones: equal routes are those objects, the rest parsed as without', () => {
  const json = JSON.stringify([
    { dst: '10.1.1.1', gateway: '192.168.1.3', dev: 'priv0', table: '1107', flags: ['onlink'] },
    { dst: '10.2.0.0/16', gateway: '192.168.1.3', dev: 'kilo0', flags: [] },
    // Same key as an expected route, different gateway: a route of its own.
    { dst: '10.3.0.0/16', gateway: '192.168.1.4', dev: 'kilo0', flags: [] },
    { dst: 'fd00:0:0::5', dev: 'kilo0', metric: 1024, prefsrc: 'fd00::1' },
  ]);
  const plain = [...parseRoutes(json, 4, 107), ...parseRoutes(json, 6, 107).slice(3)];
  const expected = new Map(plain.slice(0, 2).map((r) => [`${r.table} ${r.dst} ${r.metric}`, { ...r }] as const));
  const other = { ...plain[2]!, gw: '192.168.1.3' };
  expected.set(`${other.table} ${other.dst} ${other.metric}`, other);
  const v6 = { ...plain[3]! };
  expected.set(`${v6.table} ${v6.dst} ${v6.metric}`, v6);
  const read = [
    ...parseRoutes(json, 4, 107, undefined, expected),
    ...parseRoutes(json, 6, 107, undefined, expected).slice(3),
  ];
  assert.deepEqual(read, plain);
  assert.ok(read[0] === expected.get('1107 10.1.1.1/32 0') && read[1] === expected.get('254 10.2.0.0/16 0'));
  assert.notEqual(read[2], other);
  // The kernel's IPv6 text is not the canonical one here: parsed, equal in value.
  assert.equal(read[3]!.dst, 'fd00::5/128');
});
