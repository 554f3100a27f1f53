/**
 * The source clients' own HTTP (source/http.ts, node:http on keep-alive agents), against real local servers: what
 * reaches the server, replies decoded as fetch decoded them, redirects left to the dialect, connections reused, and
 * every failure classified with what a write's caller needs (transient or not, and whether it may have been applied).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceTransientError } from '../../source/connector';
import { SourceHttp, type HttpReply } from '../../source/http';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
const sockets = new Set<Socket>();
let connections = 0;

/** Answers by path: /json, /gzip, /deflate, /br, /redirect, /503, /hang (never answers), /slow-body (half a body). */
function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
  const json = JSON.stringify({ ok: true, body, text: 'café' });
  switch (req.url) {
    case '/gzip':
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(json));
      return;
    case '/deflate':
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'deflate' }).end(deflateSync(json));
      return;
    case '/br':
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'br' }).end(brotliCompressSync(json));
      return;
    case '/zstd':
    case '/constructor':
      res.writeHead(200, { 'content-encoding': (req.url ?? '').slice(1) }).end('{}');
      return;
    case '/bad-gzip':
      res.writeHead(200, { 'content-encoding': 'gzip' }).end('not gzip at all');
      return;
    case '/redirect':
      res.writeHead(302, { location: '/json' }).end();
      return;
    case '/503':
      res.writeHead(503, { 'retry-after': '7' }).end('busy');
      return;
    case '/hang':
      return;
    case '/cut-body':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":', () => res.socket?.destroy());
      return;
    case '/slow-body':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
      return;
    default:
      res.writeHead(200, { 'content-type': 'application/json' }).end(json);
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
});

const http = (timeoutMs = 2_000) => new SourceHttp({ timeoutMs });
const post = (path: string, body: string, write = true) => ({
  label: 'sendLeases',
  url: `${base}${path}`,
  init: { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body },
  write,
});
const reply = (r: HttpReply | SourceTransientError): HttpReply => {
  if (r instanceof SourceTransientError) throw r;
  return r;
};

