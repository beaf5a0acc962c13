import { writeFileSync } from 'node:fs';
import type { Lab } from './lab.js';
import { peerAllowedIP } from './layout.js';
import { formatMatrix } from './probe.js';

/**
 * What `up` shows once the mesh works: the pod→pod matrix, how one node routes to a few
 * destinations (its own location over lan0, the others over kilo0) and the graph as SVG.
 */
export async function report(lab: Lab, graphFile: string, say: (line: string) => void): Promise<void> {
  say('waiting for the mesh (every pod pings every pod)…');
  const { matrix, ms } = await lab.converge(120_000);
  say(`converged in ${(ms / 1000).toFixed(1)} s\n`);
  say('pod → pod connectivity (ping from each pod namespace; the "peer" row pings from the Peer):');
  say(formatMatrix(matrix));

  const viewer = lab.nodes.find((n) => n.publicIP) ?? lab.nodes[0]!;
  const destinations = [
    ...lab.nodes.filter((n) => n.location === viewer.location && n !== viewer).slice(0, 1),
    ...[...new Set(lab.nodes.filter((n) => n.location !== viewer.location).map((n) => n.location))].map((l) =>
      lab.nodes.find((n) => n.location === l)!,
    ),
  ];
  say(`\nroutes on ${viewer.name} (location ${viewer.location}):`);
  for (const d of destinations) {
    const where =
      d.location === viewer.location ? 'same location' : `location ${d.location}${d.publicIP ? '' : ', behind NAT'}`;
    say(`  ${d.podIP.padEnd(12)} pod of ${d.name} (${where}): ${route(lab, viewer.name, d.podIP)}`);
  }
  if (lab.options.peer) {
    const peerIP = peerAllowedIP.split('/')[0]!;
    say(`  ${peerIP.padEnd(12)} the Peer: ${route(lab, viewer.name, peerIP)}`);
  }

  const svg = lab.agentGet(viewer.name, '/graph?format=svg');
  if (svg.ok) {
    writeFileSync(graphFile, svg.body);
    say(
      `\ngraph (GET /graph?format=svg from ${viewer.name}'s agent): ${graphFile} (${(Buffer.byteLength(svg.body) / 1024).toFixed(0)} KiB)`,
    );
  } else say(`\ngraph: ${viewer.name}'s agent did not answer /graph: ${svg.body.trim()}`);
}

/** `ip route get`'s first line without what says nothing about the path (`uid 0`, trailing blanks). */
function route(lab: Lab, node: string, ip: string): string {
  return lab
    .routeGet(node, ip)
    .split('\n')[0]!
    .replace(/\s+uid \d+/, '')
    .trimEnd();
}
