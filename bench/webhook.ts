/**
 * `npm run bench:webhook`: the built `kg webhook` process under hostile and heavy clients. Prints
 * figures, asserts nothing: the status per class of input, review latency under 300 concurrent
 * clients, and what 1,000 idle TLS connections cost (they are closed by the header timeout while
 * others are served). Needs openssl. WEBHOOK_REVIEWS: reviews in the concurrency run (default 6000).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { connect as netConnect, createServer, type AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { webhookLimits } from '../src/agent/webhook.js';
import { wgKey } from '../test/helpers/cluster.js';
import { nodeCommand } from '../scripts/node-flags.mjs';

const root = join(import.meta.dirname, '..');
const reviews = Number(process.env['WEBHOOK_REVIEWS'] ?? 6000);
const concurrency = 300;
const idleConnections = 1000;

const dir = mkdtempSync(join(tmpdir(), 'kilo-bench-webhook-'));
const cert = join(dir, 'tls.crt');
const key = join(dir, 'tls.key');
const made = spawnSync(
  'openssl',
  [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'],
    ...['-subj', '/CN=kilo-peer-validation', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert],
  ],
  { encoding: 'utf8' },
);
if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
const ca = readFileSync(cert);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const port = await freePort();
const metricsPort = await freePort();
// kg as the image runs it: its #! line's environment and node flags (scripts/node-flags.mjs).
const [kgFile, ...kgArgs] = nodeCommand(join(root, 'bin', 'kg'));
const kg = spawn(
  kgFile,
  [
    ...kgArgs,
    'webhook',
    // The review path alone: no API server here to list Nodes from.
    '--check-pod-cidrs=false',
    `--cert-file=${cert}`,
    `--key-file=${key}`,
    `--listen=127.0.0.1:${port}`,
    `--listen-metrics=127.0.0.1:${metricsPort}`,
    '--log-level=warn',
  ],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
let stderr = '';
kg.stderr.on('data', (d: Buffer) => (stderr += d.toString()));

/** The server process's resident memory and open file descriptors. */
function usage(): { rssMiB: number; fds: number } {
  const status = readFileSync(`/proc/${kg.pid}/status`, 'utf8');
  const rss = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN) / 1024;
  return { rssMiB: Math.round(rss), fds: readdirSync(`/proc/${kg.pid}/fd`).length };
}

interface Reply {
  status: number;
  allowed?: boolean;
}

function post(body: string | Buffer, agent: Agent | false, contentType = 'application/json'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/validate',
        ca,
        agent,
        headers: { 'content-type': contentType },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const allowed =
            res.statusCode === 200
              ? (JSON.parse(text) as { response: { allowed: boolean } }).response.allowed
              : undefined;
          resolve({ status: res.statusCode ?? 0, ...(allowed === undefined ? {} : { allowed }) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** What a raw TLS client gets back (the status line) when it writes `text` and waits for the close. */
function raw(text: string, parts = 1): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = tlsConnect({ host: '127.0.0.1', port, ca }, () => {
      for (let i = 0; i < parts; i++) s.write(i === 0 ? text : `4000\r\n${'x'.repeat(0x4000)}\r\n`);
    });
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.on('error', () => {});
    s.on('close', () => resolve(/^HTTP\/1\.1 (\d+)/.exec(got)?.[1] ?? 'closed, no answer'));
  });
}

const review = (spec: unknown, operation = 'CREATE') =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'bench',
      operation,
      object: { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name: 'p' }, spec },
    },
  });
const good = review({ allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('bench') });
const bad = review({ allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('bench'), persistentKeepalive: -1 });
const withAllowedIP = (v: string) => good.replace('"10.5.0.1/32"', v);

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

