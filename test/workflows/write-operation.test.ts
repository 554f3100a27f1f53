/**
 * The write workflow on the time-skipping test server: the retry schedule to the second, the 24-hour give-up, a
 * rejection, a lost attempt, an applied write stored late (or never), cancellation and the operator's query, against
 * mock activities that record every call with the server's (skipped) clock.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { AttemptInput, AttemptResult, FailInput, RetryInput, StoreInput, WriteActivities } from '../../activities/operations';
import { SA_STATUS } from '../../domain/contract';
import type { WriteWorkflowInput } from '../../domain/operations';
import { DAY, expectLateBy, failureOf, HOUR, MINUTE, onTimeSkipping, recorder, runWorker, SECOND, type Call } from '../support/time-skipping';
import { operationStateQuery, WRITE_FAILURE, writeOperation } from '../../workflows/operation';

/**
 * What a measured time may exceed the exact one by: between an attempt's end and the next attempt's start lie the
 * completion report, the recordRetry call and a few workflow tasks, during which the test server's clock runs at
 * wall speed. Far below the shortest delay (5 s), so any delay taken from the wrong slot of the schedule shows.
 */
const SLACK_MS = 1_000;
/** The attempt activity's heartbeat time-out (workflows/operation.ts): how long a dead worker's attempt goes unnoticed. */
const HEARTBEAT_TIMEOUT = 15 * SECOND;
/** storeApplied's schedule-to-close time-out (workflows/operation.ts): how long an applied write is retried to be stored. */
const STORE_TIMEOUT = 6 * HOUR;

/**
 * The schedule as docs/decisions.md (Writes) states it, written out here rather than read from domain/operations.ts so
 * that the test checks the code against the decision: the delay after the k-th failed attempt.
 */
const SPEC_DELAYS_MS = [5 * SECOND, 15 * SECOND, MINUTE, 5 * MINUTE, 15 * MINUTE];
const SPEC_THEN_EVERY_MS = 30 * MINUTE;
const delayAfter = (failures: number) => SPEC_DELAYS_MS[failures - 1] ?? SPEC_THEN_EVERY_MS;

/**
 * How many attempts an always-failing write gets when its first attempt starts `firstAttemptAfterMs` after it was
 * accepted (attempts taking no time): every attempt starts at most 24 h after acceptance.
 */
function attemptsWithinADay(firstAttemptAfterMs: number): number {
  let at = firstAttemptAfterMs;
  let n = 1;
  while (at + delayAfter(n) <= DAY) {
    at += delayAfter(n);
    n += 1;
  }
  return n;
}

let env: TestWorkflowEnvironment;
let workflowCode: string;

onTimeSkipping((started) => ({ env, workflowCode } = started));

/** What one attempt does: a result, a throw (the activity fails), or going silent without heartbeats (a dead worker). */
type AttemptScript = AttemptResult | { throws: Error } | 'silent';

const transient = (n: number): Extract<AttemptResult, { outcome: 'transient' }> => ({
  outcome: 'transient',
  error: `HTTP 503 from the source (attempt ${n})`,
  maybeApplied: true,
});
const succeeded: AttemptResult = { outcome: 'succeeded', resourceId: 'lea_written', xId: 'x-lease-1' };

interface MockOptions {
  /** Attempt number → what it does (default: fails transiently). */
  attempt?: (n: number) => AttemptScript;
  /** storeApplied call number (1-based) → whether it works (default: it does). */
  store?: (call: number) => 'ok' | Error;
}

