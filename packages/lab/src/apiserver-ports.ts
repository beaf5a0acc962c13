/**
 * The checks kube-apiserver makes of ports and addresses, shared by Services, Endpoints and
 * EndpointSlices (pkg/apis/core/validation and discovery/validation): port numbers, protocols,
 * port names (required and unique once there are several), and endpoint addresses that may not
 * be special (unspecified, loopback, link-local, multicast).
 */
import { Cidr, IP } from '../../../src/net/cidr.js';

export const protocols = ['SCTP', 'TCP', 'UDP'] as const;

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const quote = (v: unknown): string => JSON.stringify(v)?.slice(0, 100) ?? String(v);

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A list field: its items, or one error when it is there and not a list. */
export function listAt(field: string, v: unknown, out: string[]): unknown[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v;
  out.push(`${field}: Invalid value: ${quote(v)}: must be a list`);
  return [];
}

export function portNumberErrors(field: string, v: unknown, required: boolean): string[] {
  if (v === undefined || v === null) return required ? [`${field}: Required value`] : [];
  if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 65535)
    return [`${field}: Invalid value: ${quote(v)}: must be between 1 and 65535, inclusive`];
  return [];
}

/**
 * A list of ports (Service, Endpoints subset, EndpointSlice): each port's number, protocol and
 * name; names required when there is more than one (`nameRequired`), unique, DNS labels.
 */
export function portListErrors(
  field: string,
  ports: readonly unknown[],
  o: { portRequired: boolean; nameRequired: boolean },
): string[] {
  const out: string[] = [];
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(p)) return void out.push(`${at}: Invalid value: ${quote(p)}: must be an object`);
    out.push(...portNumberErrors(`${at}.port`, p['port'], o.portRequired));
    const protocol = p['protocol'];
    if (protocol !== undefined && !(protocols as readonly unknown[]).includes(protocol))
      out.push(
        `${at}.protocol: Unsupported value: ${quote(protocol)}: supported values: ${protocols.map((x) => `"${x}"`).join(', ')}`,
      );
    const name = p['name'];
    if (name === undefined || name === '') {
      if (o.nameRequired && ports.length > 1) out.push(`${at}.name: Required value`);
      return;
    }
    if (typeof name !== 'string' || name.length > 63 || !dnsLabel.test(name))
      out.push(`${at}.name: Invalid value: ${quote(name)}: must be a DNS label (RFC 1123)`);
    else if (names.has(name)) out.push(`${at}.name: Duplicate value: ${quote(name)}`);
    else names.add(name);
  });
  return out;
}

/** Ports as kube-apiserver defaults them: protocol TCP. */
export function defaultPorts(ports: unknown): unknown {
  if (!Array.isArray(ports)) return ports;
  return (ports as unknown[]).map((p) => (isObject(p) && p['protocol'] === undefined ? { ...p, protocol: 'TCP' } : p));
}

const special: readonly [Cidr, string][] = [
  [Cidr.parse('127.0.0.0/8'), 'may not be in the loopback range (127.0.0.0/8, ::1/128)'],
  [Cidr.parse('::1/128'), 'may not be in the loopback range (127.0.0.0/8, ::1/128)'],
  [Cidr.parse('169.254.0.0/16'), 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'],
  [Cidr.parse('fe80::/10'), 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'],
  [Cidr.parse('224.0.0.0/4'), 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'],
  [Cidr.parse('ff00::/8'), 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'],
];

/** An endpoint's address: an IP (of `family` when given) that is not special. */
export function endpointIPErrors(field: string, v: unknown, family?: 4 | 6): string[] {
  const ip = typeof v === 'string' ? IP.tryParse(v) : null;
  if (!ip || (family !== undefined && ip.family !== family))
    return [`${field}: Invalid value: ${quote(v)}: must be a valid ${family ? `IPv${family} ` : 'IP '}address`];
  if (ip.isUnspecified()) return [`${field}: Invalid value: ${quote(v)}: may not be unspecified (0.0.0.0, ::)`];
  const hit = special.find(([c]) => c.contains(ip));
  return hit ? [`${field}: Invalid value: ${quote(v)}: ${hit[1]}`] : [];
}
