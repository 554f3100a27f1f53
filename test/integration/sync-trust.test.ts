/**
 * What makes a sync trustworthy, against the real sandbox, worker and Temporal server: no false soft-delete when the
 * source changes under a run's paging, one unreadable record never blocks the integration, and no run hangs.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { eq, inArray, sql } from 'drizzle-orm';
import type { PageReader } from '../../activities/page-reader';
import { createSyncActivities, type ConfirmResult } from '../../activities/sync';
import { triggerSync } from '../../control/sync';
import { closeDb, createDb, type Db } from '../../db/client';
import { newId } from '../../db/ids';
import { syncJobs, syncSkippedRecords } from '../../db/schema';
import { readHealthFacts } from '../../db/health';
import { getSyncJob, purgeSkippedBefore } from '../../db/sync-jobs';
import { disconnectIntegration, getIntegration } from '../../db/tenants';
import { ENTITIES, type Entity } from '../../domain/cdm';
import { syncWorkflowIdOf } from '../../domain/contract';
import { SourceTransientError } from '../../source';
import { runCli } from '../support/cli';
import { testDb, testKeyring } from '../support/context';
import { onServices, type Services } from '../support/services';
import {
  eventsOf,
  expectCacheEqualsSource,
  readCache,
  readSource,
  runSync,
  sandbox,
  sandboxIntegration,
  until,
  waitForJob,
  type TestWorker,
} from '../support/sync';

/** The sync activities over a scripted page reader (no worker: run with MockActivityEnvironment). */
function syncActivitiesFor(db: Db, pages: PageReader, opts: { stallMs?: number; heartbeatEveryMs?: number } = {}) {
  return createSyncActivities({ db, pages, secrets: testKeyring(), runState: async () => 'closed' as const, ...opts });
}

/** x_ids the events of a run mark deleted (`deleted_at` set), per entity. */
async function deletedByEvents(db: Db, integrationId: string, jobId: string): Promise<Record<Entity, string[]>> {
  const out: Record<Entity, string[]> = { property: [], unit: [], resident: [], lease: [] };
  for (const e of await eventsOf(db, integrationId, jobId)) {
    const data = e.data as { x_id?: string; deleted_at?: string | null };
    if (!data.deleted_at || !data.x_id) continue;
    const entity = e.type.split('_')[0]!.toLowerCase() as Entity;
    out[entity].push(data.x_id);
  }
  return out;
}

/** The results of a run's confirmDeletions activities, per entity, from its workflow history. */
async function confirmResults(w: TestWorker, jobId: string): Promise<Partial<Record<Entity, ConfirmResult>>> {
  const history = await w.client.workflow.getHandle(syncWorkflowIdOf(jobId)).fetchHistory();
  const scheduled = new Map<string, Entity>();
  const out: Partial<Record<Entity, ConfirmResult>> = {};
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'confirmDeletions') {
      const input = defaultPayloadConverter.fromPayload<{ entity: Entity }>(s.input!.payloads![0]!);
      scheduled.set(String(e.eventId), input.entity);
    }
    const c = e.activityTaskCompletedEventAttributes;
    if (c && scheduled.has(String(c.scheduledEventId))) {
      out[scheduled.get(String(c.scheduledEventId))!] = defaultPayloadConverter.fromPayload<ConfirmResult>(c.result!.payloads![0]!);
    }
  }
  return out;
}

