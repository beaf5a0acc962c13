import { mkdirSync } from 'node:fs';
import { createWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { wireGuardContract } from './wireguard-contract.js';

// netnsExec binds a per-namespace directory over this path; wireguard-go would create it anyway.
if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

wireGuardContract(
  'wireguard-go in a namespace',
  async () => {
    const ns = createNamespace('ktwg');
    const device = createWireGuardDevice(ns.exec, { name: 'kilo0' });
    return {
      device,
      async cleanup() {
        try {
          await device.destroy();
        } finally {
          ns.destroy();
        }
      },
    };
  },
  skipNoNetns,
);
