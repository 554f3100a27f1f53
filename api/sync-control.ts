/**
 * Client-side control of sync: the Temporal Schedule of each integration and manual runs.
 * Used by the admin API (create/patch/delete integration, trigger) and by the worker at start-up (reconcile
 * schedules). Placeholder signatures until the sync engine lands.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../db/client';
import type { syncJobs } from '../db/schema';
import type { IntegrationRow } from '../db/tenants';

export type SyncJobRow = typeof syncJobs.$inferSelect;

export interface SyncControlDeps {
  db: Db;
  client: Client;
  taskQueue: string;
}

/** Create or update the integration's schedule at its effective cadence. `runNow` also starts a run at once. */
export async function ensureSyncSchedule(_deps: SyncControlDeps, _integration: IntegrationRow, _opts: { runNow: boolean }): Promise<void> {
  throw new Error('not implemented yet');
}

/** Remove the integration's schedule (integration deleted). */
export async function removeSyncSchedule(_deps: SyncControlDeps, _integrationId: string): Promise<void> {
  throw new Error('not implemented yet');
}

/** Start a manual run; returns its job row (status queued, or the already running job of the integration). */
export async function triggerSync(_deps: SyncControlDeps, _integration: IntegrationRow): Promise<SyncJobRow> {
  throw new Error('not implemented yet');
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
