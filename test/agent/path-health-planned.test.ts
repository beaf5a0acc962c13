/**
 * PathHealth.planned keeps pair states by path and node and sweeps gone pairs only when some are
 * gone (issue 37: 19,000 targets per join at 20,000 nodes); what it says must be what the
 * implementation before it said (path-health-before.ts) over random topology changes: nodes
 * joining and leaving, moving location and LAN, losing pod CIDRs, relayed pairs (unreachable
 * annotations), the local node becoming a follower, handshakes read or not, the same topology
 * again, and probe rounds with random answers between.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Prober } from '../../src/agent/health-prober.js';
import { PathHealth } from '../../src/agent/path-health.js';
import type { Topology } from '../../src/mesh/topology.js';
import { Annotation } from '../../src/model/annotations.js';
import type { KubeObject } from '../../src/model/parse.js';
import { newPeerState, type WireGuardState } from '../../src/wireguard/state.js';
import { NOW, node, topologyFor, wgKey } from '../helpers/cluster.js';
import { random } from '../helpers/random.js';
import { PathHealthBefore } from './path-health-before.js';

interface Spec {
  present: boolean;
  location: number;
  /** Another LAN than its location's: a location mistake with its mates. */
  lan: number;
  pods: boolean;
  unreachable: string[];
  leader: boolean;
}

const names = Array.from({ length: 14 }, (_, i) => `n${String(i).padStart(2, '0')}`);

function objects(specs: Map<string, Spec>): KubeObject[] {
  const out: KubeObject[] = [];
  names.forEach((name, i) => {
    const s = specs.get(name)!;
    if (!s.present) return;
    out.push(
      node(name, {
        location: `loc${s.location}`,
        internalIP: `192.168.${s.location * 10 + s.lan}.${i + 1}/24`,
        endpoint: `198.18.${s.location}.${i + 1}:51820`,
        ...(s.pods ? { podCIDR: `10.42.${i}.0/24` } : {}),
        leader: s.leader,
        annotations: s.unreachable.length > 0 ? { [Annotation.unreachable]: s.unreachable.join(',') } : {},
      }),
    );
  });
  return out;
}

function side<T extends PathHealth | PathHealthBefore>(
  make: (o: ConstructorParameters<typeof PathHealth>[0]) => T,
  answer: (address: string) => boolean,
) {
  const said: string[] = [];
  const prober = new Prober(
    (a) => {
      said.push(`probe ${a}`);
      return Promise.resolve(answer(a));
    },
    { freshMs: 0 },
  );
  const health = make({
    prober,
    mesh: { encapsulate: 'never', local: true },
    log: {
      warn: (o, m) => said.push(`warn ${JSON.stringify(o)} ${m}`),
      info: (o, m) => said.push(`info ${JSON.stringify(o)} ${m}`),
    },
    onChange: () => said.push('changed'),
    observer: {
      probed: (path, ok) => said.push(`probed ${path} ${ok}`),
      judged: (s) => said.push(`judged ${JSON.stringify(s)}`),
    },
    clock: () => NOW * 1000,
    perRound: 3,
    failures: 2,
  });
  return { health, said };
}

for (const granularity of ['location', 'cross'] as const)
  for (let seed = 1; seed <= 12; seed++)
    test(`planned says what it said before: ${granularity}, seed ${seed}`, async () => {
      const r = random(seed * 7919 + (granularity === 'cross' ? 1 : 0));
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
      const specs = new Map<string, Spec>(
        names.map((n) => [
          n,
          {
            present: n === 'n00' || r() < 0.7,
            location: Math.floor(r() * 3),
            lan: 0,
            pods: true,
            unreachable: [],
            leader: false,
          },
        ]),
      );
      // Answers by address and step: both sides hear the same.
      let step = 0;
      const answers = new Map<string, boolean>();
      const answer = (a: string) => {
        const k = `${step} ${a}`;
        if (!answers.has(k)) answers.set(k, r() < 0.6);
        return answers.get(k)!;
      };
      const now = side((o) => new PathHealth(o), answer);
      const before = side((o) => new PathHealthBefore(o), answer);
      let topology: Topology | null = null;
      let published: string[] = [];
      let current: string | undefined;
      try {
        for (step = 0; step < 60; step++) {
          const change = r();
          if (topology === null || change < 0.8) {
            const s = specs.get(pick(names.slice(1)))!;
            const what = r();
            if (what < 0.35) s.present = !s.present;
            else if (what < 0.5) s.location = Math.floor(r() * 3);
            else if (what < 0.6) s.lan = s.lan === 0 ? 1 : 0;
            else if (what < 0.7) s.pods = !s.pods;
            else if (what < 0.85) s.unreachable = r() < 0.5 ? [] : [pick(names)];
            else if (what < 0.92) specs.get('n00')!.unreachable = r() < 0.5 ? [] : [pick(names.slice(1))];
            else s.leader = !s.leader;
            topology = topologyFor(objects(specs), 'n00', { granularity });
          }
          // change ≥ 0.8: the same topology again (a pass with no change but check-ins).
          const device: WireGuardState | null =
            r() < 0.5
              ? null
              : {
                  publicKey: null,
                  listenPort: 51820,
                  fwmark: 0,
                  peers: names
                    .filter(() => r() < 0.7)
                    .map((n) => ({
                      ...newPeerState(wgKey(n)),
                      latestHandshake: pick([0, NOW - 5, NOW - 200, NOW - 900]),
                    })),
                };
          now.health.planned(topology, device);
          before.health.planned(topology, device);
          const rounds = Math.floor(r() * 4);
          for (let i = 0; i < rounds; i++) {
            await now.health.round();
            await before.health.round();
          }
          const at = `${granularity} seed ${seed} step ${step}`;
          assert.deepEqual(now.health.summary(), before.health.summary(), at);
          assert.equal(now.health.degraded(), before.health.degraded(), at);
          assert.deepEqual(now.health.unreachable(), before.health.unreachable(), at);
          assert.deepEqual(now.health.unreachablePeers(published), before.health.unreachablePeers(published), at);
          assert.deepEqual(now.health.publishable(current), before.health.publishable(current), at);
          assert.deepEqual(now.said, before.said, at);
          current = now.health.publishable(current).value;
          published = now.health.unreachablePeers(published);
        }
      } finally {
        now.health.stop();
        before.health.stop();
      }
    });
