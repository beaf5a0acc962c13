/**
 * The Peer validating webhook over real TLS: a self-signed certificate made with openssl, the
 * server on 127.0.0.1, AdmissionReview v1 requests as the API server sends them.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { startWebhook } from '../../src/agent/webhook.js';
import type { Logger } from '../../src/backend/source.js';
import { WebhookMetrics, type RunningServer } from '../../src/agent/webhook-metrics.js';
import { parseListenAddress } from '../../src/cli/webhook.js';
import { UsageError } from '../../src/model/errors.js';
import { ensureBuilt, root } from '../cli/built.js';
import { wgKey } from '../helpers/cluster.js';
import { badPeers, goodPeers, hostilePeers } from './peer-examples.js';
import { skipUnless } from '../helpers/requirements.js';
import { nodeCommand } from '../../scripts/node-flags.mjs';
import { makeCertificate } from './webhook-tls.js';

// kg as the image runs it: its #! line's environment and node flags (scripts/node-flags.mjs).
const [kgFile, ...kgArgs] = nodeCommand(join(root, 'bin', 'kg'));

const noOpenssl = skipUnless(spawnSync('openssl', ['version']).status === 0, 'needs the openssl command');

let dir = '';
let certFile = '';
let keyFile = '';
let ca: Buffer;

interface Reply {
  status: number;
  contentType: string;
  text: string;
}

function send(
  port: number,
  method: string,
  path: string,
  body?: string | Buffer,
  contentType = 'application/json',
  trust: Buffer | null = ca,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        ca: trust ?? undefined,
        headers: body === undefined ? {} : { 'content-type': contentType },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function getPlain(port: number, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    })
      .on('error', reject)
      .end();
  });
}

function peerObject(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'kilo.squat.ai/v1alpha1', kind: 'Peer', metadata: { name }, spec };
}

function admissionReview(uid: string, object: unknown, operation = 'CREATE') {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'kilo.squat.ai', version: 'v1alpha1', kind: 'Peer' },
      resource: { group: 'kilo.squat.ai', version: 'v1alpha1', resource: 'peers' },
      name: (object as { metadata?: { name?: string } } | null)?.metadata?.name ?? '',
      operation,
      userInfo: { username: 'admin' },
      object,
      oldObject: null,
      dryRun: false,
    },
  };
}

interface ReviewOut {
  apiVersion: string;
  kind: string;
  response: { uid: string; allowed: boolean; status?: { code: number; message: string } };
}

async function validate(port: number, review: unknown): Promise<ReviewOut> {
  const r = await send(port, 'POST', '/validate', JSON.stringify(review));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.contentType, 'application/json');
  return JSON.parse(r.text) as ReviewOut;
}

/** Every log line the webhook writes, as JSON text, to check what it says and never says. */
const logged: string[] = [];
const log: Logger = {
  debug: (f, m) => logged.push(JSON.stringify({ ...f, m })),
  info: (f, m) => logged.push(JSON.stringify({ ...f, m })),
  warn: (f, m) => logged.push(JSON.stringify({ ...f, m })),
  error: (f, m) => logged.push(JSON.stringify({ ...f, m })),
};

