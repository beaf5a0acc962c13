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

/** `ns` once `commands` ran in it; destroyed if one fails. */
function setUp(ns: TestNamespace, commands: string[]): TestNamespace {
  try {
    ns.sh(commands.join(' && '));
    return ns;
  } catch (e) {
    ns.destroy();
    throw e;
  }
}

/** priv0 up with 192.168.1.1/24 and fd00::1/64; kilo0 down, no address (veth pairs: dummy links are not available here). */
export function linksNamespace(prefix: string): TestNamespace {
  return setUp(createNamespace(prefix), [
    'ip link add priv0 type veth peer name priv1',
    'ip link add kilo0 type veth peer name kilo1',
    'ip addr add 192.168.1.1/24 dev priv0',
    'ip addr add fd00::1/64 dev priv0 nodad',
    'ip link set priv0 up && ip link set priv1 up && ip link set kilo1 up',
  ]);
}

/**
 * eth0 (a veth) up with 10.1.0.1/24: the machine of equivalence-steps.ts's plans (the node's
 * internal IP). No link-local addresses: their duplicate detection ends at any time, in one
 * namespace first.
 */
export function eth0Namespace(prefix: string): TestNamespace {
  return setUp(createNamespace(prefix), [
    'ip link add eth0 type veth peer name eth1',
    'ip link set eth0 addrgenmode none && ip link set eth1 addrgenmode none',
    'ip addr add 10.1.0.1/24 dev eth0',
    'ip link set eth0 up && ip link set eth1 up',
  ]);
}

/** linksNamespace, with kilo0 up holding 10.4.0.1/16: the machine of the routes' real tests. */
export function routesNamespace(prefix: string): TestNamespace {
  return setUp(linksNamespace(prefix), ['ip addr add 10.4.0.1/16 dev kilo0', 'ip link set kilo0 up']);
}
