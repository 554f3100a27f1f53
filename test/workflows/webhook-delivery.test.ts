/**
 * The delivery workflow on the time-skipping test server: the retry schedule hour by hour, the dead letter, replays,
 * expiry and cancellation, against mock activities that record every call with the server's (skipped) clock.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { AttemptInput, AttemptOutcome, PreparedDelivery, WebhookActivities } from '../../activities/webhooks';
import { SA_DELIVERY_STATUS } from '../../domain/contract';
import { DEFAULT_RETRY_SCHEDULES, listOfSchedule, scheduleOfList } from '../../domain/retry';
import { RETENTION_MS, type DeliveryStatus, type DeliveryWorkflowInput } from '../../domain/webhooks';
import { DAY, expectLateBy, failureOf, HOUR, MINUTE, onTimeSkipping, recorder, runWorker, SECOND, type Call } from '../support/time-skipping';
import { deliverWebhook, deliveryStatusQuery, purgeRetention, recheckSignal, replaySignal } from '../../workflows/webhook';

/**
 * What a measured time may exceed the exact one by: between an attempt's end and the next attempt's start lie the
 * completion report and two workflow tasks, during which the test server's clock runs at wall speed (a few tens of
 * ms here). Far below the shortest delay (30 s), so any delay taken from the wrong slot of the schedule shows.
 */
const SLACK_MS = 1_000;
/** The attempt activity's start-to-close time-out (workflows/webhook.ts): how long a dead worker's attempt goes unnoticed. */
const ATTEMPT_TIMEOUT = 30 * SECOND;
/** The default schedule as delays before each attempt, the first at once. */
const DELIVERY_SCHEDULE_MS = listOfSchedule(DEFAULT_RETRY_SCHEDULES.webhook);
/** The default schedule in full: 7 h 36 min 30 s from the first attempt to the last. */
const SCHEDULE_TOTAL_MS = DELIVERY_SCHEDULE_MS.reduce((a, b) => a + b, 0);

let env: TestWorkflowEnvironment;
let workflowCode: string;

onTimeSkipping((started) => ({ env, workflowCode } = started));

/** What one attempt does: an outcome, a throw (the activity fails), or going silent (a dead worker). */
type AttemptScript = AttemptOutcome | { throws: Error } | 'overrun';

const failed: AttemptOutcome = { outcome: 'failed', status: 503, error: 'HTTP 503' };
const succeeded: AttemptOutcome = { outcome: 'succeeded', status: 200 };
/** Attempt `n` succeeds, every other one fails. */
const succeedsAt = (n: number) => (attempt: number) => (attempt === n ? succeeded : failed);

interface MockOptions {
  /** Attempt number → what it does (default: fails with a 503). */
  attempt?: (n: number) => AttemptScript;
  /** What recordLostAttempt answers for a lost attempt (default: it recorded the loss, a failed attempt). */
  lost?: (n: number) => AttemptOutcome['outcome'];
  /** What prepareDelivery answers, from the workflow's start time (default: no attempts yet, expiring 30 days on). */
  prepared?: (workflowStartMs: number) => PreparedDelivery | null;
}

