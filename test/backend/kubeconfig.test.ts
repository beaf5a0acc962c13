import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { kubeConfigFrom } from '../../src/backend/kubernetes/config.js';
import { UsageError } from '../../src/model/errors.js';

const kubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "${server}"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`;

function withFile(text: string, fn: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'kilo-kubeconfig-'));
  try {
    const path = join(dir, 'config');
    writeFileSync(path, text);
    fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('kubeConfigFrom', () => {
  test('--master alone points at that server; plain http needs no TLS verification', () => {
    const kc = kubeConfigFrom({ master: 'http://127.0.0.1:8080' });
    assert.equal(kc.getCurrentCluster()?.server, 'http://127.0.0.1:8080');
    assert.equal(kc.getCurrentCluster()?.skipTLSVerify, true);
  });

  test('--master over https keeps TLS verification', () => {
    const kc = kubeConfigFrom({ master: 'https://10.0.0.1:6443' });
    assert.equal(kc.getCurrentCluster()?.skipTLSVerify, false);
  });

  test('--kubeconfig reads the file; --master overrides its server and keeps its user', () => {
    withFile(kubeconfig('https://k8s.example.com:6443'), (path) => {
      assert.equal(kubeConfigFrom({ kubeconfig: path }).getCurrentCluster()?.server, 'https://k8s.example.com:6443');
      const both = kubeConfigFrom({ kubeconfig: path, master: 'https://10.9.9.9:6443' });
      assert.equal(both.getCurrentCluster()?.server, 'https://10.9.9.9:6443');
      assert.equal(both.getCurrentUser()?.token, 't');
    });
  });

  test('a missing kubeconfig, a bad --master and no cluster at all are usage errors naming the value', () => {
    assert.throws(
      () => kubeConfigFrom({ kubeconfig: '/nonexistent/kubeconfig' }),
      (e: Error) => e instanceof UsageError && e.message.includes('/nonexistent/kubeconfig'),
    );
    assert.throws(
      () => kubeConfigFrom({ master: 'not a url' }),
      (e: Error) => e instanceof UsageError && e.message.includes('not a url'),
    );
    const saved = process.env['KUBERNETES_SERVICE_HOST'];
    delete process.env['KUBERNETES_SERVICE_HOST'];
    try {
      assert.throws(
        () => kubeConfigFrom({}),
        (e: Error) => e instanceof UsageError && e.message.includes('--kubeconfig'),
      );
    } finally {
      if (saved !== undefined) process.env['KUBERNETES_SERVICE_HOST'] = saved;
    }
  });
});
