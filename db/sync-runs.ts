/**
 * What a sync run writes as it goes (activities/sync.ts): the retry state of its entity steps, each page committed
 * with the run's resume point and counters (compare-and-set: a page is never applied twice), the deletion check's
 * batches, and the run's start (a job queued by the API, or made running by a scheduled run) and end. The guard
 * against overlapping runs is in db/sync-jobs.ts.
 */
import { and, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { SYNC_ORDER, type Entity, type InputOf } from '../domain/cdm';
import type { HashedRecord } from '../domain/content';
import type { SyncCompleteData } from '../domain/events';
import type { SkippedRecord } from '../source/connector';
import { applyHashedRecords, liveIntegrationLock, type ApplyContext, type ApplyResult } from './apply';
import type { Db, Tx } from './client';
import { databaseNow } from './clock';
import { newId } from './ids';
import { tableOf } from './records';
import { events, integrations, syncJobs } from './schema';
import { clearSeen, markSeen, runStartOf, softDeleteUnseen } from './seen';
import { activeJobOf, getSyncJob, lockIntegrationSync, quarantine, type SyncJobRow } from './sync-jobs';
import { getIntegration, type IntegrationRow } from './tenants';

/** Where a run stands with one entity (sync_jobs.progress). */
export type EntityProgress = SyncJobRow['progress'][string];

/** Whether the integration has any row of the entity, soft-deleted ones included. */
export async function hasRows(db: Tx, entity: Entity, integrationId: string): Promise<boolean> {
  const t = tableOf(entity);
  const rows = await db
    .select({ one: sql`1` })
    .from(t)
    .where(eq(t.integrationId, integrationId))
    .limit(1);
  return rows.length > 0;
}

// ---------------------------------------------------------------------------------------------------------------
// The retry state of an entity step (a display: the admin API, the CLI, the console and the metrics show it)
// ---------------------------------------------------------------------------------------------------------------

/** A retried step (`step`, e.g. `syncEntity:unit`) began: its attempt shows, and no next attempt is pending. */
export async function noteStepAttempt(db: Tx, syncJobId: string, step: string, attempt: number): Promise<void> {
  await db
    .update(syncJobs)
    .set({ attempt, nextAttemptAt: null, retryingStep: step })
    .where(and(eq(syncJobs.id, syncJobId), eq(syncJobs.status, 'running')));
}

/** A step's attempt failed: its error, the attempt that comes next and when (null when none will). */
export async function noteStepFailure(
  db: Tx,
  syncJobId: string,
  step: string,
  failure: { attempt: number; lastError: string; nextAttemptAt: Date | null },
): Promise<void> {
  await db
    .update(syncJobs)
    .set({ ...failure, retryingStep: step })
    .where(and(eq(syncJobs.id, syncJobId), eq(syncJobs.status, 'running')));
}

/**
 * A step succeeded after failed attempts: the run no longer shows as retrying, unless the retry state shown is
 * another step's (one running beside it, still failing).
 */
export async function clearStepFailures(db: Tx, syncJobId: string, step: string): Promise<void> {
  await db
    .update(syncJobs)
    .set({ attempt: 1, lastError: null, nextAttemptAt: null, retryingStep: null })
    .where(
      and(
        eq(syncJobs.id, syncJobId),
        eq(syncJobs.status, 'running'),
        sql`${syncJobs.attempt} > 1`,
        sql`(${syncJobs.retryingStep} is null or ${syncJobs.retryingStep} = ${step})`,
      ),
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Pages and look-up batches, each committed with the run's bookkeeping
// ---------------------------------------------------------------------------------------------------------------

/** A run's counters, moved by the placeholders `seen`, `created`, `updated` and `skipped`. */
const COUNTERS = {
  recordsSeen: sql`${syncJobs.recordsSeen} + ${sql.placeholder('seen')}::int`,
  recordsNew: sql`${syncJobs.recordsNew} + ${sql.placeholder('created')}::int`,
  recordsUpdated: sql`${syncJobs.recordsUpdated} + ${sql.placeholder('updated')}::int`,
  recordsSkipped: sql`${syncJobs.recordsSkipped} + ${sql.placeholder('skipped')}::int`,
};

/** The job (placeholder `id`) still runs, and a run of an integration deleted meanwhile must not bring its records back. */
const STILL_RUNNING = and(
  eq(syncJobs.id, sql.placeholder('id')),
  eq(syncJobs.status, 'running'),
  sql`not exists (select 1 from ${integrations} i where i.id = ${syncJobs.integrationId} and i.deleted_at is not null)`,
);

/** One page's bookkeeping in one prepared statement: the resume point (compare-and-set) and the counters. */
function advanceProgress(tx: Tx) {
  return tx
    .update(syncJobs)
    .set({ progress: sql`${syncJobs.progress} || ${sql.placeholder('target')}::jsonb`, ...COUNTERS })
    .where(and(STILL_RUNNING, sql`coalesce((${syncJobs.progress} -> ${sql.placeholder('entity')}::text ->> 'page')::int, 0) = ${sql.placeholder('from')}::int`))
    .returning({ id: syncJobs.id })
    .prepare('sync_job_advance');
}

/** The counters of records a deletion check applied, while the job runs and its integration exists. */
function countAlong(tx: Tx) {
  return tx.update(syncJobs).set(COUNTERS).where(STILL_RUNNING).returning({ id: syncJobs.id }).prepare('sync_job_count_along');
}

/** What a committed page (or look-up batch) applied, with the records it quarantined that were new to the run's list. */
type Committed = ApplyResult & { skipped: number };

/** Why a run's bookkeeping did not move (and the page's writes rolled back). */
export type NotMoved =
  /** The job is no longer running (or no longer exists: `gone`). */
  | { reason: 'ended'; status: SyncJobRow['status'] | 'gone' }
  /** The run's integration was deleted meanwhile. */
  | { reason: 'integration-deleted'; integrationId: string }
  /** Another attempt of the same step moved the resume point first. */
  | { reason: 'superseded' };

export type CommitOutcome = { moved: true; committed: Committed } | { moved: false; why: NotMoved };

/** Thrown inside a run's transaction to roll its writes back when the bookkeeping did not move. */
class RolledBack extends Error {
  constructor(readonly why: NotMoved) {
    super(why.reason);
  }
}

async function whyNotMoved(tx: Tx, syncJobId: string): Promise<NotMoved> {
  const found = await runningJob(tx, syncJobId);
  if (found.running) return { reason: 'superseded' };
  return found.why.reason === 'not-found' ? { reason: 'ended', status: 'gone' } : found.why;
}

/**
 * Quarantine a page's unreadable records: list them on the job and, when the run tracks what it sees, count them
 * as seen, so that their cached version is neither changed nor soft-deleted. Returns how many were new to the list.
 */
async function setAside(tx: Tx, syncJobId: string, entity: Entity, skipped: SkippedRecord[], tracked: boolean): Promise<number> {
  if (skipped.length === 0) return 0;
  if (tracked)
    await markSeen(
      tx,
      syncJobId,
      entity,
      skipped.flatMap((r) => (r.x_id === null ? [] : [r.x_id])),
    );
  return quarantine(tx, syncJobId, entity, skipped);
}

/** What a run read of an entity and commits in one transaction. */
interface Batch<E extends Entity> {
  syncJobId: string;
  entity: E;
  /** The run's apply context, with its readAt and whether it tracks what it sees. */
  ctx: ApplyContext;
  records: HashedRecord<InputOf[E]>[];
  /** Records the source served that the mapping could not read. */
  skipped: SkippedRecord[];
}

/** What a batch adds to the run's counters (the placeholders of COUNTERS), and the job (`id`). */
type Counts = { id: string; seen: number; created: number; updated: number; skipped: number };

/**
 * Apply a batch, set its unreadable records aside and count it all on the job with `bookkeeping` (a statement that
 * returns a row when it moved the job), in one transaction; when the bookkeeping does not move, nothing is written.
 */
async function commitBatch<E extends Entity>(
  db: Db,
  batch: Batch<E>,
  tracked: boolean,
  bookkeeping: (tx: Tx, counts: Counts) => Promise<unknown[]>,
): Promise<CommitOutcome> {
  try {
    const committed = await db.transaction(async (tx) => {
      // The integration held against its deletion before any record is written (liveIntegrationLock): a page never
      // brings back records a deletion has just soft-deleted, nor adds live ones to a deleted integration.
      const integrationId = batch.ctx.integration.id;
      const [held] = await tx.execute<{ live: boolean | null }>(sql`select (${liveIntegrationLock(integrationId)}) as live`);
      if (held?.live !== true) throw new RolledBack({ reason: 'integration-deleted', integrationId });
      const r = await applyHashedRecords(tx, batch.ctx, batch.entity, batch.records);
      const skipped = await setAside(tx, batch.syncJobId, batch.entity, batch.skipped, tracked);
      const [moved] = await bookkeeping(tx, {
        id: batch.syncJobId,
        seen: r.created + r.updated + r.unchanged,
        created: r.created,
        updated: r.updated,
        skipped,
      });
      if (!moved) throw new RolledBack(await whyNotMoved(tx, batch.syncJobId));
      return { ...r, skipped };
    });
    return { moved: true, committed };
  } catch (err) {
    if (err instanceof RolledBack) return { moved: false, why: err.why };
    throw err;
  }
}

/**
 * Apply a page and move the run's resume point of the entity from page `from` to `target`, with its counters, in
 * one transaction. The point moves only from where the caller found it, and only while the job runs and its
 * integration exists; otherwise nothing of the page is written, and the outcome says why.
 */
export async function commitPage<E extends Entity>(db: Db, page: Batch<E> & { from: number; target: EntityProgress }): Promise<CommitOutcome> {
  return commitBatch(db, page, page.ctx.trackSeen !== false, (tx, counts) =>
    advanceProgress(tx).execute({ ...counts, entity: page.entity, from: page.from, target: JSON.stringify({ [page.entity]: page.target }) }),
  );
}

/**
 * Apply the records a deletion check found still in the source (seen, so not soft-deleted), with the run's counters,
 * in one transaction, while the job runs and its integration exists; otherwise nothing is written.
 */
export async function commitLookedUp<E extends Entity>(db: Db, batch: Batch<E>): Promise<CommitOutcome> {
  return commitBatch(db, batch, true, (tx, counts) => countAlong(tx).execute(counts));
}

/** The source confirmed that what the run did not see of the entity is gone: its end may soft-delete it. */
export async function markDeletionsConfirmed(db: Tx, syncJobId: string, entity: Entity): Promise<void> {
  await db
    .update(syncJobs)
    .set({ progress: sql`jsonb_set(${syncJobs.progress}, ${`{${entity},confirmed}`}::text[], 'true'::jsonb)` })
    .where(and(eq(syncJobs.id, syncJobId), eq(syncJobs.status, 'running')));
}

// ---------------------------------------------------------------------------------------------------------------
// The run's start and end
// ---------------------------------------------------------------------------------------------------------------

/** What a run reads (`full` or `delta`) and the window it covers. */
export interface RunWindow {
  kind: SyncJobRow['kind'];
  windowFrom: Date | null;
  windowTo: Date;
}

/** Why a job is not running: there is no such job, it ended, or its run's integration was deleted. */
export type NotRunning = { reason: 'not-found' } | { reason: 'ended'; status: SyncJobRow['status'] } | { reason: 'integration-deleted'; integrationId: string };

/** A running job with its integration, or why it is not running. */
export async function runningJob(
  tx: Tx,
  syncJobId: string,
): Promise<{ running: true; job: SyncJobRow; integration: IntegrationRow } | { running: false; why: NotRunning }> {
  const job = await getSyncJob(tx, syncJobId);
  if (!job) return { running: false, why: { reason: 'not-found' } };
  if (job.status !== 'running') return { running: false, why: { reason: 'ended', status: job.status } };
  const integration = await getIntegration(tx, job.integrationId);
  if (!integration || integration.deletedAt) return { running: false, why: { reason: 'integration-deleted', integrationId: job.integrationId } };
  return { running: true, job, integration };
}

/** A run asking to start (the sync workflow's first activity). */
export interface RunClaim {
  integrationId: string;
  /** The job the API queued for the run; a scheduled run has none and makes its own. */
  syncJobId?: string;
  /** The run's workflow: a retry of a scheduled run finds the job it made. */
  workflowId: string;
  trigger: SyncJobRow['trigger'];
  /** Active jobs whose workflow has ended (abandonedJobsOf, asked before the lock): they block no run. */
  abandoned: ReadonlySet<string>;
}

export type ClaimOutcome =
  /** The run goes on as this job (made running now, or already running: a retry). */
  | { outcome: 'running'; job: Pick<SyncJobRow, 'id' | 'organizationId' | 'initial' | 'kind'> }
  /** A scheduled run is skipped: another run of the integration is active, or (`active` null) the integration was deleted. */
  | { outcome: 'skipped'; active: Pick<SyncJobRow, 'id' | 'status'> | null }
  /** The job the API queued cannot run (`ended`: it is no longer queued or running); nothing was written. */
  | { outcome: 'not-running'; why: NotRunning };

/**
 * Claim a run, under the integration's run lock, in one transaction: mark the API's queued job running, or (a
 * scheduled run) make a running job unless another run of the integration is active. What the run reads is
 * `windowOf` the integration and the database's time now (the transaction's: the run's start); it is called inside
 * the transaction, and what it throws rolls the claim back. Idempotent across retries of the same workflow.
 */
export async function claimRun(db: Db, claim: RunClaim, windowOf: (integration: IntegrationRow, windowTo: Date) => RunWindow): Promise<ClaimOutcome> {
  return db.transaction(async (tx): Promise<ClaimOutcome> => {
    await lockIntegrationSync(tx, claim.integrationId);
    const integration = await getIntegration(tx, claim.integrationId);
    const initial = integration?.firstSyncCompletedAt == null;
    const runOf = async (i: IntegrationRow) => windowOf(i, await databaseNow(tx));
    if (claim.syncJobId) {
      const job = await getSyncJob(tx, claim.syncJobId);
      if (!job) return { outcome: 'not-running', why: { reason: 'not-found' } };
      if (!integration || integration.deletedAt) return { outcome: 'not-running', why: { reason: 'integration-deleted', integrationId: claim.integrationId } };
      if (job.status === 'queued') {
        const run = await runOf(integration);
        await markJobRunning(tx, job.id, { initial, ...run });
        return { outcome: 'running', job: { id: job.id, organizationId: job.organizationId, initial, kind: run.kind } };
      }
      if (job.status === 'running') return { outcome: 'running', job };
      return { outcome: 'not-running', why: { reason: 'ended', status: job.status } };
    }
    if (!integration || integration.deletedAt) return { outcome: 'skipped', active: null };
    const active = await activeJobOf(tx, integration.id, claim.abandoned);
    if (active?.workflowId === claim.workflowId) return { outcome: 'running', job: active };
    if (active) return { outcome: 'skipped', active };
    const id = newId('syncJob');
    const run = await runOf(integration);
    await insertRunningJob(tx, {
      id,
      organizationId: integration.organizationId,
      integrationId: integration.id,
      trigger: claim.trigger,
      workflowId: claim.workflowId,
      initial,
      ...run,
    });
    return { outcome: 'running', job: { id, organizationId: integration.organizationId, initial, kind: run.kind } };
  });
}

/**
 * Queue a job for a run the API starts (manual or initial), unless the integration has an active job (queued or
 * running, and not among the `abandoned`, which activeJobOf fails): then that job, and nothing is created. Under the
 * integration's run lock, in a transaction of its own.
 */
export async function queueRun(
  db: Db,
  job: Pick<SyncJobRow, 'id' | 'organizationId' | 'integrationId' | 'trigger' | 'workflowId'>,
  abandoned: ReadonlySet<string>,
): Promise<{ row: SyncJobRow; created: boolean }> {
  return db.transaction(async (tx) => {
    await lockIntegrationSync(tx, job.integrationId);
    const active = await activeJobOf(tx, job.integrationId, abandoned);
    if (active) return { row: active, created: false };
    const [row] = await tx
      .insert(syncJobs)
      .values({ ...job, status: 'queued' })
      .returning();
    return { row: row!, created: true };
  });
}

/** A queued job whose workflow could not be started fails, with why. */
export async function failUnstartedRun(db: Tx, syncJobId: string, error: string): Promise<void> {
  await db
    .update(syncJobs)
    .set({ status: 'failed', finishedAt: new Date(), error })
    .where(and(eq(syncJobs.id, syncJobId), eq(syncJobs.status, 'queued')));
}

/** A queued job (created by the API) starts running, as the run `window` says; `initial`: the integration's first. */
async function markJobRunning(tx: Tx, syncJobId: string, run: RunWindow & { initial: boolean }): Promise<void> {
  await tx
    .update(syncJobs)
    .set({ status: 'running', startedAt: run.windowTo, ...run })
    .where(eq(syncJobs.id, syncJobId));
}

/** A job made running at once (a scheduled run, which no API call queued). */
async function insertRunningJob(
  tx: Tx,
  job: Pick<SyncJobRow, 'id' | 'organizationId' | 'integrationId' | 'trigger' | 'workflowId' | 'initial'> & RunWindow,
): Promise<void> {
  await tx.insert(syncJobs).values({ ...job, status: 'running', startedAt: job.windowTo });
}

/** The job, its row locked until the caller's transaction ends. */
async function lockSyncJob(tx: Tx, syncJobId: string): Promise<SyncJobRow | undefined> {
  const [row] = await tx.select().from(syncJobs).where(eq(syncJobs.id, syncJobId)).for('update');
  return row;
}

/** How a run applies records: as its integration, with events unless it is the integration's first complete sync. */
export function runApplyContext(integration: IntegrationRow, job: SyncJobRow, now?: Date): ApplyContext {
  return {
    integration: { id: integration.id, organizationId: integration.organizationId, mode: integration.mode },
    // The first complete sync of an integration is a bulk load: no per-record events.
    emitEvents: !job.initial,
    syncJobId: job.id,
    now,
  };
}

/** What SYNC_COMPLETE (or FIRST_SYNC_COMPLETE) says of a run. */
function syncCompleteData(job: SyncJobRow): SyncCompleteData {
  return {
    sync_job_id: job.id,
    started_at: (job.startedAt ?? job.createdAt).toISOString(),
    finished_at: (job.finishedAt ?? job.createdAt).toISOString(),
    records_new: job.recordsNew,
    records_updated: job.recordsUpdated,
    records_soft_deleted: job.recordsSoftDeleted,
    records_skipped: job.recordsSkipped,
  };
}

/**
 * End a running job whose every entity was read (and whose deletions were confirmed) in the caller's transaction:
 * soft-delete what it did not see, mark it succeeded, record SYNC_COMPLETE (or FIRST_SYNC_COMPLETE) after every event
 * of the run, move the integration's sync marks and forget what the run saw. Returns the ended job and what it
 * soft-deleted of each entity.
 */
async function completeRun(tx: Tx, job: SyncJobRow, integration: IntegrationRow): Promise<{ job: SyncJobRow; deleted: [Entity, number][] }> {
  // The end of the run must not precede any event of the run, even one written by a worker on another host.
  const [last] = await tx
    .select({ createdAt: events.createdAt })
    .from(events)
    .where(and(eq(events.integrationId, integration.id), eq(events.syncJobId, job.id)))
    .orderBy(desc(events.createdAt))
    .limit(1);
  const now = new Date(Math.max((await databaseNow(tx)).getTime(), (last?.createdAt.getTime() ?? 0) + 1));
  let softDeleted = 0;
  const deleted: [Entity, number][] = [];
  // Leases first: nothing a run removes should point at a record that is still shown as live.
  for (const entity of [...SYNC_ORDER].reverse()) {
    if (job.progress[entity]?.tracked === false) continue;
    const r = await softDeleteUnseen(tx, { ...runApplyContext(integration, job, now), syncJobId: job.id, startedAt: runStartOf(job) }, entity);
    softDeleted += r.softDeleted;
    deleted.push([entity, r.softDeleted]);
  }
  // The run ends after its soft-deletes (their events and `deleted_at` are `now`): a receiver ordering by
  // `created_at` sees SYNC_COMPLETE after them, not tied with them.
  const end = softDeleted > 0 ? new Date(now.getTime() + 1) : now;
  const [done] = await tx
    .update(syncJobs)
    .set({ status: 'succeeded', finishedAt: end, recordsSoftDeleted: softDeleted, error: null })
    .where(eq(syncJobs.id, job.id))
    .returning();
  await tx
    .insert(events)
    .values({
      id: newId('event'),
      organizationId: integration.organizationId,
      integrationId: integration.id,
      mode: integration.mode,
      type: job.initial ? 'FIRST_SYNC_COMPLETE' : 'SYNC_COMPLETE',
      category: 'sync_lifecycle',
      data: { ...syncCompleteData(done!) },
      syncJobId: job.id,
      createdAt: end,
    })
    .onConflictDoNothing();
  if (job.initial) {
    await tx
      .update(integrations)
      .set({ firstSyncCompletedAt: end })
      .where(and(eq(integrations.id, integration.id), isNull(integrations.firstSyncCompletedAt)));
  }
  // What the run covered: the next delta run reads from its window's end (less the overlap); a full run also
  // restarts the full-run interval. (A run claimed before windows existed has none and moves neither.) A delta run
  // that may have missed a record of its window (nextPoint's `missed`) leaves the mark where it was: the next one
  // reads the window again.
  const missed = Object.values(job.progress).some((p) => p?.missed);
  if (job.windowTo && !(missed && job.kind === 'delta')) {
    await tx
      .update(integrations)
      .set({ syncedThrough: job.windowTo, ...(job.kind === 'full' ? { lastFullSyncAt: job.windowTo } : {}) })
      .where(eq(integrations.id, integration.id));
  }
  await clearSeen(tx, job.id);
  return { job: done!, deleted };
}

export type FinishOutcome =
  /** The job succeeded: in this call (`ended`: what it soft-deleted of each entity), or before it (a retry after a commit). */
  | { outcome: 'succeeded'; data: SyncCompleteData; ended?: { job: SyncJobRow; deleted: [Entity, number][] } }
  | { outcome: 'not-running'; why: NotRunning }
  /** Entities the run has not fully read (then nothing was written). */
  | { outcome: 'not-read'; entities: Entity[] }
  /** Entities whose deletions the source has not confirmed (then nothing was written). */
  | { outcome: 'not-confirmed'; entities: Entity[] };

/**
 * End a run whose every entity was fully read and whose deletions were confirmed (completeRun), in one transaction
 * with its job's row locked. A job that already succeeded answers with its stored outcome.
 */
export async function finishRun(db: Db, syncJobId: string): Promise<FinishOutcome> {
  return db.transaction(async (tx): Promise<FinishOutcome> => {
    const locked = await lockSyncJob(tx, syncJobId);
    if (locked?.status === 'succeeded') return { outcome: 'succeeded', data: syncCompleteData(locked) };
    const found = await runningJob(tx, syncJobId);
    if (!found.running) return { outcome: 'not-running', why: found.why };
    const { job, integration } = found;
    const missing = SYNC_ORDER.filter((e) => !job.progress[e]?.done);
    if (missing.length > 0) return { outcome: 'not-read', entities: missing };
    // Nothing is soft-deleted that the source has not confirmed gone.
    const unconfirmed = SYNC_ORDER.filter((e) => job.progress[e]?.tracked !== false && !job.progress[e]?.confirmed);
    if (unconfirmed.length > 0) return { outcome: 'not-confirmed', entities: unconfirmed };
    const ended = await completeRun(tx, job, integration);
    return { outcome: 'succeeded', data: syncCompleteData(ended.job), ended };
  });
}

/** Mark a queued or running job failed with its error (nothing is soft-deleted) and forget what it saw. */
export async function failRun(db: Db, syncJobId: string, error: string, now: Date): Promise<SyncJobRow | undefined> {
  const [failed] = await db.transaction(async (tx) => {
    const moved = await tx
      .update(syncJobs)
      .set({ status: 'failed', finishedAt: now, error, nextAttemptAt: null })
      .where(and(eq(syncJobs.id, syncJobId), inArray(syncJobs.status, ['queued', 'running'])))
      .returning();
    await clearSeen(tx, syncJobId);
    return moved;
  });
  return failed;
}
