import { STATUS_CODES, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { WatchClient } from './reflector.js';

/**
 * Kubernetes watches read the way the reflector needs them: each event is one line of JSON, cut
 * from the socket's buffers and parsed as it is, without client-node's `Watch` and its layers
 * (docs/performance.md#the-watch). The connection is the kubeconfig's as the client applies it
 * (server, TLS, credentials, proxy); the callbacks behave as `Watch`'s do: `done` once, with the
 * HTTP status as `statusCode` on a refused watch, null when the server ends the stream.
 */
export class LineWatch implements WatchClient {
  /**
   * @param readGapMs after each read of a watch's socket, the next waits this long (see paceReads).
   */
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly readGapMs = defaultReadGapMs,
  ) {}

  async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('No currently active cluster');
    const url = new URL(cluster.server + path);
    url.searchParams.set('watch', 'true');
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
    const options: RequestOptions = { method: 'GET' };
    await this.kubeConfig.applyToHTTPSOptions(options);

    const controller = new AbortController();
    let ended = false;
    const end = (err: unknown) => {
      if (ended) return;
      ended = true;
      controller.abort();
      done(err);
    };
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // Headers first, as Watch resolves: a refused watch has called `done` before this resolves.
    await new Promise<void>((resolve) => {
      let req: ClientRequest;
      try {
        req = request(url, { ...options, signal: controller.signal }, (res) => {
          resolve();
          if (res.statusCode === 200) {
            readLines(res, callback, end);
            paceReads(res, this.readGapMs);
          } else {
            res.resume();
            const status = res.statusCode ?? 500;
            end(
              Object.assign(new Error(res.statusMessage || STATUS_CODES[status] || 'Internal Server Error'), {
                statusCode: status,
              }),
            );
          }
        });
      } catch (e) {
        end(e);
        resolve();
        return;
      }
      // Watch's sockets are kept alive: a dead peer is noticed while the stream is silent.
      req.on('socket', (socket) => socket.setKeepAlive(true, 30_000));
      req.on('error', (e) => {
        end(e);
        resolve();
      });
      req.end();
    });
    return controller;
  }
}

/**
 * Every read of a socket wakes the process, and under a big cluster's heartbeats that is most of the
 * agent's CPU at rest (docs/performance.md#the-watch). So after each read the socket is left alone
 * for a moment (the kernel keeps what arrives) and the next read takes the events of that moment at
 * once. An event after a quiet spell is still read at once; under a stream of heartbeats a node
 * joining is read at most this much later.
 */
export const defaultReadGapMs = 40;

interface StreamHandle {
  readStart(): number;
  readStop(): number;
}

/**
 * Paces the reads of a response's socket: after each, reading stops for `gapMs` and then starts
 * again. Node has no public way to stop a socket's reads at once (`pause` stops only after its
 * buffer fills, 16 KiB here: seconds of heartbeats), so this uses the socket's handle (net's and
 * tls's both have readStart/readStop); without one the socket is read as it comes. The handle's
 * `reading` flag stays true, so Node does not start it meanwhile, and reads are started again
 * before the socket can go back to a keep-alive pool: at the response's end or close.
 */
function paceReads(res: IncomingMessage, gapMs: number): void {
  const socket = res.socket;
  const handle = (socket as unknown as { _handle?: Partial<StreamHandle> | null } | null)?._handle;
  if (gapMs <= 0 || !socket || typeof handle?.readStop !== 'function' || typeof handle.readStart !== 'function') return;
  const h = handle as StreamHandle;
  let timer: NodeJS.Timeout | null = null;
  const restart = () => {
    timer = null;
    if (!socket.destroyed) h.readStart();
  };
  const onData = () => {
    if (timer || socket.destroyed) return;
    h.readStop();
    timer = setTimeout(restart, gapMs);
  };
  const done = () => {
    socket.off('data', onData);
    if (timer) {
      clearTimeout(timer);
      restart();
    }
  };
  socket.on('data', onData);
  res.once('end', done);
  res.once('close', done);
}

/** Calls `callback` for each JSON line of the body (a line that is not JSON is skipped, as Watch does). */
function readLines(
  res: IncomingMessage,
  callback: (type: string, object: unknown) => void,
  end: (err: unknown) => void,
): void {
  let rest: Buffer | null = null;
  res.on('data', (chunk: Buffer) => {
    const data: Buffer = rest ? Buffer.concat([rest, chunk]) : chunk;
    let start = 0;
    for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
      if (nl > start) deliver(data.toString('utf8', start, nl), callback, end);
      start = nl + 1;
    }
    rest = start < data.length ? data.subarray(start) : null;
  });
  res.on('error', end);
  res.on('end', () => {
    if (rest) deliver(rest.toString('utf8'), callback, end);
    end(null);
  });
  res.on('close', () => end(null));
}

function deliver(line: string, callback: (type: string, object: unknown) => void, end: (err: unknown) => void): void {
  let event: { type?: unknown; object?: unknown };
  try {
    event = JSON.parse(line) as { type?: unknown; object?: unknown };
  } catch {
    return;
  }
  // A listener's bug ends this watch with an error (the reflector logs it and watches again)
  // rather than the process.
  try {
    callback(String(event.type), event.object);
  } catch (e) {
    end(e);
  }
}
