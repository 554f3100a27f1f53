/**
 * Automation runs. `runAutomation` (workflow id = the run id) makes the export attempts on the retry schedule its input
 * carries (AUTOMATION_RETRY_SCHEDULE_MS), through the one retry loop (workflows/retry.ts), each attempt one activity
 * that streams the file once; a permanent failure ends the run at once,
 * the last transient one after the retries. Its end records AUTOMATION_COMPLETED or AUTOMATION_FAILED. It ends
 * Completed only when the file was delivered, and Failed (with a type) otherwise.
 * `automationTick` is what an automation's Temporal Schedule starts: it creates the run and runs it as a child,
 * so that every run, scheduled or manual, is a workflow whose id is its run id.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  defineQuery,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../activities/automations';
import { automationRunWorkflowIdOf, SA_STATUS } from '../domain/contract';
import { type AutomationRunInput, type AutomationRunResult, type AutomationTickInput, type ExportOutcome, type RunStatus } from '../domain/automations';
import { DEFAULT_RETRY_SCHEDULES, scheduleOfList } from '../domain/retry';
import { BOOKKEEPING, ONE_ATTEMPT, retryOnSchedule } from './retry';

export const AUTOMATION_FAILURE = { permanent: 'ExportFailed', exhausted: 'ExportRetriesExhausted', cancelled: 'ExportCancelled' } as const;

export const runStateQuery = defineQuery<{ status: RunStatus; attempts: number; nextAttemptAt: string | null; lastError: string | null }>('state');

const { createScheduledRun, recordRunRetry, finishRun } = proxyActivities<AutomationActivities>(BOOKKEEPING);

/**
 * One attempt, never retried by Temporal. A long export heartbeats; a dead worker's attempt is noticed within the
 * heartbeat time-out and counts as a failed attempt.
 */
const { exportAttempt } = proxyActivities<AutomationActivities>({
  // Above EXPORT_TIMEOUT_MS's highest value (24 h): the attempt's own limit is what ends a slow export; this only
  // bounds one whose worker lives on and stops heartbeating never.
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: '1 minute',
  retry: ONE_ATTEMPT,
});

/**
 * A run is `running` from its first attempt (it stayed `queued` until a retry): added while runs were in flight (see
 * `patched`); remove once no run of the earlier version is open.
 */
const PATCH_RUNNING = 'automation-run-running-from-first-attempt';

export async function runAutomation(input: AutomationRunInput): Promise<AutomationRunResult> {
  const { runId } = input;
  // A run started before every start passed a schedule carries the list form, or none.
  const schedule = input.schedule ?? (input.scheduleMs ? scheduleOfList(input.scheduleMs) : DEFAULT_RETRY_SCHEDULES.automation);
  const state = { status: 'queued' as RunStatus, attempts: 0, nextAttemptAt: null as string | null, lastError: null as string | null };
  setHandler(runStateQuery, () => state);
  const setStatus = (s: RunStatus) => {
    state.status = s;
    upsertSearchAttributes([{ key: SA_STATUS, value: s }]);
  };
  const fail = async (error: string, type: string): Promise<never> => {
    state.lastError = error;
    state.nextAttemptAt = null;
    await CancellationScope.nonCancellable(() => finishRun({ runId, status: 'failed', attempts: state.attempts, recordsExported: 0, error }));
    setStatus('failed');
    throw ApplicationFailure.nonRetryable(error, type);
  };

  try {
    return await retryOnSchedule<AutomationRunResult>({
      schedule,
      attempt: async (attempt) => {
        // The activity marks the row `running` as it starts (markRunStarted); the state and the search attribute say
        // so too.
        if (state.status === 'queued' && patched(PATCH_RUNNING)) setStatus('running');
        let outcome: ExportOutcome;
        try {
          outcome = await exportAttempt({ runId, attempt });
        } catch (err) {
          if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
          outcome = { outcome: 'transient', error: `attempt lost (worker stopped or timed out): ${err.cause?.message || err.message}` };
        }
        state.attempts = attempt;
        switch (outcome.outcome) {
          case 'gone':
            return { done: { runId, status: 'failed', attempts: attempt, recordsExported: null } };
          case 'succeeded':
            // The file is delivered: a cancellation now must not end the run failed.
            await CancellationScope.nonCancellable(() =>
              finishRun({ runId, status: 'succeeded', attempts: attempt, recordsExported: outcome.recordsExported }),
            );
            setStatus('succeeded');
            return { done: { runId, status: 'succeeded', attempts: attempt, recordsExported: outcome.recordsExported } };
          case 'permanent':
            return await fail(outcome.error, AUTOMATION_FAILURE.permanent);
          case 'transient':
            return { failed: outcome.error };
        }
      },
      recordRetry: async ({ attempt, error, nextAttemptAtMs }) => {
        state.lastError = error;
        state.nextAttemptAt = new Date(nextAttemptAtMs).toISOString();
        await recordRunRetry({ runId, attempts: attempt, nextAttemptAtMs, error });
        setStatus('running');
      },
      giveUp: ({ error }) => fail(error ?? 'no attempt was made', AUTOMATION_FAILURE.exhausted),
    });
  } catch (err) {
    if (isCancellation(err)) await fail('cancelled by an operator', AUTOMATION_FAILURE.cancelled).catch(() => {});
    throw err;
  }
}

/** A firing of an automation's schedule: a new run, run to its end as a child workflow (its id is the run id). */
export async function automationTick(input: AutomationTickInput): Promise<{ runId: string | null; status: 'succeeded' | 'failed' | 'skipped' }> {
  const created = await createScheduledRun({ automationId: input.automationId });
  if (!created) return { runId: null, status: 'skipped' };
  try {
    const r = await executeChild(runAutomation, {
      workflowId: automationRunWorkflowIdOf(created.runId),
      // A firing scheduled before every schedule passed one carries the list form, or none (the child's default).
      args: [{ runId: created.runId, ...(input.schedule ? { schedule: input.schedule } : input.scheduleMs ? { scheduleMs: input.scheduleMs } : {}) }],
      taskQueue: workflowInfo().taskQueue,
      // The run is its own workflow: it goes on (and stays visible) whatever happens to this firing.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: workflowInfo().typedSearchAttributes,
    });
    return { runId: created.runId, status: r.status };
  } catch (err) {
    if (err instanceof ChildWorkflowFailure) return { runId: created.runId, status: 'failed' };
    throw err;
  }
}
