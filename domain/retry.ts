/**
 * Retry schedules, one shape for every workflow that retries (a write, a webhook delivery, an automation run): the
 * delay after each failed attempt, an optional delay for every later one, and an optional window after which no
 * attempt starts. The values are set in configuration (config/index.ts reads its defaults from here) and passed to
 * each workflow in its input; workflows/retry.ts is the one loop that follows them. Pure: workflows import it.
 */

export interface RetrySchedule {
  /** Delay after the 1st, 2nd, … failed attempt before the next one. */
  delaysMs: readonly number[];
  /** Delay after every later failure; absent, the attempt after the last of `delaysMs` is the last. */
  thenEveryMs?: number;
  /** No attempt starts later than this after the run's start (a write: when it was accepted); absent, no window. */
  giveUpAfterMs?: number;
}

/** Delay after `failures` failed attempts (1-based) before the next; null when the schedule has no further attempt. */
export function delayAfter(schedule: RetrySchedule, failures: number): number | null {
  return schedule.delaysMs[failures - 1] ?? schedule.thenEveryMs ?? null;
}

/**
 * A schedule from the configuration's list form: delays before each attempt after the previous one, whose first is
 * the first attempt's. A first attempt is always made at once, so the first value is not a delay of the schedule.
 */
export function scheduleOfList(delaysBeforeEachAttemptMs: readonly number[], rest: Omit<RetrySchedule, 'delaysMs'> = {}): RetrySchedule {
  return { delaysMs: delaysBeforeEachAttemptMs.slice(1), ...rest };
}

/** The configuration's list form of a schedule's delays (the first attempt at once). */
export const listOfSchedule = (schedule: RetrySchedule): number[] => [0, ...schedule.delaysMs];

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * The defaults of the configuration (WRITE_RETRY_*, WEBHOOK_RETRY_SCHEDULE_MS, AUTOMATION_RETRY_SCHEDULE_MS). A
 * workflow reads them only when its input carries no schedule: a run started before every start passed one.
 */
export const DEFAULT_RETRY_SCHEDULES = {
  /** A write (docs: Writes): 5 s, 15 s, 1 min, 5 min, 15 min, then every 30 min; none starts 24 h after acceptance. */
  write: { delaysMs: [5_000, 15_000, MINUTE, 5 * MINUTE, 15 * MINUTE], thenEveryMs: 30 * MINUTE, giveUpAfterMs: 24 * HOUR },
  /** A webhook delivery: 7 attempts in all, after 30 s, 1 min, 5 min, 30 min, 1 h, 6 h; the last failure dead-letters. */
  webhook: { delaysMs: [30_000, MINUTE, 5 * MINUTE, 30 * MINUTE, HOUR, 6 * HOUR] },
  /** An automation run: 3 retries of a transient failure, after 1 min, 5 min, 15 min. */
  automation: { delaysMs: [MINUTE, 5 * MINUTE, 15 * MINUTE] },
} as const satisfies Record<string, RetrySchedule>;
