/**
 * Sync job rows and the per-integration guard that keeps two runs of one integration from overlapping.
 * Shared by the API side (manual and initial triggers, control/sync.ts) and the sync activities (scheduled runs).
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from './client';
import type { Entity } from '../domain/cdm';
import type { SkippedRecord } from '../source/connector';
import { orderedPage, type OrderedPage } from './order';
import { syncJobs, syncSkippedRecords } from './schema';
import { clearSeen } from './seen';

export type SyncJobRow = typeof syncJobs.$inferSelect;
type SyncJobStatus = SyncJobRow['status'];
const ACTIVE_STATUSES = ['queued', 'running'] as const satisfies readonly SyncJobStatus[];

/**
 * Where the Temporal workflow of a job stands: running, ended, or not started (yet); injected so this module stays
 * free of Temporal.
 */
export type RunState = (workflowId: string) => Promise<'open' | 'closed' | 'missing'>;

/**
 * Serializes everything that starts a run of one integration, until the caller's transaction ends.
 * Every path that creates or claims an active job takes it first.
 */
export async function lockIntegrationSync(tx: Tx, integrationId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`sync-run:${integrationId}`}, 0))`);
}

export async function getSyncJob(tx: Tx, id: string): Promise<SyncJobRow | undefined> {
  const [row] = await tx.select().from(syncJobs).where(eq(syncJobs.id, id));
  return row;
}

/**
 * How long a queued job may wait for its workflow to start: its row commits just before the start (no Temporal
 * call is made inside the transaction), so for a moment a live job has no workflow yet.
 */
const START_GRACE_MS = 60_000;

/**
 * Ids of the integration's queued or running jobs whose workflow has ended without finishing them (terminated by
 * an operator, a start that never happened, a run that could not record its own failure). Asks Temporal, so call it
 * outside any transaction, then hand the answer to activeJobOf under the lock.
 */
export async function abandonedJobsOf(db: Tx, integrationId: string, runState: RunState, now = new Date()): Promise<Set<string>> {
  const rows = await db
    .select()
    .from(syncJobs)
    .where(and(eq(syncJobs.integrationId, integrationId), inArray(syncJobs.status, [...ACTIVE_STATUSES])));
  const out = new Set<string>();
  for (const row of rows) {
    const state = row.workflowId ? await runState(row.workflowId) : 'missing';
    if (state === 'open') continue;
    // Not started yet: the start follows the row's commit by a moment (or failed, and fails the job itself).
    if (state === 'missing' && row.status === 'queued' && now.getTime() - row.createdAt.getTime() < START_GRACE_MS) continue;
    out.add(row.id);
  }
  return out;
}

/**
 * The integration's job that is queued or running, if any. Jobs found abandoned (abandonedJobsOf, asked before the
 * lock was taken) would otherwise block the integration forever, so they are failed here; a job that appeared
 * since counts as active. Call under lockIntegrationSync.
 */
export async function activeJobOf(tx: Tx, integrationId: string, abandoned: ReadonlySet<string>): Promise<SyncJobRow | undefined> {
  const rows = await tx
    .select()
    .from(syncJobs)
    .where(and(eq(syncJobs.integrationId, integrationId), inArray(syncJobs.status, [...ACTIVE_STATUSES])))
    .orderBy(asc(syncJobs.createdAt));
  for (const row of rows) {
    if (!abandoned.has(row.id)) return row;
    await tx
      .update(syncJobs)
      .set({ status: 'failed', finishedAt: new Date(), error: 'The run ended without finishing this job (workflow terminated or never started).' })
      .where(eq(syncJobs.id, row.id));
    // What it saw is forgotten, as at the end of any run.
    await clearSeen(tx, row.id);
  }
  return undefined;
}

/** The admin API's view of a sync job. */
export function syncJobView(row: SyncJobRow) {
  return {
    id: row.id,
    integration_id: row.integrationId,
    status: row.status,
    trigger: row.trigger,
    // Decided when the run starts (a queued job has not yet).
    kind: row.status === 'queued' ? null : row.kind,
    window_from: row.windowFrom?.toISOString() ?? null,
    window_to: row.windowTo?.toISOString() ?? null,
    started_at: row.startedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
    records_seen: row.recordsSeen,
    records_new: row.recordsNew,
    records_updated: row.recordsUpdated,
    records_soft_deleted: row.recordsSoftDeleted,
    records_skipped: row.recordsSkipped,
    error: row.error,
  };
}

/**
 * List records a run quarantined (once per run, entity and x_id: a retried page lists nothing twice). Returns how
 * many were new to the list, for the job's records_skipped.
 */
export async function quarantine(tx: Tx, syncJobId: string, entity: Entity, skipped: SkippedRecord[]): Promise<number> {
  if (skipped.length === 0) return 0;
  const rows = await tx
    .insert(syncSkippedRecords)
    .values(skipped.map((r) => ({ syncJobId, entity, xId: r.x_id, reason: r.reason })))
    .onConflictDoNothing()
    .returning({ entity: syncSkippedRecords.entity });
  return rows.length;
}

export type SkippedRecordRow = typeof syncSkippedRecords.$inferSelect;

/** A page of a run's quarantined records, in (entity, x_id) order. */
export async function skippedRecordsOf(tx: Tx, syncJobId: string, page: { limit: number; offset: number }): Promise<SkippedRecordRow[]> {
  return tx
    .select()
    .from(syncSkippedRecords)
    .where(eq(syncSkippedRecords.syncJobId, syncJobId))
    .orderBy(asc(syncSkippedRecords.entity), asc(syncSkippedRecords.xId), asc(syncSkippedRecords.createdAt))
    .limit(page.limit)
    .offset(page.offset);
}

/**
 * Retention: forget the quarantined records listed by runs older than `before` (a record that stays unreadable is
 * listed again by every run, so the list would otherwise grow with every run). Batched; returns how many went.
 */
export async function purgeSkippedBefore(tx: Tx, before: Date, batch = 5_000): Promise<number> {
  let removed = 0;
  for (;;) {
    const gone = await tx.execute<{ one: number }>(sql`
      delete from ${syncSkippedRecords} where ctid in (
        select ctid from ${syncSkippedRecords} where ${syncSkippedRecords.createdAt} < ${before.toISOString()} limit ${batch}
      ) returning 1 as one`);
    removed += gone.length;
    if (gone.length < batch) return removed;
  }
}

/** The admin API's view of a quarantined record. */
export function skippedRecordView(row: SkippedRecordRow) {
  return { entity: row.entity, x_id: row.xId, reason: row.reason, seen_at: row.createdAt.toISOString() };
}

// The admin API's reads and writes.

/** An integration's sync jobs, one page. */
export async function syncJobsPage(tx: Tx, integrationId: string, page: OrderedPage): Promise<SyncJobRow[]> {
  const query = tx.select().from(syncJobs).where(eq(syncJobs.integrationId, integrationId)).$dynamic();
  return orderedPage(query, page, syncJobs);
}
