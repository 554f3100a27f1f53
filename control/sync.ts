/**
 * Client-side control of sync: the Temporal Schedule of each integration and manual runs.
 * Used by the admin API (create/patch/delete integration, trigger) and by the worker at start-up (reconcile
 * schedules).
 */
import { createHash } from 'node:crypto';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type ScheduleOptions,
} from '@temporalio/client';
import type { Db } from '../db/client';
import { newId } from '../db/ids';
import { abandonedJobsOf, type RunState, type SyncJobRow } from '../db/sync-jobs';
import { failUnstartedRun, queueRun } from '../db/sync-runs';
import { getLiveIntegration, type IntegrationRow } from '../db/tenants';
import {
  SA_INTEGRATION_ID,
  SA_ORGANIZATION_ID,
  SA_STATUS,
  SA_SYNC_JOB_ID,
  scheduleIdOf,
  syncWorkflowIdOf,
  type SyncKind,
  type SyncTrigger,
  type SyncWorkflowInput,
} from '../domain/contract';
import { effectiveSyncInterval } from '../domain/plans';
import { syncIntegration } from '../workflows/sync';
import { pushUntilSettled } from './schedules';

export type { SyncJobRow };

export interface SyncControlDeps {
  db: Db;
  client: Client;
  taskQueue: string;
}

/** Where a workflow stands, by its id (latest run). */
export function runStateVia(client: Client): RunState {
  return async (workflowId) => {
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      return d.status.name === 'RUNNING' ? 'open' : 'closed';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'missing';
      throw err;
    }
  };
}

/**
 * A fixed offset per integration inside its interval, so that integrations on the same plan do not all start
 * at the same instant of every period.
 */
function offsetSecondsOf(integrationId: string, intervalSeconds: number): number {
  return createHash('sha256').update(integrationId).digest().readUInt32BE(0) % intervalSeconds;
}

function scheduleOptions(deps: SyncControlDeps, integration: IntegrationRow) {
  const every = effectiveSyncInterval(integration.plan, integration.syncIntervalSeconds);
  const input: SyncWorkflowInput = { integrationId: integration.id, trigger: 'schedule' };
  return {
    scheduleId: scheduleIdOf(integration.id),
    spec: { intervals: [{ every: every * 1000, offset: offsetSecondsOf(integration.id, every) * 1000 }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: syncIntegration,
      args: [input] as [SyncWorkflowInput],
      taskQueue: deps.taskQueue,
      // Temporal appends the scheduled time, so each run has its own id.
      workflowId: `sync-scheduled-${integration.id}`,
      typedSearchAttributes: [
        { key: SA_ORGANIZATION_ID, value: integration.organizationId },
        { key: SA_INTEGRATION_ID, value: integration.id },
        { key: SA_STATUS, value: 'queued' },
      ],
    },
    // SKIP: a period whose run is still going is dropped, never queued; a missed period is not caught up later
    // beyond one minute, because the next run covers everything since the last successful one anyway.
    policies: { overlap: 'SKIP' as const, catchupWindow: '1 minute', pauseOnFailure: false },
    typedSearchAttributes: [
      { key: SA_ORGANIZATION_ID, value: integration.organizationId },
      { key: SA_INTEGRATION_ID, value: integration.id },
    ],
  } satisfies ScheduleOptions;
}

/**
 * Create or update the integration's schedule at its effective cadence (a plan change moves it at once), pushed until
 * it agrees with the row (pushUntilSettled: two changes made at once end as the database says).
 * `runNow` also starts the first run at once, with trigger `initial`.
 */
export async function ensureSyncSchedule(deps: SyncControlDeps, integration: IntegrationRow, opts: { runNow: boolean }): Promise<void> {
  await pushUntilSettled(
    integration,
    (row) => pushSyncSchedule(deps, row),
    () => getLiveIntegration(deps.db, integration.id),
    cadenceOf,
    // Deleted while this pushed: the schedule just pushed would outlive it.
    () => removeSyncSchedule(deps, integration.id),
  );
  if (opts.runNow) await startRun(deps, integration, 'initial');
}

const cadenceOf = (i: IntegrationRow) => effectiveSyncInterval(i.plan, i.syncIntervalSeconds);

async function pushSyncSchedule(deps: SyncControlDeps, integration: IntegrationRow): Promise<void> {
  const options = scheduleOptions(deps, integration);
  try {
    await deps.client.schedule.create(options);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    try {
      await deps.client.schedule.getHandle(options.scheduleId).update((prev) => ({
        ...prev,
        spec: options.spec,
        action: options.action,
        policies: options.policies,
      }));
    } catch (err) {
      // Removed since (a deletion of the integration under way): made again, and the caller's read of the row that
      // follows removes it when the integration is gone.
      if (!(err instanceof ScheduleNotFoundError)) throw err;
      await deps.client.schedule.create(options);
    }
  }
}

/** Remove the integration's schedule (integration deleted). */
export async function removeSyncSchedule(deps: SyncControlDeps, integrationId: string): Promise<void> {
  try {
    await deps.client.schedule.getHandle(scheduleIdOf(integrationId)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/**
 * Start a manual run; returns its job row (status queued).
 * While a run of the integration is queued or running, a manual trigger starts nothing and returns that job:
 * the caller can follow it, and the next trigger after it ends starts a fresh run.
 */
export async function triggerSync(deps: SyncControlDeps, integration: IntegrationRow, opts: { kind?: SyncKind } = {}): Promise<SyncJobRow> {
  return startRun(deps, integration, 'manual', opts.kind);
}

/**
 * Create a queued job under the integration's run lock (or return the active job), then start its workflow. No
 * Temporal call happens inside the transaction: which jobs are abandoned is asked before it, and the start after
 * the commit (the job's workflow id is unique, so the start is safe to retry; a start that fails fails the job).
 */
async function startRun(deps: SyncControlDeps, integration: IntegrationRow, trigger: Exclude<SyncTrigger, 'schedule'>, kind?: SyncKind): Promise<SyncJobRow> {
  const abandoned = await abandonedJobsOf(deps.db, integration.id, runStateVia(deps.client));
  const id = newId('syncJob');
  const workflowId = syncWorkflowIdOf(id);
  const claimed = await queueRun(deps.db, { id, organizationId: integration.organizationId, integrationId: integration.id, trigger, workflowId }, abandoned);
  if (!claimed.created) return claimed.row;
  try {
    await deps.client.workflow.start(syncIntegration, {
      taskQueue: deps.taskQueue,
      workflowId,
      args: [{ integrationId: integration.id, trigger, syncJobId: id, ...(kind ? { kind } : {}) }],
      typedSearchAttributes: [
        { key: SA_ORGANIZATION_ID, value: integration.organizationId },
        { key: SA_INTEGRATION_ID, value: integration.id },
        { key: SA_SYNC_JOB_ID, value: id },
        { key: SA_STATUS, value: 'queued' },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
      await failUnstartedRun(deps.db, id, `The run could not be started: ${(err as Error).message}`);
      throw err;
    }
  }
  return claimed.row;
}

export { syncJobView } from '../db/sync-jobs';