/** Activities as plain objects, recording each call with the test server's clock. */
function mockActivities(opts: MockOptions = {}) {
  const calls = {
    prepare: [] as Call<{ deliveryId: string; retentionMs?: number }>[],
    attempt: [] as Call<AttemptInput>[],
    lost: [] as Call<{ deliveryId: string; attempt: number; nextDelayMs: number | null; ifFailed?: string; error: string }>[],
    mark: [] as Call<{ deliveryId: string; status: DeliveryStatus }>[],
    purge: [] as Call<{ retentionMs?: number }>[],
  };
  const recorded = recorder(env);
  const activities = {
    prepareDelivery: (input) =>
      recorded(calls.prepare, input, async () => {
        const { workflowId } = Context.current().info.workflowExecution!;
        const { startTime } = await env.client.workflow.getHandle(workflowId).describe();
        return opts.prepared ? opts.prepared(startTime.getTime()) : { attempts: 0, status: 'pending', expiresAtMs: startTime.getTime() + RETENTION_MS };
      }),
    attemptDelivery: (input) =>
      recorded(calls.attempt, input, async () => {
        const script = opts.attempt?.(input.attempt) ?? failed;
        if (script === 'overrun') {
          // Skips the server's clock just past the attempt's 30-second time-out, as a dead worker's attempt would. Only just: while this sleep lasts, the server skips time even past outstanding workflow
          // tasks (its unlock adds to the one of the test's handle.result()), so the workflow must get to act after it.
          await env.sleep(ATTEMPT_TIMEOUT + 1);
          return failed;
        }
        if ('throws' in script) throw script.throws;
        return script;
      }),
    recordLostAttempt: (input) => recorded(calls.lost, input, async () => opts.lost?.(input.attempt) ?? 'failed'),
    markDelivery: (input) => recorded(calls.mark, input, async () => {}),
    purgeExpired: (input) => recorded(calls.purge, input, async () => ({ events: 3, deliveries: 5, skippedRecords: 2 })),
  } satisfies WebhookActivities;
  return { activities, calls };
}

type Mock = ReturnType<typeof mockActivities>;

interface RunContext {
  taskQueue: string;
  /** Start a delivery workflow in 'deliver' mode, as the outbox relay does. */
  start(input?: Partial<DeliveryWorkflowInput>): Promise<WorkflowHandle<typeof deliverWebhook>>;
  /** What the admin API does for a delivery whose workflow has ended (control/webhooks.ts replayDelivery). */
  startReplay(): Promise<WorkflowHandle<typeof deliverWebhook>>;
}

/**
 * Runs `body` with a worker of its own on a task queue of its own. Workflows the test leaves open (dead letters) are
 * terminated after it, so that no later test's time skipping fires their timers.
 */
async function withWorker(mock: Mock, body: (ctx: RunContext) => Promise<void>): Promise<void> {
  const taskQueue = `webhook-test-${randomUUID()}`;
  await runWorker({ env, workflowCode }, { taskQueue, activities: mock.activities }, async (track) => {
    const start = async (input: Partial<DeliveryWorkflowInput> = {}) =>
      track(
        await env.client.workflow.start(deliverWebhook, {
          taskQueue,
          workflowId: `whd_${randomUUID()}`,
          args: [{ deliveryId: `whd_${randomUUID()}`, mode: 'deliver', ...input }],
        }),
      );
    const startReplay = async () =>
      track(
        await env.client.workflow.signalWithStart(deliverWebhook, {
          taskQueue,
          workflowId: `whd_${randomUUID()}`,
          args: [{ deliveryId: `whd_${randomUUID()}`, mode: 'replay' }],
          signal: replaySignal,
          signalArgs: [],
        }),
      );
    await body({ taskQueue, start, startReplay });
  });
}

/** `actual` is `expected`, or later by no more than the slack. */
const expectAt = (actual: number | undefined, expected: number | undefined) => expectLateBy(actual, expected, SLACK_MS);

/** What an operator sees of a delivery workflow: its execution status, the status query and the search attribute. */
async function seen(handle: WorkflowHandle) {
  const d = await handle.describe();
  return {
    execution: d.status.name,
    searchAttribute: d.typedSearchAttributes.get(SA_DELIVERY_STATUS),
    query: d.status.name === 'RUNNING' ? await handle.query(deliveryStatusQuery) : undefined,
  };
}

/** Skip the clock past the whole default schedule: every attempt has been made and the last one has been handled. */
const pastTheSchedule = () => env.sleep(SCHEDULE_TOTAL_MS + MINUTE);

/** Start a delivery and skip the clock past its schedule: with every attempt failing so far, it is a dead letter. */
async function deadLetter(start: RunContext['start']): Promise<WorkflowHandle<typeof deliverWebhook>> {
  const handle = await start();
  await pastTheSchedule();
  return handle;
}

