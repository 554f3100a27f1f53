/** The per-subscription in-flight bound: never more than `max` permits per key, waiters served in order, keys apart. */
import { describe, expect, it } from 'vitest';
import { createInFlight } from '../../activities/in-flight';

describe('createInFlight', () => {
  it('holds a key at its bound, hands a released permit to the oldest waiter, and keeps keys apart', async () => {
    const f = createInFlight();
    const a1 = await f.acquire('a', 2);
    const a2 = await f.acquire('a', 2);
    const b1 = await f.acquire('b', 2);
    expect([f.held('a'), f.held('b')]).toEqual([2, 1]);
    const order: string[] = [];
    const w1 = f.acquire('a', 2).then((r) => (order.push('w1'), r));
    const w2 = f.acquire('a', 2).then((r) => (order.push('w2'), r));
    await Promise.resolve();
    expect(order).toEqual([]);
    a1();
    a1(); // a second release of the same permit changes nothing
    const r1 = await w1;
    expect(order).toEqual(['w1']);
    // A newcomer arriving after the release does not overtake w2.
    const late = f.acquire('a', 2).then((r) => (order.push('late'), r));
    a2();
    const r2 = await w2;
    expect(order).toEqual(['w1', 'w2']);
    expect(f.held('a')).toBe(2);
    r1();
    (await late)();
    r2();
    b1();
    expect([f.held('a'), f.held('b')]).toEqual([0, 0]);
  });
});
