/**
 * The agent's stop and its wireguard-go. When a Pod's container is stopped, kg and the wireguard-go
 * it started can get the signal together: the agent must not take wireguard-go's exit for a crash
 * and start another one that outlives it (10 agents out of 10 did). A SIGKILLed agent leaves its
 * wireguard-go running, and the next agent adopts it instead of starting a second one.
 *
 * The built kg, as node `a` with `--wireguard userspace`, in a namespace of the test's own
 * (agent-namespace.ts); wireguard-go processes are found as kg's children and as the namespace's
 * processes, never by name across the machine.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { node, peer } from '../helpers/cluster.js';
import { skipNoNetns } from '../helpers/netns.js';
import { agentNamespace, isWireGuardGo, type AgentNamespace, type KgRun } from './agent-namespace.js';
import { until } from './dataplane-lab.js';
import { eventually } from './lab-helpers.js';

const seconds = (s: number) => s * 1000;

function hasLink(lab: AgentNamespace, name: string): boolean {
  return lab.ns.sh(`ip -br link show ${name} 2>/dev/null || true`).trim() !== '';
}

/** What kg said about wireguard-go (for a failure's message). */
const aboutWireGuardGo = (kg: KgRun) => kg.log.filter((l) => /wireguard/.test(l)).join('\n');

/** Starts kg and waits until it has applied: its /health answers 200. */
async function startApplied(lab: AgentNamespace, flags: readonly string[]): Promise<KgRun> {
  const kg = lab.startKg(flags);
  await eventually(
    'kg to apply (/health 200)',
    async () => {
      if (kg.child.exitCode !== null) throw new Error(`kg exited: ${kg.log.slice(-10).join('\n')}`);
      return (await lab.health()) === 200;
    },
    seconds(90),
  ).catch((e: Error) => {
    throw new Error(`${e.message}\n${kg.log.slice(-10).join('\n')}`);
  });
  return kg;
}

/** Starts kg as startApplied, and finds the one wireguard-go it started. */
async function startWithWireGuardGo(
  lab: AgentNamespace,
  flags: readonly string[],
): Promise<{ kg: KgRun; wireGuardGo: number }> {
  const kg = await startApplied(lab, flags);
  const found = lab.wireGuardGoOf(kg);
  assert.equal(found.length, 1, `one wireguard-go under kg: ${found.join(' ')}\n${aboutWireGuardGo(kg)}`);
  return { kg, wireGuardGo: found[0]! };
}

/** After kg exited: the wireguard-go that got the signal goes, and no other runs in the namespace. */
async function assertNoWireGuardGoLeft(lab: AgentNamespace, kg: KgRun, signalled: number): Promise<void> {
  await until('the signalled wireguard-go to exit', () => !isWireGuardGo(signalled), seconds(30));
  assert.deepEqual(
    lab.wireGuardGoInNamespace(),
    [],
    `a wireguard-go outlives the agent; kg said:\n${aboutWireGuardGo(kg)}`,
  );
  assert.equal(existsSync(join(lab.ns.runDir, 'kilo0.sock')), false, 'kilo0.sock is left');
  await until('kilo0 to go with its wireguard-go', () => !hasLink(lab, 'kilo0'), seconds(30));
}

async function exitedCleanly(kg: KgRun): Promise<void> {
  const { code, signal } = await kg.exited;
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, kg.log.slice(-10).join('\n'));
}

/** Each case starts from a namespace without wireguard-go or kilo0 (a failed case may leave them). */
async function fresh(lab: AgentNamespace): Promise<void> {
  lab.killLeftovers();
  await until('the namespace to hold no wireguard-go', () => lab.wireGuardGoInNamespace().length === 0, seconds(30));
  if (hasLink(lab, 'kilo0')) lab.ns.sh('ip link del kilo0 2>/dev/null || true');
}

