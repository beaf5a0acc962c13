/**
 * Whether a Node's spec gives its pods a range of IPv4 only (spec.podCIDRs, else spec.podCIDR): an
 * IPv4 node in Kubernetes' eyes (a node with no pod CIDR yet is not judged). On such a node the agent-written `-ipv6`
 * annotations are left from its dual-stack days (docs/dual-stack.md#edge-cases): the plan does not
 * read them and the node's agent removes them. Judged from the text (an IPv6 prefix has a colon, an
 * IPv4 one none), so nothing is parsed twice; a malformed value drops the node anyway.
 */
export function lostIPv6Pods(spec: { podCIDR?: unknown; podCIDRs?: unknown } | null | undefined): boolean {
  const list = spec?.podCIDRs;
  if (Array.isArray(list) && list.length > 0) return !list.some((c) => typeof c === 'string' && c.includes(':'));
  return typeof spec?.podCIDR === 'string' && spec.podCIDR !== '' && !spec.podCIDR.includes(':');
}
