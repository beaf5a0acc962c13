import type { Host } from '../host/host.js';
import type { EncapsulationDevice, EncapsulationDevices } from '../encapsulation/index.js';
import type { IP } from '../net/cidr.js';

interface Answer<T> {
  at: number;
  value: T;
}

/** The encapsulation's answers about this host, asked again once its recheck period is over. */
export class HostEncapsulation {
  private devicesSeen: Answer<EncapsulationDevices> | null = null;
  private addressSeen: Answer<IP | null> | null = null;

  constructor(
    private readonly device: EncapsulationDevice,
    private readonly host: Host,
    private readonly clock: () => number,
  ) {}

  async devices(): Promise<EncapsulationDevices> {
    if (!this.fresh(this.devicesSeen))
      this.devicesSeen = { at: this.clock(), value: await this.device.setUp(this.host) };
    return this.devicesSeen!.value;
  }

  async ownAddress(): Promise<IP | null> {
    if (!this.fresh(this.addressSeen))
      this.addressSeen = { at: this.clock(), value: await this.device.ownAddress(this.host) };
    return this.addressSeen!.value;
  }

  cleanUp(): Promise<void> {
    return this.device.cleanUp(this.host);
  }

  private fresh(seen: Answer<unknown> | null): boolean {
    const recheck = this.device.recheckMs;
    return seen !== null && (recheck === null || this.clock() - seen.at < recheck);
  }
}
