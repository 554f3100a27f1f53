/**
 * The sender's one exchange (activities/webhook-http.ts) against real local receivers: what counts as answered
 * within the limit (a short limit here; 10 s in service).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSender } from '../../activities/webhook-http';

const LIMIT_MS = 300;
const servers: http.Server[] = [];
const senders: ReturnType<typeof createSender>[] = [];

afterEach(async () => {
  for (const s of senders.splice(0)) s.close();
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
});

async function receiver(handle: http.RequestListener): Promise<string> {
  const server = http.createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Hung exchanges must not hold the server open after the test.
  server.on('connection', (socket) => socket.unref());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

function send(url: string) {
  const sender = createSender({ timeoutMs: LIMIT_MS });
  senders.push(sender);
  return sender.send({ url, body: '{"id":"evt_1"}', headers: { 'content-type': 'application/json' }, guard: false });
}

describe('a webhook attempt', () => {
  it('succeeds on a 2xx head within the limit although its body is still coming when the limit is up', async () => {
    const url = await receiver((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('accepted, ');
      setTimeout(() => res.end('and more'), LIMIT_MS * 3).unref();
    });
    const r = await send(url);
    expect(r).toMatchObject({ ok: true, status: 200, error: null, excerpt: 'accepted, ' });
    expect(r.durationMs).toBeGreaterThanOrEqual(LIMIT_MS - 5);
    expect(r.durationMs).toBeLessThan(LIMIT_MS * 2);
  });

  it('fails with the status on a non-2xx head, with the body read so far, when its body is still coming', async () => {
    const url = await receiver((req, res) => {
      req.resume();
      res.writeHead(503);
      res.write('busy');
    });
    expect(await send(url)).toMatchObject({ ok: false, status: 503, error: 'HTTP 503', excerpt: 'busy' });
  });

  it('times out when no head came within the limit', async () => {
    const url = await receiver((req) => req.resume());
    expect(await send(url)).toMatchObject({ ok: false, status: null, error: `timed out after ${LIMIT_MS / 1000} s`, excerpt: null });
  });

  it('reads a whole quick answer', async () => {
    const url = await receiver((req, res) => {
      req.resume();
      res.end('ok');
    });
    expect(await send(url)).toMatchObject({ ok: true, status: 200, error: null, excerpt: 'ok' });
  });

  it('keeps an excerpt Postgres can store: a NUL of a binary body becomes U+FFFD', async () => {
    const url = await receiver((req, res) => {
      req.resume();
      res.end(Buffer.from([0x6f, 0x00, 0x6b]));
    });
    expect(await send(url)).toMatchObject({ ok: true, status: 200, excerpt: 'o\ufffdk' });
  });
});
