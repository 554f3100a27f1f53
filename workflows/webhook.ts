/**
 * Delivery of one event to one subscription, once its first attempt (made by the subscription's dispatcher) failed,
 * or when an operator replays it. Attempts follow the retry schedule its input carries (WEBHOOK_RETRY_SCHEDULE_MS),
 * through the one retry loop (workflows/retry.ts), each attempt one activity call that POSTs once; a replay asked
 * for during a wait makes the next attempt at once. After the last failure the workflow stays open as the dead letter, holding the delivery
 * until an operator replays it or the retention ends. Never completes unless the receiver took the event: a
 * cancelled delivery (subscription disabled or deleted) and an expired dead letter end Failed, each with a type.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { AttemptOutcome, WebhookActivities } from '../activities/webhooks';
import { RECHECK_SIGNAL, REPLAY_SIGNAL, SA_DELIVERY_STATUS } from '../domain/contract';
import { DEFAULT_RETRY_SCHEDULES, delayAfter, scheduleOfList, type RetrySchedule } from '../domain/retry';
import type { DeliveryStatus, DeliveryWorkflowInput, DeliveryWorkflowResult } from '../domain/webhooks';
import { BOOKKEEPING, ONE_ATTEMPT, retryOnSchedule } from './retry';

export const replaySignal = defineSignal(REPLAY_SIGNAL);
/** Sent when the delivery's row was cancelled meanwhile (its subscription disabled or deleted): look at it now. */
export const recheckSignal = defineSignal(RECHECK_SIGNAL);
/** Added after release: a replay signalled during a successful attempt continues as a replay run. */
const REPLAY_AFTER_SUCCESS_PATCH = 'replay-after-success';
/** Added after release: a recheck signal makes the retry wait look at the row. */
const RECHECK_PATCH = 'recheck-cancelled';
export const deliveryStatusQuery = defineQuery<{ status: DeliveryStatus; attempts: number }>('status');

/** Bookkeeping on the database: retried until it answers. */
const { prepareDelivery, recordLostAttempt, markDelivery } = proxyActivities<WebhookActivities>(BOOKKEEPING);

/**
 * One attempt, never retried by Temporal: a POST is not idempotent, so every attempt is one the workflow chose to
 * make. The time-out covers waiting for a permit of the subscription's in-flight bound and the 10 s exchange, and is
 * how a dead worker's attempt is noticed: it is then recorded as lost and retried on the schedule.
 */
const { attemptDelivery } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 seconds',
  retry: ONE_ATTEMPT,
});

export async function deliverWebhook(input: DeliveryWorkflowInput): Promise<DeliveryWorkflowResult> {
  try {
    return await deliver(input);
  } catch (err) {
    // An operator cancelled the workflow: the row and the search attribute say so too.
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => markDelivery({ deliveryId: input.deliveryId, status: 'cancelled' }));
      upsertSearchAttributes([{ key: SA_DELIVERY_STATUS, value: 'cancelled' }]);
    }
    throw err;
  }
}

