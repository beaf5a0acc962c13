import type { Lab } from './lab.js';
import { limited, type Pair } from './probe.js';
import { startRecorded } from './processes.js';
import { inNs, runAsync } from './sh.js';

/**
 * TCP beside ping: a server in each pod namespace that answers a connection with its node's name,
 * and a client per pair (bash's /dev/tcp: no tool to install, both families). The answer proves
 * the connection reached that pod, not just some listener on the way.
 */

export const tcpPort = 8080;

// On `::` without IPV6_V6ONLY: one socket takes both families.
const server = `const name = process.argv[1];
require('node:net')
  .createServer((s) => { s.on('error', () => {}); s.end(name + '\\n'); })
  .listen(${tcpPort}, '::');`;

/** Starts the TCP server of every pod (recorded: `down` stops them). */
export function startTcpServers(lab: Lab): void {
  for (const n of lab.nodes)
    startRecorded(
      lab.state,
      `tcp ${n.name}`,
      inNs(n.podNs, [process.execPath, '-e', server, n.name]),
      `${lab.nodeDir(n.name)}/tcp.log`,
    );
}

/** The node whose pod an endpoint is (`NAME/v6` is NAME's pod by its IPv6 address). */
const podOf = (endpointName: string): string => endpointName.replace(/\/v6$/, '');

/** One connection per pair, a few at a time: true where the destination's pod answered with its name. */
export async function tcpPairs(pairs: readonly Pair[], timeoutSeconds = 5): Promise<boolean[]> {
  return limited(
    pairs.map(({ s, d }) => async () => {
      const connect = `exec 3<>/dev/tcp/$0/${tcpPort} && head -n 1 <&3`;
      const r = await runAsync(inNs(s.ns, ['timeout', String(timeoutSeconds), 'bash', '-c', connect, d.ip]));
      return r.code === 0 && r.stdout.trim() === podOf(d.name);
    }),
    8,
  );
}
