import { mkdirSync } from 'node:fs';
import { createWireGuardDevice } from '../../src/dataplane/wireguard/device.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import {
  wireGuardAheadContract,
  wireGuardContract,
  wireGuardDetachContract,
  type ContractSubject,
} from './wireguard-contract.js';

// netnsExec binds a per-namespace directory over this path; wireguard-go would create it anyway.
if (!skipNoNetns) mkdirSync('/var/run/wireguard', { recursive: true });

/** A device named kilo0 in a fresh namespace; cleaning up destroys it, then the namespace. */
function inNamespace(prefix: string, socket = true): ContractSubject {
  const ns = createNamespace(prefix);
  const device = createWireGuardDevice(ns.exec, { name: 'kilo0', socket });
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
}

// wireguard-go is configured through its socket; the `wg` tool (what kernel WireGuard gets) must
// keep the same contract, so it runs against wireguard-go too.
for (const [label, socket] of [
  ['wireguard-go in a namespace, through its socket', true],
  ['wireguard-go in a namespace, through wg (as kernel WireGuard)', false],
] as const) {
  wireGuardContract(label, async () => inNamespace('ktwg', socket), skipNoNetns);
}

wireGuardAheadContract('wireguard-go in a namespace', async () => inNamespace('ktwa'), skipNoNetns);
wireGuardDetachContract('wireguard-go in a namespace', async () => inNamespace('ktwx'), skipNoNetns);