/** Ask for a replay, as an operator does: the time it was asked at, on the test server's clock. */
async function replay(handle: WorkflowHandle<typeof deliverWebhook>): Promise<number> {
  const at = await env.currentTimeMs();
  await handle.signal(replaySignal);
  return at;
}

/**
 * Let the workflow act on what just happened (a signal, a cancellation) while the clock moves by at most this much:
 * the server skips no time while a workflow task or an activity is outstanding.
 */
const settle = () => env.sleep(10 * SECOND);

describe('deliverWebhook', () => {
  it('makes 7 attempts, each its delay after the previous one ended, and tells each one the delay after it', async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      await start();
      await pastTheSchedule();

      const attempts = mock.calls.attempt;
      expect(attempts.map((c) => c.input)).toEqual(
        DELIVERY_SCHEDULE_MS.map((_, i) => ({
          deliveryId: mock.calls.prepare[0]!.input.deliveryId,
          attempt: i + 1,
          nextDelayMs: DELIVERY_SCHEDULE_MS[i + 1] ?? null,
          // The workflow decides where a failure leaves the delivery: the last attempt's dead-letters it.
          ifFailed: i + 1 < DELIVERY_SCHEDULE_MS.length ? 'retrying' : 'dead_lettered',
          replay: false,
        })),
      );
      expectAt(attempts[0]!.at, mock.calls.prepare[0]!.doneAt);
      for (let i = 1; i < attempts.length; i++) expectAt(attempts[i]!.at, attempts[i - 1]!.doneAt + DELIVERY_SCHEDULE_MS[i]!);
      // 0, 30 s, 1 min, 5 min, 30 min, 1 h, 6 h: the 7th attempt starts 7 h 36 min 30 s after the first.
      expect(attempts[6]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(7 * HOUR + 36 * MINUTE + 30 * SECOND);
      expect(mock.calls.lost).toEqual([]);
    });
  });

  it("in 'retry' mode (the dispatcher's first attempt failed) goes on from attempt 2 on the schedule to the dead letter", async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const startedAt = await env.currentTimeMs();
      const handle = await start({ mode: 'retry', attemptsSoFar: 1, expiresAtMs: startedAt + RETENTION_MS });
      await env.sleep(DELIVERY_SCHEDULE_MS[1]! / 2);
      // Retrying from the start (its first attempt failed before the workflow began), before attempt 2.
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'retrying', query: { status: 'retrying', attempts: 1 } });
      await pastTheSchedule();
      const attempts = mock.calls.attempt;
      // The starter said where it stands: no lookup.
      expect(mock.calls.prepare).toEqual([]);
      expect(attempts.map((c) => [c.input.attempt, c.input.nextDelayMs, c.input.replay])).toEqual(
        DELIVERY_SCHEDULE_MS.slice(1).map((_, i) => [i + 2, DELIVERY_SCHEDULE_MS[i + 2] ?? null, false]),
      );
      expectAt(attempts[0]!.at, startedAt + DELIVERY_SCHEDULE_MS[1]!);
      for (let i = 1; i < attempts.length; i++) expectAt(attempts[i]!.at, attempts[i - 1]!.doneAt + DELIVERY_SCHEDULE_MS[i + 1]!);
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'dead_lettered', query: { status: 'dead_lettered', attempts: 7 } });
    });
  });

  it("in 'retry' mode completes when attempt 2 reports the delivery succeeded (its first attempt's success recorded late)", async () => {
    const mock = mockActivities({ attempt: () => succeeded });
    await withWorker(mock, async ({ start }) => {
      const handle = await start({ mode: 'retry', attemptsSoFar: 1, expiresAtMs: (await env.currentTimeMs()) + RETENTION_MS });
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 2 });
      expect(mock.calls.attempt.map((c) => c.input.attempt)).toEqual([2]);
      expect(await seen(handle)).toMatchObject({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('holds a delivery whose 7 attempts failed as an open dead letter, shown by its status query and search attribute', async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      await env.sleep(DELIVERY_SCHEDULE_MS[1]! / 2);
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'retrying', query: { status: 'retrying', attempts: 1 } });

      await pastTheSchedule();
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'dead_lettered', query: { status: 'dead_lettered', attempts: 7 } });
      // Held, without attempts of its own, until the retention (30 days from the start) ends.
      await env.sleep(28 * DAY);
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'dead_lettered', query: { status: 'dead_lettered', attempts: 7 } });
      expect(mock.calls.attempt).toHaveLength(7);
      expect(mock.calls.mark).toEqual([]);
    });
  });

  it('replays a dead letter at once: attempt 8 succeeds and the workflow completes', async () => {
    const mock = mockActivities({ attempt: succeedsAt(8) });
    await withWorker(mock, async ({ start }) => {
      const handle = await deadLetter(start);
      const replayedAt = await replay(handle);

      expect(await handle.result()).toEqual({ deliveryId: mock.calls.prepare[0]!.input.deliveryId, status: 'succeeded', attempts: 8 });
      expect(mock.calls.attempt).toHaveLength(8);
      expect(mock.calls.attempt[7]!.input).toMatchObject({ attempt: 8, nextDelayMs: null, replay: true });
      expectAt(mock.calls.attempt[7]!.at, replayedAt);
      expect(await seen(handle)).toMatchObject({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('keeps the dead letter when a replay fails, and replays it again', async () => {
    const mock = mockActivities({ attempt: succeedsAt(9) });
    await withWorker(mock, async ({ start }) => {
      const handle = await deadLetter(start);
      const firstReplayAt = await replay(handle);
      await settle();
      expect(mock.calls.attempt).toHaveLength(8);
      expect(mock.calls.attempt[7]!.input).toMatchObject({ attempt: 8, nextDelayMs: null, replay: true });
      expectAt(mock.calls.attempt[7]!.at, firstReplayAt);
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'dead_lettered', query: { status: 'dead_lettered', attempts: 8 } });

      await env.sleep(3 * DAY);
      expect(mock.calls.attempt).toHaveLength(8);
      const secondReplayAt = await replay(handle);
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 9 });
      expect(mock.calls.attempt[8]!.input).toMatchObject({ attempt: 9, nextDelayMs: null, replay: true });
      expectAt(mock.calls.attempt[8]!.at, secondReplayAt);
    });
  });

  it('expires a dead letter never replayed exactly when its retention ends: Failed with DeliveryExpired', async () => {
    let expiresAtMs: number | undefined;
    const mock = mockActivities({
      prepared: (startMs) => {
        expiresAtMs = startMs + RETENTION_MS;
        return { attempts: 0, status: 'pending', expiresAtMs };
      },
    });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      const failure = await failureOf(handle);
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect((failure as ApplicationFailure).type).toBe('DeliveryExpired');
      expect((failure as ApplicationFailure).nonRetryable).toBe(true);

      expect(mock.calls.attempt).toHaveLength(7);
      expect(mock.calls.mark.map((c) => c.input)).toEqual([{ deliveryId: mock.calls.prepare[0]!.input.deliveryId, status: 'expired' }]);
      expectAt(mock.calls.mark[0]!.at, expiresAtMs);
      const d = await handle.describe();
      expectAt(d.closeTime?.getTime(), expiresAtMs);
      expect(d.typedSearchAttributes.get(SA_DELIVERY_STATUS)).toBe('expired');
      expect(d.status.name).toBe('FAILED');
    });
  });

  it('completes when attempt 3 succeeds, and makes no more attempts', async () => {
    const mock = mockActivities({ attempt: succeedsAt(3) });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      expect(await handle.result()).toEqual({ deliveryId: mock.calls.prepare[0]!.input.deliveryId, status: 'succeeded', attempts: 3 });
      await pastTheSchedule();
      expect(mock.calls.attempt.map((c) => c.input.attempt)).toEqual([1, 2, 3]);
      expect(await seen(handle)).toMatchObject({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('makes a replay asked for while the delivering attempt runs, instead of dropping it with the run', async () => {
    const mock = mockActivities({ attempt: () => succeeded });
    const deliver = mock.activities.attemptDelivery;
    // An operator sees the delivery succeeded (the row says so) and replays it before the workflow has closed.
    mock.activities.attemptDelivery = async (input) => {
      if (input.attempt === 1) await env.client.workflow.getHandle(Context.current().info.workflowExecution!.workflowId).signal(replaySignal);
      return deliver(input);
    };
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 2 });
      expect(mock.calls.attempt.map((c) => [c.input.attempt, c.input.replay])).toEqual([
        [1, false],
        [2, true],
      ]);
    });
  });

  it('ends Failed with DeliveryCancelled when the subscription is disabled, and makes no more attempts', async () => {
    const mock = mockActivities({ attempt: (n) => (n === 2 ? { outcome: 'cancelled', reason: 'the subscription is disabled' } : failed) });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      const failure = await failureOf(handle);
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect((failure as ApplicationFailure).type).toBe('DeliveryCancelled');
      await pastTheSchedule();
      expect(mock.calls.attempt.map((c) => c.input.attempt)).toEqual([1, 2]);
      expect(await seen(handle)).toMatchObject({ execution: 'FAILED', searchAttribute: 'cancelled' });
      expect(mock.calls.mark).toEqual([]);
    });
  });

  it('ends at once, Failed with DeliveryCancelled, when told during a retry wait that its row was cancelled', async () => {
    let rowStatus: DeliveryStatus = 'retrying';
    const mock = mockActivities({ prepared: (startMs) => ({ attempts: 0, status: rowStatus, expiresAtMs: startMs + RETENTION_MS }) });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      await env.sleep(10 * SECOND);
      expect(mock.calls.attempt).toHaveLength(1);
      // The subscription is disabled: its retries are cancelled in the database, and the workflow is told.
      rowStatus = 'cancelled';
      const toldAt = await env.currentTimeMs();
      await handle.signal(recheckSignal);
      const failure = await failureOf(handle);
      expect((failure as ApplicationFailure).type).toBe('DeliveryCancelled');
      // It looked at its row when told, 20 s before its second attempt was due, and made none.
      expectAt(mock.calls.prepare.at(-1)!.at, toldAt);
      await pastTheSchedule();
      expect(mock.calls.attempt.map((c) => c.input.attempt)).toEqual([1]);
      expect(await seen(handle)).toMatchObject({ execution: 'FAILED', searchAttribute: 'cancelled' });
    });
  });

  it('makes a replay asked for while it reads a cancelled row, and goes on with the schedule after it', async () => {
    let handle: WorkflowHandle | undefined;
    const mock = mockActivities({ attempt: succeedsAt(3) });
    const read = mock.activities.prepareDelivery;
    mock.activities.prepareDelivery = async (input) => {
      const row = await read(input);
      if (mock.calls.prepare.length < 2) return row;
      // An operator replays while the recheck reads the row, still cancelled (the replay's attempt reopens it).
      await handle!.signal(replaySignal);
      return { ...row!, status: 'cancelled' };
    };
    await withWorker(mock, async ({ start }) => {
      handle = await start();
      await env.sleep(10 * SECOND);
      await handle.signal(recheckSignal);
      // The replay's attempt (2) fails; attempt 3 comes on the schedule, and succeeds.
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 3 });
      expect(mock.calls.attempt.map((c) => [c.input.attempt, c.input.replay])).toEqual([
        [1, false],
        [2, true],
        [3, false],
      ]);
      expectAt(mock.calls.attempt[2]!.at, mock.calls.attempt[1]!.doneAt + DELIVERY_SCHEDULE_MS[2]!);
    });
  });

  it('keeps to the schedule when told to look at a row that was not cancelled', async () => {
    const mock = mockActivities({ attempt: succeedsAt(2) });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      await env.sleep(10 * SECOND);
      await handle.signal(recheckSignal);
      await settle();
      expect(mock.calls.prepare).toHaveLength(2);
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 2 });
      // Attempt 2 at its time: 30 s after the first ended, not when the workflow was told.
      expectAt(mock.calls.attempt[1]!.at, mock.calls.attempt[0]!.doneAt + DELIVERY_SCHEDULE_MS[1]!);
    });
  });

  it('records a lost attempt (the activity threw, or overran its time-out) under its own number and carries on with the schedule', async () => {
    const mock = mockActivities({
      attempt: (n) => (n === 2 ? { throws: new Error('connection to the database lost') } : n === 3 ? 'overrun' : n === 4 ? succeeded : failed),
    });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 4 });

      // Never retried by Temporal: each attempt number reaches the activity once.
      expect(mock.calls.attempt.map((c) => c.input.attempt)).toEqual([1, 2, 3, 4]);
      const deliveryId = mock.calls.prepare[0]!.input.deliveryId;
      expect(mock.calls.lost.map((c) => c.input)).toEqual([
        {
          deliveryId,
          attempt: 2,
          nextDelayMs: DELIVERY_SCHEDULE_MS[2],
          ifFailed: 'retrying',
          error: expect.stringContaining('connection to the database lost'),
        },
        // A real server names the time-out ("activity StartToClose timeout"); the test server leaves that message empty.
        { deliveryId, attempt: 3, nextDelayMs: DELIVERY_SCHEDULE_MS[3], ifFailed: 'retrying', error: expect.stringMatching(/^attempt lost: /) },
      ]);
      const [a1, a2, a3, a4] = mock.calls.attempt;
      const [lost2, lost3] = mock.calls.lost;
      expectAt(a2!.at, a1!.doneAt + DELIVERY_SCHEDULE_MS[1]!);
      expectAt(a3!.at, lost2!.doneAt + DELIVERY_SCHEDULE_MS[2]!);
      // The silent attempt is noticed when its 30-second time-out ends; the next delay counts from there.
      expectAt(lost3!.at, a3!.at + ATTEMPT_TIMEOUT);
      expectAt(a4!.at, lost3!.doneAt + DELIVERY_SCHEDULE_MS[3]!);
    });
  });

  it('ends succeeded, sending nothing more, when a lost attempt had recorded its success before it was lost', async () => {
    // The attempt's POST got its 200 and recorded it; its worker died before reporting back to the workflow.
    const mock = mockActivities({ attempt: (n) => (n === 1 ? 'overrun' : succeeded), lost: (n) => (n === 1 ? 'succeeded' : 'failed') });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 1 });
      await pastTheSchedule();
      expect(mock.calls.attempt.map((c) => c.input.attempt)).toEqual([1]);
      expect(mock.calls.lost.map((c) => c.input.attempt)).toEqual([1]);
      // Completed on its first attempt: the happy path, which leaves DeliveryStatus unset.
      expect((await seen(handle)).execution).toBe('COMPLETED');
    });
  });

  it('makes the next attempt at once when a replay is asked for during a retry wait, then keeps to the schedule', async () => {
    const mock = mockActivities({ attempt: succeedsAt(3) });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      await env.sleep(10 * SECOND);
      expect(mock.calls.attempt).toHaveLength(1);
      const replayedAt = await replay(handle);
      await settle();
      expect(mock.calls.attempt.map((c) => c.input)).toMatchObject([{ attempt: 1 }, { attempt: 2, nextDelayMs: DELIVERY_SCHEDULE_MS[2], replay: true }]);
      // 20 s before its scheduled time.
      expectAt(mock.calls.attempt[1]!.at, replayedAt);
      expect(mock.calls.attempt[1]!.at).toBeLessThan(mock.calls.attempt[0]!.doneAt + DELIVERY_SCHEDULE_MS[1]! - 15 * SECOND);

      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 3 });
      expectAt(mock.calls.attempt[2]!.at, mock.calls.attempt[1]!.doneAt + DELIVERY_SCHEDULE_MS[2]!);
    });
  });

  it("in 'replay' mode (a replay of an ended delivery) makes exactly one attempt, then holds the dead letter", async () => {
    // A delivery cancelled when its subscription was disabled, replayed after it was enabled again.
    const mock = mockActivities({ prepared: (startMs) => ({ attempts: 3, status: 'cancelled', expiresAtMs: startMs + 10 * DAY }) });
    await withWorker(mock, async ({ startReplay }) => {
      const handle = await startReplay();
      await env.sleep(DAY);
      expect(mock.calls.attempt.map((c) => c.input)).toEqual([
        { deliveryId: mock.calls.prepare[0]!.input.deliveryId, attempt: 4, nextDelayMs: null, ifFailed: 'dead_lettered', replay: true },
      ]);
      expectAt(mock.calls.attempt[0]!.at, mock.calls.prepare[0]!.doneAt);
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'dead_lettered', query: { status: 'dead_lettered', attempts: 4 } });
    });
  });

  it('continues the count of a delivery that already had attempts', async () => {
    const mock = mockActivities({
      prepared: (startMs) => ({ attempts: 2, status: 'dead_lettered', expiresAtMs: startMs + RETENTION_MS }),
      attempt: () => succeeded,
    });
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 3 });
      expect(mock.calls.attempt.map((c) => c.input)).toMatchObject([{ attempt: 3, nextDelayMs: DELIVERY_SCHEDULE_MS[1], replay: false }]);
    });
  });

  it('honours a shrunk schedule given in its input', async () => {
    const scheduleMs = [0, 5 * SECOND, 20 * SECOND];
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const handle = await start({ schedule: scheduleOfList(scheduleMs) });
      await env.sleep(MINUTE);
      const attempts = mock.calls.attempt;
      expect(attempts.map((c) => c.input)).toMatchObject([
        { attempt: 1, nextDelayMs: 5 * SECOND, replay: false },
        { attempt: 2, nextDelayMs: 20 * SECOND, replay: false },
        { attempt: 3, nextDelayMs: null, replay: false },
      ]);
      expectAt(attempts[1]!.at, attempts[0]!.doneAt + 5 * SECOND);
      expectAt(attempts[2]!.at, attempts[1]!.doneAt + 20 * SECOND);
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'dead_lettered', query: { status: 'dead_lettered', attempts: 3 } });
    });
  });

  it('ends Cancelled when the workflow is cancelled during a retry wait, marks the delivery cancelled, and makes no more attempts', async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const handle = await start();
      await env.sleep(10 * SECOND);
      await handle.cancel();
      expect(await failureOf(handle)).toBeInstanceOf(CancelledFailure);
      await pastTheSchedule();
      expect(mock.calls.attempt).toHaveLength(1);
      const d = await handle.describe();
      expect(d.status.name).toBe('CANCELLED');
      expect(d.typedSearchAttributes.get(SA_DELIVERY_STATUS)).toBe('cancelled');
      expect(mock.calls.mark.map((c) => c.input)).toEqual([{ deliveryId: expect.any(String), status: 'cancelled' }]);
    });
  });
});

describe('purgeRetention', () => {
  it('purges with the retention it is given, or the default one when given none', async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ taskQueue }) => {
      const run = (args: Parameters<typeof purgeRetention>) =>
        env.client.workflow.execute(purgeRetention, { taskQueue, workflowId: `purge-${randomUUID()}`, args });
      expect(await run([{ retentionMs: 7 * DAY }])).toEqual({ events: 3, deliveries: 5, skippedRecords: 2 });
      expect(await run([])).toEqual({ events: 3, deliveries: 5, skippedRecords: 2 });
    });
    expect(mock.calls.purge.map((c) => c.input)).toEqual([{ retentionMs: 7 * DAY }, { retentionMs: undefined }]);
  });
});
