/**
 * The app's cross-cutting behaviour over real HTTP: request ids, problem+json for unknown paths, wrong methods,
 * requests Node's HTTP parser refuses, framework and unexpected failures (also inside mounted sub-apps, as the admin
 * API is), health and readiness against the real database and Temporal dev server, and the public docs.
 */
import { createHash } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, problemType, STATUS, TITLES, type ProblemSlug } from '../../api/problem';
import type { Config } from '../../config';
import { closeDb, createDb, type Db } from '../../db/client';
import { startApi, type TestServer } from '../support/api-server';
import { freePort } from '../support/faults';
import { makeTenant, testConfig, testDb, type Tenant } from '../support/context';

let db: Db;
let config: Config;
let api: TestServer;
let t: Tenant;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  db = testDb(3);
  config = testConfig();
  t = await makeTenant(db);
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  api = await startApi(
    db,
    config,
    (app) => {
      app.get('/boom', () => {
        throw new Error('secret internals: connection string postgres://x');
      });
      const sub = new Hono();
      sub.get('/conflict', () => {
        throw new ApiError('conflict', 'Already there.');
      });
      sub.get('/crash', () => {
        throw new TypeError('undefined is not a function');
      });
      sub.post('/too-big', () => {
        throw new HTTPException(413, { message: 'Body exceeds 1 MB.' });
      });
      app.route('/sub', sub);
    },
    { logger: pino({ level: 'error' }, sink) },
  );
});
afterAll(async () => {
  await api?.close();
  await closeDb(db);
});

async function problemOf(res: Response, status: number, slug: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ type: `${config.DOCS_BASE_URL}/errors/${slug}`, status, request_id: res.headers.get('x-request-id') });
  expect(Object.keys(body)).toEqual(expect.arrayContaining(['type', 'title', 'status', 'detail', 'instance', 'request_id']));
  return body;
}

/**
 * Sends `request` as raw bytes and reads until the server closes the connection: what a client that does not speak
 * through fetch sees. `head` is the status line and the header lines.
 */
function rawExchange(request: string): Promise<{ head: string[]; body: string }> {
  const { port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: '127.0.0.1', port: Number(port) });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.once('error', reject);
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const at = text.indexOf('\r\n\r\n');
      resolve({ head: text.slice(0, at).split('\r\n'), body: text.slice(at + 4) });
    });
    socket.write(request);
  });
}

describe('request ids', () => {
  it('generates req_ + ULID when the caller sends none, on success and on errors', async () => {
    const ok = await api.get('/healthz');
    expect(ok.headers.get('x-request-id')).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    const err = await api.get('/nowhere');
    expect(err.headers.get('x-request-id')).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(err.headers.get('x-request-id')).not.toBe(ok.headers.get('x-request-id'));
  });

  it("echoes a caller's id, in the header and in problem bodies", async () => {
    for (const id of ['req_01JH0000000000000000000000', 'trace-42.a:b_c', 'x'.repeat(200), 'my req', 'abc/def', 'Root=1-5759e988;Sampled=1', '<b>"x"</b>']) {
      const res = await api.get('/v1/leases', { key: t.key, headers: { 'x-request-id': id } });
      expect(res.headers.get('x-request-id')).toBe(id);
    }
    const res = await api.get('/v1/leases', { headers: { 'x-request-id': 'caller-123' } });
    const body = await problemOf(res, 401, 'unauthorized');
    expect(body.request_id).toBe('caller-123');
  });

  it('replaces a caller id it cannot carry (too long, beyond ASCII) with a generated one', async () => {
    for (const id of ['x'.repeat(201), '\u00e9t\u00e9']) {
      const res = await api.get('/healthz', { headers: { 'x-request-id': id } });
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    }
  });
});

