/**
 * The organization-wide rate limit over real HTTP with two API processes (own pools) sharing one database: the
 * budget and burst per plan and override, the limit holding across processes, 429 with Retry-After and the
 * RateLimit-* headers, refill, overrides applying at once, and organizations not affecting each other.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { organizations } from '../../db/schema';
import { createIntegration } from '../../db/tenants';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, testConfig, testDb, testKeyring, type Tenant } from '../support/context';

let db: Db;
let db2: Db;
let config: Config;
let one: TestServer;
let two: TestServer;

beforeAll(async () => {
  db = testDb(3);
  db2 = testDb(3);
  config = testConfig();
  one = await startApi(db, config);
  two = await startApi(db2, config);
});
afterAll(async () => {
  await one?.close();
  await two?.close();
  await closeDb(db);
  await closeDb(db2);
});

async function limited(t: Tenant, perMinute: number | null, burst: number | null) {
  await db.update(organizations).set({ rateLimitPerMinute: perMinute, rateLimitBurst: burst }).where(eq(organizations.id, t.organizationId));
}
const headersOf = (res: Response) => ({
  limit: Number(res.headers.get('ratelimit-limit')),
  remaining: Number(res.headers.get('ratelimit-remaining')),
  reset: Number(res.headers.get('ratelimit-reset')),
});

describe('org-wide rate limit', () => {
  it('allows the burst across both processes, then 429 with Retry-After in both', async () => {
    const t = await makeTenant(db, { plan: 'starter' });
    await limited(t, 30, 5); // 30 per minute = one token every 2 s; bucket of 5
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await (i % 2 ? two : one).get('/v1/leases', { key: t.key });
      statuses.push(res.status);
      expect(headersOf(res).limit).toBe(30);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    for (const api of [one, two]) {
      const res = await api.get('/v1/leases', { key: t.key });
      expect(res.status).toBe(429);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({ type: `${config.DOCS_BASE_URL}/errors/rate_limit_exceeded`, title: 'Too Many Requests', status: 429 });
      expect(body.request_id).toBe(res.headers.get('x-request-id'));
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(2);
      expect(headersOf(res)).toMatchObject({ limit: 30, remaining: 0 });
      expect(headersOf(res).reset).toBeGreaterThan(0);
    }
  });

  it('holds under concurrent load spread over both processes', async () => {
    const t = await makeTenant(db, { plan: 'starter' });
    await limited(t, 6, 8); // refill is one token per 10 s: the test only ever sees the bucket of 8
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? two : one).get('/v1/properties', { key: t.key })));
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(8);
    expect(results.filter((r) => r.status === 429)).toHaveLength(22);
  });

  it('refills: after Retry-After seconds a request passes again', async () => {
    const t = await makeTenant(db, { plan: 'starter' });
    await limited(t, 60, 1); // one token per second, bucket of 1
    expect((await one.get('/v1/leases', { key: t.key })).status).toBe(200);
    const refused = await two.get('/v1/leases', { key: t.key });
    expect(refused.status).toBe(429);
    await new Promise((r) => setTimeout(r, Number(refused.headers.get('retry-after')) * 1000 + 50));
    expect((await two.get('/v1/leases', { key: t.key })).status).toBe(200);
  });

  it("uses the highest plan among the organization's integrations, with a 10 % burst", async () => {
    const t = await makeTenant(db, { plan: 'starter' });
    const first = await one.get('/v1/leases', { key: t.key });
    expect(headersOf(first)).toMatchObject({ limit: 120, remaining: 11 });
    await createIntegration(
      db,
      { organizationId: t.organizationId, mode: 'live', plan: 'scale', sourceType: 'entrata', sourceConfig: { base_url: 'https://pms.example.com', api_key: 'unused' } },
      testKeyring(),
    );
    // The limit is read with each reservation; a starter bucket reserves one token at a time.
    const next = await one.get('/v1/leases', { key: t.key });
    expect(headersOf(next).limit).toBe(600);
  });

  it('an organization override applies at once and does not leak to other organizations', async () => {
    const t = await makeTenant(db, { plan: 'growth' });
    const other = await makeTenant(db, { plan: 'growth' });
    expect(headersOf(await one.get('/v1/leases', { key: t.key })).limit).toBe(300);
    await limited(t, 2, 1);
    // The growth bucket may still hold a reserved token in this process; within two requests the override rules.
    const seen = [await two.get('/v1/leases', { key: t.key }), await two.get('/v1/leases', { key: t.key }), await two.get('/v1/leases', { key: t.key })];
    expect(seen.map((r) => r.status)).toContain(429);
    expect(headersOf(seen[2]!).limit).toBe(2);
    // Another organization is untouched.
    const res = await two.get('/v1/leases', { key: other.key });
    expect(res.status).toBe(200);
    expect(headersOf(res).limit).toBe(300);
  });

  it('sets the headers on every authenticated response, errors included; unauthenticated requests are not counted', async () => {
    const t = await makeTenant(db, { plan: 'enterprise' });
    const notFound = await one.get('/v1/leases/lse_01JH0000000000000000000000', { key: t.key });
    expect(notFound.status).toBe(404);
    expect(headersOf(notFound)).toMatchObject({ limit: 1200 });
    const bad = await one.get('/v1/leases?limit=0', { key: t.key });
    expect(bad.status).toBe(422);
    expect(bad.headers.get('ratelimit-limit')).toBe('1200');
    const anonymous = await one.get('/v1/leases');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('ratelimit-limit')).toBeNull();
  });
});
