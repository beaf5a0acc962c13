/**
 * Services (v1), Endpoints (v1) and EndpointSlices (discovery.k8s.io/v1) in the lab's API
 * server, as kube-apiserver serves them for what a multi-cluster link uses: a Service gets its
 * defaults (type ClusterIP, protocol TCP, targetPort = port, one IPv4 family) and a clusterIP
 * allocated from the cluster's service range (`--service-cluster-ip-range`), or keeps the one it
 * asks for if that is in range and free; the clusterIP may not change once set and an update that
 * leaves it out keeps it; deleting the Service frees it. `None` makes a headless Service. Node
 * ports are not allocated: NodePort and LoadBalancer are refused with a clear error. Endpoints and
 * EndpointSlices are checked as kube-apiserver checks them (addresses, ports, addressType). No
 * controller runs: no Endpoints or slices are made from selectors, as with no
 * kube-controller-manager.
 */
import type { KubeObject } from '../../../src/model/parse.js';
import { Cidr, IP } from '../../../src/net/cidr.js';
import { defaultPorts, endpointIPErrors, isObject, listAt, portListErrors, quote } from './apiserver-ports.js';
import type { Admitted, ResourceType } from './apiserver-resources.js';
import { metaOf } from './apiserver-store.js';

const serviceTypes = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'] as const;

type Spec = Record<string, unknown>;

const specOf = (o: KubeObject | undefined): Spec => {
  const s = (o as { spec?: unknown } | undefined)?.spec;
  return isObject(s) ? s : {};
};

/** The cluster IPs Services hold, but for the one being written. */
function allocated(others: readonly KubeObject[], self: KubeObject): Set<string> {
  const key = (o: KubeObject) => `${metaOf(o).namespace ?? ''}/${metaOf(o).name ?? ''}`;
  const out = new Set<string>();
  for (const o of others) if (key(o) !== key(self)) for (const ip of clusterIPsOf(specOf(o))) out.add(ip);
  return out;
}

function clusterIPsOf(spec: Spec): string[] {
  const ips = Array.isArray(spec['clusterIPs']) ? spec['clusterIPs'] : [spec['clusterIP']];
  return ips.filter((ip): ip is string => typeof ip === 'string' && ip !== '' && ip !== 'None');
}

/** The first free address of the range (its network and broadcast addresses are never given). */
function firstFree(range: Cidr, taken: ReadonlySet<string>): string | null {
  const last = range.size() - 1n;
  for (let n = 1; BigInt(n) < last; n++) {
    const ip = range.nth(n);
    if (!ip) return null;
    if (!taken.has(ip.text)) return ip.text;
  }
  return null;
}