/** Activities as plain objects, recording each call with the test server's clock. */
function mockActivities(opts: MockOptions = {}) {
  const calls = {
    attempt: [] as Call<AttemptInput>[],
    store: [] as Call<StoreInput>[],
    retry: [] as Call<RetryInput>[],
    fail: [] as Call<FailInput>[],
  };
  const recorded = recorder(env);
  const activities = {
    attemptWrite: (input) =>
      recorded(calls.attempt, input, async () => {
        const script = opts.attempt?.(input.attempt) ?? transient(input.attempt);
        if (script === 'silent') {
          // Skips the server's clock just past the attempt's heartbeat time-out without a heartbeat, as a dead
          // worker's attempt would. Only just: while this sleep lasts the server skips time even past outstanding
          // workflow tasks, so the workflow must get to act (and start its retry timer) after it. What this returns
          // arrives after the time-out and is dropped.
          await env.sleep(HEARTBEAT_TIMEOUT + 1);
          return succeeded;
        }
        if ('throws' in script) throw script.throws;
        return script;
      }),
    storeApplied: (input) =>
      recorded(calls.store, input, async () => {
        const verdict = opts.store?.(calls.store.length) ?? 'ok';
        if (verdict instanceof Error) throw verdict;
        return { resourceId: 'lea_stored' };
      }),
    recordRetry: (input) => recorded(calls.retry, input, async () => {}),
    failOperation: (input) => recorded(calls.fail, input, async () => {}),
    sweepOperations: async () => ({ started: 0, keysPurged: 0, abandoned: 0 }),
  } satisfies WriteActivities;
  return { activities, calls };
}

type Mock = ReturnType<typeof mockActivities>;

interface RunContext {
  /** Start a write's workflow as control/operations.ts does (PropsyncStatus `queued`), accepted now unless told. */
  start(input?: Partial<WriteWorkflowInput>): Promise<{ handle: WorkflowHandle<typeof writeOperation>; input: WriteWorkflowInput }>;
}

/**
 * Runs `body` with a worker of its own on a task queue of its own. Workflows the test leaves open are terminated
 * after it, so that no later test's time skipping fires their timers.
 */
async function withWorker(mock: Mock, body: (ctx: RunContext) => Promise<void>): Promise<void> {
  const taskQueue = `write-test-${randomUUID()}`;
  await runWorker({ env, workflowCode }, { taskQueue, activities: mock.activities }, async (track) => {
    const start = async (partial: Partial<WriteWorkflowInput> = {}) => {
      const operationId = `opr_${randomUUID()}`;
      const input: WriteWorkflowInput = {
        operationId,
        type: 'lease.create',
        acceptedAtMs: await env.currentTimeMs(),
        target: 'prp_target',
        ...partial,
      };
      const handle = track(
        await env.client.workflow.start(writeOperation, {
          taskQueue,
          workflowId: operationId,
          args: [input],
          typedSearchAttributes: [{ key: SA_STATUS, value: 'queued' }],
        }),
      );
      return { handle, input };
    };
    await body({ start });
  });
}

/** `actual` is `expected`, or later by no more than the slack. */
const expectAt = (actual: number | undefined, expected: number | undefined) => expectLateBy(actual, expected, SLACK_MS);

/** `actual` is `expected` within the slack, either way. */
function expectNear(actual: number | undefined, expected: number) {
  expect(actual).toBeDefined();
  expect(Math.abs(actual! - expected)).toBeLessThan(SLACK_MS);
}

/** The type of the ApplicationFailure a workflow failed with. */
async function failureTypeOf(handle: WorkflowHandle): Promise<string | null | undefined> {
  const failure = await failureOf(handle);
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect((failure as ApplicationFailure).nonRetryable).toBe(true);
  return (failure as ApplicationFailure).type;
}

/** What an operator sees of a write's workflow: its execution status and the PropsyncStatus search attribute. */
async function seen(handle: WorkflowHandle) {
  const d = await handle.describe();
  return { execution: d.status.name, searchAttribute: d.typedSearchAttributes.get(SA_STATUS) };
}

/**
 * Let the workflow act on what just happened (an attempt, a cancellation) while the clock moves by this much: the
 * server skips no time while a workflow task or an activity is outstanding. Below the shortest delay (5 s).
 */
const settle = () => env.sleep(2 * SECOND);

/** Each attempt started its scheduled delay after the previous one ended, exactly when recordRetry said it would. */
function expectOnSchedule(mock: Mock) {
  const attempts = mock.calls.attempt;
  for (let k = 2; k <= attempts.length; k++) {
    const prev = attempts[k - 2]!;
    const retry = mock.calls.retry[k - 2]!;
    expect(retry.input.attempts).toBe(k - 1);
    expectAt(retry.input.nextAttemptAtMs, prev.doneAt + delayAfter(k - 1));
    expectAt(attempts[k - 1]!.at, retry.input.nextAttemptAtMs);
    expectAt(attempts[k - 1]!.at, prev.doneAt + delayAfter(k - 1));
  }
}

