/**
 * Every document under manifests/ against the Kubernetes API's own schemas, as `kubectl apply`
 * would check it against a real API server: the types, enums, formats and required fields of the
 * official OpenAPI schemas (kubernetes-models' generated validators), and no field the API does not
 * know (kube-apiserver's strict field validation), found as what the Kubernetes client's generated
 * models drop on a round trip. No schema is written here.
 *
 * kubectl cannot do this offline: `apply`/`create --dry-run=client` asks the server's discovery
 * for the resource mapping before anything else (checked with kubectl 1.20 and 1.32).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { parseAllDocuments } from 'yaml';

const dir = join(import.meta.dirname, '..', 'manifests');

interface Doc {
  file: string;
  object: Record<string, unknown> & { apiVersion: string; kind: string; metadata?: { name?: string } };
}

/** webhook.yaml's caBundle placeholder, which its header says to replace before applying. */
const caPlaceholder = 'REPLACE_WITH_BASE64_CA_BUNDLE';
const aCaBundle = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');

function load(asApplied: boolean): Doc[] {
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .flatMap((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      return parseAllDocuments(asApplied ? text.replaceAll(caPlaceholder, aCaBundle) : text)
        .map((d) => d.toJS() as Doc['object'] | null)
        .filter((o): o is Doc['object'] => o !== null)
        .map((object) => ({ file, object }));
    });
}

const docs = load(true);

function groupVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

interface Validatable {
  validate(): void;
}
type Model = new (o: unknown) => Validatable;

/** kubernetes-models' class for the object's group, version and kind (its module layout). */
async function modelOf(apiVersion: string, kind: string): Promise<Model> {
  const { group, version } = groupVersion(apiVersion);
  const path = ['kubernetes-models', ...(group ? [group] : []), version, kind].join('/');
  const m = (await import(path)) as Record<string, unknown>;
  const cls = m[kind] ?? m.default;
  assert.equal(typeof cls, 'function', `${path} exports ${kind}`);
  return cls as Model;
}

/** The official schema's verdict: '' or the failures, each naming the path (`data/spec/...`). */
async function schemaErrors(o: Doc['object']): Promise<string> {
  const Model = await modelOf(o.apiVersion, o.kind);
  try {
    new Model(structuredClone(o)).validate();
    return '';
  } catch (e) {
    return (e as Error).message;
  }
}

/** The generated models' type name: `V1DaemonSet`, `V1beta1Foo`. */
const typeName = (apiVersion: string, kind: string) => {
  const { version } = groupVersion(apiVersion);
  return `${version[0]!.toUpperCase()}${version.slice(1)}${kind}`;
};

/** Paths in `original` that are not in `kept`: the fields the API does not know. */
function dropped(original: unknown, kept: unknown, path: string): string[] {
  if (typeof original !== 'object' || original === null) return [];
  if (typeof kept !== 'object' || kept === null) return [path];
  if (Array.isArray(original)) return original.flatMap((v, i) => dropped(v, (kept as unknown[])[i], `${path}[${i}]`));
  return Object.entries(original).flatMap(([k, v]) =>
    k in kept
      ? dropped(v, (kept as Record<string, unknown>)[k], path ? `${path}.${k}` : k)
      : [path ? `${path}.${k}` : k],
  );
}

function unknownFields(o: Doc['object']): string[] {
  const type = typeName(o.apiVersion, o.kind);
  const kept: unknown = JSON.parse(
    JSON.stringify(ObjectSerializer.serialize(ObjectSerializer.deserialize(o, type), type)),
  );
  return dropped(o, kept, '');
}

const name = (d: Doc) => `${d.file}: ${d.object.kind} ${d.object.metadata?.name ?? '?'}`;

describe('manifests against the Kubernetes API schemas', () => {
  for (const d of docs) {
    test(`${name(d)} is valid`, async () => {
      assert.equal(await schemaErrors(d.object), '');
      assert.deepEqual(unknownFields(d.object), []);
    });
  }
});

describe('the schema checks catch what a real API server refuses', () => {
  test("webhook.yaml before its caBundle is filled in (the placeholder is kubectl's reminder)", async () => {
    const hook = load(false).find((d) => d.object.kind === 'ValidatingWebhookConfiguration')!.object;
    assert.match(await schemaErrors(hook), /webhooks\/0\/clientConfig\/caBundle must match format "byte"/);
  });

  const ds = docs.find((d) => d.file === 'kilo-kernel.yaml' && d.object.kind === 'DaemonSet')!.object;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a manifest edited by hand
  const broken = (edit: (pod: any) => void) => {
    const o = structuredClone(ds) as Doc['object'] & { spec: { template: { spec: unknown } } };
    edit(o.spec.template.spec);
    return o;
  };

  test('a misspelt field', () => {
    const o = broken((pod) => {
      pod.containers[0].volumeMount = pod.containers[0].volumeMounts;
      delete pod.containers[0].volumeMounts;
    });
    assert.deepEqual(unknownFields(o), ['spec.template.spec.containers[0].volumeMount']);
  });

  test('a port given as a string', async () => {
    const o = broken((pod) => (pod.containers[0].ports[0].containerPort = '1107'));
    assert.match(await schemaErrors(o), /containers\/0\/ports\/0\/containerPort must be integer/);
  });

  test('a hostPath type Kubernetes does not have', async () => {
    const o = broken((pod) => (pod.volumes[0].hostPath.type = 'Dir'));
    assert.match(await schemaErrors(o), /volumes\/0\/hostPath\/type must be equal to one of the allowed values/);
  });

  test('a container without a name', async () => {
    const o = broken((pod) => delete pod.initContainers[0].name);
    assert.match(await schemaErrors(o), /initContainers\/0 must have required property name/);
  });

  test('an env entry valued as a number', async () => {
    const o = broken((pod) => {
      pod.initContainers[0].env.push({ name: 'N', value: 1 });
    });
    assert.match(await schemaErrors(o), /env\/2\/value must be string/);
  });
});
