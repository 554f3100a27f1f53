/**
 * What each Worker.create gets for tracing. The workflow bundle always carries the OpenTelemetry workflow interceptors
 * (worker/bundle.ts, scripts/build.ts), so the `exporter` sink they call is always registered: it hands workflow spans
 * to the process's span processor when tracing is on, and drops them when it is off. Activities are wrapped in spans
 * (children of the workflow's, from the headers) only when tracing is on.
 */
import { createRequire } from 'node:module';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type { Tracing } from '../observability/tracing';

/** The module of workflow interceptors every bundle includes. */
export const WORKFLOW_INTERCEPTOR_MODULES = [createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];

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