describe('confirm before soft-deleting', () => {
  let db: Db;
  let w: TestWorker;
  // Small pages, so a run pages long enough for the source to change under it.
  onServices({ settings: { SYNC_PAGE_SIZE: '10' }, worker: true }, (s) => ({ db, worker: w } = s));

  it('records the source deletes and inserts while a run pages are neither soft-deleted nor announced as deleted', async () => {
    const s = await sandboxIntegration(db, { size: 200 });
    await runSync(w, db, s.row);
    // Every request of the source slowed down, so the change lands while the run is paging leases.
    await sandbox().setFault(s.companyId, { kind: 'slow', delay_ms: 120 });
    const job = await triggerSync(w.ctl, s.row);
    await until('the run to page leases', async () => (((await getSyncJob(db, job.id))?.progress.lease?.page ?? 0) >= 6 ? true : undefined), 60_000);
    const change = await sandbox().applyChanges(s.companyId, { delete: { lease: 40 }, create: { lease: 5, resident: 5 } });
    await sandbox().clearFaults(s.companyId);
    const done = await waitForJob(w, db, job.id);
    expect(done.status).toBe('succeeded');

    // Nothing the source still has was soft-deleted, and no event says so.
    const source = await readSource(s.row);
    const cache = await readCache(db, s.row.id);
    const falselyDeleted = (e: Entity) => {
      const inSource = new Set(source[e].map((r) => r.x_id));
      return cache[e].filter((r) => r.deleted_at !== null && inSource.has(r.x_id)).map((r) => r.x_id);
    };
    for (const e of ENTITIES) expect(falselyDeleted(e), e).toEqual([]);
    const announced = await deletedByEvents(db, s.row.id, job.id);
    for (const e of ENTITIES)
      expect(
        announced[e].filter((x) => !change.deleted[e].includes(x)),
        e,
      ).toEqual([]);
    // Not by luck: page-number paging skipped records the deletes shifted onto pages already read, and the run found them in the
    // source by id (without this check they were soft-deleted, and came back next run: two false events each).
    const confirmed = await confirmResults(w, job.id);
    expect(confirmed.lease!.present).toBeGreaterThan(0);

    // And what the run did soft-delete is what the source deleted (records of pages not read yet when they went).
    expect(done.recordsSoftDeleted).toBe(ENTITIES.reduce((n, e) => n + announced[e].length, 0));
    expect(done.recordsSoftDeleted).toBeGreaterThan(0);

    // The next run brings the cache level with the source: the remaining deletes, and nothing comes back.
    const next = await runSync(w, db, s.row);
    expect(next.status).toBe('succeeded');
    await expectCacheEqualsSource(db, s.row);
    const all = await deletedByEvents(db, s.row.id, next.id);
    for (const e of ENTITIES) {
      const both = [...announced[e], ...all[e]].sort();
      expect(both, `${e}: each delete announced once, over the two runs`).toEqual([...change.deleted[e]].sort());
    }
    const revived = (await eventsOf(db, s.row.id, next.id)).filter(
      (e) => e.type.endsWith('_CREATED') && change.deleted.lease.includes((e.data as { x_id: string }).x_id),
    );
    expect(revived).toEqual([]);
  });
});

