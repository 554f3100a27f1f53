/**
 * Attempts in flight per subscription, in one worker process: a dispatcher's first attempts and the retries of
 * failed ones take a permit each, so a subscription never has more than its bound of requests open from a process.
 * Waiters are served in arrival order.
 */
export interface InFlight {
  /** Resolves with a release function once fewer than `max` permits of `key` are held. */
  acquire(key: string, max: number): Promise<() => void>;
  /** Permits of `key` held now. */
  held(key: string): number;
}

export function createInFlight(): InFlight {
  const slots = new Map<string, { held: number; waiting: (() => void)[] }>();
  const slotOf = (key: string) => {
    let s = slots.get(key);
    if (!s) slots.set(key, (s = { held: 0, waiting: [] }));
    return s;
  };
  return {
    async acquire(key, max) {
      const s = slotOf(key);
      // A released permit passes straight to the next waiter, so no newcomer can slip in between.
      if (s.held >= max || s.waiting.length > 0) await new Promise<void>((resolve) => s.waiting.push(resolve));
      else s.held++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const next = s.waiting.shift();
        if (next) return next();
        s.held--;
        if (s.held === 0) slots.delete(key);
      };
    },
    held: (key) => slots.get(key)?.held ?? 0,
  };
}