async function deliver(input: DeliveryWorkflowInput): Promise<DeliveryWorkflowResult> {
  const { deliveryId } = input;
  let replayRequested = false;
  let recheckRequested = false;
  /** The row was found cancelled during a wait: the loop ends without another attempt. */
  let cancelledMeanwhile = false;
  let status: DeliveryStatus = 'pending';
  let attempts = 0;
  setHandler(replaySignal, () => {
    replayRequested = true;
  });
  setHandler(recheckSignal, () => {
    // Added after release: a run whose history holds a recheck its old worker ignored keeps ignoring it on replay.
    if (patched(RECHECK_PATCH)) recheckRequested = true;
  });
  setHandler(deliveryStatusQuery, () => ({ status, attempts }));
  const setStatus = (s: DeliveryStatus) => {
    status = s;
    upsertSearchAttributes([{ key: SA_DELIVERY_STATUS, value: s }]);
  };

  // The starter normally says where the delivery stands, which saves a round trip per delivery.
  const prepared =
    input.attemptsSoFar !== undefined && input.expiresAtMs !== undefined
      ? { attempts: input.attemptsSoFar, expiresAtMs: input.expiresAtMs }
      : await prepareDelivery({ deliveryId, retentionMs: input.retentionMs });
  if (!prepared) throw ApplicationFailure.nonRetryable(`delivery ${deliveryId} does not exist`, 'DeliveryNotFound');
  attempts = prepared.attempts;
  // A replay that started this run is the run itself.
  replayRequested = false;

  /** One attempt; `nextDelayMs` null: the schedule has none after it, so its failure dead-letters the delivery. */
  async function attempt(nextDelayMs: number | null, replay: boolean): Promise<AttemptOutcome['outcome']> {
    const n = ++attempts;
    const ifFailed = nextDelayMs === null ? 'dead_lettered' : 'retrying';
    try {
      const r = await attemptDelivery({ deliveryId, attempt: n, nextDelayMs, ifFailed, replay });
      return r.outcome;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The attempt's worker died or it overran its time-out: a failed attempt like any other, unless the attempt
      // recorded its outcome before it was lost (a recorded success ends the delivery: it is never sent again).
      return recordLostAttempt({ deliveryId, attempt: n, nextDelayMs, ifFailed, error: `attempt lost: ${err.cause?.message || err.message}` });
    }
  }
  const succeeded = (): DeliveryWorkflowResult => {
    // The happy path (delivered at the first attempt of its first run) leaves DeliveryStatus unset: the execution's
    // Completed status says it, and every delivery saves a visibility update.
    if (status === 'pending' && input.mode === 'deliver' && prepared.attempts === 0) status = 'succeeded';
    else setStatus('succeeded');
    return { deliveryId, status: 'succeeded', attempts };
  };
  /**
   * A replay an operator asked for while this delivery was being made (the row already said succeeded, the workflow
   * had not closed yet) would be lost with the run: it goes on as a replay run of the same workflow instead.
   */
  const succeededOrReplay = (): Promise<DeliveryWorkflowResult> | DeliveryWorkflowResult => {
    if (replayRequested && patched(REPLAY_AFTER_SUCCESS_PATCH)) {
      return continueAsNew<typeof deliverWebhook>({ ...input, mode: 'replay', attemptsSoFar: attempts, expiresAtMs: prepared.expiresAtMs });
    }
    return succeeded();
  };
  const cancelled = (): never => {
    setStatus('cancelled');
    throw ApplicationFailure.nonRetryable(`delivery ${deliveryId} cancelled: its subscription is disabled or deleted`, 'DeliveryCancelled');
  };

  // A replay run makes one attempt, then holds the dead letter. A run started before every start passed a schedule
  // carries the list form, or none.
  const schedule: RetrySchedule =
    input.mode === 'replay' ? { delaysMs: [] } : (input.schedule ?? (input.scheduleMs ? scheduleOfList(input.scheduleMs) : DEFAULT_RETRY_SCHEDULES.webhook));
  // A retry goes on after the first attempt, which the subscription's dispatcher made.
  if (input.mode === 'retry') setStatus(delayAfter(schedule, 1) !== null ? 'retrying' : 'dead_lettered');
  const ended = await retryOnSchedule<'succeeded' | 'cancelled' | 'dead_lettered'>({
    schedule,
    failuresSoFar: input.mode === 'retry' ? 1 : 0,
    // A replay asked for while waiting makes the next attempt now; a recheck ends the wait if the row was cancelled.
    wait: async (ms) => {
      // Date.now() in a workflow is Temporal's deterministic workflow clock.
      const until = Date.now() + ms;
      for (let left = ms; left > 0; left = until - Date.now()) {
        if (!(await condition(() => replayRequested || recheckRequested, left)) || replayRequested) return;
        recheckRequested = false;
        const row = await prepareDelivery({ deliveryId, retentionMs: input.retentionMs });
        // A replay asked for while the row was read: it is made now (its attempt reopens a cancelled row).
        if (replayRequested) return;
        if (!row || row.status === 'cancelled') {
          cancelledMeanwhile = true;
          return;
        }
      }
    },
    attempt: async (_n, { last, nextDelayMs }) => {
      if (cancelledMeanwhile && !replayRequested) return { done: 'cancelled' };
      cancelledMeanwhile = false;
      const replay = input.mode === 'replay' || replayRequested;
      replayRequested = false;
      const outcome = await attempt(nextDelayMs, replay);
      if (outcome !== 'failed') return { done: outcome };
      setStatus(last ? 'dead_lettered' : 'retrying');
      return { failed: 'failed' };
    },
    // The status says so already (set with the last failed attempt, or at the start of a retry run with none left).
    giveUp: () => Promise.resolve('dead_lettered' as const),
  });
  if (ended === 'succeeded') return succeededOrReplay();
  if (ended === 'cancelled') return cancelled();

  // The dead letter: held open until a replay, or until the event's retention ends.
  for (;;) {
    // Date.now() in a workflow is Temporal's deterministic workflow clock (the current task's time), not the host's.
    const left = prepared.expiresAtMs - Date.now();
    if (left <= 0 || !(await condition(() => replayRequested, left))) {
      await markDelivery({ deliveryId, status: 'expired' });
      setStatus('expired');
      throw ApplicationFailure.nonRetryable(`delivery ${deliveryId} expired in the dead letter after ${attempts} failed attempts`, 'DeliveryExpired');
    }
    replayRequested = false;
    const outcome = await attempt(null, true);
    if (outcome === 'succeeded') return succeededOrReplay();
    if (outcome === 'cancelled') return cancelled();
    setStatus('dead_lettered');
  }
}

/** Retention clean-up, run by a schedule: events and deliveries older than 30 days go. */
const { purgeExpired } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

export async function purgeRetention(input: { retentionMs?: number } = {}): Promise<{ events: number; deliveries: number; skippedRecords: number }> {
  return purgeExpired({ retentionMs: input.retentionMs });
}
