import { request } from 'node:http';
import type { KubeObject } from '../../../src/model/parse.js';

const paths = { nodes: '/api/v1/nodes', peers: '/apis/kilo.squat.ai/v1alpha1/peers' } as const;
type Resource = keyof typeof paths;

/**
 * The lab's hand on its API server: plain Kubernetes REST calls over the server's Unix socket,
 * which is reachable from the host although the server listens inside the lab's internet.
 */
export class LabApiClient {
  constructor(private readonly socketPath: string) {}

  private call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const text = body === undefined ? '' : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          agent: false,
          method,
          path,
          headers: { 'content-type': contentType, 'content-length': Buffer.byteLength(text) },
          timeout: 10_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const out = Buffer.concat(chunks).toString('utf8');
            const parsed = out ? (JSON.parse(out) as unknown) : null;
            if ((res.statusCode ?? 500) >= 300) {
              reject(
                new Error(
                  `lab API server: ${method} ${path}: ${res.statusCode} ${(parsed as { message?: string } | null)?.message ?? out}`,
                ),
              );
            } else resolve(parsed);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`lab API server: ${method} ${path}: timed out`)));
      req.on('error', (e) => reject(new Error(`lab API server at ${this.socketPath}: ${e.message}`)));
      req.end(text);
    });
  }

  async list(resource: Resource): Promise<KubeObject[]> {
    const r = (await this.call('GET', paths[resource])) as { items: KubeObject[] };
    return r.items;
  }

  create(resource: Resource, obj: KubeObject): Promise<unknown> {
    return this.call('POST', paths[resource], obj);
  }

  delete(resource: Resource, name: string): Promise<unknown> {
    return this.call('DELETE', `${paths[resource]}/${encodeURIComponent(name)}`);
  }

  patch(resource: Resource, name: string, patch: unknown): Promise<unknown> {
    return this.call('PATCH', `${paths[resource]}/${encodeURIComponent(name)}`, patch, 'application/merge-patch+json');
  }

  /** Resolves once the server answers (it was just started). */
  async waitReady(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await this.list('nodes');
        return;
      } catch (e) {
        if (Date.now() > deadline)
          throw new Error(`the lab API server did not answer within ${timeoutMs} ms: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
}
