/**
 * A subscription's dispatcher: makes the first attempts of its queued deliveries, in queue order, in batches (one
 * activity each, on the dispatch task queue), and opens a circuit after a run of failures: it then probes with one
 * delivery on the probe schedule until one succeeds. Woken by the relay when its queue stops being empty; with
 * nothing queued for `idleMs` it completes. Continues as new before its history grows long. A batch that fails (the
 * database away, its worker dead) is tried again after a growing pause; its untaken deliveries wait in the queue.
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { DispatchActivities } from '../activities/dispatch';
import { dispatchTaskQueueOf, SA_DELIVERY_STATUS, WAKE_SIGNAL } from '../domain/contract';
import { DEFAULT_RETRY_SCHEDULES, delayAfter, scheduleOfList } from '../domain/retry';
import type { BatchResult, DispatcherEnd, DispatcherInput } from '../domain/webhooks';
import { BOOKKEEPING_RETRY, ONE_ATTEMPT } from './retry';

export const wakeSignal = defineSignal(WAKE_SIGNAL);
export interface DispatcherState {
  circuit: 'closed' | 'open';
  /** When the next probe goes out (epoch ms), while the circuit is open. */
  nextProbeAtMs: number | null;
  batches: number;
  succeeded: number;
  failed: number;
}
export const dispatcherStateQuery = defineQuery<DispatcherState>('dispatcher');

/** Batches (and probes) before the run continues as new, unless Temporal suggests it earlier. */
const ROUNDS_PER_RUN = 200;

function activitiesOn(taskQueue: string) {
  // The batch: never retried by Temporal (it sends), heartbeating; the workflow decides what comes next.
  const { dispatchBatch } = proxyActivities<DispatchActivities>({
    taskQueue,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '30 seconds',
    retry: ONE_ATTEMPT,
  });
  const { markCircuit } = proxyActivities<DispatchActivities>({
    taskQueue,
    startToCloseTimeout: '30 seconds',
    retry: BOOKKEEPING_RETRY,
  });
  return { dispatchBatch, markCircuit };
}

export async function dispatchWebhooks(input: DispatcherInput): Promise<{ end: DispatcherEnd }> {
  const { subscriptionId, settings } = input;
  const { dispatchBatch, markCircuit } = activitiesOn(dispatchTaskQueueOf(workflowInfo().taskQueue));
  const { retry } = input;
  // Where a failed first attempt goes, decided here: a retry after the schedule's first delay, or the dead letter.
  const firstRetryDelayMs = delayAfter(retry?.schedule ?? (retry?.scheduleMs ? scheduleOfList(retry.scheduleMs) : DEFAULT_RETRY_SCHEDULES.webhook), 1);
  let woken = false;
  let probeIndex: number | null = input.probeIndex ?? null;
  const state: DispatcherState = { circuit: probeIndex === null ? 'closed' : 'open', nextProbeAtMs: null, batches: 0, succeeded: 0, failed: 0 };
  setHandler(wakeSignal, () => {
    woken = true;
  });
  setHandler(dispatcherStateQuery, () => state);
  const setCircuit = (open: boolean) => {
    if ((state.circuit === 'open') === open) return;
    state.circuit = open ? 'open' : 'closed';
    // The dispatcher's status in the Temporal UI: `circuit_open` while it probes, otherwise unset.
    upsertSearchAttributes([{ key: SA_DELIVERY_STATUS, value: open ? 'circuit_open' : 'dispatching' }]);
  };

  let failures = 0;
  /** Failed first attempts in a row, across batches: the circuit opens when it reaches the threshold. */
  let failureRun = input.failureRun ?? 0;
  const batch = async (probe: boolean): Promise<BatchResult | null> => {
    try {
      const r = await dispatchBatch({ subscriptionId, probe, firstRetryDelayMs, failureRun, ...settings });
      failureRun = r.failureRun;
      failures = 0;
      state.batches++;
      state.succeeded += r.succeeded;
      state.failed += r.failed;
      return r;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The database or the worker went away: try again after a growing pause (1 s … 1 min).
      await sleep(Math.min(60_000, 1_000 * 2 ** Math.min(failures++, 6)));
      return null;
    }
  };

  for (let round = 0; round < ROUNDS_PER_RUN && !workflowInfo().continueAsNewSuggested; round++) {
    if (probeIndex !== null) {
      // Open circuit: wait, then one delivery. Wakes change nothing here: the queue waits for the probe.
      const delay = settings.probeScheduleMs[Math.min(probeIndex, settings.probeScheduleMs.length - 1)]!;
      state.nextProbeAtMs = Date.now() + delay;
      setCircuit(true);
      await markCircuit({ subscriptionId, openedAtMs: Date.now(), nextProbeAtMs: state.nextProbeAtMs });
      await sleep(delay);
      woken = false;
      const r = await batch(true);
      if (!r) continue;
      if (r.stoppedBy === 'paused' && woken) continue; // see below
      if (r.stoppedBy === 'paused' || r.stoppedBy === 'deleted') {
        await markCircuit({ subscriptionId, closed: true });
        return { end: r.stoppedBy };
      }
      if (r.failed > 0) {
        probeIndex++;
        continue;
      }
      // The probe went through (or nothing was queued): close the circuit and go on at full speed.
      probeIndex = null;
      failureRun = 0;
      state.nextProbeAtMs = null;
      setCircuit(false);
      await markCircuit({ subscriptionId, closed: true });
      continue;
    }
    woken = false;
    const r = await batch(false);
    if (!r) continue;
    // Woken while the batch found the subscription paused: an operator may have enabled it since, and the wake that
    // says so went to this run, so no new run will start for it. Look again; a subscription still paused ends the run
    // at the next batch.
    if (r.stoppedBy === 'paused' && woken) continue;
    if (r.stoppedBy === 'paused' || r.stoppedBy === 'deleted') return { end: r.stoppedBy };
    if (r.stoppedBy === 'circuit') {
      probeIndex = 0;
      continue;
    }
    if (r.stoppedBy === 'idle' && !(await condition(() => woken, settings.idleMs))) return { end: 'idle' };
  }
  return continueAsNew<typeof dispatchWebhooks>({ ...input, probeIndex, failureRun });
}
