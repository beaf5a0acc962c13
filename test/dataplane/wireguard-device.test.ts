import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import type { Exec } from '../../src/dataplane/exec.js';
import type { WireGuardConfig } from '../../src/dataplane/types.js';
import {
  createWireGuardDevice,
  type LinuxWireGuardDevice,
  type WireGuardDeviceOptions,
} from '../../src/dataplane/wireguard/device.js';
import type { PlanPeer } from '../../src/mesh/types.js';
import { generatePrivateKey, publicKeyOf } from '../../src/wireguard/keys.js';
import { createNamespace, skipNoNetns, type TestNamespace } from '../helpers/netns.js';

if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** An Exec that records every argv it runs. */
function recording(exec: Exec): Exec & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    run: (argv, opts) => {
      calls.push([...argv]);
      return exec.run(argv, opts);
    },
    start: (argv) => {
      calls.push([...argv]);
      return exec.start(argv);
    },
    wireGuardRunDir: exec.wireGuardRunDir,
  };
}

function peers(n: number, over: Partial<PlanPeer> = {}): PlanPeer[] {
  return Array.from({ length: n }, (_, i) => ({
    kind: 'segment' as const,
    names: [`node-${i}`],
    publicKey: publicKeyOf(generatePrivateKey()),
    endpoint: `172.30.${(i >> 8) & 255}.${i & 255}:51820`,
    allowedIPs: [`10.4.${(i >> 8) & 255}.${i & 255}/32`, `10.${42 + (i >> 8)}.${i & 255}.0/24`],
    persistentKeepalive: 0,
    presharedKey: null,
    ...over,
  }));
}

/** A namespace and a device in it; both go away after the test, wireguard-go first. */
function setup(
  t: { after(fn: () => Promise<void> | void): void },
  options: Omit<WireGuardDeviceOptions, 'name'> = {},
): { ns: TestNamespace; device: LinuxWireGuardDevice; exec: ReturnType<typeof recording> } {
  const ns = createNamespace('ktwd');
  const exec = recording(ns.exec);
  const device = createWireGuardDevice(exec, { name: 'kilo0', ...options });
  t.after(async () => {
    try {
      await device.destroy();
    } finally {
      ns.destroy();
    }
  });
  return { ns, device, exec };
}

