/**
 * LineWatch, the agent's watch client: events as client-node's Watch gives them, from a server
 * that cuts its stream anywhere (inside a line, inside a UTF-8 character), refuses with a status,
 * or ends; and the caller's abort ends it.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { LineWatch } from '../../src/backend/kubernetes/watch.js';

async function server(
  t: { after(fn: () => Promise<void>): void },
  handle: (url: URL, res: ServerResponse) => void,
): Promise<LineWatch> {
  const s = createServer((req, res) => handle(new URL(req.url!, 'http://x'), res));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  t.after(async () => {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'tok' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return new LineWatch(kc);
}

interface Seen {
  events: [string, unknown][];
  done: Promise<unknown>;
}

function watching(w: LineWatch, query: Record<string, string | number | boolean | undefined> = {}) {
  const seen: Seen = { events: [], done: Promise.resolve() };
  let finish: (e: unknown) => void = () => {};
  let calls = 0;
  seen.done = new Promise((r) => (finish = r));
  const controller = w.watch(
    '/api/v1/nodes',
    query,
    (type, object) => seen.events.push([type, object]),
    (err) => {
      calls++;
      assert.equal(calls, 1, 'done called twice');
      finish(err);
    },
  );
  return { seen, controller };
}

test('events cut anywhere in the stream arrive whole, in order; a line that is not JSON is skipped', async (t) => {
  const name = 'nöde-ü€';
  const lines = [
    JSON.stringify({ type: 'ADDED', object: { metadata: { name, resourceVersion: '5' } } }),
    'not json',
    JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'b', annotations: { k: 'v'.repeat(5000) } } } }),
    JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } }),
  ];
  const body = Buffer.from(lines.join('\n') + '\n');
  let asked: URL | null = null;
  let auth: string | undefined;
  const w = await server(t, (url, res) => {
    asked = url;
    auth = res.req.headers.authorization;
    res.writeHead(200, { 'content-type': 'application/json' });
    // One byte at a time through the first event (cuts inside "ö"), then uneven pieces.
    const cut = [...Array.from({ length: lines[0]!.length + 2 }, (_, i) => i + 1), 3000, 7000, body.length];
    let at = 0;
    const next = (i: number) => {
      if (i >= cut.length) return res.end();
      res.write(body.subarray(at, cut[i]));
      at = cut[i]!;
      setImmediate(() => next(i + 1));
    };
    next(0);
  });
  const { seen } = watching(w, { resourceVersion: '4', allowWatchBookmarks: true, timeoutSeconds: undefined });
  assert.equal(await seen.done, null, 'the end of the stream is a clean close');
  assert.deepEqual(
    seen.events.map(([type, o]) => [type, (o as { metadata: { name?: string } }).metadata.name]),
    [
      ['ADDED', name],
      ['MODIFIED', 'b'],
      ['BOOKMARK', undefined],
    ],
  );
  assert.equal(asked!.searchParams.get('watch'), 'true');
  assert.equal(asked!.searchParams.get('resourceVersion'), '4');
  assert.equal(asked!.searchParams.get('allowWatchBookmarks'), 'true');
  assert.equal(asked!.searchParams.has('timeoutSeconds'), false);
  assert.equal(auth, 'Bearer tok', "the kubeconfig's credentials");
});

test('a refused watch ends with its HTTP status; the caller aborting ends a live one', async (t) => {
  const w = await server(t, (url, res) => {
    if (url.searchParams.get('resourceVersion') === 'old') {
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end('{"kind":"Status","code":410}');
      return;
    }
    res.writeHead(200);
    res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
  });
  const gone = watching(w, { resourceVersion: 'old' });
  await gone.controller;
  assert.equal(((await gone.seen.done) as { statusCode?: number }).statusCode, 410);

  const live = watching(w, {});
  const controller = await live.controller;
  while (live.seen.events.length === 0) await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  assert.ok((await live.seen.done) !== undefined, 'done is called once the caller aborts');
  assert.deepEqual(live.seen.events, [['ADDED', { metadata: { name: 'a' } }]]);
});

test('events coming faster than the reads are paced all arrive, in order; the socket reads again after the watch', async (t) => {
  const w = await server(t, (url, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const count = Number(url.searchParams.get('count'));
    // One event a millisecond, each its own write: many arrive while the socket is not being read.
    const next = (i: number) => {
      if (i === count) return res.end();
      res.write(`${JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: `n${i}` } } })}\n`);
      setTimeout(() => next(i + 1), 1);
    };
    next(0);
  });
  const names = (seen: Seen) => seen.events.map(([, o]) => (o as { metadata: { name: string } }).metadata.name);
  const first = watching(w, { count: 60 });
  assert.equal(await first.seen.done, null, 'the end arrives, though it came while reads were paced');
  assert.deepEqual(
    names(first.seen),
    Array.from({ length: 60 }, (_, i) => `n${i}`),
  );
  // The next watch may get the same keep-alive socket: it must be read again.
  const second = watching(w, { count: 3 });
  assert.equal(await second.seen.done, null);
  assert.deepEqual(names(second.seen), ['n0', 'n1', 'n2']);
});
