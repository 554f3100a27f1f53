/**
 * What the one-attempt activities (a write to the source, an export) share: heartbeats while the attempt runs, so a
 * dead worker's attempt is noticed within the heartbeat time-out, and the error text they keep for operators.
 */
import { Context } from '@temporalio/activity';

/** Longest error text kept on a row: enough for a source's or a destination's message, never a whole HTML page. */
const MAX_ERROR = 2_000;
export const clip = (s: string) => (s.length > MAX_ERROR ? `${s.slice(0, MAX_ERROR - 1)}…` : s);
export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Runs `fn` heartbeating every `everyMs` (with `details()` when given) when called as an activity; outside one
 * (a direct call in a test) `fn` gets no context and nothing heartbeats.
 */
export async function heartbeating<T>(everyMs: number, fn: (ctx: Context | undefined) => Promise<T>, details?: () => unknown): Promise<T> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return fn(undefined);
  }
  const timer = setInterval(() => ctx.heartbeat(details?.()), everyMs);
  try {
    return await fn(ctx);
  } finally {
    clearInterval(timer);
  }
}
