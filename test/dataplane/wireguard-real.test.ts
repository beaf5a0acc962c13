import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import { uapiRequest } from '../../src/dataplane/wireguard/uapi.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { wireGuardAheadContract, wireGuardContract } from './wireguard-contract.js';

// netnsExec binds a per-namespace directory over this path; wireguard-go would create it anyway.
if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

// wireguard-go is configured through its socket; the `wg` tool (what kernel WireGuard gets) must
// keep the same contract, so it runs against wireguard-go too.
for (const [label, socket] of [
  ['wireguard-go in a namespace, through its socket', true],
  ['wireguard-go in a namespace, through wg (as kernel WireGuard)', false],
] as const) {
  wireGuardContract(
    label,
    async () => {
      const ns = createNamespace('ktwg');
      const device = createWireGuardDevice(ns.exec, { name: 'kilo0', socket });
      return {
        device,
        uapiAnswer: () => uapiRequest(join(ns.exec.wireGuardRunDir, 'kilo0.sock'), 'kilo0', 'get=1\n\n'),
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
}

wireGuardAheadContract(
  'wireguard-go in a namespace',
  async () => {
    const ns = createNamespace('ktwa');
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
