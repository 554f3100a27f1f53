/**
 * One write (an Operation; the workflow id is its id). Each attempt is one activity call that writes to the source
 * once; the workflow owns the retries, on the schedule its input carries (WRITE_RETRY_*), through the one retry loop
 * (workflows/retry.ts), and keeps the Operation row current at each step (status, attempts, next_attempt_at,
 * last_error). A rejection fails it at once; the last transient failure inside the 24-hour window fails it with that
 * error; an operator's cancellation fails it too. It ends Completed only when the Operation succeeded, and Failed (with a type) otherwise.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  defineQuery,
  isCancellation,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { AttemptResult, WriteActivities } from '../activities/operations';
import { SA_STATUS } from '../domain/contract';
import {
  parseOperationType,
  READ_BACK_FIRST_RETRY_MS,
  READ_BACK_MAX_RETRY_MS,
  type OperationStatus,
  type OperationView,
  type WriteWorkflowInput,
  type WriteWorkflowResult,
} from '../domain/operations';
import { DEFAULT_RETRY_SCHEDULES } from '../domain/retry';
import { BOOKKEEPING, ONE_ATTEMPT, retryOnSchedule, type AttemptVerdict } from './retry';

export const operationStateQuery = defineQuery<OperationView>('state');

/** Types of the failures the workflow ends with (also the Temporal UI's failure type). */
export const WRITE_FAILURE = {
  rejected: 'WriteRejected',
  gaveUp: 'WriteGaveUp',
  failed: 'WriteFailed',
  cancelled: 'WriteCancelled',
} as const;

/** Bookkeeping on the database: idempotent, retried until it answers. */
const { recordRetry, failOperation } = proxyActivities<WriteActivities>(BOOKKEEPING);

/**
 * One attempt, never retried by Temporal: a source write is not idempotent, so every attempt is one the workflow
 * chose to make. Heartbeats show a dead worker within seconds; the attempt then counts as failed with an unknown
 * outcome, and the next attempt of a create looks for the record before sending it again.
 */
const { attemptWrite } = proxyActivities<WriteActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '15 seconds',
  retry: ONE_ATTEMPT,
});

/** Reading an applied write back and storing it: source reads are safe to repeat, so Temporal retries them. */
const { storeApplied } = proxyActivities<WriteActivities>({
  startToCloseTimeout: '2 minutes',
  scheduleToCloseTimeout: '6 hours',
  retry: { initialInterval: READ_BACK_FIRST_RETRY_MS, backoffCoefficient: 2, maximumInterval: READ_BACK_MAX_RETRY_MS },
});

