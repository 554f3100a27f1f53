/**
 * A subscription's dispatcher on the time-skipping test server: batches while there is work, the idle wait and its
 * end, the circuit (its probe schedule to the millisecond, the last delay repeating, its close), a failing batch's
 * pauses, pause and deletion, and cancellation, against mock batch activities that record each call with the
 * server's (skipped) clock.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { BatchInput, DispatchActivities } from '../../activities/dispatch';
import { dispatchTaskQueueOf, SA_DELIVERY_STATUS } from '../../domain/contract';
import type { BatchResult, DispatcherInput, DispatchSettings } from '../../domain/webhooks';
import { dispatcherStateQuery, dispatchWebhooks, wakeSignal } from '../../workflows/dispatcher';
import { expectLateBy, failureOf, MINUTE, onTimeSkipping, recorder, runWorker, SECOND, type Call } from '../support/time-skipping';

/** See webhook-delivery.test.ts: what a measured time may exceed the exact one by. */
const SLACK_MS = 1_000;

const SETTINGS: DispatchSettings = {
  maxInFlight: 16,
  circuitFailures: 10,
  probeScheduleMs: [30 * SECOND, MINUTE, 5 * MINUTE],
  idleMs: 5 * MINUTE,
  batchMs: 30 * SECOND,
  lingerMs: SECOND,
};

let env: TestWorkflowEnvironment;
let workflowCode: string;

onTimeSkipping((started) => ({ env, workflowCode } = started));

type Script = BatchResult | { throws: Error };
/** A batch's result; its failures come last unless `run` says how long the run of failures at its end is. */
const batchOf = (stoppedBy: BatchResult['stoppedBy'], succeeded = 0, failed = 0, run = failed): BatchResult => ({
  succeeded,
  failed,
  failureRun: run,
  stoppedBy,
});

/** Batch activities as plain objects: `script(n, input)` says what batch n (from 1) does. */
function mockActivities(script: (n: number, input: BatchInput) => Script) {
  const calls = {
    batch: [] as Call<BatchInput>[],
    circuit: [] as Call<Parameters<DispatchActivities['markCircuit']>[0]>[],
  };
  const recorded = recorder(env);
  const activities = {
    dispatchBatch: (input) =>
      recorded(calls.batch, input, async () => {
        const s = script(calls.batch.length, input);
        if ('throws' in s) throw s.throws;
        return s;
      }),
    markCircuit: (input) => recorded(calls.circuit, input, async () => {}),
  } satisfies DispatchActivities;
  return { activities, calls };
}

/** A workflow worker on a queue of its own and a batch worker on its dispatch queue, for the length of `body`. */
async function withWorkers(
  mock: { activities: DispatchActivities },
  body: (start: (input?: Partial<DispatcherInput>) => Promise<WorkflowHandle<typeof dispatchWebhooks>>) => Promise<void>,
): Promise<void> {
  const taskQueue = `dispatch-test-${randomUUID()}`;
  const batches = await Worker.create({ connection: env.nativeConnection, taskQueue: dispatchTaskQueueOf(taskQueue), activities: mock.activities });
  await batches.runUntil(
    runWorker({ env, workflowCode }, { taskQueue }, async (track) => {
      const start = async (input: Partial<DispatcherInput> = {}) =>
        track(
          await env.client.workflow.start(dispatchWebhooks, {
            taskQueue,
            workflowId: `dispatch-whs_${randomUUID()}`,
            args: [{ subscriptionId: 'whs_test', settings: SETTINGS, ...input }],
          }),
        );
      await body(start);
    }),
  );
}

const expectAt = (actual: number | undefined, expected: number | undefined) => expectLateBy(actual, expected, SLACK_MS);