describe('quarantine', () => {
  const STACK = { pool: 4, sandbox: true, api: true, worker: true } as const;
  let stack: Services<typeof STACK>;
  onServices(STACK, (s) => (stack = s));

  const admin = (path: string) =>
    fetch(`${stack.api.url}/admin/v1${path}`, { headers: { authorization: `Bearer ${stack.config.ADMIN_TOKEN}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as Record<string, unknown>,
    }));

  it('skips unreadable records, keeps their cached version, lists them with x_id, entity and reason, and the run succeeds', async () => {
    const { db } = stack;
    const s = await sandboxIntegration(db, { size: 40 });
    await runSync(stack.worker, db, s.row);
    const before = await readCache(db, s.row.id);
    const quarantinedBefore = (await readHealthFacts(db)).recordsQuarantined;
    const change = await sandbox().applyChanges(s.companyId, { corrupt: { property: 1, unit: 1, resident: 1, lease: 1 }, update: { lease: 3 } });
    const job = await runSync(stack.worker, db, s.row);

    expect(job.status).toBe('succeeded');
    expect(job.recordsSkipped).toBe(4);
    const view = await admin(`/sync_jobs/${job.id}`);
    expect(view.body).toMatchObject({ status: 'succeeded', records_skipped: 4, error: null });
    const list = await admin(`/sync_jobs/${job.id}/skipped_records`);
    expect(list.status).toBe(200);
    const reasons: Record<Entity, RegExp> = { property: /not a time/, unit: /not a decimal amount/, resident: /not a date/, lease: /not a decimal amount/ };
    expect(list.body.results).toEqual(
      ENTITIES.map((e) => ({ entity: e, x_id: change.corrupted[e][0], reason: expect.stringMatching(reasons[e]), seen_at: expect.any(String) })).sort((a, b) =>
        a.entity.localeCompare(b.entity),
      ),
    );
    expect(list.body.meta).toEqual({ limit: 25, offset: 0, hasMore: false });

    // Their cached versions are as they were: not changed, not soft-deleted, no event about them.
    const after = await readCache(db, s.row.id);
    for (const e of ENTITIES) {
      const x = change.corrupted[e][0]!;
      expect(
        after[e].find((r) => r.x_id === x),
        `${e} ${x}`,
      ).toEqual(before[e].find((r) => r.x_id === x));
    }
    const evs = await eventsOf(db, s.row.id, job.id);
    const about = (x: string) => evs.filter((e) => (e.data as { x_id?: string }).x_id === x);
    for (const e of ENTITIES) expect(about(change.corrupted[e][0]!)).toEqual([]);
    // The readable changes went through as usual, and SYNC_COMPLETE carries the count.
    const updated = change.updated.lease.filter((x) => !change.corrupted.lease.includes(x));
    for (const x of updated) expect(about(x).length, `lease ${x}`).toBe(1);
    expect(evs.at(-1)).toMatchObject({ type: 'SYNC_COMPLETE', data: expect.objectContaining({ records_skipped: 4, records_soft_deleted: 0 }) });

    // The CLI shows the same list, and `sync run --wait` warns about it.
    const target = { url: stack.api.url, token: stack.config.ADMIN_TOKEN };
    const cli = await runCli(target, ['sync', 'skipped', job.id]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json.results).toHaveLength(4);
    const waited = await runCli(target, ['sync', 'run', s.row.id, '--wait', '--poll-ms', '200']);
    expect(waited.code).toBe(0);
    expect(waited.stderr).toMatch(/warning: 4 record\(s\) could not be read from the source and were skipped; see: sync skipped syj_/);

    // Quarantined now: the four records, however many runs listed them (this one and the CLI's).
    const quarantined = (await readHealthFacts(db)).recordsQuarantined;
    expect(quarantined - quarantinedBefore).toBe(4);
    // A deleted integration's records are no one's to mend: they count no more (their lists stay readable).
    await disconnectIntegration(db, (await getIntegration(db, s.row.id))!, new Date());
    expect(quarantined - (await readHealthFacts(db)).recordsQuarantined).toBe(4);
    expect((await admin(`/sync_jobs/${job.id}/skipped_records`)).body.results).toHaveLength(4);
  });

  it('a first sync with an unreadable record loads everything else and completes', async () => {
    const { db } = stack;
    const s = await sandboxIntegration(db, { size: 20 });
    const change = await sandbox().applyChanges(s.companyId, { corrupt: { lease: 2 } });
    const job = await runSync(stack.worker, db, s.row);
    expect(job).toMatchObject({ status: 'succeeded', initial: true, recordsSkipped: 2 });
    const cache = await readCache(db, s.row.id);
    // The cache holds exactly what the source serves readably: everything but the unreadable records.
    const source = await readSource(s.row);
    expect(cache.lease.map((r) => r.x_id).sort()).toEqual(source.lease.map((r) => r.x_id).sort());
    for (const x of change.corrupted.lease) expect(cache.lease.map((r) => r.x_id)).not.toContain(x);
    expect(cache.lease).toHaveLength((await sandbox().getCompany(s.companyId))!.counts.lease - 2);
    const evs = await eventsOf(db, s.row.id, job.id);
    expect(evs.map((e) => e.type)).toEqual(['FIRST_SYNC_COMPLETE']);
    expect(evs[0]!.data).toMatchObject({ records_skipped: 2 });
  });

  it('counts a record listed at the last full run as quarantined through the delta runs after it, whatever other integrations list', async () => {
    const { db } = stack;
    const x = await sandboxIntegration(db, { size: 10, dialect: 'buildium' });
    const y = await sandboxIntegration(db, { size: 10 });
    const t0 = Date.now() - 3600_000;
    const job = async (s: typeof x, kind: 'full' | 'delta', at: number) => {
      const id = newId('syncJob');
      await db.insert(syncJobs).values({
        ...{ id, organizationId: s.row.organizationId, integrationId: s.row.id, kind, status: 'succeeded', trigger: 'schedule' },
        ...{ workflowId: `test-${randomUUID()}`, startedAt: new Date(at), finishedAt: new Date(at + 1000), createdAt: new Date(at) },
      });
      return id;
    };
    const before = (await readHealthFacts(db)).recordsQuarantined;
    // X's full run lists lease R1; the delta runs after it read only what changed, and list nothing.
    const full = await job(x, 'full', t0);
    await db.insert(syncSkippedRecords).values({ syncJobId: full, entity: 'lease', xId: 'R1', reason: 'not a date: "soon"', createdAt: new Date(t0) });
    await job(x, 'delta', t0 + 60_000);
    await job(x, 'delta', t0 + 120_000);
    expect((await readHealthFacts(db)).recordsQuarantined - before).toBe(1);
    // Y lists more unreadable records, more recently, than one scrape reads of an integration: X's still counts.
    const flood = await job(y, 'full', t0 + 180_000);
    await db.execute(sql`insert into sync_skipped_records (sync_job_id, entity, x_id, reason, created_at)
      select ${flood}, 'unit', 'U' || n, 'not a decimal amount', now() from generate_series(1, 20001) n`);
    expect((await readHealthFacts(db)).recordsQuarantined - before).toBe(1 + 20_000);
    // X's next full run reads R1 again and does not list it (mended at the source): no longer quarantined.
    await job(x, 'full', t0 + 240_000);
    expect((await readHealthFacts(db)).recordsQuarantined - before).toBe(20_000);
    await disconnectIntegration(db, (await getIntegration(db, y.row.id))!, new Date());
    expect((await readHealthFacts(db)).recordsQuarantined).toBe(before);
  });

  it('the retention purge forgets the lists of runs older than 30 days, and keeps the recent ones', async () => {
    const { db } = stack;
    const old = newId('syncJob');
    const recent = newId('syncJob');
    const day = 24 * 3600_000;
    await db.insert(syncSkippedRecords).values([
      { syncJobId: old, entity: 'lease', xId: '1', reason: 'not a decimal amount: "TBD"', createdAt: new Date(Date.now() - 31 * day) },
      { syncJobId: old, entity: 'lease', xId: '2', reason: 'not a decimal amount: "TBD"', createdAt: new Date(Date.now() - 31 * day) },
      { syncJobId: recent, entity: 'lease', xId: '1', reason: 'not a decimal amount: "TBD"', createdAt: new Date(Date.now() - 29 * day) },
    ]);
    expect(await purgeSkippedBefore(db, new Date(Date.now() - 30 * day), 1)).toBe(2);
    const left = await db
      .select()
      .from(syncSkippedRecords)
      .where(inArray(syncSkippedRecords.syncJobId, [old, recent]));
    expect(left.map((r) => r.syncJobId)).toEqual([recent]);
  });

  it('an unknown sync job has no skipped records (404), and the list pages', async () => {
    expect((await admin(`/sync_jobs/syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8/skipped_records`)).status).toBe(404);
    expect((await admin(`/sync_jobs/nope/skipped_records`)).status).toBe(404);
    const { db } = stack;
    const s = await sandboxIntegration(db, { size: 30 });
    await runSync(stack.worker, db, s.row);
    await sandbox().applyChanges(s.companyId, { corrupt: { resident: 3 } });
    const job = await runSync(stack.worker, db, s.row);
    const first = await admin(`/sync_jobs/${job.id}/skipped_records?limit=2`);
    const rest = await admin(`/sync_jobs/${job.id}/skipped_records?limit=2&offset=2`);
    expect(first.body.meta).toEqual({ limit: 2, offset: 0, hasMore: true });
    expect(rest.body.meta).toEqual({ limit: 2, offset: 2, hasMore: false });
    expect([...(first.body.results as unknown[]), ...(rest.body.results as unknown[])]).toHaveLength(3);
  });
});

describe('no stuck runs', () => {
  let db: Db;
  let integrationId: string;
  let organizationId: string;
  beforeAll(async () => {
    db = testDb();
    const s = await sandboxIntegration(db, { size: 5 });
    integrationId = s.row.id;
    organizationId = s.row.organizationId;
  });
  afterAll(async () => {
    await closeDb(db);
  });

  /** A job row as a run's first step leaves it: running, nothing read yet. */
  async function runningJob(): Promise<string> {
    const id = newId('syncJob');
    await db.insert(syncJobs).values({
      id,
      organizationId,
      integrationId,
      status: 'running',
      trigger: 'manual',
      workflowId: `test-${randomUUID()}`,
      startedAt: new Date(),
    });
    return id;
  }

  it('an attempt whose resume point stops moving fails as SyncStalled instead of heartbeating on', async () => {
    const id = await runningJob();
    const beats: unknown[] = [];
    const env = new MockActivityEnvironment();
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const acts = syncActivitiesFor(
      db,
      {
        read: () => new Promise(() => {}),
        readChanged: () => new Promise(() => {}),
        lookup: () => new Promise(() => {}),
        close: async () => {},
      },
      { stallMs: 400, heartbeatEveryMs: 50 },
    );
    const t0 = Date.now();
    const err = await env.run(acts.syncEntity, { syncJobId: id, entity: 'property' as const }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'SyncStalled', nonRetryable: false });
    expect((err as Error).message).toMatch(/^no progress for 0 s \(at \{"page":0,"done":false/);
    expect(Date.now() - t0).toBeLessThan(5_000);
    // It heartbeated its resume point until it gave up.
    expect(beats.length).toBeGreaterThan(2);
    expect(beats[0]).toMatchObject({ page: 0, done: false });
  });

  it('an attempt resumed after the page size changed reads on at the size its earlier pages were read at', async () => {
    const id = await runningJob();
    // Two pages of 2 properties committed by an attempt at SYNC_PAGE_SIZE 2; this worker runs at 1000.
    await db
      .update(syncJobs)
      .set({ progress: { property: { page: 2, done: false, tracked: false, pageSize: 2 } } })
      .where(eq(syncJobs.id, id));
    const reads: [number, number][] = [];
    const acts = syncActivitiesFor(db, {
      read: async (_settings, _entity, page, size) => {
        reads.push([page, size]);
        return { records: [], skipped: [], page, hasMore: false };
      },
      readChanged: () => Promise.reject(new Error('unused')),
      lookup: () => Promise.reject(new Error('unused')),
      close: async () => {},
    });
    await new MockActivityEnvironment().run(acts.syncEntity, { syncJobId: id, entity: 'property' as const });
    // Page 3 at size 2 is records 5 on; page 3 at 1000 would have skipped 1,995 of them.
    expect(reads).toEqual([[3, 2]]);
    expect((await getSyncJob(db, id))!.progress.property).toMatchObject({ page: 3, done: true, pageSize: 2 });
  });

  it("a source's Retry-After becomes the next attempt's delay", async () => {
    const id = await runningJob();
    const acts = syncActivitiesFor(db, {
      read: () => Promise.reject(new SourceTransientError('getProperties: rate limited by the source (429)', 429, 120_000)),
      readChanged: () => Promise.reject(new Error('unused')),
      lookup: () => Promise.reject(new Error('unused')),
      close: async () => {},
    });
    const err = await new MockActivityEnvironment().run(acts.syncEntity, { syncJobId: id, entity: 'property' as const }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'SourceRateLimited', nonRetryable: false, nextRetryDelay: 120_000 });
    expect((err as Error).message).toMatch(/asked for 120 s/);
  });

  it('every pool has a statement and idle-in-transaction timeout', async () => {
    const [row] = await db.execute<{ st: string; idle: string }>(
      sql`select current_setting('statement_timeout') as st, current_setting('idle_in_transaction_session_timeout') as idle`,
    );
    expect(row).toEqual({ st: '1min', idle: '1min' });
    const tight = createDb(inject('databaseUrl'), { max: 1, statementTimeoutMs: 200 });
    try {
      const err = await tight.execute(sql`select pg_sleep(2)`).catch((e: unknown) => e);
      expect(String((err as Error).cause)).toMatch(/canceling statement due to statement timeout/);
    } finally {
      await closeDb(tight);
    }
  });
});
