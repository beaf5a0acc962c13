/**
 * What `kg run` keeps per node of the cluster, part of `npm run bench:scale`: each Node as the
 * agent's cache keeps it (src/backend/kubernetes/source.ts) and what it parsed to (the agent's
 * parse memo), measured in this process as the heap (and memory outside it) grown by N of them after full collections.
 * The plan and the dataplane's memory of its last write also grow with the cluster; the kg run
 * table's RSS at several sizes shows the whole.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { normalizeNode } from '../src/backend/kubernetes/source.js';
import { parseCluster, type ParsedObject } from '../src/model/parse.js';
import { generateCluster } from './generate.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapAfterGC(): number {
  for (let i = 0; i < 3; i++) gc();
  // Typed arrays' contents (an address's bytes) live outside the heap.
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

/** Bytes of heap per node: the cached object, and the cached object with its parse. */
export function keptBytesPerNode(nodes: number): { object: number; withParse: number } {
  // As the API server sends them: the kubelet's labels, annotations and status, which the cache drops.
  const served = generateCluster(nodes, 20, 0).map((n) => ({
    ...n,
    metadata: {
      ...n.metadata,
      uid: '8f4e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6',
      resourceVersion: '123456',
      labels: { ...n.metadata!.labels, 'kubernetes.io/hostname': n.metadata!.name!, 'kubernetes.io/os': 'linux' },
      annotations: { ...n.metadata!.annotations, 'node.alpha.kubernetes.io/ttl': '0' },
    },
    status: {
      conditions: [{ type: 'Ready', status: 'True' }],
      addresses: [{ type: 'InternalIP', address: '1.2.3.4' }],
    },
  }));
  const keep = normalizeNode(['topology.kubernetes.io/region']);
  const before = heapAfterGC();
  const cache = new Map(served.map((o) => [o.metadata.name, keep(o)!]));
  const objects = heapAfterGC();
  const memo = new WeakMap<object, ParsedObject>();
  parseCluster([...cache.values()], { topologyLabel: 'topology.kubernetes.io/region', memo });
  const parsed = heapAfterGC();
  // Both must still be alive when measured.
  if (cache.size !== nodes || !memo.has(cache.values().next().value!)) throw new Error('lost the cache');
  return { object: (objects - before) / nodes, withParse: (parsed - before) / nodes };
}
