/**
 * Which kind of run a sync is (full or delta) and the window it covers, decided by its claim against the database's
 * clock; what a successful run moves (synced_through, last_full_sync_at); and the stale-page guard, whose times come
 * from the database even when a worker's own clock is wrong.
 */
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HashedPage, PageReader } from '../../activities/page-reader';
import { createActivities, type StartSyncJobResult, type SyncActivityDeps } from '../../activities/sync';
import { triggerSync } from '../../control/sync';
import { closeDb, type Db } from '../../db/client';
import { databaseNow } from '../../db/clock';
import { newId } from '../../db/ids';
import { applyRecords } from '../../db/records';
import { integrations, syncJobs, units } from '../../db/schema';
import { getSyncJob } from '../../db/sync-jobs';
import type { Entity } from '../../domain/cdm';
import { hashRecord } from '../../domain/content';
import type { SyncKind, SyncTrigger } from '../../domain/contract';
import { makeTenant, testConfig, testDb, testKeyring, type Tenant } from '../support/context';
import { propertyInput, unitInput } from '../support/fixtures';
import { reload, runSync, sandboxIntegration, startTestWorker, waitForJob, type TestWorker } from '../support/sync';

let db: Db;

beforeAll(() => {
  db = testDb(4);
});
afterAll(async () => {
  await closeDb(db);
});

/** Sync activities over a page reader of the test's own (run with MockActivityEnvironment, no worker). */
function activitiesFor(pages: PageReader, extra: Partial<SyncActivityDeps> = {}) {
  return createActivities({ db, pages, secrets: testKeyring(), runState: async () => 'closed' as const, ...extra });
}
const NO_PAGES: PageReader = {
  read: () => Promise.reject(new Error('unused')),
  readChanged: () => Promise.reject(new Error('unused')),
  lookup: () => Promise.reject(new Error('unused')),
  close: async () => {},
};
/** A source that can list what changed (as a buildium one can), without asking a connector. */
const DELTA = { capabilitiesOf: () => ({ delta: true, idempotentCreates: true }) };

describe('the claim decides the kind and the window', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await makeTenant(db);
  });

  /** Claim a run as a scheduled workflow would (or claim the queued job `syncJobId`); the job row as it started. */
  async function claim(extra: Partial<SyncActivityDeps>, input: { syncJobId?: string; kind?: SyncKind } = {}) {
    const acts = activitiesFor(NO_PAGES, extra);
    const env = new MockActivityEnvironment({ workflowExecution: { workflowId: `test-${randomUUID()}`, runId: randomUUID() } });
    const trigger: SyncTrigger = input.syncJobId ? 'manual' : 'schedule';
    const started: StartSyncJobResult = await env.run(acts.startSyncJob, { integrationId: tenant.integrationId, trigger, ...input });
    if (started.skipped) throw new Error(`skipped: ${started.reason}`);
    const job = (await getSyncJob(db, started.syncJobId))!;
    expect(started.kind).toBe(job.kind);
    // Only one run of an integration at a time: end this one so the next claim is not skipped.
    await db.update(syncJobs).set({ status: 'succeeded', finishedAt: new Date() }).where(eq(syncJobs.id, job.id));
    return job;
  }
  const setIntegration = (values: Partial<typeof integrations.$inferInsert>) => db.update(integrations).set(values).where(eq(integrations.id, tenant.integrationId));
  const dbNow = () => databaseNow(db);

  it('first run: full, whatever is asked, its window ending at the database time of its start', async () => {
    const before = await dbNow();
    const job = await claim(DELTA, {});
    expect(job).toMatchObject({ kind: 'full', windowFrom: null, initial: true });
    expect(job.windowTo!.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(job.windowTo!.getTime()).toBeLessThanOrEqual((await dbNow()).getTime());
    expect(job.startedAt).toEqual(job.windowTo);
  });

  it('no successful run yet (synced_through null): full', async () => {
    await setIntegration({ firstSyncCompletedAt: new Date(), syncedThrough: null, lastFullSyncAt: null });
    expect((await claim(DELTA)).kind).toBe('full');
  });

  it('a delta run when the last full run is recent: from synced_through less the overlap, to now', async () => {
    const now = await dbNow();
    const syncedThrough = new Date(now.getTime() - 3_600_000);
    await setIntegration({ firstSyncCompletedAt: new Date(), syncedThrough, lastFullSyncAt: new Date(now.getTime() - 7_200_000) });
    const job = await claim({ ...DELTA, deltaOverlapSeconds: 120 });
    expect(job).toMatchObject({ kind: 'delta', initial: false, windowFrom: new Date(syncedThrough.getTime() - 120_000) });
    expect(job.windowTo!.getTime()).toBeGreaterThanOrEqual(now.getTime());
    // The default overlap is the configuration's (300 s).
    expect((await claim(DELTA)).windowFrom).toEqual(new Date(syncedThrough.getTime() - 300_000));
  });

  it('full once the full-run interval has passed since the last full run began: the integration\'s own, else the default', async () => {
    const now = await dbNow();
    await setIntegration({ syncedThrough: now, lastFullSyncAt: new Date(now.getTime() - 61_000), fullSyncIntervalSeconds: 60 });
    expect((await claim(DELTA)).kind).toBe('full');
    await setIntegration({ fullSyncIntervalSeconds: 3_600 });
    expect((await claim(DELTA)).kind).toBe('delta');
    // The worker's default (SYNC_FULL_INTERVAL_SECONDS), shrunk.
    await setIntegration({ fullSyncIntervalSeconds: null });
    expect((await claim({ ...DELTA, fullSyncIntervalSeconds: 30 })).kind).toBe('full');
    expect((await claim({ ...DELTA, fullSyncIntervalSeconds: 86_400 })).kind).toBe('delta');
  });

  it('a manual trigger that asks for full gets full; one that asks for delta gets it where one is due', async () => {
    const now = await dbNow();
    await setIntegration({ syncedThrough: now, lastFullSyncAt: now, fullSyncIntervalSeconds: null });
    const queued = async () => {
      const id = newId('syncJob');
      await db.insert(syncJobs).values({ id, organizationId: tenant.organizationId, integrationId: tenant.integrationId, status: 'queued', trigger: 'manual' });
      return id;
    };
    expect((await claim(DELTA, { syncJobId: await queued(), kind: 'full' })).kind).toBe('full');
    expect((await claim(DELTA, { syncJobId: await queued(), kind: 'delta' })).kind).toBe('delta');
    expect((await claim(DELTA, { syncJobId: await queued() })).kind).toBe('delta');
  });

  it('a source that cannot list what changed (entrata): always full', async () => {
    const now = await dbNow();
    await setIntegration({ syncedThrough: now, lastFullSyncAt: now });
    // The connector's own answer: the tenant's source is Entrata-style.
    expect((await claim({})).kind).toBe('full');
  });
});

