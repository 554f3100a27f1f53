/**
 * The organization-wide rate limit over real HTTP with two API processes (own pools) sharing one database: the
 * budget and burst per plan and override, the limit holding across processes, 429 with Retry-After and the
 * RateLimit header fields (the IETF draft's policy and state, agreeing with each other and with the older three),
 * refill, overrides applying at once, and organizations not affecting each other.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { organizations } from '../../db/schema';
import type { TestServer } from '../support/api-server';
import { makeTenant, type Tenant } from '../support/context';
import { unsyncedIntegration } from '../support/fixtures';
import { onServices } from '../support/services';

let db: Db;
let config: Config;
let one: TestServer;
let two: TestServer;

onServices({ pool: 3, apis: true }, (s) => {
  ({ db, config } = s);
  [one, two] = s.apis;
});

async function limited(t: Tenant, perMinute: number | null, burst: number | null) {
  await db.update(organizations).set({ rateLimitPerMinute: perMinute, rateLimitBurst: burst }).where(eq(organizations.id, t.organizationId));
}
/** The RateLimit fields as a client reads them, checked to agree: what is left fits the burst, the burst refills at the budget's pace. */
function headersOf(res: Response) {
  const policy = /^"burst";q=(\d+);w=(\d+), "minute";q=(\d+);w=60$/.exec(res.headers.get('ratelimit-policy') ?? '');
  const state = /^"burst";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  expect(policy, `RateLimit-Policy: ${res.headers.get('ratelimit-policy')}`).not.toBeNull();
  expect(state, `RateLimit: ${res.headers.get('ratelimit')}`).not.toBeNull();
  const h = { burst: Number(policy![1]), window: Number(policy![2]), perMinute: Number(policy![3]), remaining: Number(state![1]), reset: Number(state![2]) };
  expect(h.remaining).toBeLessThanOrEqual(h.burst);
  expect(h.reset).toBeLessThanOrEqual(h.window);
  // q per w of the burst is never faster than the budget: pacing by either policy is never refused.
  expect(h.burst / h.window).toBeLessThanOrEqual(h.perMinute / 60);
  expect([res.headers.get('ratelimit-limit'), res.headers.get('ratelimit-remaining'), res.headers.get('ratelimit-reset')]).toEqual([
    String(h.burst),
    String(h.remaining),
    String(h.reset),
  ]);
  return h;
}

describe('org-wide rate limit', () => {
  it('allows the burst across both processes, then 429 with Retry-After in both', async () => {
    const t = await makeTenant(db, { plan: 'starter' });
    await limited(t, 30, 5); // 30 per minute = one token every 2 s; bucket of 5
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await (i % 2 ? two : one).get('/v1/leases', { key: t.key });
      statuses.push(res.status);
      expect(headersOf(res)).toMatchObject({ perMinute: 30, burst: 5, window: 10 });
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
      expect(headersOf(res)).toMatchObject({ perMinute: 30, burst: 5, remaining: 0 });
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
    expect(headersOf(first)).toMatchObject({ perMinute: 120, burst: 12, window: 6, remaining: 11 });
    await unsyncedIntegration(db, t.organizationId, { mode: 'live', plan: 'scale', source: 'entrata' });
    // The limit is read with each reservation; a starter bucket reserves one token at a time.
    const next = await one.get('/v1/leases', { key: t.key });
    expect(headersOf(next).perMinute).toBe(600);
  });

  it('an organization override applies at once and does not leak to other organizations', async () => {
    const t = await makeTenant(db, { plan: 'growth' });
    const other = await makeTenant(db, { plan: 'growth' });
    expect(headersOf(await one.get('/v1/leases', { key: t.key })).perMinute).toBe(300);
    await limited(t, 2, 1);
    // The growth bucket may still hold a reserved token in this process; within two requests the override rules.
    const seen = [await two.get('/v1/leases', { key: t.key }), await two.get('/v1/leases', { key: t.key }), await two.get('/v1/leases', { key: t.key })];
    expect(seen.map((r) => r.status)).toContain(429);
    expect(headersOf(seen[2]!)).toMatchObject({ perMinute: 2, burst: 1 });
    // Another organization is untouched.
    const res = await two.get('/v1/leases', { key: other.key });
    expect(res.status).toBe(200);
    expect(headersOf(res).perMinute).toBe(300);
  });

  it('sets the headers on every authenticated response, errors included; unauthenticated requests are not counted', async () => {
    const t = await makeTenant(db, { plan: 'enterprise' });
    const notFound = await one.get('/v1/leases/lse_01JH0000000000000000000000', { key: t.key });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('ratelimit-policy')).toBe('"burst";q=120;w=6, "minute";q=1200;w=60');
    expect(headersOf(notFound)).toMatchObject({ perMinute: 1200, burst: 120, window: 6 });
    const bad = await one.get('/v1/leases?limit=0', { key: t.key });
    expect(bad.status).toBe(422);
    expect(headersOf(bad).perMinute).toBe(1200);
    const anonymous = await one.get('/v1/leases');
    expect(anonymous.status).toBe(401);
    for (const name of ['ratelimit-policy', 'ratelimit', 'ratelimit-limit']) expect(anonymous.headers.get(name)).toBeNull();
  });
});
