import { UsageError } from '../../../src/model/errors.js';
import type { IpFamily } from './families.js';

/** `kg lab up`'s flags of address families, checked against each other and the lab's size. */
export function checkFamilyFlags(f: {
  ipFamily: IpFamily;
  ipv6OnlyLocation?: number;
  natLocation?: number;
  locations: number;
  clusters: number;
}): void {
  const only = f.ipv6OnlyLocation;
  if (only !== undefined) {
    if (f.ipFamily !== 'dual')
      throw new UsageError(
        `--ipv6-only-location ${only}: only with --ip-family dual (got --ip-family ${f.ipFamily}; ipv6 has no IPv4 anywhere)`,
      );
    if (only > f.locations)
      throw new UsageError(`--ipv6-only-location ${only}: there are only ${f.locations} locations`);
    if (only === f.natLocation)
      throw new UsageError(
        `--ipv6-only-location ${only}: it is the --nat-location too; the NAT location NATs IPv4, so it has IPv4`,
      );
  }
  if (f.ipFamily !== 'ipv4' && f.clusters > 1)
    throw new UsageError(`--clusters ${f.clusters}: only with --ip-family ipv4 (got ${f.ipFamily})`);
}
