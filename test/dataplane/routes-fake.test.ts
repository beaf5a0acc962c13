import { FakeMachine, FakeRouteMachine, settle } from '../../src/dataplane/routes/fake.js';
import { routesContract } from './routes-contract.js';

routesContract('in-memory model', () => {
  const m = new FakeMachine();
  m.addLink('priv0', { addresses: ['192.168.1.1/24', 'fd00::1/64'] });
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  return Promise.resolve({
    machine: new FakeRouteMachine(m),
    addRoute: (r) => settle(() => m.routeAdd(r)),
    addRule: (r) => settle(() => m.ruleAdd(r)),
    deleteRoute: (r) => settle(() => m.routeDel(r)),
    allRoutes: () => settle(() => m.routes.map((r) => ({ ...r }))),
    allRules: () => settle(() => m.rules.map((r) => ({ ...r }))),
    destroy: () => {},
  });
});
