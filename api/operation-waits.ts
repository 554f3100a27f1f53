/**
 * Held polls of an Operation: `GET /v1/operations/{id}` with `Prefer: wait=N` (RFC 7240) answers when the Operation
 * ends, or after N seconds (at most MAX_WAIT_S) with its state then, instead of at once. A caller waiting for a write
 * sends one request where it would send dozens of polls, and hears of the end as soon as it is committed.
 *
 * How: the API process LISTENs on `operation_ended` (db/feeds.ts; a trigger NOTIFYs each Operation's id as it turns
 * succeeded or failed) over a connection of its own, opened at the first held poll. A held poll is armed before it
 * reads the row, so an end committed between the read and the wait is not missed. While the feed is not listening
 * (not yet, or its connection was lost), held polls read the row again every UNHEARD_RECHECK_MS instead: a lost
 * notification costs at most that long, never the whole wait.
 */
import type { Logger } from '../config/logger';
import type { Config } from '../config';
import { keepOperationEndedFeed } from '../db/feeds';
import type { OperationJson } from '../db/operations';
import { isTerminal } from '../domain/operations';

/** The longest wait a poll may ask for, in seconds (a longer one is held this long). */
export const MAX_WAIT_S = 20;
/** How often a held poll reads its Operation again while notifications may be missed. */
const UNHEARD_RECHECK_MS = 500;
/** How soon the feed is opened again after it failed or was lost. */
const RELISTEN_MS = 1_000;

export interface OperationWaits {
  /**
   * Armed for the Operation `id`: `ended` resolves when it may have ended (its notification came, or notifications
   * may have been missed), or after `ms`; it never rejects. `disarm` when no longer waiting. Undefined once closed:
   * answer now.
   */
  arm(id: string, ms: number): { ended: Promise<void>; disarm(): void } | undefined;
  /** Whether ends are heard (the feed is listening). */
  readonly listening: boolean;
  /** Answers every held poll now and holds no more (a shutting-down process); closes the feed. Idempotent. */
  close(): Promise<void>;
}

/**
 * The wait a `Prefer` header asks for, in whole seconds (0: none), capped at MAX_WAIT_S. Preferences are
 * comma-separated tokens, each with an optional value and parameters; `wait`'s value is delta-seconds, quoted or not.
 * Anything that does not parse is ignored, as RFC 7240 asks of a preference a server does not understand.
 */
export function preferredWaitS(prefer: string | undefined): number {
  if (!prefer) return 0;
  for (const preference of prefer.split(',')) {
    const m = /^\s*wait\s*=\s*"?(\d{1,9})"?\s*(?:;.*)?$/i.exec(preference);
    if (m) return Math.min(Number(m[1]), MAX_WAIT_S);
  }
  return 0;
}

export function createOperationWaits(deps: { config: Config; logger: Logger }): OperationWaits {
  const waiting = new Map<string, Set<() => void>>();
  let closed = false;

  /** Wake the held polls of one Operation: each reads it again. */
  function wake(id: string) {
    for (const disarm of [...(waiting.get(id) ?? [])]) disarm();
  }
  /** Wake every held poll. */
  function wakeAll() {
    for (const id of [...waiting.keys()]) wake(id);
  }

  // A connection of its own (db/feeds.ts): its closing tells us when notifications may have been missed.
  const feed = keepOperationEndedFeed(deps.config.DATABASE_URL, RELISTEN_MS, {
    onNotify: wake,
    // Ends committed while nothing listened were not heard: every held poll looks again.
    onListening: wakeAll,
    onLost: wakeAll,
    onUnavailable: (err) => deps.logger.warn({ err }, `operation end feed unavailable; held polls read their Operation every ${UNHEARD_RECHECK_MS} ms`),
  });

  return {
    get listening() {
      return feed.listening;
    },
    arm(id, ms) {
      if (closed) return undefined;
      void feed.start();
      let wake!: () => void;
      const ended = new Promise<void>((resolve) => (wake = resolve));
      const timer = setTimeout(() => disarm(), feed.listening ? ms : Math.min(ms, UNHEARD_RECHECK_MS));
      const wakers = waiting.get(id) ?? new Set<() => void>();
      waiting.set(id, wakers);
      const disarm = () => {
        clearTimeout(timer);
        wakers.delete(disarm);
        if (wakers.size === 0 && waiting.get(id) === wakers) waiting.delete(id);
        wake();
      };
      wakers.add(disarm);
      return { ended, disarm };
    },
    async close() {
      if (closed) return;
      closed = true;
      wakeAll();
      await feed.close();
    },
  };
}

/**
 * The Operation as the caller sees it (`read`: the row, or the 404 it throws), held up to `waitS` seconds while it
 * has not ended; `held`: whether the wait was honoured (false when the process could not hold it: it is shutting
 * down and answers at once).
 */
export async function heldOperation(
  waits: OperationWaits,
  id: string,
  waitS: number,
  read: () => Promise<OperationJson>,
): Promise<{ op: OperationJson; held: boolean }> {
  const deadline = performance.now() + waitS * 1000;
  for (let first = true; ; first = false) {
    const left = deadline - performance.now();
    const armed = left > 0 ? waits.arm(id, left) : undefined;
    let op: OperationJson;
    try {
      op = await read();
    } catch (err) {
      armed?.disarm();
      throw err;
    }
    if (!armed || isTerminal(op.status)) {
      armed?.disarm();
      // Not held: the first look could not wait for an Operation still under way.
      return { op, held: !(first && !armed && !isTerminal(op.status)) };
    }
    await armed.ended;
  }
}
