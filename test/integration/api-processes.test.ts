/**
 * What two API processes (api/main.ts, each with its own pools) share through Postgres: the organization-wide rate
 * limit, taken in leases (a process claims a slice of the bucket and spends it locally), which stays exact to within
 * one slice per process, gives back what a process did not spend, and survives a process stopping; and the revocation
 * of a key that both processes cached, which reaches both within a second.
 */
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxSliceOf } from '../../api/middleware/rate-limit';
import { closeDb, type Db } from '../../db/client';
import { apiKeys, organizations } from '../../db/schema';
import { createApiKey } from '../../db/tenants';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { makeTenant, testDb, type Tenant } from '../support/context';
import { Processes } from '../support/faults';
import { until } from '../support/until';

const procs = new Processes();
let db: Db;
let one: ApiProcess;
let two: ApiProcess;

beforeAll(async () => {
  db = testDb(2);
  // Keys stay cached far longer than any test: only the revocation feed can make a revoked key fail quickly.
  [one, two] = await Promise.all([startApiProcess(procs, { AUTH_CACHE_MS: '600000' }), startApiProcess(procs, { AUTH_CACHE_MS: '600000' })]);
}, 120_000);
afterAll(async () => {
  await procs.killAll();
  if (db) await closeDb(db);
});

/** Six requests a minute (a token every 10 s: no test runs long enough to see more than one) and a burst of `burst`. */
async function limitedTenant(burst: number): Promise<Tenant> {
  const t = await makeTenant(db, { plan: 'starter' });
  await db.update(organizations).set({ rateLimitPerMinute: 6, rateLimitBurst: burst }).where(eq(organizations.id, t.organizationId));
  return t;
}
const PER_SECOND = 6 / 60;

/** Tokens in the organization's bucket now (refill included), as the next claim would see them. */
async function bucketOf(t: Tenant, burst: number): Promise<number> {
  const [row] = await db.execute<{ tokens: number }>(sql`
    select least(${burst}::float8, tokens + extract(epoch from clock_timestamp() - refilled_at) * ${PER_SECOND}) as tokens
    from rate_limit_buckets where organization_id = ${t.organizationId}`);
  return Number(row!.tokens);
}

/** `callers` loops against `api`, each until its first 429 (or `stop()`); the 200s and the 429s they got. */
function drive(api: ApiProcess, t: Tenant, callers: number, opts: { pauseMs?: number } = {}) {
  let stopped = false;
  const refused: Response[] = [];
  let ok = 0;
  const done = Promise.all(
    Array.from({ length: callers }, async () => {
      while (!stopped) {
        const res = await api.get('/v1/properties', t.key);
        if (res.status === 429) {
          refused.push(res);
          return;
        }
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        ok++;
        if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
      }
    }),
  );
  return {
    done: done.then(() => ({ ok, refused })),
    stop: async () => {
      stopped = true;
      await done;
      return ok;
    },
  };
}

describe('rate limit in leases across two API processes', () => {
  it('hits the limit at the configured number, within one slice per process', async () => {
    const burst = 200;
    const slice = maxSliceOf(burst);
    expect(slice).toBe(20);
    const t = await limitedTenant(burst);
    const began = Date.now();
    const [a, b] = await Promise.all([drive(one, t, 8).done, drive(two, t, 8).done]);
    const refill = Math.ceil(((Date.now() - began) / 1000) * PER_SECOND);
    const ok = a.ok + b.ok;
    // Never more than the bucket held; fewer by at most the slices the processes held when each saw its first 429.
    expect(ok).toBeLessThanOrEqual(burst + refill);
    expect(ok).toBeGreaterThanOrEqual(burst - 2 * slice);
    expect(a.ok).toBeGreaterThan(0);
    expect(b.ok).toBeGreaterThan(0);
    for (const res of [...a.refused, ...b.refused]) {
      expect(res.headers.get('ratelimit-policy')).toMatch(new RegExp(`^"burst";q=${burst};w=\\d+, "minute";q=6;w=60$`));
      expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=0;t=\d+$/);
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(10);
    }
  });

  it('gives back what a process claimed and did not spend, so the other process can spend it', async () => {
    const burst = 40;
    const t = await limitedTenant(burst);
    const began = Date.now();
    // About 20 requests a second through one process for a second: it claims slices ahead of its requests.
    const first = drive(one, t, 2, { pauseMs: 100 });
    // Paces the load (not an absence proof): the counts asserted are what the process spent and holds when it stops.
    await new Promise((r) => setTimeout(r, 1_000));
    const spentByOne = await first.stop();
    expect(spentByOne).toBeGreaterThan(5);
    expect(spentByOne).toBeLessThan(burst - maxSliceOf(burst));
    // Right after, the process still holds part of a slice: the bucket has less than the burst minus what was spent.
    const heldAfterStop = burst - spentByOne - (await bucketOf(t, burst));
    expect(heldAfterStop).toBeGreaterThan(0.5);
    expect(heldAfterStop).toBeLessThanOrEqual(maxSliceOf(burst) + 0.5);
    // Unspent for a lease's time, it goes back.
    await until('the unspent tokens to go back', async () => burst - spentByOne - (await bucketOf(t, burst)) < 0.5, 3_000);
    // The other process then gets exactly the rest.
    const rest = await drive(two, t, 4).done;
    const refill = Math.ceil(((Date.now() - began) / 1000) * PER_SECOND);
    expect(spentByOne + rest.ok).toBeGreaterThanOrEqual(burst);
    expect(spentByOne + rest.ok).toBeLessThanOrEqual(burst + refill);
  });
});

describe('revocation across two API processes', () => {
  it('a key both processes cached fails in both within a second of its revocation', async () => {
    const t = await makeTenant(db);
    await db.update(organizations).set({ rateLimitPerMinute: 100_000, rateLimitBurst: 10_000 }).where(eq(organizations.id, t.organizationId));
    const { row, key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'test' });
    for (const api of [one, two]) expect((await api.get('/v1/leases', key)).status).toBe(200);
    // Both processes LISTEN (the first request starts the feed); from then on the key is served from their caches.
    await until(
      'both revocation feeds to listen',
      async () => {
        const [r] = await db.execute<{ n: number }>(sql`
          select count(*)::int as n from pg_stat_activity
          where application_name = 'propsync-api-auth' and query ilike 'listen%' and datname = current_database()`);
        return (r?.n ?? 0) >= 2;
      },
      5_000,
    );
    for (const api of [one, two]) expect((await api.get('/v1/leases', key)).status).toBe(200);

    await db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, row.id));
    // Within a second in each process (until() fails past its timeout).
    await Promise.all([one, two].map((api) => until('the revocation', async () => (await api.get('/v1/leases', key)).status === 401, 1_000)));
    for (const api of [one, two]) {
      const res = await api.get('/v1/leases', key);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/revoked/);
    }
  });
});

describe('a stopping API process', () => {
  it('gives its unspent tokens back before it exits', async () => {
    const burst = 40;
    const t = await limitedTenant(burst);
    const first = drive(two, t, 2, { pauseMs: 50 });
    // Paces the load (not an absence proof): what is asserted is read after the process stops.
    await new Promise((r) => setTimeout(r, 600));
    const spent = await first.stop();
    expect(burst - spent - (await bucketOf(t, burst))).toBeGreaterThan(0.5);
    await two.stop();
    // Nothing stays held by a process that is gone (it gives them back on its way out, without waiting for the lease).
    expect(burst - spent - (await bucketOf(t, burst))).toBeLessThan(0.5);
  });
});
