/**
 * Prints `kgctl plan -o json` (the same JSON.stringify of planOf) for every node of every
 * conformance vector and of examples/*.yaml, in every granularity, one `== name` header per plan.
 * Run it in two checkouts and diff the outputs: dual-stack support must leave one-family clusters'
 * plans byte-identical (issue 32). `scripts/same-plans.sh BASE` does the whole comparison.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { planOf } from '../src/mesh/compute.js';
import { defaultMeshOptions, type MeshOptions } from '../src/mesh/options.js';
import { parseCluster, type ParsedCluster } from '../src/model/parse.js';
import { snapshotNow } from '../src/model/ready.js';
import { granularities } from '../src/model/types.js';
import { Cidr } from '../src/net/cidr.js';

const root = join(import.meta.dirname, '..');
const vectors = process.env['KILO_CONFORMANCE_DIR'] ?? join(root, '../../shared/conformance/vectors');
const out: string[] = [];
let plans = 0;

function planAll(name: string, cluster: ParsedCluster, base: Partial<MeshOptions>): void {
  const now = snapshotNow(cluster.nodes);
  for (const granularity of granularities) {
    for (const n of cluster.nodes) {
      const options = { ...defaultMeshOptions, ...base, granularity };
      let text: string;
      try {
        text = JSON.stringify(planOf(cluster, n.name, options, now), null, 2);
      } catch (e) {
        text = `error: ${(e as Error).message}`;
      }
      out.push(`== ${name} ${granularity} ${n.name}`, text);
      plans++;
    }
  }
}

for (const file of readdirSync(vectors)
  .filter((f) => f.endsWith('.json'))
  .sort()) {
  const v = JSON.parse(readFileSync(join(vectors, file), 'utf8'));
  planAll(file, parseCluster(v.cluster.items), {
    subnet: Cidr.parse(v.options.subnet),
    encapsulate: v.options.encapsulate,
    local: v.options.local,
  });
}
const examples = join(root, 'examples');
for (const file of readdirSync(examples)
  .filter((f) => f.endsWith('.yaml'))
  .sort()) {
  const doc = parseYaml(readFileSync(join(examples, file), 'utf8')) as { items?: unknown[] } | unknown[];
  planAll(file, parseCluster(Array.isArray(doc) ? doc : (doc.items ?? [])), {});
}
process.stdout.write(`${out.join('\n')}\n`);
process.stderr.write(`${plans} plans\n`);
