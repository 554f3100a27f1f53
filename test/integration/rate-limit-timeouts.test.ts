/**
 * The rate limiter's claims under a bucket row held by someone else (a stuck session, an operator's `select … for
 * update`): the organization whose row is locked gets a fast 503 with Retry-After (the database-unavailable answer,
 * counted as such), and every other organization is answered as usual meanwhile, not once the lock is released.
 * And a limiter that cannot reach the database answers a 503 within the connect time-out, as the API's pool does.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, testConfig, type Tenant } from '../support/context';
import { parseExposition } from '../support/metrics';
import { onServices } from '../support/services';
import { until } from '../support/until';

/** The longest the test holds the lock: without the fix, both organizations wait this long. */
const HOLD_MS = 10_000;

let db: Db;
let config: Config;
let api: TestServer;

// METRICS_PORT: the app counts requests (the registry is read directly; this in-process app listens on no metrics port).
onServices({ api: true, settings: { METRICS_PORT: '9464' } }, (s) => {
  ({ db, config, api } = s);
});

/** Holds the organization's bucket row locked in a transaction of its own until released (or HOLD_MS at most). */
async function lockBucket(organizationId: string): Promise<{ pid: number; release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
    setTimeout(resolve, HOLD_MS).unref();
  });
  let held!: (pid: number) => void;
  const pid = new Promise<number>((resolve) => (held = resolve));
  const done = db.$client.begin(async (tx) => {
    const [row] = await tx<{ pid: number }[]>`
      select pg_backend_pid() as pid from rate_limit_buckets where organization_id = ${organizationId} for update`;
    held(row!.pid);
    await released;
  });
  return {
    pid: await Promise.race([pid, done.then(() => Promise.reject(new Error('the bucket row was not locked')))]),
    async release() {
      release();
      await done;
    },
  };
}

async function timedGet(t: Tenant, server = api): Promise<{ res: Response; body: any; ms: number }> {
  const started = Date.now();
  const res = await server.get('/v1/leases?limit=1', { key: t.key });
  return { res, body: await res.json(), ms: Date.now() - started };
}

function expectUnavailable(r: { res: Response; body: any }) {
  expect(r.res.status, JSON.stringify(r.body)).toBe(503);
  expect(r.res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.res.headers.get('retry-after')).toBe('5');
  expect(r.body).toMatchObject({ type: `${config.DOCS_BASE_URL}/errors/internal_error`, title: 'Internal Server Error', status: 503 });
  expect(r.body.request_id).toBe(r.res.headers.get('x-request-id'));
  // Never the driver's message.
  expect(r.body.detail).not.toMatch(/lock|55P03|57014|CONNECT_TIMEOUT|127\.0\.0\.1|postgres/i);
}

/**
 * A database address that takes the limiter's connections and never answers them (a host gone silent). Every other
 * connection (the app's LISTEN feeds read the same DATABASE_URL) is passed through to the real database, as its
 * startup message names another application.
 */
async function blackHole(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const target = new URL(config.DATABASE_URL);
  const hole = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('data', (startup) => {
      if (startup.includes('propsync-api-ratelimit')) return;
      const upstream = connect(Number(target.port || 5432), target.hostname);
      sockets.add(upstream);
      upstream.on('error', () => s.destroy());
      upstream.write(startup);
      s.pipe(upstream).pipe(s);
    });
  });
  await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
  return {
    port: (hole.address() as AddressInfo).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => hole.close(() => resolve()));
    },
  };
}

describe('rate-limit claims', () => {
  it("a locked bucket is a fast 503 for its organization and holds up no other's", async () => {
    const a = await makeTenant(db, { plan: 'starter' });
    const b = await makeTenant(db, { plan: 'starter' });
    // The first request makes each bucket; a starter bucket (burst 12) is leased one token at a time, so each later
    // request claims again.
    for (const t of [a, b]) expect((await timedGet(t)).res.status).toBe(200);

    const lock = await lockBucket(a.organizationId);
    try {
      const first = timedGet(a);
      // A's claim is waiting for the lock; B's claim is asked for now.
      await until(
        "A's claim to wait for the lock",
        async () => (await db.$client`select count(*)::int as n from pg_stat_activity where ${lock.pid} = any(pg_blocking_pids(pid))`)[0]!.n > 0,
        { timeoutMs: 5_000, intervalMs: 10 },
      );
      const other = await timedGet(b);
      expect(other.res.status, JSON.stringify(other.body)).toBe(200);
      // Not even the lock time-out of A's claim: B's goes through another connection.
      expect(other.ms).toBeLessThan(500);

      const locked = await first;
      expectUnavailable(locked);
      expect(locked.ms).toBeLessThan(3_000);
    } finally {
      await lock.release();
    }

    // The lock gone, A is served again by the same process.
    expect((await timedGet(a)).res.status).toBe(200);
    const scraped = parseExposition(await api.app.metrics.registry.metrics());
    expect(scraped.value('propsync_database_unavailable_total')).toBe(1);
  }, 30_000);

  it('a database the limiter cannot reach is a 503 within the connect time-out', async () => {
    const t = await makeTenant(db, { plan: 'starter' });
    const hole = await blackHole();
    // The app's own pool reaches the database (the key is found); the limiter's connections go to the black hole.
    const url = new URL(config.DATABASE_URL);
    url.host = `127.0.0.1:${hole.port}`;
    const cut = await startApi(db, testConfig({ DATABASE_URL: url.toString(), DB_CONNECT_TIMEOUT_MS: '1000', AUTH_CACHE_MS: '0' }));
    try {
      const r = await timedGet(t, cut);
      expectUnavailable(r);
      expect(r.ms).toBeLessThan(3_000);
    } finally {
      await cut.close();
      await hole.close();
    }
  }, 30_000);
});
