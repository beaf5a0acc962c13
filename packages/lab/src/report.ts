import { writeFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { NotConverged, type Lab } from './lab.js';
import { clusterLocations, describeLocation, natLocations } from './locations.js';
import { peerEndpoint } from './peer.js';
import { labFamilies } from './lab-families.js';
import { allPairs, formatMatrix, pingPairs, type Matrix } from './probe.js';
import { brokenLines, brokenPairs } from '../../../src/agent/health-status.js';
import { parsePathHealth } from '../../../src/agent/health-summary.js';
import { NodeType } from '../../../src/backend/source.js';
import { Annotation } from '../../../src/model/annotations.js';
import { parseCluster } from '../../../src/model/parse.js';
import { isNodeReady } from '../../../src/model/ready.js';

/**
 * What `up` and `show` show once the mesh works: the pod→pod matrix, how one node routes to a few
 * destinations (its own location over lan0, the others over kilo0) and the graph as SVG. While it
 * waits it says how far the mesh got (every 10 s; every 2 s with `verbose`). A mesh that does not
 * converge is a finding about the cluster: the pairs that never got through and where to look
 * next; the answer is false then (the command exits 1).
 */
export async function report(
  lab: Lab,
  graphFile: string,
  say: (line: string) => void,
  o: { verbose?: boolean; timeoutMs?: number } = {},
): Promise<boolean> {
  const timeoutMs = o.timeoutMs ?? 120_000;
  say(`waiting for the mesh (every pod pings every pod, up to ${timeoutMs / 1000} s)…`);
  let converged: Awaited<ReturnType<Lab['converge']>>;
  try {
    converged = await lab.converge(timeoutMs, { progress: say, progressEveryMs: o.verbose ? 2000 : 10_000 });
  } catch (e) {
    if (!(e instanceof NotConverged)) throw e;
    say(
      `\nthe mesh did not converge within ${e.timeoutMs / 1000} s: ${e.failing.length} of ${e.pairs} pairs never got through:`,
    );
    for (const pair of e.failing) say(`  ${pair}`);
    // Why, as kgctl status says it: from the nodes' published data and the agents' probes.
    const why = await whyBroken(lab).catch((err: unknown) => [
      `(the cluster could not be read: ${(err as Error).message})`,
    ]);
    say(`\nwhat kgctl status says (kgctl status --kubeconfig ${lab.kubeconfig}):`);
    for (const line of why) say(`  ${line}`);
    say(`\nnext: each agent's /health: ${invokedAs()} lab status --state-dir ${lab.state.dir}`);
    say(`      an agent's log: ${lab.nodeDir(lab.nodes[0]!.name)}/kg.log (and the other nodes' beside it)`);
    say(`      the cluster as the agents see it: kubectl --kubeconfig ${lab.kubeconfig} get nodes -o yaml`);
    return false;
  }
  const { matrix, ms } = converged;
  say(`converged in ${(ms / 1000).toFixed(1)} s\n`);
  say('pod → pod connectivity (ping from each pod namespace; the "peer" row and column: from and to the Peer):');
  say(formatMatrix([...matrix, ...(lab.options.peer ? await toPeer(lab) : [])]));

  // Locations as the cluster has them now (a node may have been moved), not as the lab was built.
  const locations = clusterLocations(await lab.api.list('nodes'));
  const nat = natLocations(lab.nodes, locations, new Set(lab.options.symmetricNatLocations));
  const at = (n: { name: string }) => locations.get(n.name) ?? '';
  const viewer = lab.nodes.find((n) => n.publicIP) ?? lab.nodes[0]!;
  const destinations = [
    ...lab.nodes.filter((n) => at(n) === at(viewer) && n !== viewer).slice(0, 1),
    ...[...new Set(lab.nodes.filter((n) => at(n) !== at(viewer)).map(at))].map((l) =>
      lab.nodes.find((n) => at(n) === l)!,
    ),
  ];
  say(`\nroutes on ${viewer.name} (location ${describeLocation(at(viewer), nat)}):`);
  for (const d of destinations) {
    const where = at(d) === at(viewer) ? 'same location' : `location ${describeLocation(at(d), nat)}`;
    say(`  ${d.podIP.padEnd(12)} pod of ${d.name} (${where}): ${route(lab, viewer.name, d.podIP)}`);
  }
  // A dual-stack pod's IPv6 address takes its own route: one destination shows it.
  const six = destinations[0]?.ipv6;
  if (six && six.podIP !== destinations[0]!.podIP)
    say(`  ${six.podIP.padEnd(12)} pod of ${destinations[0]!.name} (IPv6): ${route(lab, viewer.name, six.podIP)}`);
  if (lab.options.peer) {
    const peerIP = peerEndpoint(lab, labFamilies(lab.nodes)[0]).ip;
    say(`  ${peerIP.padEnd(12)} the Peer: ${route(lab, viewer.name, peerIP)}`);
  }

  const svg = lab.agentGet(viewer.name, '/graph?format=svg');
  if (svg.ok) {
    writeFileSync(graphFile, svg.body);
    say(
      `\ngraph (GET /graph?format=svg from ${viewer.name}'s agent): ${graphFile} (${(Buffer.byteLength(svg.body) / 1024).toFixed(0)} KiB)`,
    );
  } else say(`\ngraph: ${viewer.name}'s agent did not answer /graph: ${svg.body.trim()}`);
  return true;
}

/** kgctl status's broken pairs, computed the same way (agent/health-status.ts) from the lab's Nodes. */
async function whyBroken(lab: Lab): Promise<string[]> {
  // A list's items carry no kind: the parser reads Nodes by theirs.
  const objects = (await lab.api.list('nodes')).map((o) => ({ ...o, ...NodeType }));
  const now = Math.floor(Date.now() / 1000);
  const ready = parseCluster(objects, {}).nodes.filter((n) => isNodeReady(n, now));
  const summaries = new Map(
    objects.map((o) => [o.metadata?.name ?? '', parsePathHealth(o.metadata?.annotations?.[Annotation.pathHealth])]),
  );
  // The lab's agents route to location mates in the clear (--encapsulate=never, kilo-agent.ts).
  const mesh = { granularity: lab.options.granularity, encapsulate: 'never', local: true } as const;
  const { broken, total } = brokenPairs(ready, mesh, (name) => summaries.get(name) ?? null, 20);
  return brokenLines(broken, total);
}

/**
 * Pods → the Peer, for the matrix's "peer" column: measured here, once the mesh has converged, and
 * not in converge() (which waits for what the agents' convergence is timed by: replies from pods).
 */
export function toPeer(lab: Lab): Promise<Matrix> {
  const pods = lab.podEndpoints();
  const pairs = labFamilies(lab.nodes).flatMap((f) =>
    allPairs(
      pods.filter((e) => e.family === f),
      [peerEndpoint(lab, f)],
    ),
  );
  return pingPairs(pairs, { waitSeconds: 2 });
}

/** `ip route get`'s first line without what says nothing about the path (`uid 0`, trailing blanks). */
function route(lab: Lab, node: string, ip: string): string {
  return lab
    .routeGet(node, ip)
    .split('\n')[0]!
    .replace(/\s+uid \d+/, '')
    .trimEnd();
}

/** kg as the user can type it again: `bin/kg` from the repository, the full path elsewhere. */
export function invokedAs(): string {
  const script = process.argv[1] ?? 'kg';
  const rel = relative(process.cwd(), script);
  return rel.startsWith('..') || isAbsolute(rel) ? script : rel;
}