describe('kg webhook: Peer validation over HTTPS', { skip: noOpenssl }, () => {
  let server: RunningServer | undefined;
  let port = 0;
  const metrics = new WebhookMetrics();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kilo-webhook-'));
    ({ cert: certFile, key: keyFile } = makeCertificate(dir, 'server'));
    ca = readFileSync(certFile);
    server = await startWebhook({
      certFile,
      keyFile,
      host: '127.0.0.1',
      port: 0,
      log,
      metrics,
      limits: { maxBodyBytes: 64 * 1024 },
    });
    port = server.address.port;
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a valid Peer is allowed, with the request uid echoed and no status', async () => {
    for (const [i, p] of goodPeers.entries()) {
      const uid = `0b8f5c4e-good-${i}`;
      const out = await validate(port, admissionReview(uid, peerObject(p.name, p.spec)));
      assert.equal(out.apiVersion, 'admission.k8s.io/v1');
      assert.equal(out.kind, 'AdmissionReview');
      assert.deepEqual(out.response, { uid, allowed: true }, p.name);
    }
  });

  test('an invalid Peer is refused with code 400 and a reason naming the Peer, the field and the value', async () => {
    for (const [i, p] of [...badPeers, ...hostilePeers].entries()) {
      const uid = `7d1c0a2e-bad-${i}`;
      const out = await validate(port, admissionReview(uid, peerObject(p.name, p.spec)));
      assert.equal(out.response.uid, uid);
      assert.equal(out.response.allowed, false, p.name);
      assert.equal(out.response.status?.code, 400, p.name);
      const message = out.response.status?.message ?? '';
      assert.ok(message.includes(`Peer "${p.name}"`), `${p.name}: ${message}`);
      assert.ok(message.includes(`field ${p.field}:`), `${p.name}: want field ${p.field} in ${message}`);
      assert.ok(
        message.endsWith(`: ${p.value}`) || message.includes(`: ${p.value};`),
        `${p.name}: want value ${p.value} in ${message}`,
      );
    }
  });

  test('an UPDATE is validated like a CREATE', async () => {
    const bad = badPeers.find((p) => p.name === 'bad-cidr')!;
    const out = await validate(port, admissionReview('upd-1', peerObject(bad.name, bad.spec), 'UPDATE'));
    assert.equal(out.response.allowed, false);
    assert.match(out.response.status?.message ?? '', /spec\.allowedIPs\[1\]/);
  });

  test('every problem of a Peer is named in one refusal', async () => {
    const out = await validate(
      port,
      admissionReview('many', peerObject('many', { allowedIPs: ['bogus'], publicKey: 'x', persistentKeepalive: -1 })),
    );
    const message = out.response.status?.message ?? '';
    for (const field of ['spec.allowedIPs[0]', 'spec.publicKey', 'spec.persistentKeepalive'])
      assert.ok(message.includes(`field ${field}:`), message);
  });

  test('a malformed preshared key is refused without echoing it, in the response or the log', async () => {
    const secret = 'my-secret-psk-that-is-not-base64';
    logged.length = 0;
    const out = await validate(
      port,
      admissionReview(
        'psk',
        peerObject('psk', { allowedIPs: ['10.5.0.9/32'], publicKey: wgKey('psk'), presharedKey: secret }),
      ),
    );
    assert.equal(out.response.allowed, false);
    assert.match(out.response.status?.message ?? '', /field spec\.presharedKey:/);
    assert.ok(!JSON.stringify(out).includes(secret), 'secret in the response');
    assert.ok(logged.length > 0, 'the refusal is logged');
    assert.ok(!logged.join('\n').includes(secret), 'secret in the log');
  });

  test('an object that is not a kilo.squat.ai Peer is refused, naming what it got', async () => {
    const out = await validate(
      port,
      admissionReview('node', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec: {} }),
    );
    assert.equal(out.response.allowed, false);
    assert.match(out.response.status?.message ?? '', /"v1" "Node"/);
  });

  test('a DELETE (no object) is allowed', async () => {
    const out = await validate(port, admissionReview('del', null, 'DELETE'));
    assert.deepEqual(out.response, { uid: 'del', allowed: true });
  });

  test('a malformed request gets 400 with the reason (one short line), and the server keeps serving', async () => {
    const deep = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
    const cases: [string, string | Buffer, RegExp][] = [
      ['truncated JSON', '{"apiVersion": "admission.k8s.io/v1", "kind": "Adm', /not JSON/],
      ['not UTF-8 JSON', Buffer.from([0xff, 0xfe, 0x00, 0x7b]), /not JSON/],
      ['a JSON array', '[1, 2]', /not a JSON object/],
      [
        'AdmissionReview v1beta1',
        JSON.stringify({ ...admissionReview('x', {}), apiVersion: 'admission.k8s.io/v1beta1' }),
        /admission\.k8s\.io\/v1beta1/,
      ],
      ['no request', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }), /no request/],
      ['no uid', JSON.stringify(admissionReview('', peerObject('p', goodPeers[0]!.spec))), /request\.uid/],
      ['CREATE without an object', JSON.stringify(admissionReview('u', null)), /request\.object/],
      [
        'no operation',
        JSON.stringify(admissionReview('u', null, 'DELETE')).replace('"operation":"DELETE",', ''),
        /operation/,
      ],
      ['an invented operation', JSON.stringify(admissionReview('u', null, 'x'.repeat(10_000))), /operation.*x…/],
      [
        'a uid nested 30,000 deep',
        `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":${deep}}}`,
        /uid/,
      ],
      ['an apiVersion nested 30,000 deep', `{"apiVersion":${deep}}`, /apiVersion \[\[\[\[…\]\]\]\]/],
      [
        'a kind of 60,000 characters',
        JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'K'.repeat(60_000) }),
        /kind "K+…"/,
      ],
      ['an array 30,000 deep', deep, /not a JSON object/],
    ];
    for (const [what, body, reason] of cases) {
      const r = await send(port, 'POST', '/validate', body);
      assert.equal(r.status, 400, what);
      assert.match(r.text, reason, what);
      assert.ok(
        r.text.length <= 600 && r.text.trimEnd().split('\n').length === 1,
        `${what}: ${r.text.length} characters`,
      );
    }
    const health = await send(port, 'GET', '/healthz');
    assert.equal(health.status, 200);
  });

  test('a body that is not declared JSON gets 415; a body over the limit gets 413', async () => {
    const review = JSON.stringify(admissionReview('t', peerObject('p', goodPeers[0]!.spec)));
    const wrongType = await send(port, 'POST', '/validate', review, 'text/plain');
    assert.equal(wrongType.status, 415);
    assert.match(wrongType.text, /text\/plain/);
    const big = peerObject('big', { ...goodPeers[0]!.spec, padding: 'x'.repeat(128 * 1024) });
    const tooLarge = await send(port, 'POST', '/validate', JSON.stringify(admissionReview('big', big)));
    assert.equal(tooLarge.status, 413);
  });

  test('/healthz answers 200; other paths 404; GET /validate 405', async () => {
    const health = await send(port, 'GET', '/healthz');
    assert.deepEqual([health.status, health.text], [200, 'ok\n']);
    assert.equal((await send(port, 'GET', '/metrics')).status, 404);
    assert.equal((await send(port, 'GET', '/validate')).status, 405);
  });

  test('a client that does not trust the certificate cannot talk to it', async () => {
    await assert.rejects(
      send(port, 'GET', '/healthz', undefined, 'application/json', null),
      (e: NodeJS.ErrnoException) => {
        assert.match(String(e.code), /SELF_SIGNED|UNABLE_TO_VERIFY/);
        return true;
      },
    );
  });

  test('metrics count reviews by operation and response, and bad requests as errors', async () => {
    const value = async (name: string, labels: Record<string, string> = {}) => {
      const got = await metrics.registry.getSingleMetric(name)!.get();
      return got.values
        .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
        .reduce((s, v) => s + v.value, 0);
    };
    const before = {
      allowed: await value('admission_requests_total', { operation: 'CREATE', response: 'allowed' }),
      denied: await value('admission_requests_total', { operation: 'UPDATE', response: 'denied' }),
      errors: await value('errors_total'),
    };
    await validate(port, admissionReview('m1', peerObject('m1', goodPeers[0]!.spec)));
    await validate(port, admissionReview('m2', peerObject('m2', badPeers[0]!.spec), 'UPDATE'));
    await send(port, 'POST', '/validate', 'nope');
    assert.equal(
      await value('admission_requests_total', { operation: 'CREATE', response: 'allowed' }),
      before.allowed + 1,
    );
    assert.equal(
      await value('admission_requests_total', { operation: 'UPDATE', response: 'denied' }),
      before.denied + 1,
    );
    assert.equal(await value('errors_total'), before.errors + 1);
  });
});

