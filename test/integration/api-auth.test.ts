/**
 * API-key authentication over real HTTP: every 401 case, served modes, revocation taking effect at once in every
 * API process (two apps with their own pools, keys cached for 10 minutes so only the NOTIFY can explain it),
 * surviving a lost LISTEN connection and last_used_at bookkeeping, and the 403 of a key without the scope a route needs
 * (a write without `write` in detail: writes.test.ts; the read fast path's: api-fast-reads.test.ts).
 */
import { eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { apiKeys, organizations } from '../../db/schema';
import { createApiKey, hashApiKey } from '../../db/tenants';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, SERVE_LIVE, testConfig, testDb, type Tenant } from '../support/context';
import { onServices } from '../support/services';
import { until } from '../support/until';

let db: Db;
let config: Config;
let one: TestServer;
let two: TestServer;
let t: Tenant;

// Keys stay cached far longer than any test: only the revocation feed can make a revoked key fail quickly.
onServices({ pool: 3, settings: { AUTH_CACHE_MS: '600000', ...SERVE_LIVE }, apis: true }, (s) => {
  ({ db, config } = s);
  [one, two] = s.apis;
});
beforeAll(async () => {
  t = await makeTenant(db);
  await db.update(organizations).set({ rateLimitPerMinute: 100_000, rateLimitBurst: 10_000 }).where(eq(organizations.id, t.organizationId));
});

async function expect401(res: Response, detail?: RegExp) {
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  const body = (await res.json()) as Record<string, string>;
  expect(body).toMatchObject({ type: `${config.DOCS_BASE_URL}/errors/unauthorized`, title: 'Unauthorized', status: 401, instance: '/v1/leases' });
  if (detail) expect(body.detail).toMatch(detail);
}

describe('401', () => {
  it('missing, malformed and unknown credentials', async () => {
    await expect401(await one.get('/v1/leases'), /Missing Authorization/);
    await expect401(await one.get('/v1/leases', { headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } }), /Malformed/);
    await expect401(await one.get('/v1/leases', { headers: { authorization: 'Bearer' } }), /Malformed/);
    await expect401(await one.get('/v1/leases', { headers: { authorization: `Bearer ${t.key} extra` } }), /Malformed/);
    await expect401(await one.get('/v1/leases', { key: 'sk_test_short' }), /Invalid API key/);
    await expect401(await one.get('/v1/leases', { key: t.key.replace('sk_test_', 'pk_test_') }), /Invalid API key/);
    await expect401(await one.get('/v1/leases', { key: `sk_test_${'A'.repeat(32)}` }), /Invalid API key/);
    expect((await one.get('/v1/leases', { headers: { authorization: `bearer ${t.key}` } })).status).toBe(200);
  });

  it('a key whose prefix does not match its stored mode', async () => {
    const { row, key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'live' });
    expect((await one.get('/v1/leases', { key })).status).toBe(200);
    await db.update(apiKeys).set({ mode: 'test' }).where(eq(apiKeys.id, row.id));
    await until(async () => (await one.get('/v1/leases', { key })).status === 401);
    await expect401(await one.get('/v1/leases', { key: key.replace('sk_live_', 'sk_test_') }), /Invalid API key/);
  });

  it('a key of a mode this deployment does not serve', async () => {
    const liveOnly = await startApi(db, testConfig({ ...SERVE_LIVE, SERVED_MODES: 'live' }));
    try {
      await expect401(await liveOnly.get('/v1/leases', { key: t.key }), /does not serve test-mode keys/);
      const { key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'live' });
      expect((await liveOnly.get('/v1/leases', { key })).status).toBe(200);
    } finally {
      await liveOnly.close();
    }
  });
});

