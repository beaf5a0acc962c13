import type { Plan } from '../../src/mesh/types.js';

/** The vector's expected plan, as its README defines it. */
export interface ExpectedPlan {
  leader: boolean;
  wireGuardIP: string | null;
  listenPort: number;
  peers: {
    publicKey: string;
    endpoint: string | null;
    allowedIPs: string[];
    persistentKeepalive: number;
    presharedKey: string | null;
  }[];
  routes: { dst: string; gw: string | null; dev: string; table: string | number; onlink: boolean }[];
  rules: { src: string | null; dst: string | null; table: number; iif: string | null }[];
}

const sorted = <T>(xs: T[]) => [...xs].sort();

/** Normalises a plan to the compared fields: sets become sorted arrays, `src` is dropped. */
export function comparable(p: ExpectedPlan | Plan) {
  return {
    leader: p.leader,
    wireGuardIP: p.wireGuardIP,
    listenPort: p.listenPort,
    peers: sorted(
      p.peers.map((x) =>
        JSON.stringify({
          publicKey: x.publicKey,
          endpoint: x.endpoint,
          allowedIPs: sorted(x.allowedIPs),
          persistentKeepalive: x.persistentKeepalive,
          presharedKey: x.presharedKey,
        }),
      ),
    ),
    routes: sorted(p.routes.map((r) => JSON.stringify([r.dst, r.gw, r.dev, r.table, r.onlink]))),
    rules: sorted(p.rules.map((r) => JSON.stringify([r.src, r.dst, r.table, r.iif]))),
  };
}
