/**
 * The automation run workflow on the time-skipping test server: the retry schedule to the second (docs/decisions.md:
 * 3 retries, 1 min, 5 min, 15 min), a permanent failure at once, the run's end reported once with the attempt
 * number, a lost attempt, cancellation; and the schedule's firing workflow running the run as a child whose id is
 * the run id. Mock activities record every call with the server's clock.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { AutomationActivities, ExportAttemptInput } from '../../activities/automations';
import type { ExportOutcome } from '../../domain/automations';
import { failureOf, MINUTE, onTimeSkipping, recorder, runWorker, type Call } from '../support/time-skipping';
import { SA_STATUS } from '../../domain/contract';
import { AUTOMATION_FAILURE, automationTick, runAutomation, runStateQuery } from '../../workflows/automation';

const SLACK_MS = 1_000;
/** docs/decisions.md (Automations), written out rather than read from the code: delays before attempts 2, 3 and 4. */
const SPEC_RETRY_DELAYS = [MINUTE, 5 * MINUTE, 15 * MINUTE];
/** The export attempt's heartbeat time-out (workflows/automation.ts). */
const HEARTBEAT_TIMEOUT = MINUTE;

let env: TestWorkflowEnvironment;
let workflowCode: string;

onTimeSkipping((started) => ({ env, workflowCode } = started));

/** What an attempt does: answers, answers later (a promise the test settles), or goes silent. */
type Script = ExportOutcome | Promise<ExportOutcome> | 'silent';

function mockActivities(attempt: (n: number) => Script) {
  const calls = {
    attempt: [] as Call<ExportAttemptInput>[],
    retry: [] as Call<{ runId: string; attempts: number; nextAttemptAtMs: number; error: string }>[],
    finish: [] as Call<{ runId: string; status: 'succeeded' | 'failed'; attempts: number; recordsExported: number; error?: string }>[],
    create: [] as Call<{ automationId: string }>[],
  };
  const recorded = recorder(env);
  const activities = {
    createScheduledRun: (input) => recorded(calls.create, input, async () => ({ runId: `aru_${randomUUID()}` })),
    exportAttempt: (input) =>
      recorded(calls.attempt, input, async () => {
        const script = attempt(input.attempt);
        if (script === 'silent') {
          // A dead worker: no heartbeat, no answer, until just past the heartbeat time-out.
          await env.sleep(HEARTBEAT_TIMEOUT + 1);
          return { outcome: 'transient', error: 'too late' } as ExportOutcome;
        }
        return script;
      }),
    recordRunRetry: (input) => recorded(calls.retry, input, async () => {}),
    finishRun: (input) => recorded(calls.finish, input, async () => {}),
  } satisfies AutomationActivities;
  return { activities, calls };
}

const transient = (n: number): ExportOutcome => ({ outcome: 'transient', error: `HTTP 503 (attempt ${n})` });
const delivered: ExportOutcome = { outcome: 'succeeded', recordsExported: 42, fileName: 'f.csv' };

async function withWorker(mock: ReturnType<typeof mockActivities>, body: (taskQueue: string) => Promise<void>): Promise<void> {
  const taskQueue = `automation-test-${randomUUID()}`;
  await runWorker({ env, workflowCode }, { taskQueue, activities: mock.activities }, () => body(taskQueue));
}

async function failureTypeOf(handle: WorkflowHandle): Promise<string | undefined> {
  const cause = await failureOf(handle);
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : cause?.constructor.name;
}

const start = (taskQueue: string, runId = `aru_${randomUUID()}`) =>
  env.client.workflow.start(runAutomation, { taskQueue, workflowId: runId, args: [{ runId }] });

