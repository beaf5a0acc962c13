/**
 * The kubelet rules test:image relies on, checked without an image: `$(VAR)` expansion, the
 * entrypoint/command/args rule, the environment's order and sources, and hostPath types.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  containerArgv,
  containerEnv,
  containerMounts,
  expand,
  serviceAccountDir,
  type ImageConfig,
  type PodContext,
} from './kubelet.js';

const img: ImageConfig = {
  entrypoint: ['/app/bin/kg'],
  cmd: ['--help'],
  env: ['PATH=/usr/local/bin:/usr/bin', 'NODE_ENV=production'],
  workingDir: '/app',
  labels: {},
};

function context(dir: string): PodContext {
  return {
    image: 'i',
    podName: 'kilo-abc',
    namespace: 'kube-system',
    nodeName: 'node-a',
    nodeIP: '192.168.1.11',
    netns: 'ns',
    hostRoot: join(dir, 'host'),
    podDir: join(dir, 'pod'),
    configMaps: new Map([['kilo', { conf: '{"a":1}' }]]),
    serviceAccountToken: 'tok',
    apiHost: '10.0.0.1',
    apiPort: 443,
  };
}

test('$(VAR) expands defined names only; $$ is a $', () => {
  const env = new Map([['NODE_NAME', 'node-a']]);
  assert.equal(expand('--hostname=$(NODE_NAME)', env), '--hostname=node-a');
  assert.equal(expand('$(UNSET) $$(NODE_NAME) $NODE_NAME', env), '$(UNSET) $(NODE_NAME) $NODE_NAME');
});

test('command replaces the entrypoint, args the Cmd', () => {
  const env = new Map<string, string>();
  assert.deepEqual(containerArgv({}, img, env), ['/app/bin/kg', '--help']);
  assert.deepEqual(containerArgv({ args: ['--x'] }, img, env), ['/app/bin/kg', '--x']);
  assert.deepEqual(containerArgv({ command: ['/bin/sh'] }, img, env), ['/bin/sh']);
  assert.deepEqual(containerArgv({ command: ['/bin/sh'], args: ['-c', 'true'] }, img, env), ['/bin/sh', '-c', 'true']);
});

test("the environment: the image's, the Service's, then the container's own (fieldRef, configMapKeyRef)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-'));
  try {
    const c = {
      env: [
        { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        { name: 'CONF', valueFrom: { configMapKeyRef: { name: 'kilo', key: 'conf' } } },
        { name: 'NODE_ENV', value: 'at-$(NODE_NAME)' },
      ],
    };
    const env = containerEnv(c, { hostNetwork: true }, context(dir), img);
    assert.equal(env.get('PATH'), '/usr/local/bin:/usr/bin');
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.0.0.1');
    assert.equal(env.get('NODE_NAME'), 'node-a');
    assert.equal(env.get('CONF'), '{"a":1}');
    assert.equal(env.get('NODE_ENV'), 'at-node-a');
    const missing = { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'kilo', key: 'nope' } } }] };
    assert.throws(() => containerEnv(missing, {}, context(dir), img), /ConfigMap kilo has no key nope/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('hostPath volumes are checked and created per their type; the ServiceAccount token is mounted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-'));
  try {
    const ctx = context(dir);
    const pod = {
      volumes: [
        { name: 'keys', hostPath: { path: '/var/lib/kilo', type: 'DirectoryOrCreate' } },
        { name: 'lock', hostPath: { path: '/run/xtables.lock', type: 'FileOrCreate' } },
      ],
    };
    const c = {
      volumeMounts: [
        { name: 'keys', mountPath: '/var/lib/kilo' },
        { name: 'lock', mountPath: '/run/xtables.lock' },
      ],
    };
    const mounts = containerMounts(c, pod, ctx);
    assert.ok(statSync(join(ctx.hostRoot, 'var/lib/kilo')).isDirectory());
    assert.ok(statSync(join(ctx.hostRoot, 'run/xtables.lock')).isFile());
    assert.deepEqual(
      mounts.map((m) => [m.target, m.readOnly]),
      [
        ['/var/lib/kilo', false],
        ['/run/xtables.lock', false],
        [serviceAccountDir, true],
      ],
    );
    assert.ok(existsSync(join(mounts[2]!.source, 'token')));
    for (const type of ['File', 'Directory', 'CharDevice']) {
      const bad = { volumes: [{ name: 'v', hostPath: { path: '/nothing/here', type } }] };
      assert.throws(
        () => containerMounts({ volumeMounts: [{ name: 'v', mountPath: '/x' }] }, bad, ctx),
        new RegExp(`hostPath /nothing/here \\(type ${type}\\)`),
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
