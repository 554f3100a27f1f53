/**
 * A workflow interceptor of the traced bundle (worker/telemetry.ts WORKFLOW_INTERCEPTOR_MODULES), after
 * OpenTelemetry's: a run that continues as new starts the next run without the trace context OpenTelemetry's
 * interceptor put in its headers, so each run is a trace of its own. A subscription's dispatcher continues as new
 * every 200 batches for as long as the subscription lives; carried from run to run, its trace would never end. (Its
 * batches are traces of their own already: activities/dispatch.ts.) A delivery's replay, the other run that
 * continues as new, starts its own trace the same way, days after the attempts it follows.
 */
import type { ContinueAsNewInput, Next, WorkflowInterceptorsFactory, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

/** The header OpenTelemetry's workflow interceptors carry the context in (@temporalio/interceptors-opentelemetry). */
const TRACE_HEADER = '_tracer-data';

class TracePerRun implements WorkflowOutboundCallsInterceptor {
  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>): Promise<never> {
    if (!(TRACE_HEADER in input.headers)) return next(input);
    const headers = { ...input.headers };
    delete headers[TRACE_HEADER];
    return next({ ...input, headers });
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new TracePerRun()] });