describe('403: scopes', () => {
  it('a key without `read` reads nothing, records or events, before its query is looked at; a poll or a write option needs either scope', async () => {
    const writeOnly = (await createApiKey(db, { organizationId: t.organizationId, mode: 'test', scopes: ['write'] })).key;
    const readOnly = (await createApiKey(db, { organizationId: t.organizationId, mode: 'test', scopes: ['read'] })).key;
    for (const path of [
      '/v1/leases?propertyid=x',
      '/v1/units/unt_01JH0000000000000000000000?include_deleted=maybe',
      '/v1/events',
      '/v1/events/evt_01JH0000000000000000000000',
    ]) {
      const res = await one.get(path, { key: writeOnly });
      expect(res.status, path).toBe(403);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toMatchObject({
        type: `${config.DOCS_BASE_URL}/errors/forbidden`,
        title: 'Forbidden',
        status: 403,
        detail: 'Insufficient permissions',
        required_scopes: ['read'],
      });
    }
    for (const key of [writeOnly, readOnly]) {
      expect((await one.get('/v1/operations/opr_01JH0000000000000000000000', { key })).status).toBe(404);
      expect((await one.get('/v1/write_options/lease.update?property_id=prp_01JH0000000000000000000000', { key })).status).toBe(404);
    }
    expect((await one.get('/v1/events', { key: readOnly })).status).toBe(200);
  });
});

describe('revocation', () => {
  it('takes effect at once in every API process, although both cached the key', async () => {
    const { row, key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'test' });
    for (const api of [one, two]) expect((await api.get('/v1/leases', { key })).status).toBe(200);
    await until(async () => one.app.auth.listening && two.app.auth.listening);
    // Cached now: the key's row is no longer read on each request.
    for (const api of [one, two]) expect((await api.get('/v1/leases', { key })).status).toBe(200);

    await db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, row.id));
    // Within 2 s in each process (until() fails past its timeout).
    await Promise.all([one, two].map((api) => until('the revocation', async () => (await api.get('/v1/leases', { key })).status === 401, 2_000)));
    for (const api of [one, two]) await expect401(await api.get('/v1/leases', { key }), /revoked/);
  });

  it('does not trust its cache while the LISTEN connection is down, and recovers it', async () => {
    const { row, key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'test' });
    expect((await one.get('/v1/leases', { key })).status).toBe(200);
    const pid = await one.app.auth.listenerPid();
    expect(pid).toBeTypeOf('number');
    await db.execute(sql`select pg_terminate_backend(${pid!})`);
    await until(async () => !one.app.auth.listening);
    // A revocation while nobody listens: the notification is lost, yet the next request sees it.
    await db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, row.id));
    await expect401(await one.get('/v1/leases', { key }), /revoked/);
    // The feed comes back by itself and revocations flow again.
    await until(async () => one.app.auth.listening, 5_000);
    expect(await one.app.auth.listenerPid()).not.toBe(pid);
    const other = await createApiKey(db, { organizationId: t.organizationId, mode: 'test' });
    expect((await one.get('/v1/leases', { key: other.key })).status).toBe(200);
    await db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, other.row.id));
    await until(async () => (await one.get('/v1/leases', { key: other.key })).status === 401, 2_000);
  });

  it('a deleted key stops working at once', async () => {
    const { row, key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'test' });
    expect((await two.get('/v1/leases', { key })).status).toBe(200);
    await db.delete(apiKeys).where(eq(apiKeys.keyHash, hashApiKey(key)));
    await until(async () => (await two.get('/v1/leases', { key })).status === 401, 2_000);
    expect(row.id).toBeTruthy();
  });
});

describe('last_used_at', () => {
  it('is recorded on use, at most once a minute', async () => {
    const { row, key } = await createApiKey(db, { organizationId: t.organizationId, mode: 'test' });
    expect(row.lastUsedAt).toBeNull();
    await one.get('/v1/leases', { key });
    let first: Date | null = null;
    await until(async () => {
      [{ lastUsedAt: first }] = (await db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, row.id))) as [
        { lastUsedAt: Date | null },
      ];
      return first !== null;
    });
    // A process with a single connection runs its statements in the order it began them: the UPDATE its first use of
    // the key starts (it has not recorded one itself) has ended before the query that answers the request.
    const single = testDb(1);
    const three = await startApi(single, config);
    try {
      expect((await three.get('/v1/leases', { key })).status).toBe(200);
      expect((await three.get('/v1/leases', { key })).status).toBe(200);
    } finally {
      await three.close();
      await closeDb(single);
    }
    const [again] = await db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, row.id));
    expect(again!.lastUsedAt!.getTime()).toBe(first!.getTime());
  });
});
