import type { Family } from '../../src/net/cidr.js';
import { parseRoutes, parseRules, renderOp } from '../../src/dataplane/routes/iproute.js';
import { IprouteRoutes } from '../../src/dataplane/routes/linux.js';
import { skipNoNetns } from '../helpers/netns.js';
import { routesNamespace } from './namespaces.js';
import { routesContract } from './routes-contract.js';
import { ipExec } from './routes-exec.js';

const harness =
  (nexthops: boolean): Parameters<typeof routesContract>[1] =>
  () => {
    const ns = routesNamespace('ktrt');
    const exec = ipExec(ns);
    const ip = async (line: string, family: Family = 4) =>
      void (await exec.run(['ip', ...(family === 6 ? ['-6'] : []), ...line.split(' ')]));
    const all = async <T>(f: (family: Family) => Promise<T[]>) => [...(await f(4)), ...(await f(6))];
    return Promise.resolve({
      kernel: new IprouteRoutes(exec, undefined, undefined, nexthops),
      addRoute: (route) => ip(renderOp({ kind: 'route', action: 'add', route })),
      addRule: (rule) => ip(renderOp({ kind: 'rule', action: 'add', rule }), rule.family),
      deleteRoute: (route) => ip(renderOp({ kind: 'route', action: 'del', route })),
      deleteLink: (name) => ip(`link del ${name}`),
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
  };

routesContract('iproute2 in a network namespace', harness(true), skipNoNetns);
// As on a kernel without next-hop objects (before 5.3): every gateway route written plain, `via`.
routesContract('iproute2, plain routes (no next-hop objects)', harness(false), skipNoNetns);