describe('source HTTP over node:http', () => {
  it('sends the method, headers and the whole UTF-8 body, with a user agent and the encodings it reads', async () => {
    seen.length = 0;
    const body = JSON.stringify({ name: 'Zoë Ångström', note: '住所' });
    const r = reply(await http().exchange(post('/json', body)));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ ok: true, body, text: 'café' });
    expect(r.headers.get('content-type')).toBe('application/json');
    const [s] = seen;
    expect(s).toMatchObject({ method: 'POST', url: '/json', body });
    expect(s!.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(s!.headers['x-api-key']).toBe('k');
    expect(s!.headers['user-agent']).toBe('propsync');
    expect(s!.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it.each(['/gzip', '/deflate', '/br'])('decodes a %s reply as fetch did', async (path) => {
    const r = reply(await http().exchange({ label: 'getLeases', url: `${base}${path}`, init: { method: 'GET' }, write: false }));
    expect(JSON.parse(r.text)).toMatchObject({ ok: true, text: 'café' });
  });

  it('a reply it cannot decode is a network-level failure, which a write may have been applied by', async () => {
    const r = await http().exchange(post('/bad-gzip', '{}'));
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toMatch(/sendLeases: network error: the reply's gzip body could not be decoded/);
    expect((r as SourceTransientError).maybeApplied).toBe(true);
  });

  it.each(['/zstd', '/constructor'])('a reply in an encoding it does not read (%s) is a failure, never a crash', async (path) => {
    const r = await http().exchange(post(path, '{}'));
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toBe(
      `sendLeases: network error: the reply is in an encoding this client cannot read (${path.slice(1)}); the write may have been applied`,
    );
  });

  it('leaves a redirect to the dialect: the request is not sent again elsewhere', async () => {
    seen.length = 0;
    const r = reply(await http().exchange(post('/redirect', '{"x":1}')));
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/json');
    expect(seen.map((s) => s.url)).toEqual(['/redirect']);
  });

  it('reuses one connection for requests one after the other', async () => {
    const client = http();
    await client.exchange(post('/json', '{}'));
    const before = connections;
    for (let i = 0; i < 5; i++) reply(await client.exchange(post('/json', `{"i":${i}}`)));
    expect(connections).toBe(before);
  });

  it('a 5xx is transient, and a write may have been applied', async () => {
    const r = await http().exchange(post('/503', '{}'));
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toBe('sendLeases: source answered HTTP 503; the write may have been applied');
    expect((r as SourceTransientError).maybeApplied).toBe(true);
  });

  it('no reply within the timeout: transient, and a write may have been applied (it was sent)', async () => {
    const started = Date.now();
    const r = await http(300).exchange(post('/hang', '{"rent":1}'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toBe('sendLeases: no reply within 300 ms; the write may have been applied');
    expect((r as SourceTransientError).maybeApplied).toBe(true);
    const read = await http(300).exchange(post('/hang', '{}', false));
    expect((read as SourceTransientError).maybeApplied).toBe(false);
  });

  it('a body that stops halfway counts against the same timeout', async () => {
    const r = await http(300).exchange(post('/slow-body', '{}'));
    expect((r as SourceTransientError).message).toBe('sendLeases: no reply within 300 ms; the write may have been applied');
  });

  it('a reply cut off halfway: transient, and a write may have been applied', async () => {
    const r = await http().exchange(post('/cut-body', '{}'));
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toMatch(/^sendLeases: network error: .+; the write may have been applied$/);
    expect((r as SourceTransientError).maybeApplied).toBe(true);
  });

  it('a connection refused sent nothing: transient, and never maybe applied', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await http().exchange({ ...post('/json', '{}'), url: `http://127.0.0.1:${port}/json` });
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toMatch(/^sendLeases: network error: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    expect((r as SourceTransientError).maybeApplied).toBe(false);
  });

  it('no connection within the timeout sent nothing: transient, and never maybe applied', async () => {
    // A listener whose accept queue is full: the kernel drops further SYNs, so a connect hangs (Node cannot listen
    // without accepting, hence a Python process, which the test tools need anyway).
    const listener = spawn('python3', [
      '-c',
      [
        'import socket, time',
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)",
        'port = s.getsockname()[1]',
        'fill = [socket.socket() for _ in range(3)]',
        '[c.setblocking(False) for c in fill]',
        "[c.connect_ex(('127.0.0.1', port)) for c in fill]",
        'print(port, flush=True)',
        'time.sleep(60)',
      ].join('\n'),
    ]);
    try {
      const [data] = (await once(listener.stdout, 'data')) as [Buffer];
      const url = `http://127.0.0.1:${String(data).trim()}/json`;
      await new Promise((resolve) => setTimeout(resolve, 200));
      const r = await http(400).exchange({ ...post('/json', '{}'), url });
      expect(r).toBeInstanceOf(SourceTransientError);
      expect((r as SourceTransientError).message).toBe('sendLeases: network error: no connection within 400 ms');
      expect((r as SourceTransientError).maybeApplied).toBe(false);
    } finally {
      listener.kill();
    }
  });

  it('an unknown host sent nothing either', async () => {
    const r = await http().exchange({ ...post('/json', '{}'), url: 'http://no-such-host.invalid/json' });
    expect(r).toBeInstanceOf(SourceTransientError);
    expect((r as SourceTransientError).message).toMatch(/^sendLeases: network error: getaddrinfo (ENOTFOUND|EAI_AGAIN) no-such-host\.invalid$/);
    expect((r as SourceTransientError).maybeApplied).toBe(false);
  });

  it('a connection dropped after the request was sent: a write may have been applied', async () => {
    const dropping = createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(dropping.address() as AddressInfo).port}/json`;
      const r = await http().exchange({ ...post('/json', '{}'), url });
      expect(r).toBeInstanceOf(SourceTransientError);
      expect((r as SourceTransientError).message).toMatch(/^sendLeases: network error: socket hang up; the write may have been applied$/);
      expect((r as SourceTransientError).maybeApplied).toBe(true);
    } finally {
      await new Promise((resolve) => dropping.close(resolve));
    }
  });
});
