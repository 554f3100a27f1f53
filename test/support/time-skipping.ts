/**
 * What the workflow tests on the time-skipping test server share: the server (from .tools), the workflow bundle
 * built once per file, and the search attributes the workflows upsert.
 */
import { fileURLToPath } from 'node:url';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect } from 'vitest';
import { SEARCH_ATTRIBUTES } from '../../domain/contract';
import { TEMPORAL_TEST_SERVER } from '../../scripts/tools';

/** Durations in ms, for the test server's clock. */
export const SECOND = 1_000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export interface TimeSkipping {
  env: TestWorkflowEnvironment;
  /** The workflows' bundle: each test's worker loads it (bundling per worker would cost seconds each). */
  workflowCode: string;
}

/** `workflowsPath`: the workflows to bundle (by default the product's, workflows/index.ts). */
async function startTimeSkipping(workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url))): Promise<TimeSkipping> {
  // The runtime logs errors only (test/support/quiet-runtime.ts, this project's setup file): worker state changes, the
  // failures these tests provoke on purpose and the core's warning that the test server does not advertise a capability
  // of Temporal 1.16+ would bury the output.
  const [env, bundle] = await Promise.all([
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: TEMPORAL_TEST_SERVER } } }),
    bundleWorkflowCode({
      workflowsPath,
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
    }),
  ]);
  // As the worker does at start-up (worker/index.ts registerSearchAttributes, whose listing step the test server does
  // not implement). Without it a workflow's first upsert of a search attribute fails its workflow task, over and over.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTES.map((sa) => [sa.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  return { env, workflowCode: bundle.code };
}

/**
 * A file's time-skipping server and bundle (of `opts.workflowsPath`, by default the product's workflows), started
 * before its tests and torn down after them; `set` receives them.
 */
export function onTimeSkipping(set: (started: TimeSkipping) => void, opts: { workflowsPath?: string } = {}): void {
  let started: TimeSkipping | undefined;
  beforeAll(async () => {
    started = await startTimeSkipping(opts.workflowsPath);
    set(started);
  });
  afterAll(async () => {
    await started?.env.teardown();
  });
}

/**
 * Runs `body` with a worker of the file's bundle and `opts.activities` on `opts.taskQueue` (a queue of the test's own).
 * Workflows `body` passes to `track` that still run after it are terminated, so that no later test's time skipping
 * fires their timers.
 */
export async function runWorker<T>(
  { env, workflowCode }: TimeSkipping,
  opts: { taskQueue: string; activities?: object },
  body: (track: <H extends WorkflowHandle>(handle: H) => H) => Promise<T>,
): Promise<T> {
  const handles: WorkflowHandle[] = [];
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: opts.taskQueue,
    workflowBundle: { code: workflowCode },
    activities: opts.activities,
    // Workflows run on the test's thread: no workflow thread to start and load the bundle into (about 1.5 s a worker).
    debugMode: true,
  });
  return worker.runUntil(async () => {
    try {
      return await body((handle) => {
        handles.push(handle);
        return handle;
      });
    } finally {
      for (const h of handles) if ((await h.describe()).status.name === 'RUNNING') await h.terminate('test over');
    }
  });
}

/** `actual` is `expected`, or later by less than `slackMs` (the test server's clock runs at wall speed between timers). */
export function expectLateBy(actual: number | undefined, expected: number | undefined, slackMs: number): void {
  expect(actual).toBeDefined();
  expect(expected).toBeDefined();
  expect(actual!).toBeGreaterThanOrEqual(expected!);
  expect(actual! - expected!).toBeLessThan(slackMs);
}

/** The cause of the failure a workflow ended with (it must have failed). */
export async function failureOf(handle: WorkflowHandle): Promise<Error | undefined> {
  const err = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return (err as WorkflowFailedError).cause;
}

/** One activity call: its input and the test server's clock when it began and when it returned (or threw). */
export interface Call<I> {
  input: I;
  at: number;
  doneAt: number;
}

/** Runs a mocked activity's `body`, recording the call in `list` with the test server's clock. */
export function recorder(env: TestWorkflowEnvironment) {
  return async function recorded<I, O>(list: Call<I>[], input: I, body: () => Promise<O>): Promise<O> {
    const call: Call<I> = { input, at: await env.currentTimeMs(), doneAt: NaN };
    list.push(call);
    try {
      return await body();
    } finally {
      call.doneAt = await env.currentTimeMs();
    }
  };
}
