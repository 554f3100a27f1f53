/**
 * Which kind of run a sync is (full or delta) and the window it covers, decided by its claim against the database's
 * clock; what a successful run moves (synced_through, last_full_sync_at); and the stale-page guard, whose times come
 * from the database even when a worker's own clock is wrong.
 */
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { createPageReader, type HashedPage, type PageReader } from '../../activities/page-reader';
import { createSyncActivities, DELTA_WINDOW_RESTARTS, type StartSyncJobResult, type SyncActivityDeps } from '../../activities/sync';
import type { Db } from '../../db/client';
import { databaseNow } from '../../db/clock';
import { newId } from '../../db/ids';
import { applyRecords } from '../../db/apply';
import { integrations, properties, syncJobs, units } from '../../db/schema';
import { getSyncJob } from '../../db/sync-jobs';
import { SYNC_ORDER, type Entity } from '../../domain/cdm';
import type { SyncCompleteData } from '../../domain/events';
import { hashRecord } from '../../domain/content';
import type { SyncKind, SyncTrigger } from '../../domain/contract';
import { openSourceConfig } from '../../domain/secrets';
import { createConnector } from '../../source';
import { makeTenant, testKeyring, type Tenant } from '../support/context';
import { propertyInput, unitInput } from '../support/fixtures';
import { onServices } from '../support/services';
import {
  eventsOf,
  expectCacheEqualsSource,
  expectedEvents,
  readCache,
  readSource,
  reload,
  runSync,
  sandbox,
  sandboxIntegration,
  until,
  type SandboxIntegration,
  type TestWorker,
} from '../support/sync';

let db: Db;

onServices({ pool: 4 }, (s) => ({ db } = s));

/** Sync activities over a page reader of the test's own (run with MockActivityEnvironment, no worker). */
function activitiesFor(pages: PageReader, extra: Partial<SyncActivityDeps> = {}) {
  return createSyncActivities({ db, pages, secrets: testKeyring(), runState: async () => 'closed' as const, ...extra });
}
const NO_PAGES: PageReader = {
  read: () => Promise.reject(new Error('unused')),
  readChanged: () => Promise.reject(new Error('unused')),
  lookup: () => Promise.reject(new Error('unused')),
  close: async () => {},
};
/** A source that can list what changed (as a buildium one can), without asking a connector. */
const DELTA = { capabilitiesOf: () => ({ delta: true, idempotentCreates: true }) };

