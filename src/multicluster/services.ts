/**
 * The Services one cluster exports (labelled `kilo.squat.ai/multicluster-export: "true"`) as the
 * other cluster gets them, the way Kilo's docs/multi-cluster-services.md mirrors a Service by hand:
 * a Service of the same name and namespace without a selector, and an EndpointSlice whose one
 * endpoint is the exported Service's clusterIP (routed over WireGuard through the service range
 * on the mirrored Peers). Pure.
 */
import { IP } from '../net/cidr.js';
import type { KubeObject } from '../model/parse.js';
import { exportLabel, managedBy, sourceLabel } from './view.js';

export interface MirroredServices {
  /** Services and EndpointSlices to hold in the other cluster. */
  objects: KubeObject[];
  /** One per exported Service that cannot be mirrored, naming it and why. */
  errors: string[];
}

type Port = { name?: string; port?: number; protocol?: string };

const isExported = (s: KubeObject): boolean => s.metadata?.labels?.[exportLabel] === 'true';

export function mirroredServices(from: string, services: readonly KubeObject[]): MirroredServices {
  const objects: KubeObject[] = [];
  const errors: string[] = [];
  for (const s of services) {
    if (!isExported(s)) continue;
    const name = s.metadata?.name ?? '';
    const namespace = (s.metadata as { namespace?: string } | undefined)?.namespace ?? 'default';
    const what = `Service ${namespace}/${name}`;
    const spec = (s.spec ?? {}) as { clusterIP?: unknown; ports?: unknown };
    const ip = typeof spec.clusterIP === 'string' ? IP.tryParse(spec.clusterIP) : null;
    if (!ip) {
      errors.push(
        `${what}: spec.clusterIP ${JSON.stringify(spec.clusterIP ?? null)} is not an address; only Services with a clusterIP are exported`,
      );
      continue;
    }
    const ports = (Array.isArray(spec.ports) ? (spec.ports as Port[]) : []).map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      port: p.port,
      protocol: p.protocol ?? 'TCP',
    }));
    const labels = { [sourceLabel]: from };
    objects.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace, labels },
      spec: { ports },
    } as KubeObject);
    objects.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${name}-${from}`.slice(0, 253),
        namespace,
        labels: { ...labels, 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': managedBy },
      },
      addressType: ip.family === 4 ? 'IPv4' : 'IPv6',
      endpoints: [{ addresses: [ip.text], conditions: { ready: true } }],
      ports,
    } as KubeObject);
  }
  return { objects, errors };
}