try {
  for (let i = 0; ; i++) {
    const up = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').catch(() => '');
    if (up === '200') break;
    if (i > 600 || kg.exitCode !== null) throw new Error(`kg webhook did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`kg webhook (pid ${kg.pid}) at start: ${JSON.stringify(usage())}; load ${load()}\n`);

  console.log('## Status per class of input\n');
  console.log('| input | HTTP status | answer |');
  console.log('|---|---:|---|');
  const max = webhookLimits.maxBodyBytes;
  const classes: [string, () => Promise<Reply | string>][] = [
    ['valid Peer', () => post(good, false)],
    ['invalid Peer (keepalive -1)', () => post(bad, false)],
    ['allowed IP 0.0.0.0/0', () => post(withAllowedIP('"0.0.0.0/0"'), false)],
    ['allowed IP ::/0', () => post(withAllowedIP('"::/0"'), false)],
    [
      'allowed IP nested 50,000 deep',
      () => post(withAllowedIP(`${'['.repeat(5e4)}"10.5.0.1/32"${']'.repeat(5e4)}`), false),
    ],
    [
      'dnsOrIP.dns 5',
      () =>
        post(
          review({ allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('b'), endpoint: { dnsOrIP: { dns: 5 }, port: 1 } }),
          false,
        ),
    ],
    [
      'dnsOrIP.dns ["x"]',
      () =>
        post(
          review({
            allowedIPs: ['10.5.0.1/32'],
            publicKey: wgKey('b'),
            endpoint: { dnsOrIP: { dns: ['x'] }, port: 1 },
          }),
          false,
        ),
    ],
    [
      'dnsOrIP.dns "1.2.3.4.5"',
      () =>
        post(
          review({
            allowedIPs: ['10.5.0.1/32'],
            publicKey: wgKey('b'),
            endpoint: { dnsOrIP: { dns: '1.2.3.4.5' }, port: 1 },
          }),
          false,
        ),
    ],
    [
      'dnsOrIP.ip 5',
      () =>
        post(
          review({ allowedIPs: ['10.5.0.1/32'], publicKey: wgKey('b'), endpoint: { dnsOrIP: { ip: 5 }, port: 1 } }),
          false,
        ),
    ],
    ['DELETE', () => post(review(null, 'DELETE'), false)],
    ['not JSON', () => post('{"apiVersion": "adm', false)],
    ['JSON array 500,000 deep', () => post(`${'['.repeat(5e5)}${']'.repeat(5e5)}`, false)],
    ['AdmissionReview v1beta1', () => post(good.replace('admission.k8s.io/v1', 'admission.k8s.io/v1beta1'), false)],
    ['invented operation', () => post(good.replace('"CREATE"', '"PATCH"'), false)],
    ['Content-Type text/plain', () => post(good, false, 'text/plain')],
    [
      `Content-Length ${max + 1} (no body sent)`,
      () =>
        raw(
          `POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${max + 1}\r\n\r\n`,
        ),
    ],
    [
      'chunked body past the limit',
      () =>
        raw(
          'POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
          2 + max / 0x4000,
        ),
    ],
    ['64 KiB of headers', () => raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(65536)}\r\n\r\n`)],
    ['garbage request line', () => raw('\u0000\u0001 nonsense\r\n\r\n')],
  ];
  for (const [what, run] of classes) {
    const r = await run();
    const [status, answer] =
      typeof r === 'string'
        ? [r, '']
        : [String(r.status), r.allowed === undefined ? '' : r.allowed ? 'allowed' : 'denied'];
    console.log(`| ${what} | ${status} | ${answer} |`);
  }

  console.log(`\n## ${reviews} reviews from ${concurrency} concurrent keep-alive clients (half valid, half denied)\n`);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca });
  const latencies: number[] = [];
  const statuses = new Map<string, number>();
  let next = 0;
  let peak = usage();
  const sampler = setInterval(() => {
    const u = usage();
    if (u.rssMiB > peak.rssMiB) peak = { ...u };
  }, 100);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < reviews) {
        const i = next++;
        const t = performance.now();
        const r = await post(i % 2 ? bad : good, agent).catch((e: Error) => ({ status: 0, error: e.message }));
        latencies.push(performance.now() - t);
        const k = `${r.status}`;
        statuses.set(k, (statuses.get(k) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  console.log('| reviews/s | p50 ms | p99 ms | max ms | statuses | peak server RSS MiB | load |');
  console.log('|---:|---:|---:|---:|---|---:|---|');
  console.log(
    `| ${(reviews / seconds).toFixed(0)} | ${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.99).toFixed(1)} | ${latencies.at(-1)!.toFixed(1)} | ${[...statuses].map(([s, n]) => `${s}: ${n}`).join(', ')} | ${peak.rssMiB} | ${load()} |`,
  );

  console.log(`\n## ${idleConnections} idle TLS connections (handshake done, no request)\n`);
  // The clients' kept-alive connections close after the keep-alive timeout first.
  await new Promise((r) => setTimeout(r, webhookLimits.keepAliveTimeoutMs + 1000));
  const before = usage();
  const closedAt: number[] = [];
  const opened = performance.now();
  const sockets = await Promise.all(
    Array.from(
      { length: idleConnections },
      () =>
        new Promise<TLSSocket>((resolve) => {
          let connected = 0;
          const s = tlsConnect({ host: '127.0.0.1', port, ca }, () => {
            connected = performance.now();
            resolve(s);
          });
          s.on('error', () => {});
          // Flowing, so the server's 408 is read and its close seen.
          s.resume();
          s.on('close', () => closedAt.push(performance.now() - connected));
        }),
    ),
  );
  const handshakes = (performance.now() - opened) / 1000;
  const plainTcp = Array.from({ length: 100 }, () => netConnect(port, '127.0.0.1').on('error', () => {}));
  await new Promise((r) => setTimeout(r, 500));
  const held = usage();
  const during: number[] = [];
  let duringFailed = 0;
  for (let i = 0; i < 50; i++) {
    const t = performance.now();
    const r = await post(i % 2 ? bad : good, false).catch(() => ({ status: 0 }));
    if (r.status !== 200) duringFailed++;
    during.push(performance.now() - t);
  }
  during.sort((a, b) => a - b);
  const deadline = performance.now() + 3 * webhookLimits.headersTimeoutMs + 10_000;
  while (closedAt.length < idleConnections && performance.now() < deadline)
    await new Promise((r) => setTimeout(r, 200));
  closedAt.sort((a, b) => a - b);
  const after = usage();
  console.log('| | value |');
  console.log('|---|---|');
  console.log(`| server before | ${before.rssMiB} MiB RSS, ${before.fds} fds |`);
  console.log(
    `| server holding ${idleConnections} idle TLS + 100 idle TCP | ${held.rssMiB} MiB RSS, ${held.fds} fds |`,
  );
  console.log(
    `| 50 reviews meanwhile (new connection each) | p50 ${percentile(during, 0.5).toFixed(1)} ms, max ${during.at(-1)!.toFixed(1)} ms, failed ${duringFailed} |`,
  );
  console.log(
    `| idle TLS closed by the server | ${closedAt.length} of ${idleConnections} (all ${idleConnections} handshakes took ${handshakes.toFixed(1)} s); idle for ${((closedAt[0] ?? NaN) / 1000).toFixed(1)} to ${((closedAt.at(-1) ?? NaN) / 1000).toFixed(1)} s after their handshake (header timeout ${webhookLimits.headersTimeoutMs / 1000} s) |`,
  );
  console.log(
    `| plain TCP (no handshake) closed | ${plainTcp.filter((s) => s.destroyed || s.readableEnded).length} of 100 (handshake timeout ${webhookLimits.handshakeTimeoutMs / 1000} s) |`,
  );
  console.log(`| server after | ${after.rssMiB} MiB RSS, ${after.fds} fds |`);
  console.log(`| load | ${load()} |`);
  for (const s of sockets) s.destroy();
  for (const s of plainTcp) s.destroy();
  const warnings = stderr.split('\n').filter((l) => l !== '');
  const errors = warnings.filter((l) => /"level":(50|60)/.test(l)).length;
  const traces = warnings.filter((l) => /\\n\s+at |"stack"/.test(l)).length;
  console.log(
    `\nserver log: ${warnings.length} lines at warn or above, ${errors} at error, ${traces} with a stack trace`,
  );
} finally {
  kg.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
