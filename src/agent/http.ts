import { createServer, type Server } from 'node:http';
import type { Agent } from './agent.js';
import type { ClusterSource } from '../backend/source.js';
import type { AgentMetrics } from './metrics.js';
import { graphDOT, layouts, type Layout } from '../mesh/graph.js';
import { renderSVG } from '../graph/render.js';

export interface HttpDeps {
  agent: Agent;
  source: ClusterSource;
  metrics: AgentMetrics;
  /** The backend counts as out of sync after this long without a successful list or event. */
  staleAfterMs: number;
  clock?: () => number;
  /** Per-pair health: why the node is degraded (a planned path is down), or null. */
  paths?: { degraded(): string | null };
}

/** Why the node is unhealthy, or null. Kilo's /health always says 200; ours means something. */
export function healthProblem(d: HttpDeps): string | null {
  const now = (d.clock ?? Date.now)();
  const s = d.agent.status;
  if (s.reconciles === 0) return 'no reconcile has run yet';
  if (!s.lastReconcileOk) return `last reconcile failed: ${s.lastError ?? 'unknown error'}`;
  if (!d.source.synced()) return 'the cluster has not been read yet';
  const age = now - d.source.lastSync();
  if (age > d.staleAfterMs) return `no news from the cluster for ${Math.round(age / 1000)} s`;
  return null;
}

/** /health, /metrics and /graph on --listen. */
export function createAgentServer(d: HttpDeps): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const reply = (code: number, type: string, body: string) => {
      res.writeHead(code, { 'content-type': type });
      res.end(body);
    };
    const route = async () => {
      switch (url.pathname) {
        case '/health': {
          const problem = healthProblem(d);
          if (problem) return reply(503, 'text/plain', `${problem}\n`);
          // Degraded is still 200: the manifests' liveness probe reads /health, and restarting the
          // agent mends no path (docs/health.md).
          const degraded = d.paths?.degraded() ?? null;
          return reply(200, 'text/plain', degraded ? `degraded: ${degraded}\n` : 'ok\n');
        }
        case '/metrics':
          return reply(200, d.metrics.registry.contentType, await d.metrics.registry.metrics());
        case '/graph': {
          const t = d.agent.status.topology;
          if (!t) return reply(503, 'text/plain', 'no topology yet\n');
          const layoutParam = url.searchParams.get('layout') ?? 'dot';
          if (!(layouts as readonly string[]).includes(layoutParam))
            return reply(400, 'text/plain', `unknown layout ${JSON.stringify(layoutParam)}\n`);
          const layout = layoutParam as Layout;
          const dot = graphDOT(t, { layout });
          const format = url.searchParams.get('format') ?? 'dot';
          if (format === 'dot') return reply(200, 'text/vnd.graphviz', dot);
          if (format === 'svg') return reply(200, 'image/svg+xml', await renderSVG(dot, layout));
          return reply(400, 'text/plain', `unknown format ${JSON.stringify(format)} (dot or svg)\n`);
        }
        default:
          return reply(404, 'text/plain', 'not found\n');
      }
    };
    route().catch((e: unknown) => reply(500, 'text/plain', `${(e as Error).message}\n`));
  });
}

/** Parses Kilo's `--listen` (`:1107`, `0.0.0.0:1107`, `[::]:1107`). */
export function parseListen(value: string): { host: string | undefined; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  if (!m) return null;
  const port = Number(m[3]);
  if (port > 65535) return null;
  const host = m[1] ?? (m[2] || undefined);
  return { host, port };
}