describe('runAutomation', () => {
  it('retries a transient failure 1 min, 5 min and 15 min after the previous attempt, then delivers', async () => {
    const mock = mockActivities((n) => (n < 4 ? transient(n) : delivered));
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 4, recordsExported: 42 });
      const a = mock.calls.attempt;
      expect(a.map((c) => c.input.attempt)).toEqual([1, 2, 3, 4]);
      for (let i = 1; i < a.length; i++) {
        const gap = a[i]!.at - a[i - 1]!.doneAt;
        expect(gap).toBeGreaterThanOrEqual(SPEC_RETRY_DELAYS[i - 1]!);
        expect(gap).toBeLessThanOrEqual(SPEC_RETRY_DELAYS[i - 1]! + SLACK_MS);
        // The announced next attempt is when it happened.
        expect(Math.abs(mock.calls.retry[i - 1]!.input.nextAttemptAtMs - a[i]!.at)).toBeLessThanOrEqual(SLACK_MS);
      }
      expect(mock.calls.retry.map((c) => c.input.attempts)).toEqual([1, 2, 3]);
      expect(mock.calls.finish.map((c) => c.input)).toEqual([{ runId: handle.workflowId, status: 'succeeded', attempts: 4, recordsExported: 42 }]);
    });
  });

  it('fails after the third retry fails: AUTOMATION_FAILED once, with attempt 4 and the last error', async () => {
    const mock = mockActivities(transient);
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      expect(await failureTypeOf(handle)).toBe(AUTOMATION_FAILURE.exhausted);
      expect(mock.calls.attempt).toHaveLength(4);
      expect(mock.calls.finish.map((c) => c.input)).toEqual([
        { runId: handle.workflowId, status: 'failed', attempts: 4, recordsExported: 0, error: 'HTTP 503 (attempt 4)' },
      ]);
      // No fifth attempt, however long we wait.
      await env.sleep(24 * 60 * MINUTE);
      expect(mock.calls.attempt).toHaveLength(4);
    });
  });

  it('a permanent failure fails at once, attempt 1, no retry', async () => {
    const mock = mockActivities(() => ({ outcome: 'permanent', error: 'HTTP 403 from the destination' }));
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      expect(await failureTypeOf(handle)).toBe(AUTOMATION_FAILURE.permanent);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.retry).toEqual([]);
      expect(mock.calls.finish.map((c) => c.input)).toEqual([
        { runId: handle.workflowId, status: 'failed', attempts: 1, recordsExported: 0, error: 'HTTP 403 from the destination' },
      ]);
    });
  });

  it('an attempt whose worker went silent counts as failed and is retried a minute later', async () => {
    const mock = mockActivities((n) => (n === 1 ? 'silent' : delivered));
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 2 });
      expect(mock.calls.retry[0]!.input.error).toMatch(/^attempt lost/);
    });
  });

  it('is running from its first attempt on, in its state query and its status search attribute', async () => {
    let answer!: (o: ExportOutcome) => void;
    const held = new Promise<ExportOutcome>((resolve) => (answer = resolve));
    const mock = mockActivities(() => held);
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      while (mock.calls.attempt.length === 0) await new Promise((r) => setTimeout(r, 20));
      expect(await handle.query(runStateQuery)).toMatchObject({ status: 'running', attempts: 0 });
      expect((await handle.describe()).typedSearchAttributes.get(SA_STATUS)).toBe('running');
      answer(delivered);
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 1 });
      expect((await handle.describe()).typedSearchAttributes.get(SA_STATUS)).toBe('succeeded');
    });
  });

  it('answers the state query while waiting, and cancelling it fails the run without another attempt', async () => {
    const mock = mockActivities(transient);
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      await env.sleep(30_000);
      expect(await handle.query(runStateQuery)).toMatchObject({ status: 'running', attempts: 1, lastError: 'HTTP 503 (attempt 1)' });
      await handle.cancel();
      const err = await handle.result().catch((e: unknown) => e);
      expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
      expect(mock.calls.attempt).toHaveLength(1);
      expect(mock.calls.finish.map((c) => c.input.error)).toEqual(['cancelled by an operator']);
    });
  });

  it('a cancellation that comes while a delivered run is being recorded leaves it succeeded', async () => {
    const mock = mockActivities(() => delivered);
    const finish = mock.activities.finishRun;
    let recordNow!: () => void;
    const recording = new Promise<void>((r) => (recordNow = r));
    let reached!: () => void;
    const isRecording = new Promise<void>((r) => (reached = r));
    mock.activities.finishRun = async (input) => {
      if (input.status === 'succeeded') {
        reached();
        await recording;
      }
      return finish(input);
    };
    await withWorker(mock, async (tq) => {
      const handle = await start(tq);
      await isRecording;
      await handle.cancel();
      recordNow();
      expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 1 });
      expect(mock.calls.finish.map((c) => c.input.status)).toEqual(['succeeded']);
    });
  });
});

describe('automationTick', () => {
  it('creates the run and runs it as a child whose workflow id is the run id', async () => {
    const mock = mockActivities(() => delivered);
    await withWorker(mock, async (tq) => {
      const r = await env.client.workflow.execute(automationTick, { taskQueue: tq, workflowId: `tick-${randomUUID()}`, args: [{ automationId: 'atm_x' }] });
      expect(r.status).toBe('succeeded');
      expect(mock.calls.create.map((c) => c.input)).toEqual([{ automationId: 'atm_x' }]);
      const child = await env.client.workflow.getHandle(r.runId!).describe();
      expect(child.type).toBe('runAutomation');
      expect(child.status.name).toBe('COMPLETED');
    });
  });
});
