/**
 * patches/postgres+3.4.9.patch: postgres.js's internal queue (the pool's idle, busy and pending queues) drops the
 * slots it has shifted once they are half its array. Unpatched, a queue that is never empty, such as the idle
 * connections of a pool under a steady load, grew by one slot per query for the life of the process, and each move of
 * a connection between queues scanned them all (a query cost 110 µs at first and 300 µs after 200,000).
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}

/** The module every copy of the driver shares the code of (the CommonJS build, as `require` resolves it). */
const requireHere = createRequire(import.meta.url);
const Queue = requireHere(requireHere.resolve('postgres').replace(/index\.js$/, 'queue.js')) as <T>(initial?: T[]) => Queue<T>;

/** An array that remembers the longest it has been (the queue copies its initial array with slice, keeping the class). */
class Tracked<T> extends Array<T> {
  static longest = 0;
  override push(...items: T[]): number {
    const n = super.push(...items);
    Tracked.longest = Math.max(Tracked.longest, this.length);
    return n;
  }
}

describe("postgres.js's queue (patched)", () => {
  it('stays as long as what it holds when it is never empty, one in and one out 100,000 times', () => {
    const q = Queue(Tracked.from(['a', 'b']));
    for (let i = 0; i < 100_000; i++) q.push(q.shift()!);
    expect(q.length).toBe(2);
    expect(Tracked.longest).toBeLessThan(200);
  });

  it('keeps its order and its removes through the compactions', () => {
    const q = Queue<number>();
    for (let i = 0; i < 1_000; i++) q.push(i);
    const out: number[] = [];
    for (let i = 0; i < 600; i++) out.push(q.shift()!);
    expect(q.remove(700)).toBe(700);
    expect(q.remove(5)).toBeNull();
    while (q.length > 0) out.push(q.shift()!);
    expect(out).toEqual([...Array(1_000).keys()].filter((i) => i !== 700));
  });
});