test('wireguard device on Linux', { skip: skipNoNetns }, async (t) => {
  await t.test(
    'without kernel WireGuard, auto starts wireguard-go; destroy stops that PID and the link goes',
    async (t) => {
      const { ns, device } = setup(t);
      await device.ensure();
      const kernel = device.implementation === 'kernel';
      if (!kernel) {
        assert.equal(device.implementation, 'userspace');
        assert.ok(device.pid !== null && alive(device.pid));
      }
      assert.match(ns.sh('ip link show kilo0'), /kilo0/);
      await device.ensure(); // idempotent: no second wireguard-go
      const pid = device.pid;
      await device.destroy();
      if (pid !== null) assert.equal(alive(pid), false, 'wireguard-go we started is stopped');
      assert.throws(() => ns.sh('ip link show kilo0 2>/dev/null'));
    },
  );

  await t.test('a crashed wireguard-go is restarted and gets its config back', async (t) => {
    let restarted!: () => void;
    const restart = new Promise<void>((r) => (restarted = r));
    const { device: supervised } = setup(t, { implementation: 'userspace', onRestart: () => restarted() });
    await supervised.ensure();
    const config: WireGuardConfig = { privateKey: generatePrivateKey(), listenPort: 51820, peers: peers(3) };
    await supervised.configure(config);
    const first = supervised.pid!;
    process.kill(first, 'SIGKILL');
    // A guard against hanging forever, not a timing assertion.
    await Promise.race([
      restart,
      new Promise((_, reject) => setTimeout(() => reject(new Error('wireguard-go was not restarted')), 30_000).unref()),
    ]);
    assert.ok(supervised.pid !== null && supervised.pid !== first && alive(supervised.pid));
    const s = await supervised.read();
    assert.equal(s.publicKey, publicKeyOf(config.privateKey));
    assert.deepEqual(
      s.peers.map((p) => p.publicKey),
      config.peers.map((p) => p.publicKey).sort(),
    );
    assert.deepEqual(await supervised.configure(config), { added: [], removed: [], updated: [] });
  });

  await t.test('createInterface=false adopts an existing interface and never deletes it', async (t) => {
    const { ns, device: owner } = setup(t);
    const adopted = createWireGuardDevice(ns.exec, { name: 'kilo0', createInterface: false });
    await assert.rejects(adopted.ensure(), /kilo0 does not exist.*createInterface=false/);
    await owner.ensure();
    await adopted.ensure();
    assert.equal(adopted.implementation, 'adopted');
    assert.equal(adopted.pid, null);
    const config: WireGuardConfig = { privateKey: generatePrivateKey(), listenPort: 51821, peers: peers(2) };
    assert.equal((await adopted.configure(config)).added.length, 2);
    await adopted.destroy();
    assert.match(ns.sh('ip link show kilo0'), /kilo0/);
    assert.equal((await owner.read()).peers.length, 2);
  });

  await t.test('keys never reach an argv, a log line, Ops or an error; key files do not outlive a write', async (t) => {
    const log: string[] = [];
    const { device, exec } = setup(t, { log: (l) => log.push(l) });
    await device.ensure();
    const privateKey = generatePrivateKey();
    const psk = generatePrivateKey();
    const before = readdirSync(tmpdir()).filter((f) => f.startsWith('kilo-wg-'));
    await device.configure({ privateKey, listenPort: 51820, fwmark: 0x1107, peers: peers(2, { presharedKey: psk }) });
    const bad = peers(1, { presharedKey: psk, allowedIPs: ['10.4.0.0/40'] });
    const err = await device.configure({ privateKey: generatePrivateKey(), listenPort: 51820, peers: bad }).then(
      () => assert.fail('an invalid allowed IP must fail'),
      (e: Error) => e,
    );
    assert.match(err.message, /wg set kilo0/);
    const texts = [
      JSON.stringify(exec.calls),
      log.join('\n'),
      JSON.stringify(device.lastOps),
      err.message,
      String(err.stack),
    ];
    assert.ok(device.lastOps.writes > 0);
    for (const text of texts) {
      assert.ok(!text.includes(privateKey), 'private key leaked');
      assert.ok(!text.includes(psk), 'preshared key leaked');
    }
    assert.deepEqual(
      readdirSync(tmpdir()).filter((f) => f.startsWith('kilo-wg-')),
      before,
    );
  });

  await t.test(
    'a DNS endpoint is resolved before comparing: unchanged means no write; unresolvable keeps the current one',
    async (t) => {
      const log: string[] = [];
      let address = '192.0.2.9';
      const { device } = setup(t, {
        log: (l) => log.push(l),
        resolve: async (host) => {
          if (host !== 'node-b.example') throw new Error(`no such host ${host}`);
          return address;
        },
      });
      await device.ensure();
      const [p] = peers(1, { endpoint: 'node-b.example:51820' }) as [PlanPeer];
      const config: WireGuardConfig = { privateKey: generatePrivateKey(), listenPort: 51820, peers: [p] };
      await device.configure(config);
      assert.equal((await device.read()).peers[0]!.endpoint, '192.0.2.9:51820');
      assert.deepEqual(await device.configure(config), { added: [], removed: [], updated: [] });
      address = '192.0.2.10';
      assert.deepEqual(await device.configure(config), { added: [], removed: [], updated: [p.publicKey] });
      assert.deepEqual(await device.configure({ ...config, peers: [{ ...p, endpoint: 'gone.example:51820' }] }), {
        added: [],
        removed: [],
        updated: [],
      });
      assert.equal((await device.read()).peers[0]!.endpoint, '192.0.2.10:51820');
      assert.ok(log.some((l) => /cannot resolve endpoint gone\.example:51820/.test(l)));
    },
  );

  await t.test('a read kept for the next configure is its only read; a read without keep is not', async (t) => {
    const { device, exec } = setup(t, { socket: false });
    await device.ensure();
    const config: WireGuardConfig = { privateKey: generatePrivateKey(), listenPort: 51820, peers: peers(3) };
    await device.configure(config);
    const dumps = () => exec.calls.filter((c) => c[0] === 'wg' && c[1] === 'show').length;
    const before = dumps();
    const dump = await device.dump();
    assert.equal(dump.state.peers.length, 3);
    const changed = { ...config, peers: config.peers.slice(1) };
    assert.equal((await device.configure(changed, { current: dump })).removed.length, 1);
    assert.equal(dumps(), before + 1, 'configure read the device again after a kept read');
    // Kept for one configure only: the next one reads what is there now.
    await device.configure(config);
    assert.equal(dumps(), before + 2);
    await device.read();
    await device.configure(config);
    assert.equal(dumps(), before + 4, "a read without keep must not stand in for configure's");
    assert.equal(device.lastOps.writes, 0);
  });

  await t.test('1,000 peers in one wg set; an unchanged reconcile writes nothing', async (t) => {
    const { device, exec } = setup(t, { socket: false });
    await device.ensure();
    const config: WireGuardConfig = {
      privateKey: generatePrivateKey(),
      listenPort: 51820,
      peers: peers(1000, { persistentKeepalive: 25 }),
    };
    const wgSets = () => exec.calls.filter((c) => c[0] === 'wg' && c[1] === 'set').length;
    let t0 = performance.now();
    const changes = await device.configure(config);
    const full = performance.now() - t0;
    assert.equal(changes.added.length, 1000);
    assert.equal(wgSets(), 1);
    assert.equal((await device.read()).peers.length, 1000);
    t0 = performance.now();
    assert.deepEqual(await device.configure(config), { added: [], removed: [], updated: [] });
    const unchanged = performance.now() - t0;
    assert.equal(wgSets(), 1);
    assert.equal(device.lastOps.writes, 0);
    const changed = { ...config, peers: [...config.peers.slice(10), ...peers(10)] };
    t0 = performance.now();
    const delta = await device.configure(changed);
    const small = performance.now() - t0;
    assert.equal(delta.added.length + delta.removed.length, 20);
    assert.equal(wgSets(), 2);
    t.diagnostic(
      `1000 peers: configure ${full.toFixed(0)} ms, unchanged ${unchanged.toFixed(0)} ms, 10 out/10 in ${small.toFixed(0)} ms`,
    );
  });
});
