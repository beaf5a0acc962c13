/**
 * cache-equivalence.test.ts against the real kernel: the same plans and faults made by hand
 * (equivalence-steps.ts), on two network namespaces with wireguard-go, iproute2 and iptables, one
 * reconciled through a cache and one reading in every step; after each step both namespaces hold the
 * same state, read back from the kernel with the system's tools (`wg show dump`, `ip`,
 * `iptables-save`), never from kilo-ts. The cache is the agent's (trusting the last write, told what
 * the routing monitor would tell), or kg apply's (each pass a process of its own, reading ahead and
 * creating the interface ahead).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { test } from 'node:test';
import { withoutNexthopIds } from '../../packages/lab/src/observe.js';
import { linuxDataplane } from '../../src/agent/linux-dataplane.js';
import { DataplaneMemory } from '../../src/dataplane/cache.js';
import type { Exec } from '../../src/dataplane/exec.js';
import { ReadAhead } from '../../src/dataplane/read-ahead.js';
import { reconcile, type Dataplane, type ReconcileInput, type ReconcileResult } from '../../src/dataplane/reconcile.js';
import { kiloRouteProtocol } from '../../src/dataplane/routes/constants.js';
import { parseRoutes, renderOp } from '../../src/dataplane/routes/iproute.js';
import type { LinuxWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import { skipNoNetns, type TestNamespace } from '../helpers/netns.js';
import { eth0Namespace } from './namespaces.js';
import { inputOf, patchedSteps, planA, runSteps, type Faults, type Step } from './equivalence-steps.js';

// netnsExec binds a per-namespace directory over this path; wireguard-go would create it anyway.
if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

/** A network namespace with eth0 (a veth, 10.1.0.1/24, up). */
interface Machine {
  ns: TestNamespace;
}

function machine(prefix: string): Machine {
  return { ns: eth0Namespace(prefix) };
}

/** The agent's machine: one dataplane for every pass, whose kilo0 is a wireguard-go it supervises. */
interface Node extends Machine {
  dp: Dataplane;
  /** Resolves when the supervisor restarted a wireguard-go that exited (its interface deleted by hand). */
  restarted: () => Promise<void>;
}

function realNode(prefix: string): Node {
  const { ns } = machine(prefix);
  let onRestart = (): void => {};
  const dp = linuxDataplane(ns.exec, {
    interfaceName: 'kilo0',
    createInterface: true,
    implementation: 'userspace',
    onRestart: () => onRestart(),
  });
  // wireguard-go runs detached (unreferenced): the timer keeps the test's event loop up meanwhile.
  const restarted = () =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('wireguard-go was not restarted in 10 s')), 10_000);
      onRestart = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  return { ns, dp, restarted };
}

async function destroy(n: Node | undefined): Promise<void> {
  if (!n) return;
  try {
    await n.dp.device.destroy();
  } finally {
    n.ns.destroy();
  }
}

const run = async (n: Machine, argv: string[]): Promise<string> => (await n.ns.exec.run(argv)).stdout;

/** Everything a reconcile may change, read from the kernel in one comparable value. */
async function stateOf(n: Machine): Promise<unknown> {
  // An interface's IPv6 link-local address is random (stable-privacy): only that it is there compares.
  const lines = (text: string) =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => l.replace(/fe80::[0-9a-f:]*[0-9a-f]\b/g, 'fe80::(link-local)'));
  const wg = lines(await run(n, ['wg', 'show', 'kilo0', 'dump']));
  const [device, ...peers] = wg.map((l) => l.split('\t'));
  const firewall: string[] = [];
  for (const tool of ['iptables-save', 'ip6tables-save'])
    for (const table of ['nat', 'filter'])
      firewall.push(
        ...lines(await run(n, [tool, '-t', table]))
          .filter((l) => !l.startsWith('#'))
          // Packet counters differ between namespaces.
          .map((l) => l.replace(/\[\d+:\d+\]$/, '')),
      );
  // Routes through next-hop objects name them by gateway and device: ids follow the order of writing.
  const { nexthops, route } = withoutNexthopIds(await run(n, ['ip', 'nexthop', 'show']));
  return {
    routes: [
      ...lines(await run(n, ['ip', '-4', 'route', 'show', 'table', 'all'])),
      ...lines(await run(n, ['ip', '-6', 'route', 'show', 'table', 'all'])),
    ]
      .map(route)
      .sort(),
    nexthops: nexthops.sort(),
    rules: [...lines(await run(n, ['ip', '-4', 'rule'])), ...lines(await run(n, ['ip', '-6', 'rule']))],
    // Without the interface index (it differs between namespaces, and after a recreation).
    kilo0: lines(await run(n, ['ip', '-o', 'addr', 'show', 'dev', 'kilo0'])).map((l) => l.replace(/^\d+:\s*/, '')),
    link: (await run(n, ['ip', '-o', 'link', 'show', 'dev', 'kilo0'])).replace(/^\d+:\s*/, '').replace(/\\.*$/, ''),
    wireGuard: {
      device,
      // Without the session: latest handshake, received and sent bytes.
      peers: peers.map((p) => [...p.slice(0, 4), p[7]]).sort(),
    },
    firewall,
  };
}

