/**
 * Wakes a dispatcher batch waiting for more of its subscription's deliveries: one LISTEN per process on the
 * channel queueDeliveries notifies at commit, with the wait's time-out as the fallback for a lost notification.
 */
import type { Db } from '../db/client';
import { listenForQueued } from '../db/dispatch';

export interface QueuedListener {
  /** Resolves when deliveries are queued for the subscription, or after `ms`. */
  wait(subscriptionId: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

export function createQueuedListener(db: Db): QueuedListener {
  const waiters = new Map<string, Set<() => void>>();
  const listening = listenForQueued(db, (subscriptionId) => {
    for (const wake of waiters.get(subscriptionId) ?? []) wake();
  });
  return {
    async wait(subscriptionId, ms) {
      await listening;
      let wake: () => void = () => {};
      let timer: NodeJS.Timeout | undefined;
      const set = waiters.get(subscriptionId) ?? new Set();
      waiters.set(subscriptionId, set);
      try {
        await new Promise<void>((resolve) => {
          wake = resolve;
          set.add(resolve);
          timer = setTimeout(resolve, ms);
        });
      } finally {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0) waiters.delete(subscriptionId);
      }
    },
    async close() {
      const l = await listening;
      await l?.unlisten().catch(() => {});
    },
  };
}
