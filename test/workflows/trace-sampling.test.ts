/**
 * OTEL_TRACES_SAMPLER thins the traces that start inside a workflow (a sync run started by its schedule, a
 * dispatcher, a retried delivery) as it thins the API's requests. Such a trace starts in the Temporal SDK's workflow
 * interceptors, whose tracer samples everything; the worker decides again by trace id (observability/tracing.ts), for
 * the workflow's spans (its sink's processor) and its activities' (its provider's sampler). What is kept is whole: the
 * workflow's span, the activity's, and the activity's own span (a source call) under one trace id. A worker of the
 * traced bundle (worker/telemetry.ts) exports over OTLP/HTTP to a receiver in this test, as a collector would get them.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inSpan, sampledShareOf, SpanKind, startTracing } from '../../observability/tracing';
import { TEMPORAL_TEST_SERVER } from '../../scripts/tools';
import { telemetryOf, WORKFLOW_INTERCEPTOR_MODULES } from '../../worker/telemetry';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp';
import type { tracedStep } from './fixtures/traced-step';

const workflowsPath = fileURLToPath(new URL('./fixtures/traced-step.ts', import.meta.url));
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error };
const RUNS = 40;
let env: TestWorkflowEnvironment;
let bundle = '';
let receiver: OtlpReceiver;

beforeAll(async () => {
  const [started, traced, otlp] = await Promise.all([
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: TEMPORAL_TEST_SERVER } } }),
    bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: quiet }),
    startOtlpReceiver(),
  ]);
  env = started;
  bundle = traced.code;
  receiver = otlp;
}, 120_000);

afterAll(async () => {
  await env?.teardown();
  await receiver?.close();
});

/** The spans of RUNS workflows started without a trace (as a schedule starts them), by trace id. */
async function tracesWith(sampler: Record<string, string>): Promise<Map<string, ReceivedSpan[]>> {
  receiver.spans.length = 0;
  const tracing = startTracing({ endpoint: receiver.endpoint, serviceName: 'sampling-test', sampler });
  const taskQueue = `trace-sampling-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code: bundle },
    activities: { step: (n: number) => inSpan('source.write', { 'propsync.step': n }, async () => n, SpanKind.CLIENT) },
    ...telemetryOf(tracing),
  });
  const results = await worker.runUntil(async () => {
    const handles = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        env.client.workflow.start<typeof tracedStep>('tracedStep', { taskQueue, workflowId: `traced-${randomUUID()}`, args: [i] }),
      ),
    );
    const out: number[] = [];
    for (const h of handles) out.push(await h.result());
    return out;
  });
  expect(results).toEqual(Array.from({ length: RUNS }, (_, i) => i));
  await tracing.shutdown(); // exports what it holds
  const traces = new Map<string, ReceivedSpan[]>();
  for (const s of receiver.spans) traces.set(s.traceId, [...(traces.get(s.traceId) ?? []), s]);
  return traces;
}

/** Each trace holds one run's spans, each the child of the one before: workflow → activity → source call. */
function expectWhole(traces: Map<string, ReceivedSpan[]>): void {
  for (const spans of traces.values()) {
    const named = (prefix: string) => spans.filter((s) => s.name.startsWith(prefix));
    const [run, start, act, call] = [named('RunWorkflow:tracedStep'), named('StartActivity:step'), named('RunActivity:step'), named('source.write')];
    for (const one of [run, start, act, call]) expect(one).toHaveLength(1);
    expect(run[0]!.parentSpanId).toBe('');
    expect(call[0]!.parentSpanId).toBe(act[0]!.spanId);
    expect(act[0]!.parentSpanId).toBe(start[0]!.spanId);
  }
}

describe('workflow-rooted traces under OTEL_TRACES_SAMPLER', () => {
  it('are all exported, whole, when every trace is sampled (the default)', async () => {
    const traces = await tracesWith({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' });
    expect(traces.size).toBe(RUNS);
    expectWhole(traces);
  });

  it('are dropped whole at a ratio of 0: no workflow, activity or source-call span', async () => {
    const traces = await tracesWith({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    expect([...traces.values()].flat().map((s) => s.name)).toEqual([]);
  });

  it('are thinned by trace id at a ratio of one half: each kept trace whole, and kept by the rule the API applies', async () => {
    const traces = await tracesWith({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' });
    // Binomial(40, 1/2): outside 5..35 about once in a million runs.
    expect(traces.size).toBeGreaterThanOrEqual(5);
    expect(traces.size).toBeLessThanOrEqual(35);
    expectWhole(traces);
    const rule = new TraceIdRatioBasedSampler(0.5);
    for (const id of traces.keys()) expect(rule.shouldSample(ROOT_CONTEXT, id).decision).toBe(SamplingDecision.RECORD_AND_SAMPLED);
  });
});

describe('sampledShareOf', () => {
  it('reads the share of traces kept as OpenTelemetry’s SDK reads its variables', () => {
    expect(sampledShareOf({})).toBe(1);
    expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'always_on' })).toBe(1);
    expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })).toBe(0);
    expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'always_off' })).toBe(0);
    expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toBe(0.25);
    expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'ParentBased_TraceIdRatio', OTEL_TRACES_SAMPLER_ARG: ' 0.1 ' })).toBe(0.1);
    // Blank, not a number, or out of range: the SDK keeps everything, and so does the worker.
    for (const arg of ['', 'half', '1.5', '-0.1']) expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })).toBe(1);
    expect(sampledShareOf({ OTEL_TRACES_SAMPLER: 'parentbased_jaeger_remote' })).toBe(1);
  });
});
