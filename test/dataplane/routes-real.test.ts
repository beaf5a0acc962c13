import type { Family } from '../../src/net/cidr.js';
import { parseRoutes, parseRules, renderOp } from '../../src/dataplane/routes/iproute.js';
import { IprouteMachine } from '../../src/dataplane/routes/linux.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { linksNamespace } from './machine.js';
import { routesContract } from './routes-contract.js';
import { ipExec } from './routes-exec.js';

/** priv0 and kilo0 (veth pairs) up; priv0 with 192.168.1.1/24 and fd00::1/64, kilo0 with 10.4.0.1/16. */
export function routesNamespace(): TestNamespace {
  const ns = linksNamespace('ktrt');
  try {
    ns.sh('ip addr add 10.4.0.1/16 dev kilo0 && ip link set kilo0 up');
    return ns;
  } catch (e) {
    ns.destroy();
    throw e;
  }
}

routesContract(
  'iproute2 in a network namespace',
  () => {
    const ns = routesNamespace();
    const exec = ipExec(ns);
    const ip = async (line: string, family: Family = 4) =>
      void (await exec.run(['ip', ...(family === 6 ? ['-6'] : []), ...line.split(' ')]));
    const all = async <T>(f: (family: Family) => Promise<T[]>) => [...(await f(4)), ...(await f(6))];
    return Promise.resolve({
      machine: new IprouteMachine(exec),
      addRoute: (route) => ip(renderOp({ kind: 'route', action: 'add', route })),
      addRule: (rule) => ip(renderOp({ kind: 'rule', action: 'add', rule }), rule.family),
      deleteRoute: (route) => ip(renderOp({ kind: 'route', action: 'del', route })),
      allRoutes: () =>
        all(async (family) => {
          const { stdout } = await exec.run(['ip', '-N', '-j', `-${family}`, 'route', 'show', 'table', 'all']);
          // The kernel's own: connected and local routes, IPv6 link-local and multicast.
          return parseRoutes(stdout, family, -1).filter((x) => x.protocol !== 2 && x.table !== 255);
        }),
      allRules: () =>
        all(async (family) =>
          parseRules((await exec.run(['ip', '-N', '-j', `-${family}`, 'rule', 'show'])).stdout, family, null),
        ),
      destroy: () => ns.destroy(),
    });
  },
  skipNoNetns,
);
