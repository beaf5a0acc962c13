/**
 * The HTTPS server of the Peer validating admission webhook (`kg webhook`). The API server posts
 * an AdmissionReview v1 to /validate for every Peer CREATE and UPDATE; /healthz answers probes.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { silentLogger, type Logger } from '../backend/source.js';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { oneLine, showValue, UsageError } from '../model/errors.js';
import { reviewPeerAdmission } from './admission.js';
import type { NodePodCIDRs } from './webhook-nodes.js';
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
  /** Overrides of webhookLimits (tests shorten the timeouts). */
  limits?: Partial<WebhookLimits>;
  /**
   * The Nodes' pod CIDRs (`--check-pod-cidrs`): a Peer overlapping one is refused. Absent: not
   * checked (the agents drop such a claim). Before the first list of Nodes, Peers are admitted
   * without it and each such admission is logged (docs/kg.md#webhook).
   */
  nodes?: NodePodCIDRs;
}

/**
 * What one client may cost the webhook. The API server sends one review of at most 3 MiB and gives
 * up after its timeoutSeconds (at most 30 s): anything slower or larger is not the API server.
 */
export interface WebhookLimits {
  /** Larger bodies get 413: by Content-Length before a byte is read, or when a chunked body passes it. */
  maxBodyBytes: number;
  /** A TLS handshake not done by then is dropped. */
  handshakeTimeoutMs: number;
  /** Request headers not complete by then (an idle connection included) get 408 and a close. */
  headersTimeoutMs: number;
  /** A whole request (headers and body) not received by then gets 408 and a close. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** How often the header and request timeouts are checked. */
  checkIntervalMs: number;
}

export const webhookLimits: WebhookLimits = {
  maxBodyBytes: 4 * 1024 * 1024,
  handshakeTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

/** A 400 or 415 answer quotes the request: a few lines' worth, never the body back. */
const maxReasonLength = 512;

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
/** The client closed the connection or reset it before its body was complete. */
class ClientGone extends Error {}

/** Reads a body of at most `max` bytes; stops reading at the first byte past it. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.pause();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => reject(new ClientGone()));
    req.on('close', () => {
      if (!req.complete) reject(new ClientGone());
    });
  });
}

function reply(res: ServerResponse, code: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) }).end(body);
}

/** The status line Node would send for a request it could not parse or that took too long. */
function clientErrorStatus(e: NodeJS.ErrnoException): string {
  switch (e.code) {
    case 'HPE_HEADER_OVERFLOW':
      return '431 Request Header Fields Too Large';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return '408 Request Timeout';
    default:
      return '400 Bad Request';
  }
}

/** Starts the webhook; the certificate and key are read once, at start. */
export async function startWebhook(options: WebhookOptions): Promise<RunningServer> {
  const cert = readPem('certificate', options.certFile);
  const key = readPem('key', options.keyFile);
  const log = options.log ?? silentLogger;
  const metrics = options.metrics ?? new WebhookMetrics();
  const limits = { ...webhookLimits, ...options.limits };
  const maxBody = limits.maxBodyBytes;

  const bad = (res: ServerResponse, code: number, message: string, source: string | undefined) => {
    metrics.errors.inc();
    const reason = oneLine(message, maxReasonLength);
    log.warn({ source, code, reason }, 'rejected a request that is not an admission review');
    if (code === 413 || code === 415) res.setHeader('connection', 'close');
    reply(res, code, `${reason}\n`);
  };

  async function validate(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const source = req.socket.remoteAddress;
    // Both refused before a byte of the body is read; the connection closes after the answer.
    const declared = Number(req.headers['content-length']);
    if (declared > maxBody) {
      bad(res, 413, `request body of ${declared} bytes is larger than ${maxBody} bytes`, source);
      return;
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      bad(res, 415, `want Content-Type application/json, got ${showValue(req.headers['content-type'] ?? '')}`, source);
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, maxBody);
    } catch (e) {
      if (e instanceof BodyTooLarge) {
        bad(res, 413, `request body larger than ${maxBody} bytes`, source);
        return;
      }
      if (e instanceof ClientGone) {
        // The API server gave up (its timeout) or a client went away: nobody to answer. The
        // server's clientError (below) has logged it, once.
        metrics.errors.inc();
        return;
      }
      throw e;
    }
    let decoded: unknown;
    try {
      decoded = JSON.parse(body.toString('utf8'));
    } catch (e) {
      bad(res, 400, `request body is not JSON: ${oneLine(e, 200)}`, source);
      return;
    }
    const nodes = options.nodes;
    const listed = nodes?.synced() ?? false;
    const review = reviewPeerAdmission(decoded, listed ? (name, spec) => nodes!.overlaps(name, spec) : undefined);
    if (!review.ok) {
      bad(res, 400, review.message, source);
      return;
    }
    const { allowed, status } = review.review.response;
    if (nodes && !listed && allowed && review.peer !== '')
      log.warn(
        { operation: review.operation, peer: review.peer },
        "allowed Peer without checking the Nodes' pod CIDRs: the Nodes are not listed yet (the agents drop an overlapping allowed IP)",
      );
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
      log.error(
        { source: req.socket.remoteAddress, error: oneLine(e, 200) },
        'admission review failed: a bug (the trace is logged at debug)',
      );
      log.debug({ err: e }, 'admission review failed');
      if (!res.headersSent) reply(res, 500, 'internal error\n');
      else res.destroy();
    });
  }

  let server: Server;
  try {
    server = createServer(
      {
        cert,
        key,
        minVersion: 'TLSv1.2',
        handshakeTimeout: limits.handshakeTimeoutMs,
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: limits.checkIntervalMs,
      },
      handle,
    );
  } catch (e) {
    throw new UsageError(
      `certificate file ${JSON.stringify(options.certFile)} and key file ${JSON.stringify(options.keyFile)} are not a usable pair: ${(e as Error).message}`,
    );
  }
  server.on('tlsClientError', (e) => log.debug({ error: oneLine(e, 200) }, 'TLS handshake failed'));
  // Node's own answer (400, 408, 431, or nothing to a reset), logged once at debug: a client that
  // idles, times out or sends garbage is the client's problem, never a stack trace in the log.
  server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) => {
    log.debug(
      { source: (socket as TLSSocket).remoteAddress, error: e.code ?? oneLine(e, 200) },
      'dropped a connection',
    );
    if (socket.writable && e.code !== 'ECONNRESET')
      socket.write(`HTTP/1.1 ${clientErrorStatus(e)}\r\nConnection: close\r\n\r\n`);
    socket.destroy();
  });
  return listen(server, options.host, options.port);
}