describe('problem+json for everything that goes wrong', () => {
  it('404 for unknown paths, with or without a key', async () => {
    const body = await problemOf(await api.get('/nowhere'), 404, 'not_found');
    expect(body).toMatchObject({ title: 'Not Found', instance: '/nowhere' });
    await problemOf(await api.get('/v1/nothing-here', { key: t.key }), 404, 'not_found');
  });

  it('401 comes before 404 under /v1, so paths are not probed without a key', async () => {
    await problemOf(await api.get('/v1/nothing-here'), 401, 'unauthorized');
  });

  it('405 with Allow for a known path asked with another method', async () => {
    for (const [method, path, key, allow] of [
      ['POST', '/healthz', undefined, 'GET, HEAD'],
      ['DELETE', '/v1/leases', t.key, 'GET, HEAD, POST'],
      ['PUT', '/v1/properties/prp_01JH0000000000000000000000', t.key, 'GET, HEAD'],
      ['POST', '/v1/properties', t.key, 'GET, HEAD'],
      ['PUT', '/v1/leases/lse_01JH0000000000000000000000', t.key, 'GET, HEAD, PATCH'],
      ['DELETE', '/v1/operations/opr_01JH0000000000000000000000', t.key, 'GET, HEAD'],
    ] as const) {
      const res = await fetch(api.url + path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });
      const body = await problemOf(res, 405, 'method_not_allowed');
      expect(body.title).toBe('Method Not Allowed');
      expect(res.headers.get('allow')).toBe(allow);
    }
  });

  it('an unexpected error is a logged 500 that leaks nothing', async () => {
    const res = await api.get('/boom', { headers: { 'x-request-id': 'boom-1' } });
    const body = await problemOf(res, 500, 'internal_error');
    expect(body.title).toBe('Internal Server Error');
    expect(JSON.stringify(body)).not.toContain('secret');
    const logged = logLines.find((l) => l.request_id === 'boom-1');
    expect(logged).toMatchObject({ msg: 'unhandled error', path: '/boom', err: { message: expect.stringContaining('secret internals') } });
  });

  it('errors thrown inside a mounted sub-app reach the same handler', async () => {
    const conflict = await problemOf(await api.get('/sub/conflict'), 409, 'conflict');
    expect(conflict).toMatchObject({ detail: 'Already there.', instance: '/sub/conflict' });
    await problemOf(await api.get('/sub/crash'), 500, 'internal_error');
    const tooBig = await problemOf(await fetch(`${api.url}/sub/too-big`, { method: 'POST' }), 413, 'payload_too_large');
    expect(tooBig.detail).toBe('Body exceeds 1 MB.');
    await problemOf(await fetch(`${api.url}/sub/conflict`, { method: 'POST' }), 405, 'method_not_allowed');
  });

  it('431 problem+json, with a request id, for a header too large for the server to read', async () => {
    const res = await api.get('/v1/leases', { key: t.key, headers: { 'x-padding': 'a'.repeat(20 * 1024) } });
    const body = await problemOf(res, 431, 'request_header_fields_too_large');
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(body).toEqual({
      type: `${config.DOCS_BASE_URL}/errors/request_header_fields_too_large`,
      title: 'Request Header Fields Too Large',
      status: 431,
      detail: 'The request line and headers are larger than the 16 KiB this service reads. Send a shorter URL or fewer, smaller headers.',
      instance: '/v1/leases',
      request_id: res.headers.get('x-request-id'),
    });
    // The service goes on answering.
    expect((await api.get('/healthz')).status).toBe(200);
  });

  it('answers an oversized request line and bytes that are not HTTP with a whole problem+json response, then closes', async () => {
    const long = await rawExchange(`GET /v1/${'p'.repeat(20 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(long.head[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(long.head).toEqual(
      expect.arrayContaining(['content-type: application/problem+json', 'connection: close', `content-length: ${Buffer.byteLength(long.body)}`]),
    );
    expect(long.head).toContainEqual(expect.stringMatching(/^x-request-id: req_[0-9A-HJKMNP-TV-Z]{26}$/));
    // The path was what overflowed: it is not echoed back.
    expect(JSON.parse(long.body)).toMatchObject({ status: 431, type: `${config.DOCS_BASE_URL}/errors/request_header_fields_too_large`, instance: '' });

    const garbage = await rawExchange('HELLO /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(garbage.head[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(garbage.head).toEqual(expect.arrayContaining(['content-type: application/problem+json', 'connection: close']));
    const requestId = garbage.head.find((h) => h.startsWith('x-request-id: '))!.slice('x-request-id: '.length);
    expect(JSON.parse(garbage.body)).toEqual({
      type: `${config.DOCS_BASE_URL}/errors/bad_request`,
      title: 'Bad Request',
      status: 400,
      detail: expect.stringMatching(/^The request is not valid HTTP\/1\.1 \(Parse Error: .+\)\.$/),
      instance: '/healthz',
      request_id: requestId,
    });
  });

  it('answers a request without a Host, with a backslash in its path or an absolute URL of another scheme with problem+json and a request id', async () => {
    for (const request of [
      'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n',
      'GET /v1\\leases HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET ftp://x/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    ]) {
      const answer = await rawExchange(request);
      expect(answer.head[0], request).toBe('HTTP/1.1 400 Bad Request');
      expect(answer.head).toContain('content-type: application/problem+json');
      const requestId = answer.head.find((h) => h.startsWith('x-request-id: '))?.slice('x-request-id: '.length);
      expect(requestId, request).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(JSON.parse(answer.body)).toMatchObject({ type: `${config.DOCS_BASE_URL}/errors/bad_request`, status: 400, request_id: requestId });
    }
  });

  it('serves a request whose Expect is not 100-continue as if it had none', async () => {
    const answer = await rawExchange('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n');
    expect(answer.head[0]).toBe('HTTP/1.1 200 OK');
    expect(JSON.parse(answer.body)).toEqual({ status: 'ok' });
  });

  it('the admin API is mounted under /admin/v1 and answers problem+json', async () => {
    const res = await api.get('/admin/v1/organizations/00000000-0000-0000-0000-000000000000');
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });
});

describe('health', () => {
  it('GET /healthz is 200 {status: ok} without a key', async () => {
    const res = await api.get('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 when the database and Temporal answer, saying so for each', async () => {
    const res = await api.get('/readyz');
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', checks: { database: { status: 'up' }, temporal: { status: 'up' } } });
  });

  /** Nothing of the underlying error reaches the body: no driver message, host, port, user or database name. */
  function expectNoInternals(body: Record<string, unknown>, ...internals: string[]) {
    // `type` is the configured docs address and `title` the contract's for every 5xx but the 502 ("Internal Server
    // Error"); everything else is what the check said.
    const { type: _type, title: _title, ...rest } = body;
    const text = JSON.stringify(rest);
    for (const s of ['ECONNREFUSED', 'Error', 'error:', 'at ', 'connect', 'postgres', '127.0.0.1', ...internals]) expect(text).not.toContain(s);
  }

  it('GET /readyz is 503 naming Temporal when nothing listens at its address, without the error text', async () => {
    const port = await freePort();
    const down = await startApi(db, testConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${port}` }));
    try {
      const body = await problemOf(await down.get('/readyz'), 503, 'internal_error');
      expect(body.detail).toBe('Not ready: temporal is down (unreachable).');
      expect(body.checks).toEqual({ database: { status: 'up' }, temporal: { status: 'down', reason: 'unreachable' } });
      expectNoInternals(body, String(port));
    } finally {
      await down.close();
    }
  });

  it('GET /readyz is 503 naming the database when its port is closed, without the error text', async () => {
    const url = new URL(config.DATABASE_URL);
    const port = await freePort();
    url.port = String(port);
    const badDb = createDb(url.toString(), { max: 1 });
    const down = await startApi(badDb, config);
    try {
      const body = await problemOf(await down.get('/readyz'), 503, 'internal_error');
      expect(body.detail).toBe('Not ready: database is down (unreachable).');
      expect(body.checks).toEqual({ database: { status: 'down', reason: 'unreachable' }, temporal: { status: 'up' } });
      expectNoInternals(body, String(port), url.pathname.slice(1));
    } finally {
      await down.close();
      await closeDb(badDb);
    }
  });

  it('GET /readyz is 503 when the database answers with an error (no such database), without its message', async () => {
    const url = new URL(config.DATABASE_URL);
    url.pathname = '/propsync_no_such_database';
    const badDb = createDb(url.toString(), { max: 1 });
    const down = await startApi(badDb, config);
    try {
      const body = await problemOf(await down.get('/readyz'), 503, 'internal_error');
      expect(body.checks).toEqual({ database: { status: 'down', reason: 'error' }, temporal: { status: 'up' } });
      expectNoInternals(body, 'propsync_no_such_database', 'does not exist');
    } finally {
      await down.close();
      await closeDb(badDb);
    }
  });

  it('GET /readyz says timeout for a database that accepts connections and never answers', async () => {
    const held = new Set<Socket>();
    const silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = new URL(config.DATABASE_URL);
    url.port = String((silent.address() as AddressInfo).port);
    const badDb = createDb(url.toString(), { max: 1 });
    const down = await startApi(badDb, config);
    try {
      const body = await problemOf(await down.get('/readyz'), 503, 'internal_error');
      expect(body.checks).toEqual({ database: { status: 'down', reason: 'timeout' }, temporal: { status: 'up' } });
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
      await down.close();
      await closeDb(badDb).catch(() => {});
    }
  });

  it('GET /readyz reports both when both are down', async () => {
    const url = new URL(config.DATABASE_URL);
    url.port = String(await freePort());
    const badDb = createDb(url.toString(), { max: 1 });
    const down = await startApi(badDb, testConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` }));
    try {
      const body = await problemOf(await down.get('/readyz'), 503, 'internal_error');
      expect(body.detail).toBe('Not ready: database is down (unreachable); temporal is down (unreachable).');
      expect(Object.keys(body.checks as object)).toEqual(['database', 'temporal']);
    } finally {
      await down.close();
      await closeDb(badDb);
    }
  });
});

describe('docs', () => {
  it('serves the OpenAPI document and the reference page without a key', async () => {
    const doc = await api.get('/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { openapi: string }).openapi).toBe('3.1.0');
    const page = await api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('/v1/openapi.json');
    // Every script the page loads comes from this service (it works offline), and is served.
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts).toEqual(['/docs/assets/scalar-api-reference.js']);
    expect(html).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)\./);
    // Its policy allows scripts from this service and, by hash, the page's own inline start-up script; nothing may
    // frame it.
    const inline = [...html.matchAll(/<script(?![^>]*\ssrc=)[^>]*>([\s\S]*?)<\/script>/g)].map(
      (m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`,
    );
    expect(inline).toHaveLength(1);
    // The page's configuration turns off what needs Scalar's hosted services, which cannot work offline: the AI
    // agent ("Ask AI"), the MCP generator ("Generate MCP"), the developer toolbar ("Deploy") and telemetry.
    const start = /<script(?![^>]*\ssrc=)[^>]*>\s*Scalar\.createApiReference\('#app', (\{[\s\S]*\})\s*\)\s*<\/script>/.exec(html);
    expect(start, 'the inline start-up script').not.toBeNull();
    expect(JSON.parse(start![1]!)).toMatchObject({
      url: '/v1/openapi.json',
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: 'never',
      telemetry: false,
      withDefaultFonts: false,
    });
    const csp = Object.fromEntries(
      page.headers
        .get('content-security-policy')!
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...sources]) => [name, sources]),
    );
    expect(csp).toMatchObject({
      'default-src': ["'self'"],
      'script-src': ["'self'", ...inline],
      'connect-src': ["'self'", new URL(config.PUBLIC_BASE_URL).origin],
      'frame-ancestors': ["'none'"],
      'object-src': ["'none'"],
      'base-uri': ["'none'"],
    });
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const script = await api.get(scripts[0]!);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    const body = await script.text();
    expect(body.length).toBeGreaterThan(100_000);
    expect(body).toContain('createApiReference');
  });

  it('every problem type URI resolves to a page about that error, without a key', async () => {
    // The configured bases point at PUBLIC_BASE_URL; this server listens elsewhere, so ask it for the same paths.
    for (const slug of Object.keys(TITLES) as ProblemSlug[]) {
      const res = await api.get(new URL(problemType(config, slug)).pathname);
      expect(res.status, slug).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      // Static HTML: it may load and run nothing, and is never framed.
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
      expect([res.headers.get('x-frame-options'), res.headers.get('x-content-type-options')]).toEqual(['DENY', 'nosniff']);
      const html = await res.text();
      // A 503's type is the contract's internal_error, whose page names both statuses.
      const named = slug === 'service_unavailable' ? 'internal_error' : slug;
      expect(html).toContain(`${STATUS[named]} ${TITLES[named]}`);
      expect(html).toContain(named);
      if (named === 'internal_error') expect(html).toContain('HTTP status 500 (or 503)');
    }
    // The type of a real error body, too.
    const problem = (await (await api.get('/v1/leases', {})).json()) as { type: string };
    expect((await api.get(new URL(problem.type).pathname)).status).toBe(200);
    await problemOf(await api.get('/docs/errors/no_such_error'), 404, 'not_found');
    await problemOf(await api.get('/problems/bad_request'), 404, 'not_found');
  });
});
