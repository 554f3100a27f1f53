/**
 * The sync workflow's retry and time-out policy on the time-skipping test server: the backoff of a failing source
 * attempt by attempt, the give-up, a source's Retry-After, a database outage that must fail the run instead of
 * holding it open, and cancellation, against mock activities that record every call with the server's clock.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { ConfirmResult, StartSyncJobResult, SyncActivities } from '../../activities/sync';
import type { Entity } from '../../domain/cdm';
import type { SyncPolicy } from '../../domain/contract';
import type { SyncCompleteData } from '../../domain/events';
import { MINUTE, onTimeSkipping, SECOND } from '../support/time-skipping';
import { until } from '../support/until';
import { syncIntegration } from '../../workflows/sync';

/** Between an attempt's failure and the next one's start lie a report and a timer at wall speed: far below any delay here. */
const SLACK_MS = 1_500;

/** A policy unlike the defaults, so that a delay taken from anywhere but the configuration shows. */
const POLICY: SyncPolicy = {
  retry: { initialIntervalMs: 10 * SECOND, backoffCoefficient: 2, maximumIntervalMs: 40 * SECOND, maximumAttempts: 5 },
  entityTimeoutMs: 60 * MINUTE,
  heartbeatTimeoutMs: 20 * SECOND,
  bookkeepingTimeoutMs: 3 * MINUTE,
};

let env: TestWorkflowEnvironment;
let workflowCode: string;

onTimeSkipping((started) => ({ env, workflowCode } = started));

/** One activity call: its argument, its attempt number and the server's clock when the attempt began. */
interface Call {
  entity?: Entity;
  attempt: number;
  scheduledAt: number;
}

interface Script {
  /** What attempt n of an entity does: resolve, throw, or (`'wait'`) heartbeat until cancelled. */
  entity?: (entity: Entity, attempt: number) => 'ok' | 'wait' | Error;
  finish?: (attempt: number) => 'ok' | Error;
  fail?: (attempt: number) => 'ok' | Error;
}

const done: SyncCompleteData = {
  sync_job_id: 'syj_TEST',
  started_at: '2026-01-01T00:00:00.000Z',
  finished_at: '2026-01-01T00:00:01.000Z',
  records_new: 0,
  records_updated: 0,
  records_soft_deleted: 0,
  records_skipped: 0,
};

function mockActivities(script: Script) {
  const calls = { entity: [] as Call[], confirm: [] as Call[], finish: [] as Call[], fail: [] as (Call & { error: string })[] };
  // The server's clock, which skips: the activity's own info carries wall times on the test server.
  const now = async (): Promise<Call> => ({ attempt: Context.current().info.attempt, scheduledAt: await env.currentTimeMs() });
  const act = (outcome: 'ok' | Error) => {
    if (outcome instanceof Error) throw outcome;
  };
  const activities: Partial<SyncActivities> = {
    async syncPolicy() {
      return POLICY;
    },
    async startSyncJob(): Promise<StartSyncJobResult> {
      return { skipped: false, syncJobId: 'syj_TEST', organizationId: 'org', initial: false, kind: 'full' };
    },
    async syncEntity({ entity }) {
      const call = { ...(await now()), entity };
      calls.entity.push(call);
      const outcome = script.entity?.(entity, call.attempt) ?? 'ok';
      if (outcome === 'wait') {
        const ctx = Context.current();
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(200);
        }
      }
      act(outcome);
      return { pages: 1, records: 0 };
    },
    async confirmDeletions({ entity }): Promise<ConfirmResult> {
      calls.confirm.push({ ...(await now()), entity });
      return { checked: 0, present: 0, gone: 0 };
    },
    async finishSyncJob() {
      const call = await now();
      calls.finish.push(call);
      act(script.finish?.(call.attempt) ?? 'ok');
      return done;
    },
    async failSyncJob({ error }) {
      const call = await now();
      calls.fail.push({ ...call, error });
      act(script.fail?.(call.attempt) ?? 'ok');
    },
  };
  return { activities, calls };
}

type Calls = ReturnType<typeof mockActivities>['calls'];

async function run(script: Script, during?: (handle: WorkflowHandle, calls: Calls) => Promise<void>) {
  const taskQueue = `sync-policy-${Math.random().toString(36).slice(2)}`;
  const { activities, calls } = mockActivities(script);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code: workflowCode },
    activities,
  });
  return worker.runUntil(async () => {
    const startedAt = await env.currentTimeMs();
    const handle = await env.client.workflow.start(syncIntegration, {
      taskQueue,
      workflowId: `sync-policy-${taskQueue}`,
      args: [{ integrationId: '00000000-0000-4000-8000-000000000001', trigger: 'manual', syncJobId: 'syj_TEST' }],
    });
    await during?.(handle, calls);
    const outcome = await handle.result().then(
      (value) => ({ value, error: undefined }),
      (error: unknown) => ({ value: undefined, error }),
    );
    return { ...outcome, calls, startedAt };
  });
}

/** The exact delays the policy gives between attempts n and n+1. */
function backoff(policy: SyncPolicy): number[] {
  const out: number[] = [];
  for (let n = 1; n < policy.retry.maximumAttempts; n++) {
    out.push(Math.min(policy.retry.initialIntervalMs * policy.retry.backoffCoefficient ** (n - 1), policy.retry.maximumIntervalMs));
  }
  return out;
}