describe('dispatchWebhooks', () => {
  it('runs batches while they find work, waits idle for a wake, and completes after idleMs without one', async () => {
    // Batch 1 runs out of budget (more is queued), 2 finds the queue empty, 3 (after the wake) too.
    const mock = mockActivities((n) => batchOf(n === 1 ? 'budget' : 'idle', n === 1 ? 500 : 3));
    await withWorkers(mock, async (start) => {
      const handle = await start();
      await env.sleep(MINUTE);
      expect(mock.calls.batch).toHaveLength(2);
      expectAt(mock.calls.batch[1]!.at, mock.calls.batch[0]!.doneAt);
      const wokenAt = await env.currentTimeMs();
      await handle.signal(wakeSignal);
      await env.sleep(10 * SECOND);
      expect(mock.calls.batch).toHaveLength(3);
      expectAt(mock.calls.batch[2]!.at, wokenAt);
      expect(await handle.query(dispatcherStateQuery)).toEqual({ circuit: 'closed', nextProbeAtMs: null, batches: 3, succeeded: 506, failed: 0 });

      expect(await handle.result()).toEqual({ end: 'idle' });
      const closed = (await handle.describe()).closeTime!.getTime();
      expectAt(closed, mock.calls.batch[2]!.doneAt + SETTINGS.idleMs);
      // Every batch got the settings and the retry schedule, none of them a probe.
      for (const c of mock.calls.batch) expect(c.input).toMatchObject({ subscriptionId: 'whs_test', probe: false, maxInFlight: 16, circuitFailures: 10 });
      expect(mock.calls.circuit).toEqual([]);
    });
  });

  it('opens the circuit after a run of failures and probes on the schedule, the last delay repeating, until a probe succeeds', async () => {
    // Batch 1 opens the circuit; probes 2, 3, 4, 5 fail; probe 6 succeeds; batch 7 drains the queue.
    const mock = mockActivities((n) =>
      n === 1 ? batchOf('circuit', 3, 10) : n <= 5 ? batchOf('probe', 0, 1) : n === 6 ? batchOf('probe', 1) : batchOf('idle', 40),
    );
    await withWorkers(mock, async (start) => {
      const handle = await start();
      await env.sleep(30 * MINUTE);
      const b = mock.calls.batch;
      expect(b.map((c) => c.input.probe)).toEqual([false, true, true, true, true, true, false]);
      const delays = [30 * SECOND, MINUTE, 5 * MINUTE, 5 * MINUTE, 5 * MINUTE];
      for (let i = 1; i <= 5; i++) expectAt(b[i]!.at, b[i - 1]!.doneAt + delays[i - 1]!);
      // Closed by the successful probe: the rest goes out at once.
      expectAt(b[6]!.at, b[5]!.doneAt);
      // The row's mirror: open with each next probe time, then closed.
      const c = mock.calls.circuit.map((x) => x.input);
      expect(c).toHaveLength(6);
      for (let i = 0; i < 5; i++) {
        expect(c[i]).toMatchObject({ subscriptionId: 'whs_test' });
        expectAt((c[i] as { nextProbeAtMs: number }).nextProbeAtMs, b[i]!.doneAt + delays[i]!);
      }
      expect(c[5]).toEqual({ subscriptionId: 'whs_test', closed: true });
      const seen = await handle.describe();
      expect(seen.typedSearchAttributes.get(SA_DELIVERY_STATUS)).toBe('dispatching');
      expect(await handle.query(dispatcherStateQuery)).toMatchObject({ circuit: 'closed', nextProbeAtMs: null, succeeded: 44, failed: 14 });
    });
  });

  it('carries a run of failures from one batch into the next, and starts over after a success', async () => {
    const mock = mockActivities((n) => (n === 1 ? batchOf('budget', 200, 6) : n === 2 ? batchOf('budget', 3, 2, 0) : batchOf('idle')));
    await withWorkers(mock, async (start) => {
      await start();
      await env.sleep(MINUTE);
      expect(mock.calls.batch.map((c) => c.input.failureRun)).toEqual([0, 6, 0]);
    });
  });

  it('carries its run of failures into the run it continues as new with', async () => {
    // 200 batches make a run; the last one ends on 4 failures in a row.
    const mock = mockActivities((n) => (n < 200 ? batchOf('budget', 1) : n === 200 ? batchOf('budget', 1, 4) : batchOf('idle')));
    await withWorkers(mock, async (start) => {
      await start();
      await env.sleep(MINUTE);
      expect(mock.calls.batch.length).toBeGreaterThan(200);
      expect(mock.calls.batch[200]!.input.failureRun).toBe(4);
    });
  });

  it('shows an open circuit in its search attribute and query, and a wake does not bring the probe forward', async () => {
    const mock = mockActivities((n) => (n === 1 ? batchOf('circuit', 0, 10) : batchOf('probe', 0, 1)));
    await withWorkers(mock, async (start) => {
      const handle = await start();
      await env.sleep(10 * SECOND);
      const d = await handle.describe();
      expect(d.typedSearchAttributes.get(SA_DELIVERY_STATUS)).toBe('circuit_open');
      const state = await handle.query(dispatcherStateQuery);
      expect(state.circuit).toBe('open');
      expectAt(state.nextProbeAtMs!, mock.calls.batch[0]!.doneAt + 30 * SECOND);
      await handle.signal(wakeSignal);
      await env.sleep(10 * SECOND);
      expect(mock.calls.batch).toHaveLength(1);
      await env.sleep(15 * SECOND);
      expect(mock.calls.batch).toHaveLength(2);
      expectAt(mock.calls.batch[1]!.at, mock.calls.batch[0]!.doneAt + 30 * SECOND);
    });
  });

  it('ends when its subscription is paused or deleted, closing an open circuit', async () => {
    const paused = mockActivities(() => batchOf('paused'));
    await withWorkers(paused, async (start) => {
      expect(await (await start()).result()).toEqual({ end: 'paused' });
      expect(paused.calls.batch).toHaveLength(1);
    });
    const deleted = mockActivities((n) => (n === 1 ? batchOf('circuit', 0, 10) : batchOf('deleted')));
    await withWorkers(deleted, async (start) => {
      expect(await (await start()).result()).toEqual({ end: 'deleted' });
      expect(deleted.calls.batch.map((c) => c.input.probe)).toEqual([false, true]);
      expect(deleted.calls.circuit.at(-1)!.input).toEqual({ subscriptionId: 'whs_test', closed: true });
    });
  });

  it('looks again when woken while a batch found its subscription paused (an operator enabled it meanwhile)', async () => {
    // Batch 1 finds the subscription disabled; while it runs, the operator enables it and the API's wake reaches this
    // run. Without a second look the run would end, the wake with it, and the queue would wait for the relay's sweep.
    let started: (h: WorkflowHandle) => void = () => {};
    const handle = new Promise<WorkflowHandle>((resolve) => (started = resolve));
    const calls: BatchInput[] = [];
    const activities = {
      dispatchBatch: async (input: BatchInput) => {
        calls.push(input);
        if (calls.length > 1) return batchOf('idle', 3);
        await (await handle).signal(wakeSignal);
        return batchOf('paused');
      },
      markCircuit: async () => {},
    } satisfies DispatchActivities;
    await withWorkers({ activities }, async (start) => {
      const h = await start();
      started(h);
      expect(await h.result()).toEqual({ end: 'idle' });
      expect(calls).toHaveLength(2);
      expect((await h.query(dispatcherStateQuery)).succeeded).toBe(3);
    });
  });

  it('tries a failing batch again after 1 s, 2 s, 4 s …', async () => {
    const mock = mockActivities((n) => (n <= 3 ? { throws: new Error('connection to the database lost') } : batchOf('idle', 2)));
    await withWorkers(mock, async (start) => {
      await start();
      await env.sleep(MINUTE);
      const b = mock.calls.batch;
      expect(b).toHaveLength(4);
      expectAt(b[1]!.at, b[0]!.doneAt + SECOND);
      expectAt(b[2]!.at, b[1]!.doneAt + 2 * SECOND);
      expectAt(b[3]!.at, b[2]!.doneAt + 4 * SECOND);
    });
  });

  it('resumes an open circuit it continued as new with, probing first', async () => {
    const mock = mockActivities((n) => (n === 1 ? batchOf('probe', 1) : batchOf('idle')));
    await withWorkers(mock, async (start) => {
      const startedAt = await env.currentTimeMs();
      await start({ probeIndex: 2 });
      await env.sleep(10 * MINUTE);
      expect(mock.calls.batch.map((c) => c.input.probe)).toEqual([true, false]);
      expectAt(mock.calls.batch[0]!.at, startedAt + 5 * MINUTE);
    });
  });

  it('ends Cancelled when cancelled while waiting to probe, and makes no more batches', async () => {
    const mock = mockActivities((n) => (n === 1 ? batchOf('circuit', 0, 10) : batchOf('probe', 1)));
    await withWorkers(mock, async (start) => {
      const handle = await start();
      await env.sleep(10 * SECOND);
      await handle.cancel();
      expect(await failureOf(handle)).toBeInstanceOf(CancelledFailure);
      await env.sleep(10 * MINUTE);
      expect(mock.calls.batch).toHaveLength(1);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
    });
  });
});
