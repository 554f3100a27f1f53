/**
 * Sync job rows and the per-integration guard that keeps two runs of one integration from overlapping.
 * Shared by the API side (manual and initial triggers, control/sync.ts) and the sync activities (scheduled runs).
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from './client';
import { syncJobs } from './schema';

export type SyncJobRow = typeof syncJobs.$inferSelect;
export type SyncJobStatus = SyncJobRow['status'];
export const ACTIVE_STATUSES = ['queued', 'running'] as const satisfies readonly SyncJobStatus[];

/** Whether the Temporal workflow of a job is still open; injected so this module stays free of Temporal. */
export type RunIsOpen = (workflowId: string) => Promise<boolean>;

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
 * The integration's job that is queued or running, if any. A job whose workflow ended without finishing it
 * (terminated by an operator, or a start that never happened) would otherwise block the integration forever,
 * so it is failed here. Call under lockIntegrationSync.
 */
export async function activeJobOf(tx: Tx, integrationId: string, runIsOpen: RunIsOpen): Promise<SyncJobRow | undefined> {
  const rows = await tx
    .select()
    .from(syncJobs)
    .where(and(eq(syncJobs.integrationId, integrationId), inArray(syncJobs.status, [...ACTIVE_STATUSES])))
    .orderBy(asc(syncJobs.createdAt));
  for (const row of rows) {
    if (row.workflowId && (await runIsOpen(row.workflowId))) return row;
    await tx
      .update(syncJobs)
      .set({ status: 'failed', finishedAt: new Date(), error: 'The run ended without finishing this job (workflow terminated or never started).' })
      .where(eq(syncJobs.id, row.id));
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
    started_at: row.startedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
    records_seen: row.recordsSeen,
    records_new: row.recordsNew,
    records_updated: row.recordsUpdated,
    records_soft_deleted: row.recordsSoftDeleted,
    error: row.error,
  };
}
