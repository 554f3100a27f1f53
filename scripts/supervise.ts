/**
 * What `npm start` does when one of its service processes (the API, the worker, the sandbox) exits on its own: start
 * it again after a delay that grows with each crash (1 s, 2 s, 4 s, … up to 30 s), back to 1 s once the process has
 * stayed up for a minute; and give up, stopping everything, when one process crashes 5 times within 2 minutes (a
 * crash loop: a restart will not fix it, and an operator must read why). Pure bookkeeping, tested on its own.
 */

export interface RestartPolicy {
  /** Delay before the first restart; each further crash doubles it. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** This many crashes of one process within `loopWindowMs` is a crash loop. */
  loopCrashes: number;
  loopWindowMs: number;
  /** A process that ran this long before it crashed starts over at `initialDelayMs`. */
  stableMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 1_000,
  maxDelayMs: 30_000,
  loopCrashes: 5,
  loopWindowMs: 120_000,
  stableMs: 60_000,
};

export type CrashDecision = { restart: true; delayMs: number; crashes: number } | { restart: false; crashes: number };

/** One process's crash history: what to do after each crash. */
export function createRestartTracker(policy: RestartPolicy = DEFAULT_RESTART_POLICY) {
  let crashes: number[] = [];
  let delayMs = 0;
  return {
    /** A crash at `now`, after the process had been up for `upForMs`. */
    crashed(now: number, upForMs: number): CrashDecision {
      if (upForMs >= policy.stableMs) delayMs = 0;
      crashes = [...crashes.filter((t) => now - t < policy.loopWindowMs), now];
      if (crashes.length >= policy.loopCrashes) return { restart: false, crashes: crashes.length };
      delayMs = delayMs === 0 ? policy.initialDelayMs : Math.min(policy.maxDelayMs, delayMs * 2);
      return { restart: true, delayMs, crashes: crashes.length };
    },
  };
}

/** How a policy reads in a log line and the README. */
export function describePolicy(p: RestartPolicy = DEFAULT_RESTART_POLICY): string {
  return `restarts after ${p.initialDelayMs / 1000} s, doubling up to ${p.maxDelayMs / 1000} s; ${p.loopCrashes} crashes within ${p.loopWindowMs / 60_000} min stop everything`;
}
