/** The restart policy of `npm start` (scripts/supervise.ts): growing delays, a reset after a stable run, the crash loop. */
import { describe, expect, it } from 'vitest';
import { createRestartTracker, DEFAULT_RESTART_POLICY, describePolicy } from '../../scripts/supervise';

describe('restart policy', () => {
  it('doubles the delay per crash up to the cap, and gives up at 5 crashes within 2 minutes', () => {
    const t = createRestartTracker({ ...DEFAULT_RESTART_POLICY, loopCrashes: 8 });
    const delays = [0, 1, 2, 3, 4, 5, 6].map((i) => t.crashed(i * 1_000, 500));
    expect(delays.map((d) => (d.restart ? d.delayMs : null))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    const loop = createRestartTracker();
    const seen = [0, 10, 20, 30, 40].map((s) => loop.crashed(s * 1_000, 1_000));
    expect(seen.slice(0, 4).every((d) => d.restart)).toBe(true);
    expect(seen[4]).toEqual({ restart: false, crashes: 5 });
  });

  it('forgets crashes older than the window, and starts over at 1 s after a minute up', () => {
    const t = createRestartTracker();
    for (const s of [0, 10, 20, 30]) t.crashed(s * 1_000, 1_000);
    // 3 minutes later: the old crashes are out of the window, and the process had run for 2 minutes.
    expect(t.crashed(210_000, 120_000)).toEqual({ restart: true, delayMs: 1_000, crashes: 1 });
    expect(describePolicy()).toBe('restarts after 1 s, doubling up to 30 s; 5 crashes within 2 min stop everything');
  });
});