/** The faults made the same way on every machine of either harness: by hand, with the system's tools. */
const byHand = {
  routeDeleted: async (n: Machine, memory: DataplaneMemory | null) => {
    const json = await run(n, [
      'ip',
      '-N',
      '-j',
      '-4',
      'route',
      'show',
      'table',
      'all',
      'proto',
      `${kiloRouteProtocol}`,
    ]);
    const [route] = parseRoutes(json, 4, kiloRouteProtocol);
    assert.ok(route, 'the plan wrote a route');
    await run(n, ['ip', ...renderOp({ kind: 'route', action: 'del', route }).split(' ')]);
    if (memory) assert.equal(memory.accounts({ deleted: true, route }), false, 'a deletion by hand is not ours');
  },
  guardDeleted: async (n: Machine, memory: DataplaneMemory | null) => {
    const show = ['ip', '-N', '-j', '-4', 'route', 'show', 'table', 'all', 'proto', `${kiloRouteProtocol}`];
    const [route] = parseRoutes(await run(n, [...show, 'type', 'blackhole']), 4, kiloRouteProtocol);
    assert.ok(route?.type === 'blackhole', 'the plan wrote the guard');
    await run(n, ['ip', ...renderOp({ kind: 'route', action: 'del', route }).split(' ')]);
    if (memory) assert.equal(memory.accounts({ deleted: true, route }), false, 'a deletion by hand is not ours');
  },
  firewallRuleDeleted: async (n: Machine, memory: DataplaneMemory | null) => {
    await run(n, ['iptables', '-w', '-t', 'nat', '-D', 'KILO-NAT', '1']);
    memory?.forget();
  },
  forwardPolicy: async (n: Machine, policy: 'DROP' | 'ACCEPT', memory: DataplaneMemory | null) => {
    await run(n, ['iptables', '-w', '-t', 'filter', '-P', 'FORWARD', policy]);
    memory?.forget();
  },
  peerRemoved: async (n: Machine, memory: DataplaneMemory | null) => {
    // The same peer on both machines (wireguard-go lists its peers in no fixed order), one A keeps.
    const dump = await run(n, ['wg', 'show', 'kilo0', 'dump']);
    const peer = planA.peers.find((p) => dump.includes(`\n${p.publicKey}\t`));
    assert.ok(peer, 'the device holds a peer of plan A');
    await run(n, ['wg', 'set', 'kilo0', 'peer', peer.publicKey, 'remove']);
    memory?.forget();
  },
};

const agentFaults: Faults<Node> = {
  ...byHand,
  /**
   * wireguard-go exits, its supervisor starts it again with the last config, on an interface
   * without address or routes, and tells (the agent forgets).
   */
  interfaceDeleted: async (n, memory) => {
    const restarted = n.restarted();
    await run(n, ['ip', 'link', 'del', 'dev', 'kilo0']);
    await restarted;
    memory?.forget();
  },
};

/** Two machines made by `make`, given to `body`, and torn down by `retire` whatever happens. */
async function onTwo<M>(
  make: () => M,
  retire: (m: M | undefined) => Promise<void>,
  body: (cached: M, plain: M) => Promise<void>,
): Promise<void> {
  let cached: M | undefined;
  let plain: M | undefined;
  try {
    cached = make();
    plain = make();
    await body(cached, plain);
  } finally {
    await Promise.all([retire(cached), retire(plain)]);
  }
}

test(
  'the same plans and faults, trusting the last write and reading every time, leave the same kernel state',
  { skip: skipNoNetns },
  () =>
    onTwo(
      () => realNode('ktce'),
      destroy,
      async (cached, plain) => {
        const memory = new DataplaneMemory();
        await runSteps(
          agentFaults,
          stateOf,
          { node: cached, memory, pass: (input) => reconcile(cached.dp, input, { memory }) },
          { node: plain, pass: (input) => reconcile(plain.dp, input) },
        );
        // The cluster events' passes patched the last WireGuard write (dataplane/wireguard/incremental.ts).
        const { patches } = (cached.dp.device as LinuxWireGuardDevice).differ;
        assert.ok(patches >= patchedSteps, `${patches} patched WireGuard diffs`);
      },
    ),
);

