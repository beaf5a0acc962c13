/**
 * Services, Endpoints and EndpointSlices in the lab's API server, driven by the real kubectl as
 * an operator (or Kilo's docs/multi-cluster-services.md) drives kube-apiserver: clusterIPs
 * allocated from the service range, a given one kept, refused out of range or taken, immutable,
 * freed on delete; `kubectl apply` of a changed Service (the strategic merge patch of its ports);
 * Endpoints and EndpointSlices checked field by field; list by label and watch.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TestApiServer, waitUntil } from '../../packages/lab/src/apiserver.js';
import { skipUnless } from '../helpers/requirements.js';

const run = promisify(execFile);
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

const service = (name: string, ports: string[], clusterIP?: string) =>
  [
    'apiVersion: v1',
    'kind: Service',
    `metadata: {name: ${name}}`,
    'spec:',
    ...(clusterIP ? [`  clusterIP: ${clusterIP}`] : []),
    '  ports:',
    ...ports.map((p) => `    - ${p}`),
    '',
  ].join('\n');

test(
  'kubectl: Services, Endpoints and EndpointSlices as kube-apiserver serves them',
  { skip: skipUnless(hasKubectl, 'needs kubectl (Debian: kubernetes-client)') },
  async (t) => {
    const api = await TestApiServer.start({ serviceCidr: '10.43.0.0/16' });
    const dir = mkdtempSync(join(tmpdir(), 'kilo-kubectl-svc-'));
    t.after(async () => {
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    });
    writeFileSync(join(dir, 'kubeconfig'), api.kubeconfigYaml());
    const env = { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir };
    const kubectl = async (args: string[], input?: string): Promise<string> => {
      const child = run('kubectl', args, { env, timeout: 60_000 });
      if (input !== undefined) child.child.stdin!.end(input);
      return (await child).stdout;
    };
    /** kubectl's stderr for a command that must fail. */
    const refused = async (args: string[], input?: string): Promise<string> => {
      try {
        await kubectl(args, input);
      } catch (e) {
        return (e as { stderr: string }).stderr;
      }
      assert.fail(`kubectl ${args.join(' ')} succeeded`);
    };
    const clusterIP = (name: string) => kubectl(['get', 'service', name, '-o', 'jsonpath={.spec.clusterIP}']);

    // Kilo's mirrored Service, as its doc writes it: no selector, one port.
    assert.match(
      await kubectl(['apply', '-f', '-'], service('important-service', ['port: 80'])),
      /service\/important-service created/,
    );
    const first = await clusterIP('important-service');
    assert.equal(first, '10.43.0.1', 'the first free address of the service range');
    const stored = api.get(
      api.types.find((x) => x.name === 'services')!,
      'default',
      'important-service',
    )!;
    assert.deepEqual((stored as { spec: unknown }).spec, {
      clusterIP: '10.43.0.1',
      clusterIPs: ['10.43.0.1'],
      internalTrafficPolicy: 'Cluster',
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }],
      sessionAffinity: 'None',
      type: 'ClusterIP',
    });
    assert.match(await kubectl(['get', 'svc']), /important-service/);

    // Its Endpoints, as the doc writes them: the ClusterIP of the service in the other cluster.
    const endpoints = (ip: string) =>
      [
        'apiVersion: v1',
        'kind: Endpoints',
        'metadata:',
        '    name: important-service',
        'subsets:',
        '  - addresses:',
        `      - ip: ${ip}`,
        '    ports:',
        '      - port: 80',
        '',
      ].join('\n');
    assert.match(await kubectl(['apply', '-f', '-'], endpoints('10.53.0.7')), /endpoints\/important-service created/);
    assert.equal(
      await kubectl(['get', 'endpoints', 'important-service', '-o', 'jsonpath={.subsets[0].addresses[0].ip}']),
      '10.53.0.7',
    );
    assert.match(
      await refused(['apply', '-f', '-'], endpoints('127.0.0.1')),
      /subsets\[0\]\.addresses\[0\]\.ip: Invalid value: "127\.0\.0\.1": may not be in the loopback range/,
    );

    // kubectl apply of a changed Service: a second port (names now required), then the first removed.
    assert.match(
      await refused(['apply', '-f', '-'], service('important-service', ['port: 80', 'port: 81'])),
      /spec\.ports\[1\]\.name: Required value/,
    );
    await kubectl(
      ['apply', '-f', '-'],
      service('important-service', ['{name: http, port: 80}', '{name: alt, port: 81, protocol: UDP}']),
    );
    assert.equal(await kubectl(['get', 'svc', 'important-service', '-o', 'jsonpath={.spec.ports[*].port}']), '80 81');
    await kubectl(['apply', '-f', '-'], service('important-service', ['{name: alt, port: 81, protocol: UDP}']));
    assert.equal(await kubectl(['get', 'svc', 'important-service', '-o', 'jsonpath={.spec.ports[*].port}']), '81');
    assert.equal(await clusterIP('important-service'), first, 'an update that leaves the clusterIP out keeps it');
    assert.match(
      await refused(['apply', '-f', '-'], service('important-service', ['{name: alt, port: 81}'], '10.43.0.9')),
      /spec\.clusterIPs\[0\]: Invalid value: "10\.43\.0\.9": may not change once set/,
    );

    // A clusterIP asked for: kept when in range and free, refused otherwise.
    await kubectl(['apply', '-f', '-'], service('fixed', ['port: 443'], '10.43.0.20'));
    assert.equal(await clusterIP('fixed'), '10.43.0.20');
    assert.match(
      await refused(['apply', '-f', '-'], service('taken', ['port: 443'], '10.43.0.20')),
      /failed to allocate IP 10\.43\.0\.20: provided IP is already allocated/,
    );
    assert.match(
      await refused(['apply', '-f', '-'], service('outside', ['port: 443'], '10.53.0.20')),
      /the provided IP \(10\.53\.0\.20\) is not in the valid range\. The range of valid IPs is 10\.43\.0\.0\/16/,
    );
    assert.match(await refused(['apply', '-f', '-'], service('noports', [])), /spec\.ports: Required value/);
    assert.match(
      await refused(['apply', '-f', '-'], service('badport', ['port: 70000'])),
      /spec\.ports\[0\]\.port: Invalid value: 70000: must be between 1 and 65535, inclusive/,
    );
    await kubectl(['apply', '-f', '-'], service('next', ['port: 443']));
    assert.equal(await clusterIP('next'), '10.43.0.2');
    await kubectl(['delete', 'service', 'fixed']);
    await kubectl(['apply', '-f', '-'], service('taken', ['port: 443'], '10.43.0.20'));
    assert.equal(await clusterIP('taken'), '10.43.0.20', 'a deleted Service frees its clusterIP');
    await kubectl(['apply', '-f', '-'], service('headless', ['port: 53'], 'None'));
    assert.equal(await clusterIP('headless'), 'None');

    // EndpointSlices: watched while written, listed by their Service's label, checked.
    const watch = spawn('kubectl', ['get', 'endpointslices', '-w', '-o', 'name'], { env });
    t.after(() => watch.kill());
    let watched = '';
    watch.stdout.on('data', (d: Buffer) => (watched += d.toString()));
    const slice = (name: string, address: string, addressType = 'IPv4') =>
      [
        'apiVersion: discovery.k8s.io/v1',
        'kind: EndpointSlice',
        'metadata:',
        `  name: ${name}`,
        '  labels: {kubernetes.io/service-name: important-service}',
        `addressType: ${addressType}`,
        'endpoints:',
        `  - addresses: ["${address}"]`,
        'ports:',
        '  - {name: alt, port: 81, protocol: UDP}',
        '',
      ].join('\n');
    assert.match(
      await kubectl(['apply', '-f', '-'], slice('important-service-1', '10.53.0.7')),
      /endpointslice\.discovery\.k8s\.io\/important-service-1 created/,
    );
    assert.equal(
      await kubectl([
        'get',
        'endpointslices',
        '-l',
        'kubernetes.io/service-name=important-service',
        '-o',
        'jsonpath={.items[*].endpoints[*].addresses[*]}',
      ]),
      '10.53.0.7',
    );
    await waitUntil('kubectl get -w shows the slice', () => watched.includes('important-service-1'), 30_000);
    assert.match(
      await refused(['apply', '-f', '-'], slice('v6', '10.53.0.7', 'IPv6')),
      /endpoints\[0\]\.addresses\[0\]: Invalid value: "10\.53\.0\.7": must be a valid IPv6 address/,
    );
    assert.match(
      await refused(['apply', '-f', '-'], slice('important-service-1', '2001:db8::1', 'IPv6')),
      /addressType: Invalid value: "IPv6": field is immutable/,
    );
    assert.match(
      await refused(['apply', '-f', '-'], slice('nothing', '10.53.0.7', 'Other')),
      /addressType: Unsupported value: "Other": supported values: "FQDN", "IPv4", "IPv6"/,
    );
    await kubectl(['apply', '-f', '-'], slice('important-service-1', '10.53.0.8'));
    assert.equal(
      await kubectl(['get', 'endpointslice', 'important-service-1', '-o', 'jsonpath={.endpoints[0].addresses[0]}']),
      '10.53.0.8',
    );
    await kubectl(['delete', 'endpointslice', 'important-service-1']);
    assert.equal(await kubectl(['get', 'endpointslices', '-o', 'name']), '');
  },
);
