/**
 * A detached device (its agent is stopping) starts no wireguard-go: one that exits is not restarted,
 * a restart waiting out its delay is cancelled, and one already starting is stopped again. Real
 * wireguard-go in a namespace of the test's own; whatever is left in it is killed by PID.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { test, type TestContext } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import { createWireGuardDevice, type LinuxWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import { generatePrivateKey } from '../../src/wireguard/keys.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { commandOf, namespacePids, until } from '../e2e/dataplane-lab.js';

if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

interface Subject {
  device: LinuxWireGuardDevice;
  log: string[];
  /** wireguard-go processes in the namespace (all of them the device's: the namespace is ours). */
  wireGuardGo(): number[];
  /** Called with each process the device starts, right after it is spawned. */
  onStart: (child: ChildProcess) => void;
}

/** A userspace device in a fresh namespace, started and configured. */
async function started(t: TestContext): Promise<Subject> {
  const ns = createNamespace('ktdt');
  const log: string[] = [];
  const subject: Subject = {
    device: null as unknown as LinuxWireGuardDevice,
    log,
    wireGuardGo: () => namespacePids(ns.name).filter((pid) => /wireguard-go/.test(commandOf(pid))),
    onStart: () => {},
  };
  const exec: Exec = {
    ...ns.exec,
    start: (argv, opts) => {
      const child = ns.exec.start(argv, opts);
      subject.onStart(child);
      return child;
    },
  };
  const device = createWireGuardDevice(exec, {
    name: 'kilo0',
    implementation: 'userspace',
    log: (line) => log.push(line),
  });
  subject.device = device;
  t.after(async () => {
    try {
      await device.destroy();
    } finally {
      for (const pid of namespacePids(ns.name)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      ns.destroy();
    }
  });
  await device.ensure();
  await device.configure({ privateKey: generatePrivateKey(), listenPort: 51820, peers: [] });
  return subject;
}

const said = (s: Subject, pattern: RegExp) => s.log.some((l) => pattern.test(l));

test('a detached wireguard device starts no wireguard-go', { skip: skipNoNetns }, async (t) => {
  await t.test('detached, a wireguard-go that exits is not restarted', async (t) => {
    const s = await started(t);
    const pid = s.device.pid!;
    await s.device.detach();
    process.kill(pid, 'SIGTERM');
    await until('the exit to be seen', () => said(s, /exited .*not restarted: stopping/), 30_000);
    assert.equal(s.device.pid, null);
    assert.deepEqual(s.wireGuardGo(), []);
    assert.ok(!said(s, /restarting in/), s.log.join('\n'));
  });

  await t.test('a restart waiting out its delay is cancelled by detach', async (t) => {
    const s = await started(t);
    const first = s.device.pid!;
    process.kill(first, 'SIGKILL');
    await until('the restart to be scheduled', () => said(s, /restarting in \d+ ms/), 30_000);
    await s.device.detach();
    assert.ok(said(s, /restart of wireguard-go cancelled: stopping/), s.log.join('\n'));
    assert.equal(s.device.pid, null);
    assert.deepEqual(s.wireGuardGo(), []);
    // The interface went with wireguard-go; a pass still running must not bring it back.
    await assert.rejects(s.device.ensure(), /kilo0 does not exist and is not created: .*detached/);
    assert.deepEqual(s.wireGuardGo(), []);
  });

  await t.test('a restart under way when detach comes is stopped again', async (t) => {
    const s = await started(t);
    const first = s.device.pid!;
    const detaching: Promise<void>[] = [];
    // Detach as soon as the restart has spawned wireguard-go, while it waits for its socket.
    s.onStart = () => {
      setImmediate(() => detaching.push(s.device.detach()));
    };
    process.kill(first, 'SIGKILL');
    await until('the restart to start wireguard-go', () => detaching.length > 0, 30_000);
    await detaching[0];
    assert.ok(said(s, /stopped the wireguard-go just restarted: stopping/), s.log.join('\n'));
    assert.equal(s.device.pid, null);
    assert.deepEqual(s.wireGuardGo(), []);
  });
});
