/**
 * A run that continues as new is a trace of its own in the traced bundle (workflows/trace-per-run.ts, after
 * OpenTelemetry's workflow interceptors, as worker/telemetry.ts lists them): the next run's RunWorkflow span is a
 * root, not a child of the ContinueAsNew span before it. Without our module (OpenTelemetry's alone) the two runs
 * share one trace, which is what a dispatcher's runs did for as long as its subscription lived.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkerOptions } from '@temporalio/worker';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../../worker/telemetry';
import { TEMPORAL_TEST_SERVER } from '../../scripts/tools';
import type { continuesOnce } from './fixtures/continues-once';

const workflowsPath = fileURLToPath(new URL('./fixtures/continues-once.ts', import.meta.url));
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error };
let env: TestWorkflowEnvironment;
const bundles: Record<'ours' | 'openTelemetryOnly', string> = { ours: '', openTelemetryOnly: '' };

beforeAll(async () => {
  expect(WORKFLOW_INTERCEPTOR_MODULES).toHaveLength(2);
  const [started, ours, openTelemetryOnly] = await Promise.all([
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: TEMPORAL_TEST_SERVER } } }),
    bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: quiet }),
    bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES.slice(0, 1), logger: quiet }),
  ]);
  env = started;
  bundles.ours = ours.code;
  bundles.openTelemetryOnly = openTelemetryOnly.code;
}, 120_000);

afterAll(async () => {
  await env?.teardown();
});

/** The spans of one workflow that continues as new once, run by a worker of `bundle` exporting to memory. */
async function spansOf(bundle: keyof typeof bundles): Promise<ReadableSpan[]> {
  const exporter = new InMemorySpanExporter();
  const taskQueue = `trace-per-run-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code: bundles[bundle] },
    sinks: { exporter: makeWorkflowExporter(new SimpleSpanProcessor(exporter), new Resource({ 'service.name': 'test' })) } as WorkerOptions['sinks'],
    debugMode: true,
  });
  const result = await worker.runUntil(
    env.client.workflow.execute<typeof continuesOnce>('continuesOnce', { taskQueue, workflowId: `continues-${randomUUID()}`, args: [1] }),
  );
  expect(result).toBe(2);
  return exporter.getFinishedSpans();
}

const runsOf = (spans: ReadableSpan[]) => spans.filter((s) => s.name === 'RunWorkflow:continuesOnce');

describe('a workflow that continues as new, in the traced bundle', () => {
  it('starts each run as a trace of its own', async () => {
    const spans = await spansOf('ours');
    const runs = runsOf(spans);
    expect(runs).toHaveLength(2);
    expect(runs[0]!.spanContext().traceId).not.toBe(runs[1]!.spanContext().traceId);
    for (const r of runs) expect(r.parentSpanId).toBeUndefined();
    // OpenTelemetry's own ContinueAsNew span is still there, in the first run's trace.
    const handOver = spans.find((s) => s.name === 'ContinueAsNew:continuesOnce');
    expect(handOver?.spanContext().traceId).toBe(runs[0]!.spanContext().traceId);
  });

  it('(OpenTelemetry’s interceptors alone carry the first run’s trace into the next)', async () => {
    const runs = runsOf(await spansOf('openTelemetryOnly'));
    expect(runs).toHaveLength(2);
    expect(runs[1]!.spanContext().traceId).toBe(runs[0]!.spanContext().traceId);
  });
});
