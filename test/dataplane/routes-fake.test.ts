import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeKernel, FakeRoutes, fakeRoutingTables, settle } from '../../src/dataplane/routes/fake.js';
import { routesContract } from './routes-contract.js';

routesContract('in-memory model', () => {
  const m = new FakeKernel();
  m.addLink('priv0', { addresses: ['192.168.1.1/24', 'fd00::1/64'] });
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  return Promise.resolve({
    kernel: new FakeRoutes(m),
    addRoute: (r) => settle(() => m.routeAdd(r)),
    addRule: (r) => settle(() => m.ruleAdd(r)),
    deleteRoute: (r) => settle(() => m.routeDel(r)),
    deleteLink: (name) => settle(() => m.deleteLink(name)),
    allRoutes: () => settle(() => m.routes.map((r) => ({ ...r }))),
    allRules: () => settle(() => m.rules.map((r) => ({ ...r }))),
    destroy: () => {},
  });
});

test('a read taken before serves the reconcile it is given to; the one after reads the kernel anew', async () => {
  const m = new FakeKernel();
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  const tables = fakeRoutingTables(m);
  const devices = { kilo: 'kilo0', private: null, tunnel: null };
  const read = await tables.readUnparsed();
  // Kilo's protocol, written after the read: only a read made later sees it.
  const stray = {
    ...({ family: 4, dst: '10.42.9.0/24', table: 254, metric: 0, gw: null, dev: 'kilo0', src: null } as const),
    ...{ onlink: false, type: 'unicast', protocol: 107 },
  };
  m.routeAdd(stray);
  assert.equal((await tables.reconcile([], [], devices, { read })).writes, 0);
  assert.deepEqual((await tables.reconcile([], [], devices)).details, ['del route 10.42.9.0/24 dev kilo0']);
});

test('a plan handed over again is diffed again: the kernel repaired, a renamed device followed', async () => {
  const m = new FakeKernel();
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  m.addLink('kilo1', { addresses: ['10.5.0.1/16'] });
  const tables = fakeRoutingTables(m);
  const routes = [{ dst: '10.42.1.0/24', gw: null, dev: 'kilo', src: null, table: 'main', onlink: false } as const];
  assert.equal((await tables.reconcile(routes, [], { kilo: 'kilo0', private: null, tunnel: null })).writes, 1);
  for (const x of m.routes) m.routeDel(x);
  assert.equal((await tables.reconcile(routes, [], { kilo: 'kilo0', private: null, tunnel: null })).writes, 1);
  await tables.reconcile(routes, [], { kilo: 'kilo1', private: null, tunnel: null });
  assert.deepEqual(
    m.routes.map((x) => `${x.dst} ${x.dev}`),
    ['10.42.1.0/24 kilo1'],
  );
});
