/**
 * The Peer webhook's Prometheus metrics, named as Kilo's webhook names them so existing dashboards
 * keep working, and the plain-HTTP server that exposes them (`kg webhook --listen-metrics`).
 */
import { createServer, type Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Counter, Registry } from 'prom-client';

export class WebhookMetrics {
  /** Admission reviews answered, by operation and response (allowed or denied). */
  readonly admissions: Counter<'operation' | 'response'>;
  /** HTTP requests, by handler (path) and method. */
  readonly requests: Counter<'handler' | 'method'>;
  /** Requests that could not be answered with a review (bad body, server error). */
  readonly errors: Counter;

  /** A registry of its own, so the webhook never collides with the agent's metrics in one process. */
  constructor(readonly registry: Registry = new Registry()) {
    const registers = [registry];
    this.admissions = new Counter({
      name: 'admission_requests_total',
      help: 'The number of received admission reviews requests',
      labelNames: ['operation', 'response'],
      registers,
    });
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'The number of received http requests',
      labelNames: ['handler', 'method'],
      registers,
    });
    this.errors = new Counter({ name: 'errors_total', help: 'The total number of errors', registers });
  }
}

export interface RunningServer {
  readonly address: AddressInfo;
  close(): Promise<void>;
}

/** Serves GET /metrics over plain HTTP. */
export function serveMetrics(registry: Registry, host: string | undefined, port: number): Promise<RunningServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(e as Error).message}\n`),
    );
  });
  return listen(server, host, port);
}

/** Listens and resolves with the bound address; rejects when the address cannot be bound. */
export function listen(
  server: HttpServer | HttpsServer,
  host: string | undefined,
  port: number,
): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve({
        address: server.address() as AddressInfo,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