/**
 * kg apply's machine: each pass is a process of its own, with a dataplane of its own. The
 * wireguard-go a pass started outlives it, supervised by no one; the next pass adopts it, or, when
 * it is gone with its interface, creates the interface again.
 */
interface ApplyMachine extends Machine {
  /** The namespace's Exec, keeping the wireguard-go processes it starts. */
  exec: Exec;
  started: ChildProcess[];
}

function applyMachine(prefix: string): ApplyMachine {
  const m = machine(prefix);
  const started: ChildProcess[] = [];
  const exec: Exec = {
    ...m.ns.exec,
    start: (argv, opts) => {
      const child = m.ns.exec.start(argv, opts);
      started.push(child);
      return child;
    },
  };
  return { ...m, exec, started };
}

/** Resolves when every wireguard-go `m`'s passes started has exited. */
function exited(m: ApplyMachine): Promise<void> {
  const running = m.started.filter((c) => c.exitCode === null && c.signalCode === null);
  // wireguard-go runs detached (unreferenced): the timer keeps the test's event loop up meanwhile.
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('wireguard-go did not exit in 10 s')), 10_000);
    void Promise.all(running.map((c) => new Promise((r) => c.once('exit', r)))).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * One kg apply: a dataplane of its own, its reads started ahead and the interface created ahead
 * (apply.ts: start(), ensure(), one reconcile takes them), or each step reading. When it ends no
 * one supervises the wireguard-go it started.
 */
async function apply(m: ApplyMachine, input: ReconcileInput, step: Step, readAhead: boolean) {
  const dp = linuxDataplane(m.exec, { interfaceName: 'kilo0', createInterface: true, implementation: 'userspace' });
  const before = m.started.length;
  try {
    let result: ReconcileResult;
    if (readAhead) {
      const layer = new ReadAhead(dp, 'kilo0');
      layer.start();
      const created = layer.ensure();
      result = await reconcile(dp, input, { once: true, ahead: layer });
      assert.equal(await created, step.createsInterface === true, `${step.name}: the interface is created ahead`);
    } else {
      result = await reconcile(dp, input, { once: true });
    }
    const starts = step.createsInterface === true ? 1 : 0;
    assert.equal(m.started.length - before, starts, `${step.name}: ${starts} wireguard-go started`);
    return result;
  } finally {
    // The process exits.
    for (const child of m.started.slice(before)) child.removeAllListeners('exit');
  }
}

/** Deletes kilo0 (wireguard-go exits with it), then the namespace. */
async function retire(m: ApplyMachine | undefined): Promise<void> {
  if (!m) return;
  try {
    const gone = exited(m);
    await run(m, ['ip', 'link', 'del', 'dev', 'kilo0']).catch(() => {});
    await gone;
  } finally {
    m.ns.destroy();
  }
}

const applyFaults: Faults<ApplyMachine> = {
  ...byHand,
  /** wireguard-go exits; no one starts it again before the next kg apply, which creates the interface ahead. */
  interfaceDeleted: async (m) => {
    const gone = exited(m);
    await run(m, ['ip', 'link', 'del', 'dev', 'kilo0']);
    await gone;
  },
};

test(
  'the same plans and faults, each kg apply reading ahead or reading in its steps, leave the same kernel state',
  { skip: skipNoNetns },
  () =>
    onTwo(
      () => applyMachine('ktra'),
      retire,
      (ahead, plain) =>
        runSteps(
          applyFaults,
          stateOf,
          { node: ahead, pass: (input, step) => apply(ahead, input, step, true) },
          { node: plain, pass: (input, step) => apply(plain, input, step, false) },
        ),
    ),
);

test(
  'in the kernel too, without telling the memory a fault by hand is not repaired (the test can fail)',
  { skip: skipNoNetns },
  async () => {
    let n: Node | undefined;
    try {
      n = realNode('ktce');
      const memory = new DataplaneMemory();
      const input = inputOf(planA);
      assert.deepEqual((await reconcile(n.dp, input, { memory })).errors, []);
      const before = await stateOf(n);
      await run(n, ['iptables', '-w', '-t', 'nat', '-D', 'KILO-NAT', '1']);
      await reconcile(n.dp, input, { memory });
      assert.notDeepEqual(await stateOf(n), before, 'trusted: the deleted rule stays deleted');
      memory.forget();
      await reconcile(n.dp, input, { memory });
      assert.deepEqual(await stateOf(n), before, 'after forget(): read and repaired');
    } finally {
      await destroy(n);
    }
  },
);
