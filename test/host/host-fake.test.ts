import { FakeHost } from '../../src/dataplane/host/fake.js';
import { FakeKernel, settle } from '../../src/dataplane/routes/fake.js';
import { hostContract } from './host-contract.js';

hostContract('in-memory model', () => {
  const m = new FakeKernel();
  m.addLink('lo', { addresses: ['127.0.0.1/8', '::1/128'] });
  m.addLink('priv0', { addresses: ['192.168.1.1/24', 'fd00::1/64'] });
  m.addLink('kilo0', { up: false });
  const host = new FakeHost(m);
  host.forwarding = false;
  host.forwarding6 = false;
  return {
    host,
    setForwarding: async (on, family = 4) => void (family === 6 ? (host.forwarding6 = on) : (host.forwarding = on)),
    addAddress: (d, c) => settle(() => m.addAddress(d, c)),
    setMTU: (d, mtu) => settle(() => m.setMTU(d, mtu)),
    addDefaultRoute: (family, gw, dev, metric) =>
      settle(() =>
        m.routeAdd({
          family,
          dst: family === 4 ? '0.0.0.0/0' : '::/0',
          table: 254,
          metric,
          gw,
          dev,
          src: null,
          onlink: false,
          type: 'unicast',
          protocol: 3,
        }),
      ),
    destroy: () => {},
  };
});
