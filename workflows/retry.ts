/**
 * The one retry loop of the workflows: attempt, record, wait, repeat, dead-letter. Each attempt is one activity call
 * that the caller makes (never retried by Temporal: the workflow owns the retries), each wait a durable timer, so
 * every attempt shows in the history. The schedule is data (domain/retry.ts), passed in the workflow's input; the
 * decision that an attempt was the last is taken here and nowhere else, and the caller's activities only record it.
 */
import { sleep, type ActivityOptions, type RetryPolicy } from '@temporalio/workflow';
import { delayAfter, type RetrySchedule } from '../domain/retry';

/** An attempt of the loop: one activity call, never retried by Temporal (the workflow owns the retries). */
export const ONE_ATTEMPT = { maximumAttempts: 1 } as const satisfies RetryPolicy;

/** Bookkeeping on the database around the attempts (a row's status, a failure recorded): idempotent, so Temporal retries it until it answers. */
export const BOOKKEEPING_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } as const satisfies RetryPolicy;

/** The options of bookkeeping activities: a minute each try, retried until the database answers. */
export const BOOKKEEPING = { startToCloseTimeout: '1 minute', retry: BOOKKEEPING_RETRY } as const satisfies ActivityOptions;

/**
 * What one attempt came to: an end (any outcome the caller will not retry), or a failure worth another attempt;
 * `notBeforeMs`: the other side asked to be left alone this long (a Retry-After), so the next attempt waits at least
 * this instead of a shorter step of the schedule.
 */
export type AttemptVerdict<T> = { done: T } | { failed: string; notBeforeMs?: number };

/** Why the loop gave up: the schedule has no further attempt, or the next would start outside its window. */
export type GiveUpReason = 'exhausted' | 'window';

export interface RetryLoop<T> {
  schedule: RetrySchedule;
  /**
   * Failed attempts made before this loop under the same schedule (a delivery's retry run follows the failed first
   * attempt its dispatcher made): the loop begins with the wait that follows the last of them.
   */
  failuresSoFar?: number;
  /** Start of the schedule's give-up window (a write: when it was accepted). Needed when the schedule has one. */
  windowStartMs?: number;
  /**
   * One attempt, `n` from 1 under this loop. `last`: the schedule has no attempt after it, so its failure is the
   * dead letter (a caller whose activity records the outcome with the attempt passes this on; a window may still end
   * the schedule sooner, which the caller hears of through `giveUp`). `nextDelayMs` the wait after it if it fails.
   */
  attempt(n: number, plan: { last: boolean; nextDelayMs: number | null }): Promise<AttemptVerdict<T>>;
  /** Record failed attempt `n` and when the next one starts, before the wait. */
  recordRetry?(r: { attempt: number; error: string; nextAttemptAtMs: number }): Promise<void>;
  /** The last attempt failed (or none may start): the dead letter. `attempts` is 0 when none was made. */
  giveUp(r: { attempts: number; error: string | null; reason: GiveUpReason }): Promise<T>;
  /** The wait before the next attempt; a durable timer unless the caller waits for something more (a replay). */
  wait?(ms: number): Promise<void>;
}

/** Runs attempts on `loop.schedule` until one ends the run or the schedule gives up. */
export async function retryOnSchedule<T>(loop: RetryLoop<T>): Promise<T> {
  const { schedule } = loop;
  const wait = loop.wait ?? ((ms: number) => sleep(ms));
  // Date.now() in a workflow is Temporal's deterministic clock (the current workflow task's time).
  const outsideWindow = (atMs: number) => schedule.giveUpAfterMs !== undefined && atMs - (loop.windowStartMs ?? atMs) > schedule.giveUpAfterMs;
  let failures = loop.failuresSoFar ?? 0;
  let lastError: string | null = null;
  let notBeforeMs = 0;
  if (failures === 0 && outsideWindow(Date.now())) return loop.giveUp({ attempts: 0, error: null, reason: 'window' });
  for (let n = 1; ; n++) {
    if (failures > 0) {
      const step = delayAfter(schedule, failures);
      if (step === null) return loop.giveUp({ attempts: n - 1, error: lastError, reason: 'exhausted' });
      const delay = Math.max(step, notBeforeMs);
      const next = Date.now() + delay;
      if (outsideWindow(next)) return loop.giveUp({ attempts: n - 1, error: lastError, reason: 'window' });
      if (lastError !== null) await loop.recordRetry?.({ attempt: n - 1, error: lastError, nextAttemptAtMs: next });
      await wait(next - Date.now());
    }
    const nextDelayMs = delayAfter(schedule, failures + 1);
    const verdict = await loop.attempt(n, { last: nextDelayMs === null, nextDelayMs });
    if ('done' in verdict) return verdict.done;
    failures++;
    lastError = verdict.failed;
    notBeforeMs = verdict.notBeforeMs ?? 0;
  }
}
