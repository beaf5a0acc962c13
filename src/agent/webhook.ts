/**
 * The HTTPS server of the Peer validating admission webhook (`kg webhook`). The API server posts
 * an AdmissionReview v1 to /validate for every Peer CREATE and UPDATE; /healthz answers probes.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { silentLogger, type Logger } from '../backend/source.js';
import { UsageError } from '../model/errors.js';
import { reviewPeerAdmission } from './admission.js';
import { listen, type RunningServer, WebhookMetrics } from './webhook-metrics.js';

export interface WebhookOptions {
  /** PEM certificate (chain) the API server verifies against the caBundle. */
  certFile: string;
  keyFile: string;
  /** undefined: every address. */
  host?: string;
  /** 0: any free port (tests). */
  port: number;
  /** `kg webhook` passes agent/log.ts's logger, at its --log-level. */
  log?: Logger;
  metrics?: WebhookMetrics;
  /** Larger bodies get 413. The API server's requests are at most 3 MiB. */
  maxBodyBytes?: number;
}

export const validatePath = '/validate';
export const healthPath = '/healthz';

function readPem(kind: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new UsageError(
      `cannot read ${kind} file ${JSON.stringify(path)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners('data');
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, code: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) }).end(body);
}

/** Starts the webhook; the certificate and key are read once, at start. */
export async function startWebhook(options: WebhookOptions): Promise<RunningServer> {
  const cert = readPem('certificate', options.certFile);
  const key = readPem('key', options.keyFile);
  const log = options.log ?? silentLogger;
  const metrics = options.metrics ?? new WebhookMetrics();
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;

  const bad = (res: ServerResponse, code: number, message: string, source: string | undefined) => {
    metrics.errors.inc();
    log.warn({ source, code, reason: message }, 'rejected a request that is not an admission review');
    reply(res, code, `${message}\n`);
  };

  async function validate(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const source = req.socket.remoteAddress;
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      // Drain, so the client sees our answer instead of a reset connection.
      req.resume();
      bad(
        res,
        415,
        `want Content-Type application/json, got ${JSON.stringify(req.headers['content-type'] ?? '')}`,
        source,
      );
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, maxBody);
    } catch (e) {
      if (e instanceof BodyTooLarge) {
        res.setHeader('connection', 'close');
        bad(res, 413, `request body larger than ${maxBody} bytes`, source);
        return;
      }
      throw e;
    }
    let decoded: unknown;
    try {
      decoded = JSON.parse(body.toString('utf8'));
    } catch (e) {
      bad(res, 400, `request body is not JSON: ${(e as Error).message}`, source);
      return;
    }
    const review = reviewPeerAdmission(decoded);
    if (!review.ok) {
      bad(res, 400, review.message, source);
      return;
    }
    const { allowed, status } = review.review.response;
    metrics.admissions.inc({ operation: review.operation, response: allowed ? 'allowed' : 'denied' });
    if (allowed) log.debug({ operation: review.operation, peer: review.peer }, 'allowed Peer');
    else log.info({ operation: review.operation, peer: review.peer, reason: status?.message }, 'denied Peer');
    reply(res, 200, JSON.stringify(review.review), 'application/json');
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '').split('?')[0]!;
    metrics.requests.inc({
      handler: path === validatePath || path === healthPath ? path : 'other',
      method: req.method ?? '',
    });
    if (path === healthPath) {
      reply(res, 200, 'ok\n');
      return;
    }
    if (path !== validatePath) {
      reply(res, 404, 'not found\n');
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      reply(res, 405, 'method not allowed: POST an AdmissionReview\n');
      return;
    }
    validate(req, res).catch((e: unknown) => {
      // A bug must cost one request, never the webhook: the API server fails Peer writes while it is down.
      metrics.errors.inc();
      log.error({ err: e }, 'admission review failed');
      if (!res.headersSent) reply(res, 500, 'internal error\n');
      else res.destroy();
    });
  }

  let server: Server;
  try {
    server = createServer({ cert, key, minVersion: 'TLSv1.2' }, handle);
  } catch (e) {
    throw new UsageError(
      `certificate file ${JSON.stringify(options.certFile)} and key file ${JSON.stringify(options.keyFile)} are not a usable pair: ${(e as Error).message}`,
    );
  }
  server.on('tlsClientError', (e) => log.debug({ err: e.message }, 'TLS handshake failed'));
  return listen(server, options.host, options.port);
}
