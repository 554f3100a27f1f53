/**
 * What each Worker.create gets for tracing. With tracing on, the worker runs the workflow bundle that carries the
 * OpenTelemetry workflow interceptors (worker/bundle.ts --traced, dist/workflows-traced.js), whose `exporter` sink
 * hands workflow spans to the process's span processor, and activities are wrapped in spans (children of the
 * workflow's, from the headers). With it off, the bundle has no interceptors (they cost every workflow task); the
 * sink is still registered, dropping anything, so a bundle given by WORKFLOW_BUNDLE_PATH may have them either way.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type { Tracing } from '../observability/tracing';

/**
 * The modules of workflow interceptors the traced bundle includes, in order: OpenTelemetry's, then ours, which takes
 * the trace context out of a continue-as-new (workflows/trace-per-run.ts) after OpenTelemetry's has put it in.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
  fileURLToPath(new URL('../workflows/trace-per-run.ts', import.meta.url)),
];

type Telemetry = Pick<WorkerOptions, 'sinks' | 'interceptors'>;

const DROP: InjectedSinks<{ exporter: { export(...spans: unknown[]): void } }> = { exporter: { export: { fn: () => {} } } };

export function telemetryOf(tracing: Tracing | undefined): Telemetry {
  if (!tracing) return { sinks: DROP as WorkerOptions['sinks'] };
  return {
    sinks: { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) } as WorkerOptions['sinks'],
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    },
  };
}
