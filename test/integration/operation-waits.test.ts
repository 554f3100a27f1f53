/**
 * Held polls: `GET /v1/operations/{id}` with `Prefer: wait=N` answers when the Operation ends (its end committed by
 * whatever process), or after N seconds with its state then, on the read fast path and in the app alike; a shutdown
 * answers held polls at once; a lost notification connection costs a held poll at most a moment.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import type { ServerType } from '@hono/node-server';
import { createApp, type App } from '../../api/app';
import { serveApi } from '../../api/server';
import { lazyTemporalClient } from '../../api/temporal';
import type { Config } from '../../config';
import { createLogger } from '../../config/logger';
import { closeDb, type Db } from '../../db/client';
import { moveOperation } from '../../db/operations';
import { createKeyring } from '../../domain/secrets';
import { makeTenant, testConfig, testDb, type Tenant } from '../support/context';
import { until } from '../support/until';
import { queuedOperation } from '../support/writes';

let db: Db;
let config: Config;
let temporal: ReturnType<typeof lazyTemporalClient>;
let app: App;
let fast: ServerType;
let plain: ServerType;
let t: Tenant;

const urlOf = (s: ServerType) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
const listen = (s: ServerType) => new Promise<void>((resolve) => (s.listening ? resolve() : s.once('listening', () => resolve())));
const makeApp = () =>
  createApp({ config, db, temporal, logger: createLogger('api-test', { level: 'silent' }), secrets: createKeyring(config.ENCRYPTION_KEYS) });

beforeAll(async () => {
  db = testDb(4);
  config = testConfig();
  temporal = lazyTemporalClient(config, { connectTimeoutMs: 1_000 });
  app = makeApp();
  fast = serveApi({ fetch: app.fetch, reads: app.reads, port: 0, hostname: '127.0.0.1', bases: config });
  plain = serveApi({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', bases: config });
  await Promise.all([listen(fast), listen(plain)]);
  t = await makeTenant(db);
});

afterAll(async () => {
  await Promise.all([fast, plain].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await app?.close();
  await temporal?.close();
  await closeDb(db);
});

const queued = () => queuedOperation(db, t, { type: 'lease.update', request: { notes: 'x' }, targetXId: 'L1' });

const succeed = (id: string) =>
  moveOperation(db, id, 'succeeded', { sourceState: 'applied', appliedAt: new Date(), reconcileState: 'reconciled', attempts: 1, resourceXId: 'L1' });

async function poll(base: string, id: string, prefer?: string): Promise<{ status: number; applied: string | null; body: { status?: string }; ms: number }> {
  const started = performance.now();
  const r = await fetch(`${base}/v1/operations/${id}`, { headers: { authorization: `Bearer ${t.key}`, ...(prefer ? { prefer } : {}) } });
  return { status: r.status, applied: r.headers.get('preference-applied'), body: (await r.json()) as { status?: string }, ms: performance.now() - started };
}

describe('a poll that asks to wait (Prefer: wait=N)', () => {
  it('is answered when its Operation ends, on the fast path and in the app', async () => {
    const id = await queued();
    const held = [poll(urlOf(fast), id, 'wait=15'), poll(urlOf(plain), id, 'respond-async, wait=15')];
    // Both are held (the Operation is queued) before it ends.
    await new Promise((r) => setTimeout(r, 300));
    await succeed(id);
    for (const r of await Promise.all(held)) {
      expect(r).toMatchObject({ status: 200, applied: 'wait=15', body: { status: 'succeeded' } });
      // Answered at the end, not at the end of the wait.
      expect(r.ms).toBeLessThan(10_000);
    }
    expect(app.waitsListening).toBe(true);
  });

  it('is answered with the state then when the wait runs out, and at once when there is nothing to wait for', async () => {
    for (const base of [urlOf(fast), urlOf(plain)]) {
      const id = await queued();
      const r = await poll(base, id, 'wait=1');
      expect(r).toMatchObject({ status: 200, applied: 'wait=1', body: { status: 'queued' } });
      expect(r.ms).toBeGreaterThanOrEqual(950);
      // An ended Operation, an unknown one, a wait of 0 and no preference: answered at once; a wait above the cap is the cap.
      await succeed(id);
      expect(await poll(base, id, 'wait=3600')).toMatchObject({ status: 200, applied: 'wait=20', body: { status: 'succeeded' } });
      expect(await poll(base, 'opr_01JH0000000000000000000000', 'wait=5')).toMatchObject({ status: 404 });
      expect(await poll(base, id, 'wait=0')).toMatchObject({ status: 200, applied: null });
      expect(await poll(base, id)).toMatchObject({ status: 200, applied: null });
      expect(await poll(base, id, 'wait=soon')).toMatchObject({ status: 200, applied: null });
    }
  });

  it('hears an end after its notification connection was lost and came back', async () => {
    const id = await queued();
    // The feed is open (the tests above used it): end its connection as a database restart would.
    await until(
      'the feed to listen',
      async () =>
        ((await db.execute(sql`select pid from pg_stat_activity where application_name = 'propsync-api-waits' and datname = current_database()`)).length > 0 &&
          app.waitsListening) ||
        undefined,
      10_000,
    );
    const held = poll(urlOf(fast), id, 'wait=15');
    await new Promise((r) => setTimeout(r, 200));
    await db.execute(
      sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'propsync-api-waits' and datname = current_database()`,
    );
    await until('the feed to be lost', async () => !app.waitsListening || undefined, 10_000);
    await succeed(id);
    const r = await held;
    expect(r).toMatchObject({ status: 200, body: { status: 'succeeded' } });
    expect(r.ms).toBeLessThan(10_000);
    // The feed listens again by itself, and a held poll hears the next end.
    await until('the feed to listen again', async () => app.waitsListening || undefined, 10_000);
    const next = await queued();
    const again = poll(urlOf(fast), next, 'wait=15');
    await new Promise((r) => setTimeout(r, 200));
    await succeed(next);
    expect(await again).toMatchObject({ status: 200, body: { status: 'succeeded' } });
  });

  it('is answered at once when the API shuts down', async () => {
    const own = makeApp();
    const server = serveApi({ fetch: own.fetch, reads: own.reads, port: 0, hostname: '127.0.0.1', bases: config });
    await listen(server);
    try {
      const id = await queued();
      const held = poll(urlOf(server), id, 'wait=15');
      await new Promise((r) => setTimeout(r, 300));
      await own.releaseHeldPolls();
      const r = await held;
      expect(r).toMatchObject({ status: 200, applied: 'wait=15', body: { status: 'queued' } });
      expect(r.ms).toBeLessThan(10_000);
      // A poll that comes while it drains is not held, and does not say it was.
      const late = await poll(urlOf(server), id, 'wait=15');
      expect(late).toMatchObject({ status: 200, applied: null, body: { status: 'queued' } });
      expect(late.ms).toBeLessThan(5_000);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await own.close();
    }
  });
});