/** What a raw TLS client saw: every byte the server sent, and whether the server closed the connection. */
interface RawOutcome {
  text: string;
  closed: boolean;
}

/**
 * A TLS client that writes `parts` (each after `gapMs`), then waits for the server to close the
 * connection, for at most `waitMs`; `abortAfterMs` resets it instead, as a client giving up.
 */
function rawTls(
  port: number,
  parts: (string | Buffer)[],
  { waitMs = 30_000, gapMs = 0, abortAfterMs }: { waitMs?: number; gapMs?: number; abortAfterMs?: number } = {},
): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closed });
    };
    const timer = setTimeout(() => finish(false), abortAfterMs ?? waitMs);
    const write = async () => {
      for (const p of parts) {
        if (socket.destroyed) return;
        socket.write(p);
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
      }
    };
    const socket = tlsConnect({ host: '127.0.0.1', port, ca }, () => void write());
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

const headers = (extra: string) =>
  `POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}\r\n`;

describe('kg webhook: hostile and broken clients', { skip: noOpenssl }, () => {
  let server: RunningServer | undefined;
  let port = 0;
  const lines: { level: string; text: string }[] = [];
  const at =
    (level: string) =>
    (f: object, m: string): void => {
      lines.push({ level, text: JSON.stringify({ ...f, m }) });
    };
  const hostileLog: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  const maxBodyBytes = 256 * 1024;
  let hostileDir = '';

  before(async () => {
    hostileDir = mkdtempSync(join(tmpdir(), 'kilo-webhook-hostile-'));
    const { cert: certFile, key: keyFile } = makeCertificate(hostileDir, 'hostile');
    ca = readFileSync(certFile);
    // Short timeouts so the test does not wait for the real ones; checked every 100 ms.
    server = await startWebhook({
      certFile,
      keyFile,
      host: '127.0.0.1',
      port: 0,
      log: hostileLog,
      limits: {
        maxBodyBytes,
        handshakeTimeoutMs: 1000,
        headersTimeoutMs: 1000,
        requestTimeoutMs: 2000,
        checkIntervalMs: 100,
      },
    });
    port = server.address.port;
  });
  after(async () => {
    await server?.close();
    if (hostileDir) rmSync(hostileDir, { recursive: true, force: true });
  });

  test('a declared Content-Length over the limit gets 413 before a byte of the body is sent', async () => {
    // The body is never written: the answer can only come from the header.
    const r = await rawTls(port, [headers(`Content-Length: ${maxBodyBytes + 1}\r\n`)]);
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.match(r.text, /larger than 262144 bytes/);
    assert.ok(r.closed, 'the connection is closed after the 413');
  });

  test('a chunked body is cut at the limit with 413', async () => {
    const chunk = 'x'.repeat(16 * 1024);
    const parts = [headers('Transfer-Encoding: chunked\r\n')];
    for (let i = 0; i < 17; i++) parts.push(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    const r = await rawTls(port, parts);
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.ok(r.closed);
  });

  test('idle, half-sent and slow requests are answered 408 and closed; others are served meanwhile', async () => {
    const idle = rawTls(port, []);
    const halfHeaders = rawTls(port, ['POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\n']);
    const slowBody = rawTls(port, [headers('Content-Length: 100\r\n'), '{']);
    const noHandshake = new Promise<boolean>((resolve) => {
      const s = netConnect(port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => resolve(true));
    });
    // While they hang, a real review is answered.
    const out = await validate(port, admissionReview('during', peerObject('p', goodPeers[0]!.spec)));
    assert.equal(out.response.allowed, true);
    for (const [what, r] of [
      ['idle', await idle],
      ['half headers', await halfHeaders],
      ['slow body', await slowBody],
    ] as const) {
      assert.ok(r.closed, `${what}: closed by the server`);
      assert.match(r.text, /^HTTP\/1\.1 408 /, what);
    }
    assert.ok(await noHandshake, 'a TCP connection that never starts TLS is closed');
  });

  test('a client that gives up mid-body is logged once, at debug, and the server goes on', async () => {
    lines.length = 0;
    const r = await rawTls(port, [headers('Content-Length: 1000\r\n'), '{"apiVersion":'], { abortAfterMs: 300 });
    assert.equal(r.text, '', 'nothing to answer');
    // The server sees the reset a moment later; a request after it is ordered behind it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await send(port, 'GET', '/healthz')).status, 200);
    assert.deepEqual(
      lines.map((l) => l.level),
      ['debug'],
      JSON.stringify(lines),
    );
  });

  test('a Peer whose allowed IP is nested 100,000 deep is refused, not a 500', async () => {
    const text = JSON.stringify(
      admissionReview('deep', peerObject('deep', { allowedIPs: ['@'], publicKey: wgKey('deep') })),
    );
    const deep = text.replace('"@"', `${'['.repeat(100_000)}"10.5.0.1/32"${']'.repeat(100_000)}`);
    const r = await send(port, 'POST', '/validate', deep);
    assert.equal(r.status, 200);
    const out = JSON.parse(r.text) as ReviewOut;
    assert.equal(out.response.allowed, false);
    assert.match(out.response.status!.message, /field spec\.allowedIPs\[0\]: want string: \[\[\[\[…\]\]\]\]$/);
  });

  test('a denial lists every problem but stays short; nothing was logged above warn, no stack trace', async () => {
    const spec: Record<string, unknown> = { allowedIPs: ['x'.repeat(5000)], publicKey: 'y'.repeat(5000) };
    spec['endpoint'] = { dnsOrIP: { dns: 'z'.repeat(5000) }, port: -1 };
    spec['persistentKeepalive'] = 'w'.repeat(5000);
    const out = await validate(port, admissionReview('long', peerObject('n'.repeat(250), spec)));
    assert.equal(out.response.allowed, false);
    assert.ok(out.response.status!.message.length <= 1025, `${out.response.status!.message.length} characters`);
    assert.ok(lines.length > 0);
    assert.ok(
      lines.every((l) => l.level !== 'error' && !/\n\s+at |"stack"/.test(l.text)),
      JSON.stringify(lines.filter((l) => l.level === 'error')),
    );
  });
});

describe('kg webhook: start-up errors', { skip: noOpenssl }, () => {
  let tmp = '';
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'kilo-webhook-bad-'));
  });
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('a missing certificate file is a user error naming the file', async () => {
    const missing = join(tmp, 'nope.crt');
    await assert.rejects(
      startWebhook({ certFile: missing, keyFile: missing, host: '127.0.0.1', port: 0 }),
      (e: Error) => {
        assert.ok(e instanceof UsageError);
        assert.match(e.message, /certificate file ".*nope\.crt": ENOENT/);
        return true;
      },
    );
  });

  test('a key that does not belong to the certificate is a user error naming both files', async () => {
    const a = makeCertificate(tmp, 'a');
    const b = makeCertificate(tmp, 'b');
    await assert.rejects(startWebhook({ certFile: a.cert, keyFile: b.key, host: '127.0.0.1', port: 0 }), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, /a\.crt.*b\.key.*not a usable pair/);
      return true;
    });
  });

  test('a key file that is not PEM is a user error', async () => {
    const a = makeCertificate(tmp, 'c');
    const junk = join(tmp, 'junk.key');
    writeFileSync(junk, 'not a key\n');
    await assert.rejects(startWebhook({ certFile: a.cert, keyFile: junk, host: '127.0.0.1', port: 0 }), UsageError);
  });
});

