import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Cidr } from '../net/cidr.js';
import { listOf, type ByFamily } from '../net/family.js';

/**
 * The pod subnet of the CNI configuration Kilo manages (`--cni`, `--cni-path`): the host-local IPAM
 * of the conflist must hand out addresses from the node's spec.podCIDR, which is only known once
 * the node is registered, so the agent keeps it in step as Kilo does.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first subnet the conflist's IPAM hands out (ranges first, then the legacy `subnet`), or null. */
export function cniSubnetOf(conf: unknown): string | null {
  if (!isObject(conf) || !Array.isArray(conf['plugins'])) return null;
  for (const p of conf['plugins']) {
    if (!isObject(p) || !isObject(p['ipam'])) continue;
    const ipam = p['ipam'];
    if (Array.isArray(ipam['ranges'])) {
      for (const set of ipam['ranges']) {
        if (!Array.isArray(set)) continue;
        for (const r of set)
          if (isObject(r) && typeof r['subnet'] === 'string' && r['subnet'] !== '') return r['subnet'];
      }
    }
    if (typeof ipam['subnet'] === 'string' && ipam['subnet'] !== '') return ipam['subnet'];
  }
  return null;
}

/** The first subnet of each range set of the first IPAM that has ranges (one per family in a dual-stack conflist). */
export function cniSubnetsOf(conf: unknown): string[] {
  if (!isObject(conf) || !Array.isArray(conf['plugins'])) return [];
  for (const p of conf['plugins']) {
    if (!isObject(p) || !isObject(p['ipam']) || !Array.isArray(p['ipam']['ranges'])) continue;
    const out: string[] = [];
    for (const set of p['ipam']['ranges']) {
      const r: unknown = Array.isArray(set) ? set[0] : undefined;
      if (isObject(r) && typeof r['subnet'] === 'string' && r['subnet'] !== '') out.push(r['subnet']);
    }
    if (out.length > 0) return out;
  }
  return [];
}

/**
 * The conflist with every plugin's IPAM handing out `subnet` alone (one range set per family when
 * it is a list: host-local gives each pod an address of each). The legacy single-range keys
 * go: host-local would otherwise add the old range in front of the new one (Kilo leaves them).
 * @throws Error naming the file and the part that is not a conflist.
 */
export function withCNISubnet(conf: unknown, subnet: string | readonly string[], file: string): Json {
  const ranges = typeof subnet === 'string' ? [[{ subnet }]] : subnet.map((s) => [{ subnet: s }]);
  if (!isObject(conf)) throw new Error(`CNI config ${file}: not a JSON object`);
  const plugins = conf['plugins'];
  if (!Array.isArray(plugins)) throw new Error(`CNI config ${file}: field "plugins": not a list`);
  let found = false;
  const out = plugins.map((p: unknown, i) => {
    if (!isObject(p)) throw new Error(`CNI config ${file}: field "plugins[${i}]": not an object`);
    if (p['ipam'] === undefined) return p;
    if (!isObject(p['ipam'])) throw new Error(`CNI config ${file}: field "plugins[${i}].ipam": not an object`);
    found = true;
    const { subnet: _s, rangeStart: _a, rangeEnd: _b, gateway: _g, ...ipam } = p['ipam'];
    return { ...p, ipam: { ...ipam, ranges } };
  });
  if (!found) throw new Error(`CNI config ${file}: no plugin has an "ipam" section to hold the pod subnet`);
  return { ...conf, plugins: out };
}

export type CNIResult =
  { status: 'absent' } | { status: 'unchanged' } | { status: 'updated'; from: string | null; to: string };

/**
 * Makes the conflist at `path` hand out `podCIDR`. Writes only when the subnet differs, through a
 * temporary file and a rename, so the kubelet never reads half a file. A missing file is left
 * alone (the CNI may not be installed yet, or another component owns the directory).
 * @throws Error naming the file when it cannot be read, parsed or written.
 */
export async function syncCNIConfig(path: string, podCIDR: Cidr | ByFamily<Cidr>): Promise<CNIResult> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { status: 'absent' };
    throw new Error(`CNI config ${path}: cannot read it: ${(e as Error).message}`);
  }
  let conf: unknown;
  try {
    conf = JSON.parse(text);
  } catch (e) {
    throw new Error(`CNI config ${path}: not JSON: ${(e as Error).message}`);
  }
  const pods = listOf(podCIDR);
  let want: string;
  let have: string | null;
  let updated: Json | null = null;
  if (pods.length === 1) {
    want = pods[0]!.networkText;
    have = cniSubnetOf(conf);
    if (have !== null && Cidr.tryParse(have)?.networkText === want) return { status: 'unchanged' };
    updated = withCNISubnet(conf, want, path);
  } else {
    // Dual-stack: one range set per family, in the node's order (IPv4's first).
    const wanted = pods.map((c) => c.networkText);
    const found = cniSubnetsOf(conf);
    want = wanted.join(',');
    have = found.length > 0 ? found.join(',') : null;
    if (found.map((t) => Cidr.tryParse(t)?.networkText).join(',') === want) return { status: 'unchanged' };
    updated = withCNISubnet(conf, wanted, path);
  }
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, `${JSON.stringify(updated, null, 2)}\n`, { mode: 0o644 });
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new Error(`CNI config ${path}: cannot write it: ${(e as Error).message}`);
  }
  return { status: 'updated', from: have, to: want };
}