export async function writeOperation(input: WriteWorkflowInput): Promise<WriteWorkflowResult> {
  const { operationId } = input;
  const schedule = input.schedule ?? DEFAULT_RETRY_SCHEDULES.write;
  const { action } = parseOperationType(input.type);
  const view: OperationView = { type: input.type, status: 'queued', target: input.target ?? null, attempts: 0, nextAttemptAt: null, lastError: null };
  setHandler(operationStateQuery, () => view);
  const setStatus = (s: OperationStatus) => {
    view.status = s;
    upsertSearchAttributes([{ key: SA_STATUS, value: s }]);
  };
  const fail = async (error: string, sourceState: 'rejected' | 'applied' | null, type: string): Promise<never> => {
    view.lastError = error;
    view.nextAttemptAt = null;
    await CancellationScope.nonCancellable(() => failOperation({ operationId, attempts: view.attempts, error, sourceState }));
    setStatus('failed');
    throw ApplicationFailure.nonRetryable(error, type);
  };

  /** Whether an earlier attempt may have reached the source and been applied (it timed out or lost its answer). */
  let unknownOutcome = false;

  /** One attempt: its end, or a transient failure for the schedule. */
  const attemptOnce = async (attempt: number): Promise<AttemptVerdict<WriteWorkflowResult>> => {
    let result: AttemptResult;
    try {
      // After an attempt whose outcome is unknown, a create may have been applied all the same: look for it before
      // sending again. After attempts the source surely did not take (refused connection, 429, 503 before applying),
      // there is nothing to look for, and a look-up could only find someone else's record.
      result = await attemptWrite({ operationId, attempt, probe: action === 'create' && unknownOutcome });
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      result = { outcome: 'transient', error: `attempt lost (worker stopped or timed out): ${err.cause?.message || err.message}`, maybeApplied: true };
    }
    // An attempt that found it could send nothing (its integration deleted) is not counted as one.
    view.attempts = result.outcome === 'failed' && result.unsent ? attempt - 1 : attempt;
    switch (result.outcome) {
      case 'finished':
        // The row is terminal already (an earlier attempt, lost, had stored it): nothing to write, but the search
        // attribute and the execution still end in the row's state.
        setStatus(result.status);
        if (result.status !== 'succeeded') throw ApplicationFailure.nonRetryable(`the operation had already ${result.status}`, WRITE_FAILURE.failed);
        return { done: { operationId, status: 'succeeded', attempts: attempt } };
      case 'succeeded':
        setStatus('succeeded');
        return { done: { operationId, status: 'succeeded', attempts: attempt } };
      case 'applied': {
        view.lastError = result.error;
        try {
          await storeApplied({ operationId, attempts: attempt, xId: result.xId, related: result.related, appliedAtMs: result.appliedAtMs });
        } catch (err) {
          if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
          return fail(
            `the source applied the change (${view.type} x_id ${result.xId}) but it could not be read back: ${err.cause?.message || err.message}`,
            'applied',
            WRITE_FAILURE.failed,
          );
        }
        setStatus('succeeded');
        return { done: { operationId, status: 'succeeded', attempts: attempt } };
      }
      case 'rejected':
        return fail(result.error, 'rejected', WRITE_FAILURE.rejected);
      case 'failed':
        return fail(result.error, null, WRITE_FAILURE.failed);
      case 'transient':
        if (result.maybeApplied) unknownOutcome = true;
        return { failed: result.error, ...(result.retryAfterMs !== undefined ? { notBeforeMs: result.retryAfterMs } : {}) };
    }
  };

  try {
    return await retryOnSchedule<WriteWorkflowResult>({
      schedule,
      windowStartMs: input.acceptedAtMs,
      attempt: attemptOnce,
      recordRetry: async ({ attempt, error, nextAttemptAtMs }) => {
        view.lastError = error;
        view.nextAttemptAt = new Date(nextAttemptAtMs).toISOString();
        await recordRetry({ operationId, attempts: attempt, nextAttemptAtMs, error });
        setStatus('running');
      },
      // A write that could not even be started within the window (Temporal unreachable for a day, then the sweeper)
      // is not sent a day late: it fails, as a write whose attempts all failed would have.
      giveUp: ({ attempts, error }) =>
        attempts === 0
          ? fail('not attempted within 24 hours of being accepted (the write could not be queued); nothing was sent to the source', null, WRITE_FAILURE.gaveUp)
          : fail(`gave up after ${attempts} attempts over 24 hours; last error: ${error}`, null, WRITE_FAILURE.gaveUp),
    });
  } catch (err) {
    if (isCancellation(err)) {
      await fail('cancelled by an operator before it was known to be applied; the source may or may not hold the change', null, WRITE_FAILURE.cancelled).catch(
        () => {},
      );
    }
    throw err;
  }
}

/**
 * The sweeper, run every minute by a schedule: starts the workflow of any accepted write left without one, and fails
 * any Operation whose workflow was stopped from outside before it finished.
 */
const { sweepOperations } = proxyActivities<WriteActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

export async function sweepWrites(input: { olderThanMs?: number } = {}): Promise<{ started: number; keysPurged: number; abandoned: number }> {
  return sweepOperations(input);
}
