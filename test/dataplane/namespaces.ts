/** What the contract suites of the seams share: a fresh kernel per test, in a network namespace or in memory. */
import { test } from 'node:test';
import { createNamespace, type TestNamespace } from '../helpers/netns.js';

/** `test` with a fresh harness from `make`, destroyed after the test whatever its outcome. */
export function testWith<H extends { destroy(): void }>(make: () => H) {
  return (name: string, fn: (h: H) => Promise<void>): void =>
    void test(name, async () => {
      const h = make();
      try {
        await fn(h);
      } finally {
        h.destroy();
      }
    });
}

/** priv0 up with 192.168.1.1/24 and fd00::1/64; kilo0 down, no address (veth pairs: dummy links are not available here). */
export function linksNamespace(prefix: string): TestNamespace {
  const ns = createNamespace(prefix);
  try {
    ns.sh(
      [
        'ip link add priv0 type veth peer name priv1',
        'ip link add kilo0 type veth peer name kilo1',
        'ip addr add 192.168.1.1/24 dev priv0',
        'ip addr add fd00::1/64 dev priv0 nodad',
        'ip link set priv0 up && ip link set priv1 up && ip link set kilo1 up',
      ].join(' && '),
    );
    return ns;
  } catch (e) {
    ns.destroy();
    throw e;
  }
}

/** linksNamespace, with kilo0 up holding 10.4.0.1/16: the machine of the routes' real tests. */
export function routesNamespace(prefix: string): TestNamespace {
  const ns = linksNamespace(prefix);
  try {
    ns.sh('ip addr add 10.4.0.1/16 dev kilo0 && ip link set kilo0 up');
    return ns;
  } catch (e) {
    ns.destroy();
    throw e;
  }
}
