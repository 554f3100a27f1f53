/**
 * OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: spans go to `<endpoint>/v1/traces` over
 * OTLP/HTTP (JSON) in batches. One trace follows a request from the API's root span (with its x-request-id) through
 * the workflow it starts (the Temporal client and workflow interceptors carry the context in headers) to the
 * activities and their own spans: a source call, a sync page, a webhook attempt, named with the ids an operator
 * searches for (Operation, sync job, delivery), never personal data or secrets. With tracing off, the spans below
 * are the OpenTelemetry API's no-ops.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface Tracing {
  /** Where workflow spans (exported by the worker's sink) go too. */
  processor: SpanProcessor;
  resource: Resource;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Installs the process's tracer provider (and its async context) exporting to `endpoint`. */
export function startTracing(opts: { endpoint: string; serviceName: string }): Tracing {
  const resource = new Resource({ 'service.name': opts.serviceName });
  const exporter = new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/$/, '')}/v1/traces` });
  const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000, maxQueueSize: 8_192 });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  return { processor, resource, shutdown: () => provider.shutdown() };
}

const tracer = () => trace.getTracer('propsync');

/**
 * Runs `fn` in a span named `name` (a child of the active one), recording a thrown error as the span's status. The
 * attributes are ids and kinds only.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message?.slice(0, 200) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A server span that is the root of a request's trace, active while `fn` runs. */
export function withServerSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes });
  return context.with(trace.setSpan(context.active(), span), async () => {
    try {
      return await fn(span);
    } finally {
      span.end();
    }
  });
}

export { SpanKind };
