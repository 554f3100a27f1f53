/**
 * Where a sync's paging goes after a page (activities/sync.ts nextPoint): on, or, in a delta run whose window lost
 * records while it read (the source's count fell), back to the window's first page, a bounded number of times.
 */
import { describe, expect, it } from 'vitest';
import { DELTA_WINDOW_RESTARTS, nextPoint } from '../../activities/sync';

describe('the next resume point', () => {
  it('pages on in a full run, whatever the count says, and keeps no count', () => {
    expect(nextPoint({ page: 2, done: false, tracked: true }, { hasMore: true, total: 5 }, false)).toEqual({ page: 3, done: false, tracked: true });
    expect(nextPoint({ page: 3, done: false, tracked: true }, { hasMore: false, total: 1 }, false)).toEqual({ page: 4, done: true, tracked: true });
  });

  it('in a delta run, keeps the count and pages on while it holds or grows', () => {
    const first = nextPoint({ page: 0, done: false, tracked: false }, { hasMore: true, total: 250 }, true);
    expect(first).toEqual({ page: 1, done: false, tracked: false, total: 250 });
    const second = nextPoint(first, { hasMore: true, total: 251 }, true);
    expect(second).toEqual({ page: 2, done: false, tracked: false, total: 251 });
    expect(nextPoint(second, { hasMore: false, total: 251 }, true)).toEqual({ page: 3, done: true, tracked: false, total: 251 });
  });

  it('in a delta run, goes back to the first page when the count fell, even on the last page', () => {
    const point = { page: 2, done: false, tracked: false, total: 250 };
    expect(nextPoint(point, { hasMore: true, total: 249 }, true)).toEqual({ page: 0, done: false, tracked: false, total: 249, restarts: 1 });
    expect(nextPoint(point, { hasMore: false, total: 200 }, true)).toEqual({ page: 0, done: false, tracked: false, total: 200, restarts: 1 });
  });

  it(`carries on regardless after ${DELTA_WINDOW_RESTARTS} restarts`, () => {
    let point = { page: 1, done: false, tracked: false, total: 100 } as ReturnType<typeof nextPoint>;
    for (let i = 1; i <= DELTA_WINDOW_RESTARTS; i++) {
      point = nextPoint({ ...point, page: 1 }, { hasMore: true, total: 100 - i }, true);
      expect(point).toMatchObject({ page: 0, restarts: i });
    }
    const after = nextPoint({ ...point, page: 1 }, { hasMore: true, total: 50 }, true);
    expect(after).toEqual({
      page: 2,
      done: false,
      tracked: false,
      total: 50,
      restarts: DELTA_WINDOW_RESTARTS,
      missed: true,
    });
    // The entity stays `missed` to its last page, whatever the count does then.
    expect(nextPoint(after, { hasMore: false, total: 50 }, true)).toEqual({ ...after, page: 3, done: true });
  });

  it('pages on when the source gives no count', () => {
    expect(nextPoint({ page: 1, done: false, total: 10 }, { hasMore: true }, true)).toEqual({ page: 2, done: false, tracked: undefined });
  });
});
