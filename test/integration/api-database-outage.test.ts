/**
 * Postgres going away under reads: the API answers a fast 503 problem+json with Retry-After (a refused connection at
 * once; a database that accepts and never answers within the connect time-out), counts each in its metrics, and
 * serves again as soon as the database is back, with no restart. The API reaches Postgres through a TCP proxy that
 * the test cuts, and then replaces by a black hole that accepts connections and says nothing.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import type { Config } from '../../config';
import { closeDb, createDb, type Db } from '../../db/client';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, testConfig, testDb, type Tenant } from '../support/context';
import { TcpProxy } from '../support/faults';
import { parseExposition } from '../support/metrics';
import { until } from '../support/sync';

const CONNECT_TIMEOUT_MS = 1_500;
let setup: Db;
let db: Db;
let proxy: TcpProxy;
let server: TestServer;
let config: Config;
let tenant: Tenant;

beforeAll(async () => {
  setup = testDb();
  const target = new URL(inject('databaseUrl'));
  proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.start();
  const via = new URL(target);
  via.host = `127.0.0.1:${proxy.port}`;
  db = createDb(via.toString(), { max: 4, connectTimeoutMs: CONNECT_TIMEOUT_MS, statementTimeoutMs: 3_000 });
  // METRICS_PORT: the app observes requests (this in-process app listens on no metrics port; the registry is read directly).
  config = testConfig({ AUTH_CACHE_MS: '0', METRICS_PORT: '9464' });
  tenant = await makeTenant(setup);
  server = await startApi(db, config);
});

afterAll(async () => {
  await server?.close();
  await proxy?.cut();
  if (db) await closeDb(db);
  if (setup) await closeDb(setup);
});

/** A server on the proxy's port that takes connections and never answers (a host that went silent). */
async function blackHole(port: number): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const hole: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => hole.listen(port, '127.0.0.1', resolve));
  return {
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => hole.close(() => resolve()));
    },
  };
}

async function timedGet(path: string): Promise<{ res: Response; body: any; ms: number }> {
  const started = Date.now();
  const res = await server.get(path, { key: tenant.key });
  const body = await res.json();
  return { res, body, ms: Date.now() - started };
}

function expectUnavailable(r: { res: Response; body: any }) {
  expect(r.res.status, JSON.stringify(r.body)).toBe(503);
  expect(r.res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.res.headers.get('retry-after')).toBe('5');
  // The contract's class of every 5xx but the 502.
  expect(r.body.type).toBe(`${config.DOCS_BASE_URL}/errors/internal_error`);
  expect(r.body.title).toBe('Internal Server Error');
  expect(r.body.request_id).toBeTruthy();
  // Never the driver's message (it names hosts, ports, users).
  expect(r.body.detail).not.toMatch(/ECONN|127\.0\.0\.1|CONNECT_TIMEOUT|postgres/i);
}

describe('Postgres unreachable', () => {
  it('is a fast 503 with Retry-After, counted, and the API recovers by itself', async () => {
    expect((await timedGet('/v1/leases?limit=1')).res.status).toBe(200);

    // Refused: answered at once.
    await proxy.cut();
    const refused = await timedGet('/v1/leases?limit=1');
    expectUnavailable(refused);
    expect(refused.ms).toBeLessThan(CONNECT_TIMEOUT_MS);

    // Silent: answered within the connect time-out (and not the 30 s the driver would wait by default).
    const hole = await blackHole(proxy.port);
    const silent = await timedGet('/v1/properties?limit=1');
    expectUnavailable(silent);
    expect(silent.ms).toBeLessThan(CONNECT_TIMEOUT_MS + 2_000);
    await hole.close();

    // A console page (its session is looked up in the database): the same 503, as a page, with Retry-After.
    await proxy.cut();
    const page = await fetch(`${server.url}/console/organizations`, { headers: { cookie: 'propsync_console=any-session-token' } });
    expect(page.status).toBe(503);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('retry-after')).toBe('5');
    expect(await page.text()).toContain('The database cannot be reached right now');

    // Back: the same process serves again.
    await proxy.start();
    const back = await until(
      'reads to work again',
      async () => {
        const r = await timedGet('/v1/leases?limit=1');
        return r.res.status === 200 ? r : undefined;
      },
      15_000,
    );
    expect(back.res.status).toBe(200);

    const scraped = parseExposition(await server.app.metrics.registry.metrics());
    expect(scraped.value('propsync_database_unavailable_total')).toBe(3);
    expect(scraped.value('propsync_http_request_duration_seconds_count', { method: 'GET', route: '/v1/leases', status_class: '5xx' })).toBe(1);
    expect(scraped.value('propsync_http_request_duration_seconds_count', { method: 'GET', route: '/v1/properties', status_class: '5xx' })).toBe(1);
  }, 60_000);
});
