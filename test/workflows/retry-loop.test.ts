/**
 * The one retry loop (workflows/retry.ts) on the time-skipping test server, through a workflow that runs only it:
 * each attempt at its exact time after the one before, the record of each retry before its wait, the dead letter when
 * the schedule has no attempt left or the next would start outside its window, a loop that begins after failures made
 * before it, and a cancellation during a wait that makes no further attempt and no dead letter.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { RetrySchedule } from '../../domain/retry';
import { MINUTE, onTimeSkipping, recorder, SECOND, type Call } from '../support/time-skipping';
import type { RetryProbeActivities } from './fixtures/retry-workflow';
import { retryProbe } from './fixtures/retry-workflow';

/** What a measured time may exceed the exact one by (workflow tasks run at wall speed); far below every delay here. */
const SLACK_MS = 1_000;

let env: TestWorkflowEnvironment;
let workflowCode: string;

onTimeSkipping((started) => ({ env, workflowCode } = started), {
  workflowsPath: fileURLToPath(new URL('./fixtures/retry-workflow.ts', import.meta.url)),
});

type AttemptInput = Parameters<RetryProbeActivities['attempt']>[0];
type RecordInput = Parameters<RetryProbeActivities['record']>[0];

/** Runs the probe workflow on `input` with attempts that fail until `succeedAt` (never when absent). */
async function run(
  input: Parameters<typeof retryProbe>[0],
  opts: { succeedAt?: number; during?: (handle: { cancel(): Promise<unknown> }, calls: { attempt: Call<AttemptInput>[] }) => Promise<void> } = {},
) {
  const calls = { attempt: [] as Call<AttemptInput>[], record: [] as Call<RecordInput>[] };
  const recorded = recorder(env);
  const activities: RetryProbeActivities = {
    attempt: (i) => recorded(calls.attempt, i, async () => (i.n === opts.succeedAt ? 'ok' : 'fail')),
    record: (i) => recorded(calls.record, i, async () => {}),
  };
  const taskQueue = `retry-loop-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: { code: workflowCode }, activities });
  const startedAt = await env.currentTimeMs();
  const outcome = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start(retryProbe, { taskQueue, workflowId: `retry-${randomUUID()}`, args: [input] });
    await opts.during?.(handle, calls);
    return handle.result().then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
  });
  return { ...outcome, calls, startedAt };
}

const expectAt = (actual: number, expected: number) => {
  expect(actual).toBeGreaterThanOrEqual(expected);
  expect(actual - expected).toBeLessThan(SLACK_MS);
};

describe('retryOnSchedule', () => {
  it('makes each attempt its delay after the one before, recording each retry and its time before the wait', async () => {
    const schedule: RetrySchedule = { delaysMs: [5 * SECOND, 15 * SECOND], thenEveryMs: MINUTE };
    const { result, calls } = await run({ schedule }, { succeedAt: 5 });
    expect(result).toEqual({ succeededAt: 5 });
    const a = calls.attempt;
    expect(a.map((c) => c.input)).toEqual([
      { n: 1, last: false, nextDelayMs: 5 * SECOND },
      { n: 2, last: false, nextDelayMs: 15 * SECOND },
      { n: 3, last: false, nextDelayMs: MINUTE },
      { n: 4, last: false, nextDelayMs: MINUTE },
      { n: 5, last: false, nextDelayMs: MINUTE },
    ]);
    const delays = [5 * SECOND, 15 * SECOND, MINUTE, MINUTE];
    delays.forEach((d, i) => {
      const rec = calls.record[i]!;
      expect(rec.input).toEqual({ attempt: i + 1, error: `attempt ${i + 1} failed`, nextAttemptAtMs: expect.any(Number) as number });
      expectAt(rec.input.nextAttemptAtMs, a[i]!.doneAt + d);
      // Recorded before the wait, and the next attempt starts at the recorded time.
      expect(rec.at).toBeLessThan(a[i + 1]!.at);
      expectAt(a[i + 1]!.at, rec.input.nextAttemptAtMs);
    });
    expect(calls.record).toHaveLength(4);
  });

  it('tells the last attempt it is the last, and dead-letters after it without recording a retry', async () => {
    const { result, calls } = await run({ schedule: { delaysMs: [SECOND, 2 * SECOND] } });
    expect(calls.attempt.map((c) => [c.input.n, c.input.last, c.input.nextDelayMs])).toEqual([
      [1, false, SECOND],
      [2, false, 2 * SECOND],
      [3, true, null],
    ]);
    expect(calls.record.map((c) => c.input.attempt)).toEqual([1, 2]);
    expect(result).toEqual({ gaveUp: { attempts: 3, error: 'attempt 3 failed', reason: 'exhausted' } });
  });

  it('gives up when the next attempt would start outside the window, and makes none when the window has passed', async () => {
    const schedule: RetrySchedule = { delaysMs: [], thenEveryMs: 10 * MINUTE, giveUpAfterMs: 25 * MINUTE };
    const windowStartMs = await env.currentTimeMs();
    const inWindow = await run({ schedule, windowStartMs });
    // At 0, 10 and 20 minutes; a 4th would start at 30, past the 25-minute window.
    expect(inWindow.calls.attempt).toHaveLength(3);
    expectAt(inWindow.calls.attempt[2]!.at, inWindow.calls.attempt[0]!.at + 20 * MINUTE);
    expect(inWindow.result).toEqual({ gaveUp: { attempts: 3, error: 'attempt 3 failed', reason: 'window' } });
    expect(inWindow.calls.record).toHaveLength(2);

    const late = await run({ schedule, windowStartMs: (await env.currentTimeMs()) - 26 * MINUTE });
    expect(late.calls.attempt).toEqual([]);
    expect(late.result).toEqual({ gaveUp: { attempts: 0, error: null, reason: 'window' } });
  });

  it('after failures made before it, begins with the wait that follows the last of them', async () => {
    const { result, calls, startedAt } = await run({ schedule: { delaysMs: [30 * SECOND, MINUTE] }, failuresSoFar: 1 }, { succeedAt: 2 });
    expect(result).toEqual({ succeededAt: 2 });
    expect(calls.attempt.map((c) => c.input)).toEqual([
      { n: 1, last: false, nextDelayMs: MINUTE },
      { n: 2, last: true, nextDelayMs: null },
    ]);
    expectAt(calls.attempt[0]!.at, startedAt + 30 * SECOND);
    // Nothing to record for failures it did not make.
    expect(calls.record.map((c) => c.input.attempt)).toEqual([1]);
  });

  it('a cancellation during a wait ends the run: no further attempt and no dead letter', async () => {
    const { result, error, calls } = await run(
      { schedule: { delaysMs: [10 * MINUTE] } },
      {
        during: async (handle) => {
          // Once the first retry is recorded the workflow waits 10 minutes; cancel a minute in.
          await env.sleep(MINUTE);
          await handle.cancel();
        },
      },
    );
    expect(result).toBeUndefined();
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(calls.attempt).toHaveLength(1);
    expect(calls.record).toHaveLength(1);
  });
});