const gaps = (calls: Call[]) => calls.slice(1).map((c, i) => c.scheduledAt - calls[i]!.scheduledAt);

function expectDelays(measured: number[], exact: number[]) {
  expect(measured).toHaveLength(exact.length);
  measured.forEach((m, i) => {
    expect(m, `delay ${i + 1}`).toBeGreaterThanOrEqual(exact[i]! - 50);
    expect(m, `delay ${i + 1}`).toBeLessThanOrEqual(exact[i]! + SLACK_MS);
  });
}

describe('sync retry policy (time-skipping)', () => {
  it('retries a failing source with the configured backoff, gives up after the configured attempts and records why', async () => {
    const r = await run({ entity: () => new Error('source answered HTTP 503') });
    const property = r.calls.entity.filter((c) => c.entity === 'property');
    expect(property.map((c) => c.attempt)).toEqual([1, 2, 3, 4, 5]);
    // 10 s, 20 s, then capped at 40 s.
    expectDelays(gaps(property), backoff(POLICY));
    expect(backoff(POLICY)).toEqual([10 * SECOND, 20 * SECOND, 40 * SECOND, 40 * SECOND]);
    // Nothing after the give-up: no later entity, no deletion check, no finish; the job is marked failed with the cause.
    expect(r.calls.entity.every((c) => c.entity === 'property')).toBe(true);
    expect(r.calls.confirm).toHaveLength(0);
    expect(r.calls.finish).toHaveLength(0);
    expect(r.calls.fail.map((c) => c.error)).toEqual(['source answered HTTP 503']);
    expect(r.error).toBeInstanceOf(WorkflowFailedError);
    expect(((r.error as WorkflowFailedError).cause as ApplicationFailure).type).toBe('SyncFailed');
  });

  it("waits exactly the source's Retry-After before the next attempt, not the backoff", async () => {
    const r = await run({
      entity: (entity, attempt) =>
        entity === 'unit' && attempt === 1
          ? ApplicationFailure.create({ type: 'SourceRateLimited', message: 'rate limited', nextRetryDelay: 95 * SECOND })
          : 'ok',
    });
    expect(r.error).toBeUndefined();
    const unit = r.calls.entity.filter((c) => c.entity === 'unit');
    expectDelays(gaps(unit), [95 * SECOND]);
    // The run went on to the end: every entity's deletions confirmed, then finished once.
    expect(r.calls.confirm.map((c) => c.entity).sort()).toEqual(['lease', 'property', 'resident', 'unit']);
    expect(r.calls.finish).toHaveLength(1);
  });

  it('a database that stays down fails the run within the bookkeeping bound instead of holding it open', async () => {
    const down = () => new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const r = await run({ finish: down, fail: down });
    expect(r.error).toBeInstanceOf(WorkflowFailedError);
    // Finishing was tried until its bound ran out, then recording the failure was tried until its own.
    const finishSpan = r.calls.finish.at(-1)!.scheduledAt - r.calls.finish[0]!.scheduledAt;
    expect(finishSpan).toBeLessThanOrEqual(POLICY.bookkeepingTimeoutMs);
    expect(r.calls.finish.length).toBeGreaterThan(3);
    expect(r.calls.fail.length).toBeGreaterThan(1);
    expect(r.calls.fail.at(-1)!.scheduledAt - r.startedAt).toBeLessThanOrEqual(2 * POLICY.bookkeepingTimeoutMs + 10 * SLACK_MS);
  });

  it('cancelling a run cancels the running entity and still marks the job failed', async () => {
    const r = await run({ entity: (entity) => (entity === 'lease' ? 'wait' : 'ok') }, async (handle, calls) => {
      // Cancel once the lease step is running (heartbeating). until() reads the mock's record of its calls in this
      // process at wall speed and sends nothing to the test server, whose clock skips only while a result is awaited.
      await until('the lease step to be running', () => calls.entity.some((c) => c.entity === 'lease'), { timeoutMs: 15_000, intervalMs: 50 });
      await handle.cancel();
    });
    expect(r.error).toBeInstanceOf(WorkflowFailedError);
    expect((r.error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(r.calls.entity.some((c) => c.entity === 'lease')).toBe(true);
    expect(r.calls.finish).toHaveLength(0);
    expect(r.calls.fail).toHaveLength(1);
    expect(r.calls.fail[0]!.error).toMatch(/cancel/i);
  });

  it('a run recorded by the version before these steps existed replays on this one (patched), with the old policy', async () => {
    // A whole run of the previous release's workflow (ab1e8e3: no syncPolicy, no confirmDeletions), recorded on the
    // test server. Without the patches its replay fails on the first new command and the run would hang open.
    const history = proto.temporal.api.history.v1.History.decode(
      Buffer.from(readFileSync(fileURLToPath(new URL('./fixtures/sync-history-v1.b64', import.meta.url)), 'utf8'), 'base64'),
    );
    expect(history.events?.length).toBeGreaterThan(10);
    await Worker.runReplayHistory({ workflowsPath: fileURLToPath(new URL('../../workflows/index.ts', import.meta.url)) }, history, 'sync-syj_V1');
  });
});
