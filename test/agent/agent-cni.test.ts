/**
 * --cni: the host-local pod subnet in the CNI conflist follows spec.podCIDR, written only when it
 * differs and never half-written; a missing file is left alone.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { cniSubnetOf, syncCNIConfig, withCNISubnet } from '../../src/agent/cni.js';
import { Cidr } from '../../src/net/cidr.js';
import { eventually, settled, startHarness } from './agent-harness.js';

/** Kilo's own conflist (manifests/kilo-*.yaml, 10-kilo.conflist) with the subnet left empty. */
const kiloConflist = {
  cniVersion: '0.3.1',
  name: 'kilo',
  plugins: [
    {
      name: 'kubernetes',
      type: 'bridge',
      bridge: 'kube-bridge',
      isDefaultGateway: true,
      forceAddress: true,
      mtu: 1420,
      ipam: { type: 'host-local' },
    },
    { type: 'portmap', snat: true, capabilities: { portMappings: true } },
  ],
};

function tempFile(t: TestContext, content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-cni-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, '10-kilo.conflist');
  if (content !== undefined) writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const read = (file: string) =>
  JSON.parse(readFileSync(file, 'utf8')) as typeof kiloConflist & { plugins: { ipam?: Record<string, unknown> }[] };

describe('CNI config', () => {
  test('sets ranges[0][0].subnet on the IPAM plugin, keeps everything else', async (t) => {
    const file = tempFile(t, kiloConflist);
    const r = await syncCNIConfig(file, Cidr.parse('10.42.3.0/24'));
    assert.deepEqual(r, { status: 'updated', from: null, to: '10.42.3.0/24' });
    const conf = read(file);
    assert.deepEqual(conf.plugins[0]!.ipam, { type: 'host-local', ranges: [[{ subnet: '10.42.3.0/24' }]] });
    assert.deepEqual(conf.plugins[1], kiloConflist.plugins[1]);
    assert.equal(conf.plugins[0]!['mtu' as never], 1420);
    assert.equal((statSync(file).mode & 0o777).toString(8), '644');
    assert.equal(cniSubnetOf(conf), '10.42.3.0/24');
  });

  test('writes nothing when the subnet already matches (host bits ignored)', async (t) => {
    const file = tempFile(t, withCNISubnet(kiloConflist, '10.42.3.0/24', 'x'));
    const before = statSync(file);
    assert.deepEqual(await syncCNIConfig(file, Cidr.parse('10.42.3.7/24')), { status: 'unchanged' });
    const after = statSync(file);
    assert.equal(after.ino, before.ino, 'the file was replaced');
    assert.equal(after.mtimeMs, before.mtimeMs);
  });

  test('replaces a different subnet and the legacy single-range keys, through a rename', async (t) => {
    const legacy = structuredClone(kiloConflist) as unknown as { plugins: { ipam?: Record<string, unknown> }[] };
    legacy.plugins[0]!.ipam = {
      type: 'host-local',
      subnet: '10.42.9.0/24',
      rangeStart: '10.42.9.10',
      gateway: '10.42.9.1',
    };
    const file = tempFile(t, legacy);
    const inode = statSync(file).ino;
    assert.deepEqual(await syncCNIConfig(file, Cidr.parse('10.42.3.0/24')), {
      status: 'updated',
      from: '10.42.9.0/24',
      to: '10.42.3.0/24',
    });
    assert.deepEqual(read(file).plugins[0]!.ipam, { type: 'host-local', ranges: [[{ subnet: '10.42.3.0/24' }]] });
    assert.notEqual(statSync(file).ino, inode, 'written in place, not through a rename');
    assert.deepEqual(readdirSync(join(file, '..')), ['10-kilo.conflist'], 'a temporary file was left behind');
  });

  test('a missing file is left alone; a broken one is an error naming file and field', async (t) => {
    const missing = tempFile(t, undefined);
    assert.deepEqual(await syncCNIConfig(missing, Cidr.parse('10.42.3.0/24')), { status: 'absent' });
    assert.throws(() => statSync(missing));
    const notJSON = tempFile(t, '{"plugins": [');
    await assert.rejects(
      syncCNIConfig(notJSON, Cidr.parse('10.42.3.0/24')),
      new RegExp(`^Error: CNI config ${notJSON}: not JSON`),
    );
    const noIpam = tempFile(t, { plugins: [{ type: 'portmap' }] });
    await assert.rejects(syncCNIConfig(noIpam, Cidr.parse('10.42.3.0/24')), /no plugin has an "ipam" section/);
    const badPlugins = tempFile(t, { plugins: 'bridge' });
    await assert.rejects(syncCNIConfig(badPlugins, Cidr.parse('10.42.3.0/24')), /field "plugins": not a list/);
  });

  test("the agent keeps the conflist on the local node's podCIDR as it changes", async (t) => {
    const file = tempFile(t, kiloConflist);
    const h = await startHarness(t, { agent: { cniPath: file } });
    await settled(h);
    assert.equal(cniSubnetOf(read(file)), '10.42.0.0/24');
    h.api.patchNode('a', { spec: { podCIDR: '10.42.8.0/24' } });
    await eventually('the conflist follows', () => cniSubnetOf(read(file)) === '10.42.8.0/24');
    assert.equal(h.agent.status.lastReconcileOk, true);
  });

  test('the agent logs a missing conflist once and stays healthy', async (t) => {
    const file = tempFile(t, undefined);
    const h = await startHarness(t, { agent: { cniPath: file } });
    await settled(h);
    for (let i = 0; i < 3; i++) await h.agent.reconcileOnce();
    assert.equal(h.log.entries.filter((e) => /no CNI config file/.test(e.msg)).length, 1);
    assert.equal(h.agent.status.lastReconcileOk, true);
  });
});