/** A manual sync job of the tenant's integration, queued as a trigger stores it (`values` over that): its id. */
async function insertJob(tenant: Tenant, values: Partial<typeof syncJobs.$inferInsert> = {}): Promise<string> {
  const id = newId('syncJob');
  await db
    .insert(syncJobs)
    .values({ id, organizationId: tenant.organizationId, integrationId: tenant.integrationId, status: 'queued', trigger: 'manual', ...values });
  return id;
}

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
  const setIntegration = (values: Partial<typeof integrations.$inferInsert>) =>
    db.update(integrations).set(values).where(eq(integrations.id, tenant.integrationId));
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

  it("full once the full-run interval has passed since the last full run began: the integration's own, else the default", async () => {
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

  it('a manual trigger that asks for full gets full; one that asks for delta gets it, even when a full run is due', async () => {
    const now = await dbNow();
    await setIntegration({ syncedThrough: now, lastFullSyncAt: now, fullSyncIntervalSeconds: null });
    expect((await claim(DELTA, { syncJobId: await insertJob(tenant), kind: 'full' })).kind).toBe('full');
    expect((await claim(DELTA, { syncJobId: await insertJob(tenant), kind: 'delta' })).kind).toBe('delta');
    expect((await claim(DELTA, { syncJobId: await insertJob(tenant) })).kind).toBe('delta');
    // A full run is due by the cadence: a delta asked for is one all the same, and the next run without `kind` is full.
    await setIntegration({ lastFullSyncAt: new Date(now.getTime() - 61_000), fullSyncIntervalSeconds: 60 });
    expect((await claim(DELTA, { syncJobId: await insertJob(tenant), kind: 'delta' })).kind).toBe('delta');
    expect((await claim(DELTA, { syncJobId: await insertJob(tenant) })).kind).toBe('full');
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
  onServices({ pool: 4, settings: { SYNC_PAGE_SIZE: '20' }, worker: true }, (s) => ({ worker: t } = s));

  it('each run is full (first and later, and when a delta is merely due), and success moves synced_through and last_full_sync_at to its window end', async () => {
    const s = await sandboxIntegration(db, { size: 6 });
    const first = await runSync(t, db, s.row);
    expect(first).toMatchObject({ status: 'succeeded', kind: 'full', initial: true, windowFrom: null });
    let row = await reload(db, s.row);
    expect(row.syncedThrough).toEqual(first.windowTo);
    expect(row.lastFullSyncAt).toEqual(first.windowTo);

    const second = await runSync(t, db, row);
    expect(second).toMatchObject({ status: 'succeeded', kind: 'full', initial: false, windowFrom: null });
    expect(second.windowTo!.getTime()).toBeGreaterThan(first.windowTo!.getTime());
    row = await reload(db, s.row);
    expect(row).toMatchObject({ syncedThrough: second.windowTo, lastFullSyncAt: second.windowTo });
  });
});

describe('delta and full runs of a buildium source, interleaved with changes and deletions', () => {
  let t: TestWorker;
  onServices({ pool: 4, settings: { SYNC_PAGE_SIZE: '20' }, worker: true }, (s) => ({ worker: t } = s));

  /** A manual run (of the kind asked for, if any) to its end, with its data events checked against the cache's change: each once. */
  async function run(s: SandboxIntegration, kind?: SyncKind) {
    const before = await readCache(db, s.row.id);
    const job = await runSync(t, db, await reload(db, s.row), kind);
    expect(job.status, job.error ?? '').toBe('succeeded');
    const after = await readCache(db, s.row.id);
    const got = await eventsOf(db, s.row.id, job.id);
    expect(got.at(-1)!.type).toBe(job.initial ? 'FIRST_SYNC_COMPLETE' : 'SYNC_COMPLETE');
    const key = (e: { type: string; recordId: string | null }) => `${e.type} ${e.recordId}`;
    expect(got.slice(0, -1).map(key).sort()).toEqual(job.initial ? [] : expectedEvents(before, after).events.map(key).sort());
    return job;
  }

  /** A delta run of `s` claimed (its job running, its window from the last run less the overlap to now), run by the test. */
  async function triggerDelta(s: SandboxIntegration) {
    const syncJobId = newId('syncJob');
    await db.insert(syncJobs).values({ id: syncJobId, organizationId: s.row.organizationId, integrationId: s.row.id, status: 'queued', trigger: 'manual' });
    const acts = activitiesFor(NO_PAGES);
    const env = new MockActivityEnvironment({ workflowExecution: { workflowId: `test-${randomUUID()}`, runId: randomUUID() } });
    const started: StartSyncJobResult = await env.run(acts.startSyncJob, {
      integrationId: s.row.id,
      trigger: 'manual' as SyncTrigger,
      syncJobId,
      kind: 'delta' as SyncKind,
    });
    if (started.skipped) throw new Error(`skipped: ${started.reason}`);
    const job = (await getSyncJob(db, started.syncJobId))!;
    expect(job).toMatchObject({ kind: 'delta', status: 'running' });
    return job;
  }

  it('delta runs read what changed and delete nothing; the full run finds the deletions; no change is missed and no event repeats', async () => {
    const s = await sandboxIntegration(db, { size: 30, seed: 11, dialect: 'buildium' });
    const first = await run(s, 'delta');
    expect(first).toMatchObject({ kind: 'full', initial: true });
    await expectCacheEqualsSource(db, s.row);

    // Changes only: a delta run, over the window since the first run (less the overlap), and the cache equals the source.
    const changes = await sandbox().applyChanges(s.companyId, {
      update: { unit: 3, resident: 3, lease: 4 },
      create: { unit: 2, resident: 2, lease: 2 },
      lease_transitions: 3,
    });
    const delta = await run(s);
    expect(delta).toMatchObject({ kind: 'delta', windowFrom: new Date(first.windowTo!.getTime() - 300_000), recordsSoftDeleted: 0 });
    // It read far fewer records than a full run does.
    expect(delta.recordsSeen).toBeLessThan(first.recordsSeen / 2);
    expect(delta.recordsNew).toBeGreaterThanOrEqual(changes.created.lease.length + changes.created.unit.length + changes.created.resident.length);
    await expectCacheEqualsSource(db, s.row);
    expect(await reload(db, s.row)).toMatchObject({ syncedThrough: delta.windowTo, lastFullSyncAt: first.windowTo });

    // Deletions and changes: the delta run applies the changes and deletes nothing (no false delete, ever).
    const gone = await sandbox().applyChanges(s.companyId, { delete: { lease: 2, resident: 1 }, update: { lease: 3 } });
    const deltaAgain = await run(s);
    expect(deltaAgain).toMatchObject({ kind: 'delta', recordsSoftDeleted: 0 });
    const cached = await readCache(db, s.row.id);
    for (const x of gone.deleted.lease) expect(cached.lease.find((r) => r.x_id === x)?.deleted_at, `lease ${x}`).toBeNull();
    const source = await readSource(await reload(db, s.row));
    for (const x of gone.updated.lease) {
      const want = source.lease.find((r) => r.x_id === x)!;
      expect(
        cached.lease.find((r) => r.x_id === x),
        `lease ${x}`,
      ).toMatchObject({ rent_amount: want.rent_amount, status: want.status });
    }

    // A full run asked for: the deletions are found (confirmed with the source), and the cache equals the source.
    const full = await run(s, 'full');
    expect(full).toMatchObject({ kind: 'full', recordsSoftDeleted: gone.deleted.lease.length + gone.deleted.resident.length });
    await expectCacheEqualsSource(db, s.row);
    expect(await reload(db, s.row)).toMatchObject({ syncedThrough: full.windowTo, lastFullSyncAt: full.windowTo });

    // Nothing changed since: a delta run re-reads the overlap and announces nothing.
    const quiet = await run(s);
    expect(quiet).toMatchObject({ kind: 'delta', recordsNew: 0, recordsUpdated: 0, recordsSoftDeleted: 0 });
  });

  it('a delta run whose window loses a record while it pages reads the window again: the record that moved up a page is not missed', async () => {
    const s = await sandboxIntegration(db, { size: 8, seed: 13, dialect: 'buildium' });
    await run(s);
    const connector = createConnector(openSourceConfig(testKeyring(), s.row));
    // Three units changed before the run: its window, in id order, two a page; `shifted` alone on the second page.
    const ids = (await readCache(db, s.row.id)).unit.map((u) => u.x_id).sort((a, b) => Number(a) - Number(b));
    const [moved, second, shifted] = ids as [string, string, string];
    for (const x of [moved, second, shifted]) await connector.update('unit', x, { note: 'changed before the delta run' });
    const job = await triggerDelta(s);

    // Once the first page is read, the first unit changes again: it leaves the window (its time is past the window's
    // end), and `shifted` moves up onto the page already read.
    const real = createPageReader({ threads: 0 });
    let changedMidRun = false;
    const pages: PageReader = {
      ...real,
      readChanged: async (settings, entity, window, page, size) => {
        const read = await real.readChanged(settings, entity, window, page, size);
        if (entity === 'unit' && page === 1 && !changedMidRun) {
          changedMidRun = true;
          // Past the window's end as the filter takes it: rounded up to the whole second, and that second included.
          await until('the window end to pass', async () => ((await databaseNow(db)).getTime() > job.windowTo!.getTime() + 2_000 ? true : undefined), 10_000);
          await connector.update('unit', moved, { note: 'changed while the run pages' });
        }
        return read;
      },
    };
    const acts = createSyncActivities({ db, pages, pageSize: 2, secrets: testKeyring(), runState: async () => 'closed' as const });
    const env = new MockActivityEnvironment({ workflowExecution: { workflowId: `test-${randomUUID()}`, runId: randomUUID() } });
    await env.run(acts.syncEntity, { syncJobId: job.id, entity: 'unit' as Entity });
    await real.close();

    expect(changedMidRun).toBe(true);
    const cached = (await readCache(db, s.row.id)).unit.find((u) => u.x_id === shifted);
    expect(cached?.note).toBe('changed before the delta run');
    expect((await getSyncJob(db, job.id))!.progress.unit).toMatchObject({ done: true, restarts: 1 });
  });

  it('a delta run that may have missed a record (its window kept shrinking past the last restart) leaves the synced-through mark for the next one to read the window again', async () => {
    const s = await sandboxIntegration(db, { size: 4, seed: 14, dialect: 'buildium' });
    await run(s);
    const before = await reload(db, s.row);
    const job = await triggerDelta(s);
    // Every entity read, units with the count still falling after the last restart.
    const progress = Object.fromEntries(SYNC_ORDER.map((e) => [e, { page: 1, done: true, tracked: false }])) as typeof job.progress;
    progress.unit = { ...progress.unit!, restarts: DELTA_WINDOW_RESTARTS, missed: true };
    await db.update(syncJobs).set({ progress }).where(eq(syncJobs.id, job.id));
    const env = new MockActivityEnvironment({ workflowExecution: { workflowId: `test-${randomUUID()}`, runId: randomUUID() } });
    await env.run(activitiesFor(NO_PAGES).finishSyncJob, { syncJobId: job.id });
    expect(await getSyncJob(db, job.id)).toMatchObject({ status: 'succeeded', kind: 'delta' });
    expect((await reload(db, s.row)).syncedThrough).toEqual(before.syncedThrough);
    // The next delta run's window starts where this one's did.
    expect((await triggerDelta(s)).windowFrom).toEqual(job.windowFrom);
  });

  it("a full run comes once the integration's full-run interval has passed", async () => {
    const s = await sandboxIntegration(db, { size: 5, seed: 12, dialect: 'buildium', fullSyncIntervalSeconds: 3600 });
    await run(s);
    expect((await run(s)).kind).toBe('delta');
    // The interval shrinks below the time since the last full run began.
    await db.update(integrations).set({ fullSyncIntervalSeconds: 1 }).where(eq(integrations.id, s.row.id));
    await until('a second to pass on the database clock', async () => {
      const row = await reload(db, s.row);
      return (await databaseNow(db)).getTime() - row.lastFullSyncAt!.getTime() > 1_000 ? true : undefined;
    });
    expect((await run(s)).kind).toBe('full');
  });
});

describe('the stale-page guard', () => {
  it('leaves live a record a write-back stored after the run began, though the run never saw it', async () => {
    const tenant = await makeTenant(db);
    const integration = { id: tenant.integrationId, organizationId: tenant.organizationId, mode: tenant.mode };
    await db.transaction((tx) => applyRecords(tx, { integration, emitEvents: false }, 'property', [propertyInput('WP1')]));
    await db.update(integrations).set({ firstSyncCompletedAt: new Date() }).where(eq(integrations.id, tenant.integrationId));
    const jobId = await insertJob(tenant, { status: 'running', workflowId: `test-${randomUUID()}`, kind: 'full', startedAt: await databaseNow(db) });
    // The source holds WP1 when the run reads its properties, and nothing else.
    const pages: PageReader = {
      ...NO_PAGES,
      async read<E extends Entity>(_settings: unknown, entity: E): Promise<HashedPage<E>> {
        const records = entity === 'property' ? [hashRecord(propertyInput('WP1'), false)] : [];
        return { records, skipped: [], page: 1, hasMore: false } as unknown as HashedPage<E>;
      },
    };
    const acts = activitiesFor(pages);
    const env = new MockActivityEnvironment();
    for (const entity of SYNC_ORDER) await env.run(acts.syncEntity, { syncJobId: jobId, entity });
    for (const entity of SYNC_ORDER) await env.run(acts.confirmDeletions, { syncJobId: jobId, entity });
    // Once the properties' deletions are confirmed, a write-back creates WP2 at the source and stores its read-back.
    await db.transaction((tx) => applyRecords(tx, { integration, emitEvents: true, operationId: newId('operation') }, 'property', [propertyInput('WP2')]));
    const done: SyncCompleteData = await env.run(acts.finishSyncJob, { syncJobId: jobId });
    expect(done.records_soft_deleted).toBe(0);
    const rows = await db
      .select({ xId: properties.xId, deletedAt: properties.deletedAt })
      .from(properties)
      .where(eq(properties.integrationId, tenant.integrationId));
    expect(rows.sort((a, b) => a.xId.localeCompare(b.xId))).toEqual([
      { xId: 'WP1', deletedAt: null },
      { xId: 'WP2', deletedAt: null },
    ]);
    // Its creation is the only event about it: no deletion that never happened.
    const about = (await eventsOf(db, tenant.integrationId)).filter((e) => (e.data as { x_id?: string }).x_id === 'WP2').map((e) => e.type);
    expect(about).toEqual(['PROPERTY_CREATED']);
  });
  it("keeps a write-back stored while a page was in flight, even when the sync worker's clock is an hour ahead", async () => {
    const tenant = await makeTenant(db);
    const integration = { id: tenant.integrationId, organizationId: tenant.organizationId, mode: tenant.mode };
    await db.transaction(async (tx) => {
      await applyRecords(tx, { integration, emitEvents: false }, 'property', [propertyInput('GP1')]);
      await applyRecords(tx, { integration, emitEvents: false }, 'unit', [unitInput('GU1', 'GP1', { bedrooms: 1 })]);
    });
    await db.update(integrations).set({ firstSyncCompletedAt: new Date() }).where(eq(integrations.id, tenant.integrationId));
    const jobId = await insertJob(tenant, { status: 'running', workflowId: `test-${randomUUID()}`, kind: 'full', startedAt: new Date() });
    // The page is read (bedrooms 2, the source's value before the write); while it is in flight a write-back stores
    // bedrooms 3 (the database's clock, as every write-back does); then the page arrives.
    const pages: PageReader = {
      ...NO_PAGES,
      async read<E extends Entity>(_settings: unknown, entity: E): Promise<HashedPage<E>> {
        if (entity !== 'unit') throw new Error(`only units are read here, not ${entity}`);
        await db.transaction((tx) =>
          applyRecords(tx, { integration, emitEvents: true, operationId: newId('operation') }, 'unit', [unitInput('GU1', 'GP1', { bedrooms: 3 })]),
        );
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
    const [stored] = await db.execute<{ skew: number }>(
      sql`select extract(epoch from (now() - ${units.psSyncedAt}))::float8 as skew from ${units} where ${units.integrationId} = ${tenant.integrationId}`,
    );
    expect(Math.abs(stored!.skew)).toBeLessThan(60);
  });
});
