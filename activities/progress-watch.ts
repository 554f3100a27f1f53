/** The watch an activity keeps over its own progress: heartbeats with where it stands, and a stall watchdog. */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { SYNC_RETRYABLE } from './sync-failures';

/**
 * Heartbeats with the activity's resume point, and a watchdog: when the point has not moved for `stallMs` (a
 * source that answers too slowly to make progress, a lock that never comes), `guard`ed work rejects with a
 * retryable SyncStalled and heartbeats stop, so the attempt ends and a new one resumes from the last commit.
 */
export function watchProgress(ctx: Context, opts: { stallMs: number; heartbeatEveryMs: number; details: () => unknown }) {
  let movedAt = Date.now();
  let stalled: Error | undefined;
  // The rejecters of the guarded work still pending. Not a race against one long-lived promise: every race would
  // leave a reaction on it holding its result, so a run would keep every page it ever read.
  const waiting = new Set<(err: Error) => void>();
  const timer = setInterval(
    () => {
      if (Date.now() - movedAt >= opts.stallMs) {
        clearInterval(timer);
        const details = JSON.stringify(opts.details());
        stalled = ApplicationFailure.retryable(`no progress for ${Math.round(opts.stallMs / 1000)} s (at ${details})`, SYNC_RETRYABLE.stalled);
        for (const reject of waiting) reject(stalled);
        waiting.clear();
        return;
      }
      ctx.heartbeat(opts.details());
    },
    Math.min(opts.heartbeatEveryMs, opts.stallMs),
  );
  return {
    moved: () => {
      movedAt = Date.now();
    },
    guard: <T>(work: Promise<T>): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        if (stalled) return reject(stalled);
        waiting.add(reject);
        work.then(
          (value) => {
            waiting.delete(reject);
            resolve(value);
          },
          (err: unknown) => {
            waiting.delete(reject);
            reject(err);
          },
        );
      }),
    stop: () => clearInterval(timer),
  };
}
