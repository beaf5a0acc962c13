/** Every Lease kilo-ts makes starts with this, so RBAC and operators can tell them apart. */
export const leaseNamePrefix = 'kilo-leader-';

/**
 * The Lease of a location: `kilo-leader-<readable part>-<hash>`, a DNS-1123 label (so also a
 * subdomain) of at most 63 characters. The readable part is the location lowercased with every
 * other character made '-' and cut to 40; the hash (10 hex digits of SHA-256 of the exact
 * location) keeps locations that read alike ("EU_1", "eu-1") apart. Pure: every agent derives
 * the same name.
 */
export function leaseName(location: string): string {
  const readable = location
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '');
  // Loaded here, not imported: kgctl loads this file at start and asks for a Lease only against a live cluster.
  const hash = process
    .getBuiltinModule('node:crypto')
    .createHash('sha256')
    .update(location, 'utf8')
    .digest('hex')
    .slice(0, 10);
  return `${leaseNamePrefix}${readable ? `${readable}-` : ''}${hash}`;
}