describe('parseListenAddress', () => {
  test('reads Go-style addresses', () => {
    assert.deepEqual(parseListenAddress('listen', ':8443'), { host: undefined, port: 8443 });
    assert.deepEqual(parseListenAddress('listen', '127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseListenAddress('listen', '[::1]:8443'), { host: '::1', port: 8443 });
    assert.deepEqual(parseListenAddress('listen', 'localhost:1107'), { host: 'localhost', port: 1107 });
  });
  test('refuses what is not [host]:port, naming the flag and the value', () => {
    for (const bad of ['8443', ':65536', '::1:8443', 'host:', 'host:port']) {
      assert.throws(
        () => parseListenAddress('listen', bad),
        (e: Error) => e instanceof UsageError && e.message === `--listen: want [host]:port, got ${JSON.stringify(bad)}`,
        bad,
      );
    }
  });
});

describe('kg webhook (the built command)', { skip: noOpenssl }, () => {
  let tmp = '';
  before(() => {
    ensureBuilt();
    tmp = mkdtempSync(join(tmpdir(), 'kilo-webhook-cli-'));
  });
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('without --cert-file it exits 1 and says which flag is missing', () => {
    const r = spawnSync(kgFile, [...kgArgs, 'webhook', '--key-file=/x'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--cert-file/);
  });

  test('an unreadable certificate is one line on stderr, exit 1, no stack trace', () => {
    const r = spawnSync(
      kgFile,
      [
        ...kgArgs,
        'webhook',
        '--check-pod-cidrs=false',
        `--cert-file=${join(tmp, 'missing.crt')}`,
        `--key-file=${join(tmp, 'missing.key')}`,
        '--listen=127.0.0.1:0',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^kg: cannot read certificate file ".*missing\.crt": ENOENT\n$/);
  });

  /** A port nothing listens on now (the webhook gets it next; with --log-level=none it logs none). */
  function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
      const s = createNetServer();
      s.on('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });
  }

  /** `kg webhook` at `level` on free ports; `stop` sends SIGTERM and returns the exit code and all output. */
  async function startKg(t: TestContext, level: string) {
    const { cert, key } = makeCertificate(tmp, `cli-${level}`);
    const [webhookPort, metricsPort] = [await freePort(), await freePort()];
    const child = spawn(
      kgFile,
      [
        ...kgArgs,
        'webhook',
        '--check-pod-cidrs=false',
        `--cert-file=${cert}`,
        `--key-file=${key}`,
        `--listen=127.0.0.1:${webhookPort}`,
        `--listen-metrics=127.0.0.1:${metricsPort}`,
        `--log-level=${level}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const trust = readFileSync(cert);
    // Ready when the metrics server answers: it starts after the webhook.
    for (let attempt = 0; ; attempt++) {
      const up = await getPlain(metricsPort, '/metrics').then(
        () => true,
        () => false,
      );
      if (up) break;
      assert.ok(child.exitCode === null && attempt < 600, `kg webhook did not start (stderr: ${stderr})`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const review = (uid: string, name: string, spec: Record<string, unknown>) =>
      send(
        webhookPort,
        'POST',
        '/validate',
        JSON.stringify(admissionReview(uid, peerObject(name, spec))),
        'application/json',
        trust,
      );
    return {
      webhookPort,
      metricsPort,
      trust,
      review,
      async stop() {
        child.kill('SIGTERM');
        const code = await exited;
        const lines = stderr
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as { level: number; msg: string; address?: string; peer?: string });
        return { code, stdout, stderr, lines };
      },
    };
  }

  test(
    'serves validation and metrics, logs JSON on stderr, and stops cleanly on SIGTERM',
    { timeout: 60_000 },
    async (t) => {
      const kg = await startKg(t, 'debug');
      const health = await send(kg.webhookPort, 'GET', '/healthz', undefined, 'application/json', kg.trust);
      assert.equal(health.status, 200);
      const bad = badPeers.find((p) => p.name === 'negative-keepalive')!;
      const r = await kg.review('cli-1', bad.name, bad.spec);
      const out = JSON.parse(r.text) as ReviewOut;
      assert.equal(out.response.uid, 'cli-1');
      assert.equal(out.response.allowed, false);
      assert.match(out.response.status!.message, /field spec\.persistentKeepalive: .*: -5$/);

      const m = await getPlain(kg.metricsPort, '/metrics');
      assert.equal(m.status, 200);
      assert.match(m.text, /^admission_requests_total\{operation="CREATE",response="denied"\} 1$/m);

      const { code, stdout, lines } = await kg.stop();
      assert.equal(code, 0, `exit code (log: ${JSON.stringify(lines)})`);
      assert.equal(stdout, '', 'stdout is left to command output');
      const at = (msg: string) => lines.find((l) => l.msg === msg)?.address;
      assert.equal(at('starting webhook server'), `127.0.0.1:${kg.webhookPort}`);
      assert.equal(at('starting metrics server'), `127.0.0.1:${kg.metricsPort}`);
      assert.ok(lines.some((l) => l.msg === 'shutting down'));
    },
  );

  // pino's numbers: 20 debug, 30 info.
  test(
    '--log-level=debug logs each allowed Peer; info logs the denied ones but not the allowed',
    { timeout: 60_000 },
    async (t) => {
      const good = goodPeers[0]!;
      const bad = badPeers.find((p) => p.name === 'negative-keepalive')!;
      const logs: Record<string, { level: number; msg: string; peer?: string }[]> = {};
      for (const level of ['debug', 'info']) {
        const kg = await startKg(t, level);
        assert.equal((await kg.review(`${level}-good`, good.name, good.spec)).status, 200);
        assert.equal((await kg.review(`${level}-bad`, bad.name, bad.spec)).status, 200);
        const { code, lines } = await kg.stop();
        assert.equal(code, 0);
        logs[level] = lines;
      }
      assert.deepEqual(
        logs['debug']!.filter((l) => l.msg.endsWith(' Peer')).map((l) => [l.level, l.msg, l.peer]),
        [
          [20, 'allowed Peer', good.name],
          [30, 'denied Peer', bad.name],
        ],
      );
      assert.deepEqual(
        logs['info']!.filter((l) => l.msg.endsWith(' Peer')).map((l) => [l.level, l.msg, l.peer]),
        [[30, 'denied Peer', bad.name]],
      );
      assert.ok(logs['info']!.every((l) => l.level >= 30));
    },
  );

  test('--log-level=none: not a line on stdout or stderr, and still serving', { timeout: 60_000 }, async (t) => {
    const kg = await startKg(t, 'none');
    const bad = badPeers.find((p) => p.name === 'negative-keepalive')!;
    const r = await kg.review('quiet', bad.name, bad.spec);
    assert.equal((JSON.parse(r.text) as ReviewOut).response.allowed, false);
    const { code, stdout, stderr } = await kg.stop();
    assert.equal(code, 0);
    assert.equal(stdout, '');
    assert.equal(stderr, '');
  });

  test("--log-level takes Kilo's levels only", () => {
    const r = spawnSync(kgFile, [...kgArgs, 'webhook', '--cert-file=/x', '--key-file=/x', '--log-level=verbose'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--log-level.*verbose.*all, debug, info, warn, error, none/);
  });
});
