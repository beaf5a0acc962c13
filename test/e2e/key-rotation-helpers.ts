/**
 * The key rotation lab tests' tools (lab-key-rotation, lab-key-rotation-kilo): pings between pods with
 * their replies parsed as they come, what they lost and how late, and a rotation asked of a node and
 * waited for until every peer holds the new key.
 */
import type { ChildProcess } from 'node:child_process';
import type { Lab } from '../../packages/lab/src/lab.js';
import { inNs, spawnLines } from '../../packages/lab/src/sh.js';
import { eventually, wgPeers } from './lab-helpers.js';

export interface Pinger {
  pair: string;
  child: ChildProcess;
  /** icmp_seq → round trip (ms) of the replies seen. */
  replies: Map<number, number>;
  /** Requests sent, from ping's summary once it stopped (0 before). */
  transmitted: number;
}

/** `ping -i 0.1` from one pod to another, its replies parsed as they come. */
export function startPinger(ns: string, dst: string, pair: string): Pinger {
  const argv = inNs(ns, ['ping', '-n', '-i', '0.1', dst]);
  const p: Pinger = {
    pair,
    replies: new Map(),
    transmitted: 0,
    // Lines come only after this returns, so the callback sees p whole.
    child: spawnLines(argv, (l) => {
      const m = /icmp_seq=(\d+) .*time=([\d.]+) ms/.exec(l);
      if (m) p.replies.set(Number(m[1]), Number(m[2]));
      const sent = /(\d+) packets transmitted/.exec(l);
      if (sent) p.transmitted = Number(sent[1]);
    }),
  };
  return p;
}

/** Lost: the requests without a reply below the last one answered (those after it may be in flight). */
export function lossOf(p: Pinger): { lost: number; answered: number; maxRttMs: number; where: string } {
  // Up to the last request sent but one (which may still be on its way when ping stopped).
  const last = Math.max(0, p.transmitted - 1, ...p.replies.keys());
  const missing: number[] = [];
  for (let seq = 1; seq <= last; seq++) if (!p.replies.has(seq)) missing.push(seq);
  const slow = [...p.replies].filter(([, ms]) => ms > 100).map(([seq]) => seq);
  return {
    lost: missing.length,
    answered: p.replies.size,
    maxRttMs: Math.max(0, ...p.replies.values()),
    where: `lost ${ranges(missing)}; late ${ranges(slow)}`,
  };
}

/** 3,4,5,9 → "3-5,9": where in the run (icmp_seq, 10 a second) packets went missing. */
export function ranges(seqs: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < seqs.length;) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j]! + 1) j++;
    out.push(i === j ? `${seqs[i]}` : `${seqs[i]}-${seqs[j]}`);
    i = j + 1;
  }
  return out.join(',') || 'none';
}

export async function annotations(lab: Lab, name: string): Promise<Record<string, string>> {
  const n = (await lab.api.list('nodes')).find((o) => o.metadata?.name === name);
  return n?.metadata?.annotations ?? {};
}

/** Who holds a node as a WireGuard peer: the nodes of the other location (cross granularity). */
export const holders = (lab: Lab, name: string) =>
  lab.nodes.filter((n) => n.name.split('-')[0] !== name.split('-')[0]).map((n) => n.name);

export async function rotate(
  lab: Lab,
  name: string,
  request: string,
): Promise<{ from: string; to: string; ms: number; at: number }> {
  const from = (await annotations(lab, name))['kilo.squat.ai/key']!;
  const t0 = Date.now();
  await lab.api.patch('nodes', name, { metadata: { annotations: { 'kilo.squat.ai/rotate-key': request } } });
  let to = '';
  await eventually(`${name} rotated its key (request ${request}) and every peer holds the new one`, async () => {
    const a = await annotations(lab, name);
    if (a['kilo.squat.ai/key-rotated'] !== request || a['kilo.squat.ai/key'] === from) return false;
    to = a['kilo.squat.ai/key']!;
    return (
      holders(lab, name).every((h) => wgPeers(lab, h).includes(to)) &&
      lab.nodes.every((n) => !wgPeers(lab, n.name).includes(from))
    );
  });
  return { from, to, ms: Date.now() - t0, at: t0 };
}
