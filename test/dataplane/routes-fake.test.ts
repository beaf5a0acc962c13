import { FakeMachine, FakeRouteMachine } from '../../src/dataplane/routes/fake.js';
import { routesContract } from './routes-contract.js';

routesContract('in-memory model', async () => {
  const m = new FakeMachine();
  m.addLink('priv0', { addresses: ['192.168.1.1/24', 'fd00::1/64'] });
  m.addLink('kilo0', { addresses: ['10.4.0.1/16'] });
  return {
    machine: new FakeRouteMachine(m),
    addRoute: async (r) => m.routeAdd(r),
    addRule: async (r) => m.ruleAdd(r),
    deleteRoute: async (r) => m.routeDel(r),
    allRoutes: async () => m.routes.map((r) => ({ ...r })),
    allRules: async () => m.rules.map((r) => ({ ...r })),
    destroy: () => {},
  };
});
