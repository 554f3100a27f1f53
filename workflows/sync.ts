/**
 * Sync of one integration: claim the run (which decides whether it reads everything or only what changed), sync
 * every entity in reference order (activities do the work page by page, so no record data enters history); a full
 * run then confirms with the source that what the pages lacked is gone; then finish (soft-deletes, SYNC_COMPLETE)
 * in one step.
 * Failure behaviour: any failure marks the job failed, sets PropsyncStatus=failed, and fails the workflow.
 */
import {
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  patched,
  proxyLocalActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SyncActivities } from '../activities/sync';
import { SYNC_STAGES } from '../domain/cdm';
import {
  SA_INTEGRATION_ID,
  SA_ORGANIZATION_ID,
  SA_STATUS,
  SA_SYNC_JOB_ID,
  DEFAULT_SYNC_POLICY,
  type SyncPolicy,
  type SyncRunStatus,
  type SyncWorkflowInput,
  type SyncWorkflowResult,
} from '../domain/contract';
import { BOOKKEEPING_RETRY } from './retry';

/** The worker's policy for this run: configuration read once, recorded in history, so replays follow it. */
const { syncPolicy } = proxyLocalActivities<SyncActivities>({ startToCloseTimeout: '10 seconds' });

/**
 * The run's activities under a policy. Bookkeeping steps (claim, finish, record a failure) are retried until the
 * database answers, but only for bookkeepingTimeoutMs: a long outage fails the run rather than holding it open
 * (and skipping every scheduled run meanwhile). Entity steps heartbeat (a short heartbeat time-out notices a dead
 * worker), retry source outages with backoff up to maximumAttempts, honour a source's Retry-After (the activity's
 * nextRetryDelay), and end within entityTimeoutMs whatever happens.
 */
/** Steps added after runs were already in flight (see `patched`): remove once no run of the earlier version is open. */
const PATCH_POLICY = 'sync-policy-from-configuration';
const PATCH_CONFIRM = 'confirm-deletions-with-source';
/** Delta runs: the claim is told the kind a manual trigger asked for, and a delta run has no deletions to confirm. */
const PATCH_DELTA = 'delta-runs';

function activitiesUnder(policy: SyncPolicy) {
  const bookkeeping = proxyActivities<SyncActivities>({
    startToCloseTimeout: Math.min(policy.bookkeepingTimeoutMs, 5 * 60_000),
    scheduleToCloseTimeout: policy.bookkeepingTimeoutMs,
    retry: BOOKKEEPING_RETRY,
  });
  const entity = proxyActivities<SyncActivities>({
    startToCloseTimeout: policy.entityTimeoutMs,
    scheduleToCloseTimeout: policy.entityTimeoutMs,
    heartbeatTimeout: policy.heartbeatTimeoutMs,
    retry: {
      initialInterval: policy.retry.initialIntervalMs,
      backoffCoefficient: policy.retry.backoffCoefficient,
      maximumInterval: policy.retry.maximumIntervalMs,
      maximumAttempts: policy.retry.maximumAttempts,
    },
  });
  return {
    startSyncJob: bookkeeping.startSyncJob,
    finishSyncJob: bookkeeping.finishSyncJob,
    failSyncJob: bookkeeping.failSyncJob,
    syncEntity: entity.syncEntity,
    confirmDeletions: entity.confirmDeletions,
  };
}

function setStatus(status: SyncRunStatus, syncJobId?: string | null) {
  upsertSearchAttributes([{ key: SA_STATUS, value: status }, ...(syncJobId ? [{ key: SA_SYNC_JOB_ID, value: syncJobId }] : [])]);
}

export async function syncIntegration(input: SyncWorkflowInput): Promise<SyncWorkflowResult> {
  // Scheduled runs get these from the schedule; set them anyway so every run is findable by integration.
  const known = workflowInfo().typedSearchAttributes;
  if (known.get(SA_INTEGRATION_ID) === undefined) upsertSearchAttributes([{ key: SA_INTEGRATION_ID, value: input.integrationId }]);

  // Runs started before a step existed replay without it (patched); such a run ends at finishSyncJob, which refuses
  // to soft-delete unconfirmed entities, and the next run starts over. Nothing is stuck on a replay error.
  const policy = patched(PATCH_POLICY) ? await syncPolicy() : DEFAULT_SYNC_POLICY;
  const { startSyncJob, finishSyncJob, failSyncJob, syncEntity, confirmDeletions } = activitiesUnder(policy);
  let syncJobId = input.syncJobId ?? null;
  try {
    const delta = patched(PATCH_DELTA);
    const started = await startSyncJob({
      integrationId: input.integrationId,
      trigger: input.trigger,
      syncJobId: input.syncJobId,
      ...(delta && input.kind ? { kind: input.kind } : {}),
    });
    if (started.skipped) {
      setStatus('skipped');
      return { syncJobId: started.syncJobId, status: 'skipped' };
    }
    const jobId = started.syncJobId;
    syncJobId = jobId;
    if (known.get(SA_ORGANIZATION_ID) === undefined) upsertSearchAttributes([{ key: SA_ORGANIZATION_ID, value: started.organizationId }]);
    setStatus('running', jobId);

    for (const stage of SYNC_STAGES) await Promise.all(stage.map((entity) => syncEntity({ syncJobId: jobId, entity })));
    // What the pages did not contain is soft-deleted only once the source confirms it gone. A delta run deletes
    // nothing, so it has nothing to confirm (its steps would each find every entity untracked and return).
    if (patched(PATCH_CONFIRM) && !(delta && started.kind === 'delta')) {
      for (const stage of SYNC_STAGES) await Promise.all(stage.map((entity) => confirmDeletions({ syncJobId: jobId, entity })));
    }
    await finishSyncJob({ syncJobId: jobId });
    setStatus('succeeded');
    return { syncJobId: jobId, status: 'succeeded' };
  } catch (err) {
    const jobId = syncJobId;
    if (jobId) {
      // Recording the failure must happen even when the run itself was cancelled.
      // If even that cannot reach the database within its bound, the run still ends: the job row is failed later by
      // the next run of the integration, which finds no open workflow behind it.
      await CancellationScope.nonCancellable(() => failSyncJob({ syncJobId: jobId, error: describe(err) })).catch(() => undefined);
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
  if (isCancellation(err)) return 'The run was cancelled.';
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(err);
}
