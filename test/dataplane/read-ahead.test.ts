import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecError, readingAhead, type Exec } from '../../src/dataplane/exec.js';
import { LinuxLinks } from '../../src/dataplane/links.js';

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