describe('writeOperation', () => {
  it('retries a create that fails transiently 5 s, 15 s, 1 min, 5 min, 15 min, then every 30 min after each failure, probing from attempt 2, and succeeds', async () => {
    const failures = 7;
    const mock = mockActivities({ attempt: (n) => (n === failures + 1 ? succeeded : transient(n)) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ type: 'lease.create' });
      const { operationId } = input;
      expect(await handle.result()).toEqual({ operationId, status: 'succeeded', attempts: failures + 1 });

      expect(mock.calls.attempt.map((c) => c.input)).toEqual(Array.from({ length: failures + 1 }, (_, i) => ({ operationId, attempt: i + 1, probe: i > 0 })));
      expect(mock.calls.retry.map((c) => c.input)).toEqual(
        Array.from({ length: failures }, (_, i) => ({ operationId, attempts: i + 1, nextAttemptAtMs: expect.any(Number), error: transient(i + 1).error })),
      );
      expectOnSchedule(mock);
      // The delays the schedule prescribes, slot by slot, as the server's clock measured them.
      const gaps = mock.calls.attempt.slice(1).map((c, i) => c.at - mock.calls.attempt[i]!.doneAt);
      expect(gaps.map((g) => Math.round(g / SECOND))).toEqual([5, 15, 60, 300, 900, 1800, 1800]);
      expect(mock.calls.fail).toEqual([]);
      expect(mock.calls.store).toEqual([]);
      expect(await seen(handle)).toEqual({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('probes before creating again only after an attempt whose outcome is unknown (never after ones the source surely refused)', async () => {
    const refused = (n: number) => ({ ...transient(n), error: `connection refused (attempt ${n})`, maybeApplied: false });
    const mock = mockActivities({ attempt: (n) => (n <= 2 ? refused(n) : n === 3 ? transient(n) : succeeded) });
    await withWorker(mock, async ({ start }) => {
      const { handle } = await start({ type: 'resident.create' });
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 4 });
      expect(mock.calls.attempt.map((c) => c.input.probe)).toEqual([false, false, false, true]);
    });
  });

  it("waits at least the source's Retry-After before the next attempt, the schedule's step when that is longer", async () => {
    // Attempt 1: a 429 asking for 2 min (the step is 5 s); attempt 2: asking for 1 s (the step, 15 s, is longer).
    const asked = [120_000, 1_000];
    const mock = mockActivities({ attempt: (n) => (n === 3 ? succeeded : { ...transient(n), maybeApplied: false, retryAfterMs: asked[n - 1] }) });
    await withWorker(mock, async ({ start }) => {
      const { handle } = await start({ type: 'unit.update', target: 'unt_target' });
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 3 });
      const gaps = mock.calls.attempt.slice(1).map((c, i) => c.at - mock.calls.attempt[i]!.doneAt);
      expect(gaps.map((g) => Math.round(g / SECOND))).toEqual([120, 15]);
      // The retry recorded says when the next attempt starts, Retry-After included.
      const [first] = mock.calls.retry;
      expect(first!.input.nextAttemptAtMs - mock.calls.attempt[0]!.doneAt).toBeGreaterThanOrEqual(119_000);
    });
  });

  it('sends an update again as it is (never probes), on the same schedule', async () => {
    const mock = mockActivities({ attempt: (n) => (n === 3 ? succeeded : transient(n)) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ type: 'unit.update', target: 'unt_target' });
      expect(await handle.result()).toEqual({ operationId: input.operationId, status: 'succeeded', attempts: 3 });
      expect(mock.calls.attempt.map((c) => c.input)).toEqual([1, 2, 3].map((attempt) => ({ operationId: input.operationId, attempt, probe: false })));
      expect(mock.calls.retry.map((c) => c.input.attempts)).toEqual([1, 2]);
      expectOnSchedule(mock);
      expect(await seen(handle)).toEqual({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('gives up when the next attempt would start more than 24 h after acceptance: 53 attempts, then WriteGaveUp with the last error', async () => {
    // 1 + 5 (the fixed delays, 21 min 20 s in all) + 47 (every 30 min: 47 × 30 min = 23 h 30 min ≤ 24 h − 21 min 20 s).
    const expected = attemptsWithinADay(0);
    expect(expected).toBe(53);
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.gaveUp);

      const attempts = mock.calls.attempt;
      expect(attempts.map((c) => c.input.attempt)).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
      expectOnSchedule(mock);
      const last = attempts[expected - 1]!;
      expect(last.at - input.acceptedAtMs).toBeLessThanOrEqual(DAY);
      // Another attempt would have started after the 24 hours.
      expect(last.doneAt + delayAfter(expected) - input.acceptedAtMs).toBeGreaterThan(DAY);
      expect(mock.calls.retry).toHaveLength(expected - 1);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempts: expected, sourceState: null, error: expect.stringContaining(transient(expected).error) },
      ]);
      expectAt(mock.calls.fail[0]!.at, last.doneAt);
      expect(await seen(handle)).toEqual({ execution: 'FAILED', searchAttribute: 'failed' });
    });
  });

  it.each([
    // Attempts at + 0, + 5 s and + 20 s are within the day; the next, at + 1 min 20 s, is not.
    { acceptedAgo: 23 * HOUR + 59 * MINUTE, label: '23 h 59 min', attempts: 3 },
    // Attempt 2 starts 2 s before the day ends; attempt 3 would start 13 s after.
    { acceptedAgo: DAY - 7 * SECOND, label: '23 h 59 min 53 s', attempts: 2 },
    // Less than the first delay left: the first attempt is the last (attempt 2 would start 2 s after the day).
    { acceptedAgo: DAY - 3 * SECOND, label: '23 h 59 min 57 s', attempts: 1 },
  ])('counts the 24 hours from acceptance, not from the workflow start (accepted $label ago → $attempts attempt(s))', async ({ acceptedAgo, attempts }) => {
    const expected = attemptsWithinADay(acceptedAgo);
    expect(expected).toBe(attempts);
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ acceptedAtMs: (await env.currentTimeMs()) - acceptedAgo });
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.gaveUp);
      expect(mock.calls.attempt).toHaveLength(expected);
      expectOnSchedule(mock);
      expect(mock.calls.attempt.at(-1)!.at - input.acceptedAtMs).toBeLessThanOrEqual(DAY);
      expect(mock.calls.retry).toHaveLength(expected - 1);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempts: expected, sourceState: null, error: expect.stringContaining(transient(expected).error) },
      ]);
    });
  });

  it('sends nothing when it starts more than 24 h after acceptance (queued while Temporal was away): WriteGaveUp', async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ acceptedAtMs: (await env.currentTimeMs()) - DAY - 1_000 });
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.gaveUp);
      expect(mock.calls.attempt).toEqual([]);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempts: 0, sourceState: null, error: expect.stringContaining('not attempted within 24 hours') },
      ]);
    });
  });

  it('fails at once with WriteRejected when the source rejects the write', async () => {
    const error = 'unit_number 101 already exists in this property';
    const mock = mockActivities({ attempt: () => ({ outcome: 'rejected', error }) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ type: 'unit.create' });
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.rejected);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.retry).toEqual([]);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([{ operationId: input.operationId, attempts: 1, error, sourceState: 'rejected' }]);
      expectAt(mock.calls.fail[0]!.at, mock.calls.attempt[0]!.doneAt);
      expect(await seen(handle)).toEqual({ execution: 'FAILED', searchAttribute: 'failed' });
    });
  });

  it('fails at once with WriteFailed when the attempt reports a service-side failure, after earlier transient ones', async () => {
    const error = 'the source applied the change (x_id 9), but a record it holds for it cannot be read';
    const mock = mockActivities({ attempt: (n) => (n === 2 ? { outcome: 'failed', error } : transient(n)) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.failed);
      expect(mock.calls.attempt).toHaveLength(2);
      expect(mock.calls.retry.map((c) => c.input.attempts)).toEqual([1]);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([{ operationId: input.operationId, attempts: 2, error, sourceState: null }]);
    });
  });

  it('does not count an attempt that could send nothing (its integration deleted meanwhile)', async () => {
    const error = 'the integration was deleted after an attempt that did not succeed (last error: 503): the source may or may not hold the change';
    const mock = mockActivities({ attempt: (n) => (n === 2 ? { outcome: 'failed', error, unsent: true } : transient(n)) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.failed);
      expect(mock.calls.attempt).toHaveLength(2);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([{ operationId: input.operationId, attempts: 1, error, sourceState: null }]);
    });
  });

  it('counts an attempt silent past its heartbeat time-out as lost, records the retry, and 5 s later probes before creating again', async () => {
    const mock = mockActivities({ attempt: (n) => (n === 1 ? 'silent' : succeeded) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ type: 'resident.create' });
      expect(await handle.result()).toEqual({ operationId: input.operationId, status: 'succeeded', attempts: 2 });

      // Never retried by Temporal: each attempt number reaches the activity once.
      expect(mock.calls.attempt.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempt: 1, probe: false },
        { operationId: input.operationId, attempt: 2, probe: true },
      ]);
      // A real server names the time-out ("activity Heartbeat timeout"); the test server may leave that message empty.
      expect(mock.calls.retry.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempts: 1, nextAttemptAtMs: expect.any(Number), error: expect.stringMatching(/^attempt lost/) },
      ]);
      const [a1, a2] = mock.calls.attempt;
      const retry = mock.calls.retry[0]!;
      // Noticed when the heartbeat time-out ends (not the 10-minute start-to-close); the 5 s count from there. The
      // time-out runs from the server's start of the task, a few ms before the mock read the clock: hence near, not at.
      expectNear(retry.at, a1!.at + HEARTBEAT_TIMEOUT);
      expectNear(retry.input.nextAttemptAtMs, a1!.at + HEARTBEAT_TIMEOUT + delayAfter(1));
      expectAt(a2!.at, retry.input.nextAttemptAtMs);
      expect(mock.calls.fail).toEqual([]);
      expect(await seen(handle)).toEqual({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('counts an attempt whose activity threw as lost and carries on with the schedule', async () => {
    const mock = mockActivities({ attempt: (n) => (n === 1 ? { throws: new Error('connection to the database lost') } : succeeded) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await handle.result()).toEqual({ operationId: input.operationId, status: 'succeeded', attempts: 2 });
      expect(mock.calls.attempt.map((c) => c.input.probe)).toEqual([false, true]);
      expect(mock.calls.retry.map((c) => c.input.error)).toEqual([expect.stringMatching(/^attempt lost.*connection to the database lost/)]);
      expectOnSchedule(mock);
    });
  });

  it('stores a write the source applied but the attempt could not store (storeApplied, retried by Temporal), then succeeds without sending it again', async () => {
    const applied: AttemptResult = {
      outcome: 'applied',
      xId: 'x-lease-7',
      related: [{ entity: 'resident', x_id: 'x-resident-3' }],
      appliedAtMs: 1_700_000_000_000,
      error: 'read-back timed out',
    };
    const mock = mockActivities({ attempt: () => applied, store: (call) => (call === 1 ? new Error('source read timed out') : 'ok') });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await handle.result()).toEqual({ operationId: input.operationId, status: 'succeeded', attempts: 1 });
      const stored = {
        operationId: input.operationId,
        attempts: 1,
        xId: 'x-lease-7',
        related: [{ entity: 'resident', x_id: 'x-resident-3' }],
        appliedAtMs: 1_700_000_000_000,
      };
      expect(mock.calls.store.map((c) => c.input)).toEqual([stored, stored]);
      // Temporal's retry of the read-back: its initial interval, 5 s.
      expectAt(mock.calls.store[1]!.at, mock.calls.store[0]!.doneAt + 5 * SECOND);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.retry).toEqual([]);
      expect(mock.calls.fail).toEqual([]);
      expect(await seen(handle)).toEqual({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it("fails with WriteFailed and the source state 'applied' when storing an applied write keeps failing for 6 hours", async () => {
    const applied: AttemptResult = { outcome: 'applied', xId: 'x-lease-8', related: [], appliedAtMs: 1_700_000_000_000, error: 'read-back timed out' };
    const mock = mockActivities({ attempt: () => applied, store: (call) => new Error(`source read timed out (${call})`) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.failed);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.store.length).toBeGreaterThan(10);
      const firstStore = mock.calls.store[0]!;
      const lastStore = mock.calls.store.at(-1)!;
      expect(lastStore.at - firstStore.at).toBeLessThanOrEqual(STORE_TIMEOUT);
      expect(mock.calls.retry).toEqual([]);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempts: 1, sourceState: 'applied', error: expect.stringContaining('x-lease-8') },
      ]);
      // With the last read-back error, not only that the time ran out.
      expect(mock.calls.fail[0]!.input.error).toContain(`source read timed out (${mock.calls.store.length})`);
      expect(mock.calls.fail[0]!.at - firstStore.at).toBeLessThanOrEqual(STORE_TIMEOUT + SLACK_MS);
      expect(await seen(handle)).toEqual({ execution: 'FAILED', searchAttribute: 'failed' });
    });
  });

  it('ends Cancelled when cancelled while waiting between attempts, fails the Operation, and makes no more attempts', async () => {
    const mock = mockActivities();
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      await settle();
      expect(mock.calls.attempt).toHaveLength(1);
      await handle.cancel();
      expect(await failureOf(handle)).toBeInstanceOf(CancelledFailure);
      await env.sleep(DAY);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.fail.map((c) => c.input)).toEqual([
        { operationId: input.operationId, attempts: 1, sourceState: null, error: expect.stringMatching(/cancel/i) },
      ]);
      expect(await seen(handle)).toEqual({ execution: 'CANCELLED', searchAttribute: 'failed' });
    });
  });

  it("answers the state query while waiting: running, the attempts made, the next attempt's time and the last error", async () => {
    const mock = mockActivities({ attempt: (n) => (n === 3 ? succeeded : transient(n)) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start({ type: 'lease.update', target: 'lea_target' });
      await settle();
      expect(await handle.query(operationStateQuery)).toEqual({
        type: 'lease.update',
        status: 'running',
        target: 'lea_target',
        attempts: 1,
        nextAttemptAt: new Date(mock.calls.retry[0]!.input.nextAttemptAtMs).toISOString(),
        lastError: transient(1).error,
      });
      expect(await seen(handle)).toEqual({ execution: 'RUNNING', searchAttribute: 'running' });

      await env.sleep(delayAfter(1));
      expect(mock.calls.attempt).toHaveLength(2);
      expect(await handle.query(operationStateQuery)).toMatchObject({
        status: 'running',
        attempts: 2,
        nextAttemptAt: new Date(mock.calls.retry[1]!.input.nextAttemptAtMs).toISOString(),
        lastError: transient(2).error,
      });

      expect(await handle.result()).toEqual({ operationId: input.operationId, status: 'succeeded', attempts: 3 });
    });
  });

  it('ends Completed without failing the Operation when an attempt finds it already succeeded (a lost attempt had stored it)', async () => {
    const mock = mockActivities({ attempt: (n) => (n === 2 ? { outcome: 'finished', status: 'succeeded' } : transient(n)) });
    await withWorker(mock, async ({ start }) => {
      const { handle, input } = await start();
      expect(await handle.result()).toEqual({ operationId: input.operationId, status: 'succeeded', attempts: 2 });
      expect(mock.calls.attempt).toHaveLength(2);
      expect(mock.calls.fail).toEqual([]);
      expect(mock.calls.store).toEqual([]);
      expect(await seen(handle)).toEqual({ execution: 'COMPLETED', searchAttribute: 'succeeded' });
    });
  });

  it('ends Failed without failing the Operation again when an attempt finds it already failed', async () => {
    const mock = mockActivities({ attempt: () => ({ outcome: 'finished', status: 'failed' }) });
    await withWorker(mock, async ({ start }) => {
      const { handle } = await start();
      expect(await failureTypeOf(handle)).toBe(WRITE_FAILURE.failed);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.fail).toEqual([]);
      expect(await seen(handle)).toEqual({ execution: 'FAILED', searchAttribute: 'failed' });
    });
  });
});