/** Defaults, the clusterIP kept from before or allocated, and the errors kube-apiserver gives. */
function admitService(
  range: Cidr,
  obj: KubeObject,
  old: KubeObject | undefined,
  others: () => readonly KubeObject[],
): Admitted {
  const errors: string[] = [];
  const spec: Spec = { ...specOf(obj) };
  const before = old && specOf(old);
  const type = spec['type'] ?? 'ClusterIP';
  if (!(serviceTypes as readonly unknown[]).includes(type))
    errors.push(
      `spec.type: Unsupported value: ${quote(type)}: supported values: ${serviceTypes.map((t) => `"${t}"`).join(', ')}`,
    );
  else if (type === 'NodePort' || type === 'LoadBalancer')
    errors.push(`spec.type: Unsupported value: ${quote(type)}: the lab's API server allocates no node ports`);
  spec['type'] = type;
  const ports = listAt('spec.ports', spec['ports'], errors);
  // As patchAllocatedValues: an update that leaves the clusterIP out keeps the allocated one.
  if (before && (spec['clusterIP'] === undefined || spec['clusterIP'] === '') && spec['clusterIPs'] === undefined) {
    if (before['clusterIP'] !== undefined) spec['clusterIP'] = before['clusterIP'];
    if (before['clusterIPs'] !== undefined) spec['clusterIPs'] = before['clusterIPs'];
  }
  if (type === 'ExternalName') {
    if (typeof spec['externalName'] !== 'string' || spec['externalName'] === '')
      errors.push('spec.externalName: Required value');
  } else {
    const headless = spec['clusterIP'] === 'None';
    if (ports.length === 0 && !headless) errors.push('spec.ports: Required value');
    spec['sessionAffinity'] ??= 'None';
    spec['internalTrafficPolicy'] ??= 'Cluster';
    if (headless) {
      spec['clusterIPs'] = ['None'];
    } else {
      const asked: unknown =
        spec['clusterIP'] ?? (Array.isArray(spec['clusterIPs']) ? (spec['clusterIPs'] as unknown[])[0] : undefined);
      if (asked !== undefined && asked !== '' && (typeof asked !== 'string' || !IP.tryParse(asked)))
        errors.push(
          `spec.clusterIPs[0]: Invalid value: ${quote(asked)}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
        );
      else if (before && clusterIPsOf(before).length > 0 && asked !== clusterIPsOf(before)[0])
        errors.push(`spec.clusterIPs[0]: Invalid value: ${quote(asked)}: may not change once set`);
      else if (typeof asked === 'string' && asked !== '') {
        if (!before || clusterIPsOf(before)[0] !== asked) {
          const ip = IP.parse(asked);
          if (!range.contains(ip))
            errors.push(
              `spec.clusterIPs: Invalid value: ${quote([asked])}: failed to allocate IP ${asked}: the provided IP (${asked}) is not in the valid range. The range of valid IPs is ${range.networkText}`,
            );
          else if (allocated(others(), obj).has(ip.text))
            errors.push(
              `spec.clusterIPs: Invalid value: ${quote([asked])}: failed to allocate IP ${asked}: provided IP is already allocated`,
            );
        }
        spec['clusterIP'] = asked;
        spec['clusterIPs'] = [asked];
      } else {
        const ip = firstFree(range, allocated(others(), obj));
        if (ip === null)
          errors.push(
            `spec.clusterIPs: Internal error: failed to allocate a serviceIP: range is full (${range.networkText})`,
          );
        else {
          spec['clusterIP'] = ip;
          spec['clusterIPs'] = [ip];
        }
      }
    }
    spec['ipFamilies'] ??= [range.family === 4 ? 'IPv4' : 'IPv6'];
    spec['ipFamilyPolicy'] ??= 'SingleStack';
  }
  errors.push(...portListErrors('spec.ports', ports, { portRequired: true, nameRequired: true }));
  const seen = new Set<string>();
  ports.forEach((p, i) => {
    if (!isObject(p)) return;
    const key = JSON.stringify([p['port'], p['protocol'] ?? 'TCP']);
    if (seen.has(key))
      errors.push(`spec.ports[${i}]: Duplicate value: ${quote({ port: p['port'], protocol: p['protocol'] ?? 'TCP' })}`);
    seen.add(key);
  });
  if (ports.length > 0)
    spec['ports'] = (defaultPorts(ports) as unknown[]).map((p) =>
      isObject(p) && p['targetPort'] === undefined ? { ...p, targetPort: p['port'] } : p,
    );
  const selector = spec['selector'];
  if (selector !== undefined && selector !== null && !isObject(selector))
    errors.push(`spec.selector: Invalid value: ${quote(selector)}: must be a map of strings`);
  const object = { ...obj, spec } as KubeObject;
  if (!old) (object as { status?: unknown }).status = { loadBalancer: {} };
  return { object, errors };
}

/** kubeadm's default --service-cluster-ip-range. */
export const defaultServiceCidr = '10.96.0.0/12';

/** Services of a cluster whose service range is `serviceCidr`. */
export function servicesType(serviceCidr: string): ResourceType {
  const range = Cidr.parse(serviceCidr).masked();
  return {
    name: 'services',
    singular: 'service',
    group: '',
    version: 'v1',
    kind: 'Service',
    listKind: 'ServiceList',
    namespaced: true,
    custom: false,
    shortNames: ['svc'],
    admit: (obj, old, others) => admitService(range, obj, old, others),
  };
}

function admitEndpoints(obj: KubeObject): Admitted {
  const errors: string[] = [];
  const subsets = listAt('subsets', (obj as { subsets?: unknown }).subsets, errors).map((s, i) => {
    if (!isObject(s)) {
      errors.push(`subsets[${i}]: Invalid value: ${quote(s)}: must be an object`);
      return s;
    }
    for (const field of ['addresses', 'notReadyAddresses'] as const)
      listAt(`subsets[${i}].${field}`, s[field], errors).forEach((a, j) => {
        errors.push(...endpointIPErrors(`subsets[${i}].${field}[${j}].ip`, isObject(a) ? a['ip'] : a));
      });
    const ports = listAt(`subsets[${i}].ports`, s['ports'], errors);
    errors.push(...portListErrors(`subsets[${i}].ports`, ports, { portRequired: true, nameRequired: true }));
    return s['ports'] === undefined ? s : { ...s, ports: defaultPorts(s['ports']) };
  });
  const object = subsets.length > 0 ? ({ ...obj, subsets } as KubeObject) : obj;
  return { object, errors };
}

export const endpointsType: ResourceType = {
  name: 'endpoints',
  singular: 'endpoints',
  group: '',
  version: 'v1',
  kind: 'Endpoints',
  listKind: 'EndpointsList',
  namespaced: true,
  custom: false,
  shortNames: ['ep'],
  admit: (obj) => admitEndpoints(obj),
};

const addressTypes = ['FQDN', 'IPv4', 'IPv6'] as const;
const fqdn = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function admitEndpointSlice(obj: KubeObject, old: KubeObject | undefined): Admitted {
  const errors: string[] = [];
  const o = obj as KubeObject & { addressType?: unknown; endpoints?: unknown; ports?: unknown };
  const addressType = o.addressType;
  if (addressType === undefined || addressType === '') errors.push('addressType: Required value');
  else if (!(addressTypes as readonly unknown[]).includes(addressType))
    errors.push(
      `addressType: Unsupported value: ${quote(addressType)}: supported values: ${addressTypes.map((t) => `"${t}"`).join(', ')}`,
    );
  const was = (old as { addressType?: unknown } | undefined)?.addressType;
  if (old && addressType !== was) errors.push(`addressType: Invalid value: ${quote(addressType)}: field is immutable`);
  const endpoints = listAt('endpoints', o.endpoints, errors);
  if (endpoints.length > 1000) errors.push(`endpoints: Too many: ${endpoints.length}: must have at most 1000 items`);
  endpoints.forEach((e, i) => {
    if (!isObject(e)) return void errors.push(`endpoints[${i}]: Invalid value: ${quote(e)}: must be an object`);
    const addresses = listAt(`endpoints[${i}].addresses`, e['addresses'], errors);
    if (addresses.length === 0)
      errors.push(`endpoints[${i}].addresses: Required value: must contain at least 1 address`);
    if (addresses.length > 100)
      errors.push(`endpoints[${i}].addresses: Too many: ${addresses.length}: must have at most 100 items`);
    addresses.forEach((a, j) => {
      const at = `endpoints[${i}].addresses[${j}]`;
      if (addressType === 'IPv4' || addressType === 'IPv6')
        errors.push(...endpointIPErrors(at, a, addressType === 'IPv4' ? 4 : 6));
      else if (addressType === 'FQDN' && (typeof a !== 'string' || a.length > 253 || !fqdn.test(a)))
        errors.push(`${at}: Invalid value: ${quote(a)}: must be a valid FQDN`);
    });
  });
  const ports = listAt('ports', o.ports, errors);
  if (ports.length > 100) errors.push(`ports: Too many: ${ports.length}: must have at most 100 items`);
  errors.push(...portListErrors('ports', ports, { portRequired: false, nameRequired: false }));
  const object = o.ports === undefined ? obj : ({ ...obj, ports: defaultPorts(o.ports) } as KubeObject);
  return { object, errors };
}

export const endpointSlicesType: ResourceType = {
  name: 'endpointslices',
  singular: 'endpointslice',
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  listKind: 'EndpointSliceList',
  namespaced: true,
  custom: false,
  admit: admitEndpointSlice,
};
