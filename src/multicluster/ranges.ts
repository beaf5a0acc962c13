/**
 * Whether two clusters can be linked: their pod CIDRs, service ranges and WireGuard subnets must
 * not overlap (Kilo's docs/multi-cluster-services.md, "the allowed IPs that they declare must be
 * non-overlapping"), or WireGuard routes a prefix to one side only. Pure; one sort, so thousands
 * of nodes cost no more than their pod CIDRs' count.
 */
import type { Cidr } from '../net/cidr.js';
import type { ClusterView } from './view.js';

interface Range {
  cidr: Cidr;
  side: 0 | 1;
  what: string;
}

function rangesOf(v: ClusterView, side: 0 | 1): Range[] {
  const out: Range[] = [];
  for (const n of v.cluster.nodes)
    for (const cidr of n.podCIDRs) out.push({ cidr, side, what: `pod CIDR ${cidr.networkText} (node "${n.name}")` });
  for (const cidr of v.serviceCidrs) out.push({ cidr, side, what: `service range ${cidr.networkText}` });
  out.push({ cidr: v.options.subnet, side, what: `WireGuard subnet ${v.options.subnet.networkText}` });
  return out;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/**
 * One message naming the first two ranges of different clusters that overlap, or null when none
 * do. Two prefixes overlap only when one holds the other: sorted by start (the wider first), a
 * prefix held by one of the other cluster is held by the innermost open prefix, or some pair on
 * the way in changed cluster already.
 */
export function overlapError(a: ClusterView, b: ClusterView): string | null {
  const all = [...rangesOf(a, 0), ...rangesOf(b, 1)].sort(
    (x, y) =>
      x.cidr.family - y.cidr.family ||
      compareBytes(x.cidr.network.bytes, y.cidr.network.bytes) ||
      x.cidr.prefix - y.cidr.prefix,
  );
  const open: Range[] = [];
  const names = [a.name, b.name];
  for (const r of all) {
    while (open.length > 0 && !open[open.length - 1]!.cidr.overlaps(r.cidr)) open.pop();
    const outer = open[open.length - 1];
    if (outer && outer.side !== r.side)
      return `the clusters' ranges overlap: cluster "${names[outer.side]!}"'s ${outer.what} holds cluster "${names[r.side]!}"'s ${r.what}; pod CIDRs, service ranges and WireGuard subnets must be disjoint, nothing is mirrored until they are`;
    open.push(r);
  }
  return null;
}
