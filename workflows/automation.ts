/**
 * Automation runs. `runAutomation` (workflow id = the run id) makes the export attempts on the retry schedule as
 * durable timers, each attempt one activity that streams the file once; a permanent failure ends the run at once,
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
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../activities/automations';
import { automationRunWorkflowIdOf, SA_STATUS } from '../domain/contract';
import {
  AUTOMATION_RETRY_SCHEDULE_MS,
  type AutomationRunInput,
  type AutomationRunResult,
  type AutomationTickInput,
  type ExportOutcome,
  type RunStatus,
} from '../domain/automations';

export const AUTOMATION_FAILURE = { permanent: 'ExportFailed', exhausted: 'ExportRetriesExhausted', cancelled: 'ExportCancelled' } as const;

export const runStateQuery = defineQuery<{ status: RunStatus; attempts: number; nextAttemptAt: string | null; lastError: string | null }>('state');

const { createScheduledRun, recordRunRetry, finishRun } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * One attempt, never retried by Temporal. A long export heartbeats; a dead worker's attempt is noticed within the
 * heartbeat time-out and counts as a failed attempt.
 */
const { exportAttempt } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: 1 },
});

export async function runAutomation(input: AutomationRunInput): Promise<AutomationRunResult> {
  const { runId } = input;
  const schedule = input.scheduleMs ?? AUTOMATION_RETRY_SCHEDULE_MS;
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
    for (let i = 0; i < schedule.length; i++) {
      const attempt = i + 1;
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
          return { runId, status: 'failed', attempts: attempt, recordsExported: null };
        case 'succeeded':
          await finishRun({ runId, status: 'succeeded', attempts: attempt, recordsExported: outcome.recordsExported });
          setStatus('succeeded');
          return { runId, status: 'succeeded', attempts: attempt, recordsExported: outcome.recordsExported };
        case 'permanent':
          return await fail(outcome.error, AUTOMATION_FAILURE.permanent);
        case 'transient': {
          const last = i === schedule.length - 1;
          if (last) return await fail(outcome.error, AUTOMATION_FAILURE.exhausted);
          const delay = schedule[i + 1]!;
          // Date.now() in a workflow is Temporal's deterministic clock.
          const next = Date.now() + delay;
          state.lastError = outcome.error;
          state.nextAttemptAt = new Date(next).toISOString();
          await recordRunRetry({ runId, attempts: attempt, nextAttemptAtMs: next, error: outcome.error });
          setStatus('running');
          await sleep(delay);
        }
      }
    }
    return await fail('no attempt was scheduled', AUTOMATION_FAILURE.exhausted);
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
      args: [{ runId: created.runId, ...(input.scheduleMs ? { scheduleMs: input.scheduleMs } : {}) }],
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
