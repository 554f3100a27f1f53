/**
 * Sync of one integration: claim the run, sync every entity in reference order (activities do the work page by
 * page, so no record data enters history), then finish (soft-deletes, SYNC_COMPLETE) in one step.
 * Failure behaviour: any failure marks the job failed, sets PropsyncStatus=failed, and fails the workflow.
 */
import {
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SyncActivities } from '../activities/sync';
import { SYNC_ORDER, type Entity } from '../domain/cdm';
import {
  SA_INTEGRATION_ID,
  SA_ORGANIZATION_ID,
  SA_STATUS,
  SA_SYNC_JOB_ID,
  type SyncRunStatus,
  type SyncWorkflowInput,
  type SyncWorkflowResult,
} from '../domain/contract';

/** Short bookkeeping steps on the database: retried until the database answers. */
const { startSyncJob, finishSyncJob, failSyncJob } = proxyActivities<SyncActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * One entity, all its pages. The heartbeat timeout is what notices a dead worker, so it stays short; the activity
 * heartbeats every few seconds while it works. Source outages are retried with backoff for about ten minutes,
 * then the run fails and the next scheduled run starts over.
 */
const { syncEntity } = proxyActivities<SyncActivities>({
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '2 minutes', maximumAttempts: 10 },
});

/**
 * SYNC_ORDER in stages: an entity is synced after everything it references. Units and residents reference only
 * properties, so they run side by side.
 */
const SYNC_STAGES: readonly (readonly Entity[])[] = [['property'], ['unit', 'resident'], ['lease']];
if (SYNC_STAGES.flat().join() !== SYNC_ORDER.join()) throw new Error('SYNC_STAGES must list SYNC_ORDER, in order');

function setStatus(status: SyncRunStatus, syncJobId?: string | null) {
  upsertSearchAttributes([
    { key: SA_STATUS, value: status },
    ...(syncJobId ? [{ key: SA_SYNC_JOB_ID, value: syncJobId }] : []),
  ]);
}

export async function syncIntegration(input: SyncWorkflowInput): Promise<SyncWorkflowResult> {
  // Scheduled runs get these from the schedule; set them anyway so every run is findable by integration.
  const known = workflowInfo().typedSearchAttributes;
  if (known.get(SA_INTEGRATION_ID) === undefined) upsertSearchAttributes([{ key: SA_INTEGRATION_ID, value: input.integrationId }]);

  let syncJobId = input.syncJobId ?? null;
  try {
    const started = await startSyncJob({ integrationId: input.integrationId, trigger: input.trigger, syncJobId: input.syncJobId });
    if (started.skipped) {
      setStatus('skipped');
      return { syncJobId: started.syncJobId, status: 'skipped' };
    }
    const jobId = started.syncJobId;
    syncJobId = jobId;
    if (known.get(SA_ORGANIZATION_ID) === undefined) upsertSearchAttributes([{ key: SA_ORGANIZATION_ID, value: started.organizationId }]);
    setStatus('running', jobId);

    for (const stage of SYNC_STAGES) await Promise.all(stage.map((entity) => syncEntity({ syncJobId: jobId, entity })));
    await finishSyncJob({ syncJobId: jobId });
    setStatus('succeeded');
    return { syncJobId: jobId, status: 'succeeded' };
  } catch (err) {
    const jobId = syncJobId;
    if (jobId) {
      // Recording the failure must happen even when the run itself was cancelled.
      await CancellationScope.nonCancellable(() => failSyncJob({ syncJobId: jobId, error: describe(err) }));
    }
    setStatus('failed', jobId);
    if (isCancellation(err)) throw err;
    throw ApplicationFailure.create({
      type: 'SyncFailed',
      message: describe(err),
      nonRetryable: true,
      cause: err instanceof Error ? err : undefined,
    });
  }
}

/** The innermost message of an activity or application failure: what an operator needs in sync_jobs.error. */
function describe(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(err);
}
