import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecError, readingAhead, type Exec } from '../../src/dataplane/exec.js';
import { LinuxHost } from '../../src/dataplane/host/linux.js';
import { LinuxLinks } from '../../src/dataplane/links.js';
import { IprouteRoutes } from '../../src/dataplane/routes/linux.js';
import { defaultOwnership } from '../../src/dataplane/routes/state.js';
import { createWireGuardDevice } from '../../src/dataplane/wireguard/device.js';

/** An Exec over a counter: `read` prints how many writes ran before it; `fail` exits 1. */
function counting(): Exec & { runs: string[] } {
  let writes = 0;
  const runs: string[] = [];
  return {
    runs,
    wireGuardRunDir: '/nonexistent',
    run: (argv) => {
      runs.push(argv.join(' '));
      if (argv[0] === 'write') writes++;
      if (argv[0] === 'fail') return Promise.reject(new ExecError(argv, 1, '', 'no'));
      return Promise.resolve({ stdout: `${argv.join(' ')} after ${writes}`, stderr: '' });
    },
    start: () => assert.fail('nothing is started'),
  };
}

test('a read taken ahead serves the next run of the same command, once, failure included', async () => {
  const inner = counting();
  const exec = readingAhead(inner);
  exec.readAhead!(['read', 'a']);
  exec.readAhead!(['fail']);
  assert.deepEqual(inner.runs, ['read a', 'fail'], 'started at once');
  // A read-only command in between leaves it alone.
  await exec.run(['version'], { readOnly: true });
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 0');
  await assert.rejects(exec.run(['fail']), ExecError);
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 0');
  assert.deepEqual(inner.runs, ['read a', 'fail', 'version', 'read a']);
});

test('any other command (it may write) drops what was read ahead: the reads after it run anew', async () => {
  const inner = counting();
  const exec = readingAhead(inner);
  exec.readAhead!(['read', 'a']);
  exec.readAhead!(['read', 'b']);
  await exec.run(['write']);
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 1');
  exec.readAhead!(['read', 'b']);
  // So does a command with input (a batch).
  await exec.run(['write'], { input: 'x' });
  assert.equal((await exec.run(['read', 'b'])).stdout, 'read b after 2');
  // And drop(): a write it does not see (another process's) comes after.
  exec.readAhead!(['read', 'a']);
  exec.drop();
  await inner.run(['write']);
  assert.equal((await exec.run(['read', 'a'])).stdout, 'read a after 3');
});

test('a command that keeps routes (a link added, the firewall), or a started process, keeps the reads of routes, and only those', async () => {
  const inner = counting();
  const started: string[] = [];
  const exec = readingAhead({ ...inner, start: (argv) => (started.push(argv.join(' ')), null as never) });
  exec.readAhead!(['read', 'routes'], { ofRoutes: true });
  exec.readAhead!(['read', 'link']);
  await exec.run(['write', 'link add'], { keepsRoutes: true });
  exec.start(['wireguard-go']);
  assert.equal((await exec.run(['read', 'routes'])).stdout, 'read routes after 0', 'kept');
  assert.equal((await exec.run(['read', 'link'])).stdout, 'read link after 1', 'dropped: the link changed');
  exec.readAhead!(['read', 'routes'], { ofRoutes: true });
  await exec.run(['write', 'address del']);
  assert.equal((await exec.run(['read', 'routes'])).stdout, 'read routes after 2', 'any other write drops it');
  assert.deepEqual(started, ['wireguard-go']);
});

test('the links batch keeps routes when it removes none: address added, up, an MTU IPv6 runs at', async () => {
  const batches = async (current: { flags: string[]; mtu: number; addr_info: unknown[] }, mtu: number) => {
    const seen: (boolean | undefined)[] = [];
    const exec: Exec = {
      wireGuardRunDir: '/nonexistent',
      run: (argv, opts) => {
        if (argv.includes('-batch')) seen.push(opts?.keepsRoutes);
        return Promise.resolve({ stdout: JSON.stringify([{ ifname: 'kilo0', ...current }]), stderr: '' });
      },
      start: () => assert.fail('nothing is started'),
    };
    await new LinuxLinks(exec).reconcile('kilo0', { address: '10.4.0.1/16', up: true, mtu });
    return seen;
  };
  const fresh = { flags: [], mtu: 1500, addr_info: [] };
  assert.deepEqual(await batches(fresh, 1420), [true]);
  assert.deepEqual(await batches(fresh, 1200), [false], 'below 1280 the kernel drops IPv6 routes');
  const other = { flags: ['UP'], mtu: 1420, addr_info: [{ family: 'inet', local: '10.4.0.9', prefixlen: 16 }] };
  assert.deepEqual(await batches(other, 1420), [false], 'an address taken away');
  assert.deepEqual(await batches({ ...fresh, flags: ['UP'] }, 1420), [true]);
});

test("the machine's own reads (host, WireGuard link and dump, routes) drop nothing read ahead; its writes do", async () => {
  // Answers each read as an empty machine would: iproute2's JSON, wg's dump of a fresh device.
  const runs: { argv: string; readOnly: boolean }[] = [];
  const inner: Exec = {
    wireGuardRunDir: '/nonexistent',
    run: (argv, opts) => {
      runs.push({ argv: argv.join(' '), readOnly: opts?.readOnly === true });
      const stdout =
        argv[0] === 'wg' ? `${'A'.repeat(43)}=\t${'B'.repeat(43)}=\t51820\toff\n` : argv[0] === 'cat' ? '1\n' : '[]';
      return Promise.resolve({ stdout, stderr: '' });
    },
    start: () => assert.fail('nothing is started'),
  };
  const exec = readingAhead(inner);
  const routesArgv = ['ip', '-N', '-j', '-4', 'route', 'show', 'table', 'all', 'proto', '107'];
  exec.readAhead!(routesArgv, { ofRoutes: true });
  exec.readAhead!(['iptables-save']);
  runs.length = 0;
  const host = new LinuxHost(exec);
  await host.addresses();
  await host.link('eth0');
  await host.defaultRoute();
  await host.ipv4Forwarding();
  await host.ping('192.0.2.1');
  await host.wouldForward('192.0.2.1', '192.0.2.2', 'eth0');
  const device = createWireGuardDevice(exec, { name: 'kilo0', createInterface: false, socket: false });
  await device.ensure();
  await device.read();
  await new IprouteRoutes(exec).read(defaultOwnership);
  assert.ok(exec.peekAhead!(['iptables-save']), 'reads drop nothing');
  assert.deepEqual(
    runs.filter((r) => !r.readOnly).map((r) => r.argv),
    [],
    'every read says it is one',
  );
  await host.bringUp('eth0');
  assert.equal(exec.peekAhead!(['iptables-save']), undefined, 'a write drops what was read ahead');
});