describe('full runs of an entrata source, end to end', () => {
  let t: TestWorker;
  beforeAll(async () => {
    t = await startTestWorker(testConfig({ SYNC_PAGE_SIZE: '20' }), db);
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('each run is full (first and later, and when a delta is merely due), and success moves synced_through and last_full_sync_at to its window end', async () => {
    const s = await sandboxIntegration(db, { size: 6 });
    const first = await runSync(t, db, s.row);
    expect(first).toMatchObject({ status: 'succeeded', kind: 'full', initial: true, windowFrom: null });
    let row = await reload(db, s.row);
    expect(row.syncedThrough).toEqual(first.windowTo);
    expect(row.lastFullSyncAt).toEqual(first.windowTo);

    const second = await waitForJob(t, db, (await triggerSync(t.ctl, row)).id);
    expect(second).toMatchObject({ status: 'succeeded', kind: 'full', initial: false, windowFrom: null });
    expect(second.windowTo!.getTime()).toBeGreaterThan(first.windowTo!.getTime());
    row = await reload(db, s.row);
    expect(row).toMatchObject({ syncedThrough: second.windowTo, lastFullSyncAt: second.windowTo });
  });
});

describe('the stale-page guard', () => {
  it('keeps a write-back stored while a page was in flight, even when the sync worker\'s clock is an hour ahead', async () => {
    const tenant = await makeTenant(db);
    const integration = { id: tenant.integrationId, organizationId: tenant.organizationId, mode: tenant.mode };
    await db.transaction(async (tx) => {
      await applyRecords(tx, { integration, emitEvents: false }, 'property', [propertyInput('GP1')]);
      await applyRecords(tx, { integration, emitEvents: false }, 'unit', [unitInput('GU1', 'GP1', { bedrooms: 1 })]);
    });
    await db.update(integrations).set({ firstSyncCompletedAt: new Date() }).where(eq(integrations.id, tenant.integrationId));
    const jobId = newId('syncJob');
    await db.insert(syncJobs).values({
      id: jobId,
      organizationId: tenant.organizationId,
      integrationId: tenant.integrationId,
      status: 'running',
      trigger: 'manual',
      workflowId: `test-${randomUUID()}`,
      kind: 'full',
      startedAt: new Date(),
    });
    // The page is read (bedrooms 2, the source's value before the write); while it is in flight a write-back stores
    // bedrooms 3 (the database's clock, as every write-back does); then the page arrives.
    const pages: PageReader = {
      ...NO_PAGES,
      async read<E extends Entity>(_settings: unknown, entity: E): Promise<HashedPage<E>> {
        if (entity !== 'unit') throw new Error(`only units are read here, not ${entity}`);
        await db.transaction((tx) => applyRecords(tx, { integration, emitEvents: true, operationId: newId('operation') }, 'unit', [unitInput('GU1', 'GP1', { bedrooms: 3 })]));
        return { records: [hashRecord(unitInput('GU1', 'GP1', { bedrooms: 2 }), false)], skipped: [], page: 1, hasMore: false } as unknown as HashedPage<E>;
      },
    };
    const ahead = () => new Date(Date.now() + 3_600_000);
    const acts = activitiesFor(pages, { clock: ahead });
    const done = await new MockActivityEnvironment().run(acts.syncEntity, { syncJobId: jobId, entity: 'unit' as const });
    expect(done).toEqual({ pages: 1, records: 1 });
    const [unit] = await db.select().from(units).where(eq(units.integrationId, tenant.integrationId));
    expect(unit!.bedrooms).toBe(3);
    // The page counted the record as seen and changed nothing.
    expect(await getSyncJob(db, jobId)).toMatchObject({ recordsSeen: 1, recordsUpdated: 0 });
    // And the stored times are the database's, not the worker's hour-ahead clock.
    const [stored] = await db.execute<{ skew: number }>(sql`select extract(epoch from (now() - ${units.psSyncedAt}))::float8 as skew from ${units} where ${units.integrationId} = ${tenant.integrationId}`);
    expect(Math.abs(stored!.skew)).toBeLessThan(60);
  });
});