test(
  'the agent stops: no wireguard-go outlives it, a SIGKILLed one is adopted',
  { skip: skipNoNetns, timeout: 600_000 },
  async (t: TestContext) => {
    const lab = await agentNamespace(t, 'kt-stop');
    lab.api.addNode(node('a', { location: 'eu', key: null, lastSeen: null, podCIDR: '10.42.0.0/24' }));
    // A Peer: the device gets a peer and kilo0 routes, so clean-up has something to remove.
    lab.api.addPeer(peer('laptop', { allowedIPs: ['10.5.0.1/32'] }));

    const together = [
      { signal: 'SIGTERM', first: 'agent', flags: [] },
      { signal: 'SIGTERM', first: 'wireguard-go', flags: [] },
      { signal: 'SIGINT', first: 'agent', flags: [] },
      { signal: 'SIGINT', first: 'wireguard-go', flags: [] },
      { signal: 'SIGTERM', first: 'wireguard-go', flags: ['--clean-up-interface'] },
    ] as const;
    for (const c of together) {
      await t.test(
        `${c.signal} to kg and its wireguard-go at once, ${c.first} first ${c.flags.join(' ')}`,
        async () => {
          await fresh(lab);
          const { kg, wireGuardGo } = await startWithWireGuardGo(lab, c.flags);
          const order = c.first === 'agent' ? [kg.pid, wireGuardGo] : [wireGuardGo, kg.pid];
          for (const pid of order) process.kill(pid, c.signal);
          await exitedCleanly(kg);
          await assertNoWireGuardGoLeft(lab, kg, wireGuardGo);
          // Not even one that clean-up then stopped: once the agent stops, nothing starts wireguard-go.
          assert.equal(kg.log.filter((l) => /started wireguard-go/.test(l)).length, 1, aboutWireGuardGo(kg));
          // --clean-up (the default) still removed Kilo's routes.
          assert.equal(lab.ns.sh('ip route show table all proto 107').trim(), '');
        },
      );
    }

    await t.test(
      'SIGTERM to kg alone with --clean-up-interface: its wireguard-go is stopped and kilo0 removed',
      async () => {
        await fresh(lab);
        const { kg, wireGuardGo } = await startWithWireGuardGo(lab, ['--clean-up-interface']);
        process.kill(kg.pid, 'SIGTERM');
        await exitedCleanly(kg);
        await assertNoWireGuardGoLeft(lab, kg, wireGuardGo);
      },
    );

    await t.test('SIGTERM to kg alone without --clean-up-interface: its wireguard-go and kilo0 stay', async () => {
      await fresh(lab);
      const { kg, wireGuardGo } = await startWithWireGuardGo(lab, []);
      process.kill(kg.pid, 'SIGTERM');
      await exitedCleanly(kg);
      assert.ok(isWireGuardGo(wireGuardGo), 'wireguard-go keeps running (detached, by design)');
      assert.deepEqual(lab.wireGuardGoInNamespace(), [wireGuardGo]);
      assert.ok(hasLink(lab, 'kilo0'));
    });

    await t.test(
      'kg SIGKILLed: its wireguard-go stays and the next kg adopts it; dead, the agent starts its own; clean-up ends it',
      async () => {
        await fresh(lab);
        const { kg, wireGuardGo } = await startWithWireGuardGo(lab, ['--clean-up-interface']);
        process.kill(kg.pid, 'SIGKILL');
        assert.equal((await kg.exited).signal, 'SIGKILL');
        assert.ok(isWireGuardGo(wireGuardGo), 'wireguard-go outlives a killed agent (detached, by design)');
        const next = await startApplied(lab, ['--clean-up-interface']);
        assert.deepEqual(lab.wireGuardGoOf(next), [], `the next kg started a wireguard-go:\n${aboutWireGuardGo(next)}`);
        assert.deepEqual(lab.wireGuardGoInNamespace(), [wireGuardGo], 'the next kg adopted the one running');
        // Not its child, yet not unwatched: when it dies, its interface goes, and a pass starts one of the agent's own.
        process.kill(wireGuardGo, 'SIGKILL');
        await until('a wireguard-go of the agent', () => lab.wireGuardGoOf(next).length === 1, seconds(60)).catch(
          (e: Error) => {
            throw new Error(`${e.message}\n${aboutWireGuardGo(next)}`);
          },
        );
        const own = lab.wireGuardGoOf(next)[0]!;
        await eventually(
          'kg to apply on the new interface (/health 200)',
          async () => (await lab.health()) === 200,
          seconds(60),
        );
        process.kill(next.pid, 'SIGTERM');
        await exitedCleanly(next);
        await assertNoWireGuardGoLeft(lab, next, own);
      },
    );
  },
);
