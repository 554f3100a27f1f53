/**
 * OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: spans go to `<endpoint>/v1/traces` over
 * OTLP/HTTP (JSON) in batches (up to 512 spans, sent at most 5 s after they end). One trace follows a request
 * from the API's root span (with its x-request-id) through the workflow it starts (the Temporal client and workflow interceptors carry the context in headers) to the
 * activities and their own spans: a source call, a sync page, a webhook attempt, named with the ids an operator
 * searches for (Operation, sync job, delivery), never personal data or secrets. With tracing off, the spans below
 * are the OpenTelemetry API's no-ops.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type ContextManager,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface Tracing {
  /**
   * Where workflow spans (exported by the worker's sink) go: the process's exports, less the traces the sampler does
   * not keep (workflowSpansOf).
   */
  processor: SpanProcessor;
  resource: Resource;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * How spans leave the process: in batches of up to 512 (the SDK's default: a span waits at most one batch before it
 * is serialized and dropped, so a busy dispatcher's thousands of attempt spans a second die young), and at the latest
 * EXPORT_DELAY_MS after the first of a batch ended (OpenTelemetry's default delay; it was 1 s), so that a quiet
 * process sends one export every few seconds, not one a second. A process that ends exports what it still holds.
 */
const EXPORT_DELAY_MS = 5_000;
/** Spans held at most while an export is under way; beyond it new ones are dropped (counted by the SDK's diag). */
const QUEUE_LIMIT = 8_192;

/**
 * The process's OpenTelemetry context, carried across awaits by an AsyncLocalStorage that exists only from the first
 * context holding a span made active (a write's root span, an activity's span). Node 20 keeps the hooks of an
 * AsyncLocalStorage on for every promise and I/O callback of the process once one is used, so a process that never
 * makes a span active (an API serving reads: their root spans are recorded once answered) must never use one, yet
 * the span processor makes its exports' calls untraced with a context of their own (no span in it) every few
 * seconds. Such a context is active for the synchronous part of `fn` only, which is all it needs in a process with no
 * transport instrumentation; any context with a span goes through the AsyncLocalStorage, as the SDK's own manager
 * does.
 */
class LazyAsyncContext implements ContextManager {
  private storage: AsyncLocalStorage<Context> | undefined;
  private current: Context | undefined;

  active(): Context {
    return (this.storage ? this.storage.getStore() : this.current) ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    if (!this.storage) {
      if (trace.getSpan(ctx) === undefined) {
        const before = this.current;
        this.current = ctx;
        try {
          return fn.apply(thisArg, args);
        } finally {
          this.current = before;
        }
      }
      this.storage = new AsyncLocalStorage<Context>();
    }
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (self: unknown, args: unknown[]) => this.with(ctx, () => (target as (...a: unknown[]) => unknown).apply(self, args));
    return function (this: unknown, ...args: unknown[]) {
      return run(this, args);
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage?.disable();
    this.storage = undefined;
    this.current = undefined;
    return this;
  }
}

/** OpenTelemetry's standard sampler settings, as config/ parsed them. */
export interface SamplerSettings {
  OTEL_TRACES_SAMPLER?: string | undefined;
  OTEL_TRACES_SAMPLER_ARG?: string | undefined;
}

/** The tracer of the provider this process installed (undefined: tracing is off, and the API's no-op tracer serves). */
let processTracer: Tracer | undefined;
const tracer = (): Tracer => processTracer ?? trace.getTracer('propsync');

/**
 * The share of traces that OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (as the configuration read them) keep, read
 * as OpenTelemetry's SDK reads them: 1 for `always_on` and `parentbased_always_on` (the default), 0 for `always_off`
 * and `parentbased_always_off`, the argument for `traceidratio` and `parentbased_traceidratio` (1 when it is blank or
 * not a number in [0, 1]). A sampler these names do not cover (a remote one) is left to the SDK: 1.
 */
export function sampledShareOf(env: SamplerSettings): number {
  const name = (env.OTEL_TRACES_SAMPLER ?? '').trim().toLowerCase();
  if (name === 'always_off' || name === 'parentbased_always_off') return 0;
  if (name !== 'traceidratio' && name !== 'parentbased_traceidratio') return 1;
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const share = arg ? Number(arg) : NaN;
  return Number.isFinite(share) && share >= 0 && share <= 1 ? share : 1;
}

/**
 * The processor the worker's workflow sink hands workflow spans to. A trace that starts inside a workflow (a sync
 * run started by its schedule, a dispatcher, a retried delivery) starts in the Temporal SDK's workflow interceptors,
 * whose tracer samples everything and which no setting of this process reaches; so the sampler's decision is made
 * again here, by trace id: a trace the configured share does not keep loses its workflow spans, and (the provider's
 * sampler, startTracing) the spans of its activities. A trace that started in the API was kept there by the same
 * decision on the same id, and stays whole.
 */
function workflowSpansOf(processor: SpanProcessor, byId: TraceIdRatioBasedSampler | undefined): SpanProcessor {
  if (!byId) return processor;
  // The ratio sampler's decision is a function of the trace id alone: the same wherever it is made again.
  const keeps = (traceId: string) => byId.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
  return {
    onStart: (span, parent) => processor.onStart(span, parent),
    onEnd: (span: ReadableSpan) => {
      if (keeps(span.spanContext().traceId)) processor.onEnd(span);
    },
    forceFlush: () => processor.forceFlush(),
    shutdown: () => processor.shutdown(),
  };
}

/**
 * Installs the process's tracer provider (and its async context) exporting to `endpoint`. With a share below 1 the
 * sampler is OpenTelemetry's parent-based one whose root decision is TraceIdRatioBased, and a parent from another
 * process (a workflow's span, carried in an activity's headers) is not taken at its word but decided again by the same
 * id-based rule: a workflow-rooted trace, which the workflow's own tracer never drops, is thinned like any other, and one
 * the API kept stays kept (the same rule on the same trace id).
 */
export function startTracing(opts: { endpoint: string; serviceName: string; sampler?: SamplerSettings }): Tracing {
  const resource = new Resource({ 'service.name': opts.serviceName });
  const exporter = new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/$/, '')}/v1/traces` });
  const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS, maxQueueSize: QUEUE_LIMIT });
  const settings = opts.sampler ?? {};
  const share = sampledShareOf(settings);
  const byId = share < 1 ? new TraceIdRatioBasedSampler(share) : undefined;
  // Always given, so the SDK's own reading of the environment never decides: `always_on` ignores a parent's decision,
  // the default (parentbased_always_on) follows it.
  const sampler = byId
    ? new ParentBasedSampler({ root: byId, remoteParentSampled: byId })
    : settings.OTEL_TRACES_SAMPLER?.trim().toLowerCase() === 'always_on'
      ? new AlwaysOnSampler()
      : new ParentBasedSampler({ root: new AlwaysOnSampler() });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor], sampler });
  provider.register({ contextManager: new LazyAsyncContext() });
  processTracer = provider.getTracer('propsync');
  return {
    processor: workflowSpansOf(processor, byId),
    resource,
    shutdown: async () => {
      await provider.shutdown();
      processTracer = undefined;
      // The globals the provider registered (the tracer the Temporal interceptors ask for, the context manager):
      // a later provider of this process (a test's) can register its own.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/**
 * Runs `fn` in a span named `name` (a child of the active one), recording a thrown error as the span's status. The
 * attributes are ids and kinds only. A CLIENT span (a call to another service: a source page, a source write, a
 * webhook attempt) is the last span of this process on its path, since the service installs no transport
 * instrumentation that would make children of it: it is not made active while `fn` runs, which spares a context
 * and an AsyncLocalStorage run per call (a dispatcher makes thousands a second). Any other kind is active, so that
 * spans started inside `fn` are its children.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const parent = context.active();
  const span = tracer().startSpan(name, { kind, attributes }, parent);
  if (kind === SpanKind.CLIENT) return runInSpan(span, fn);
  return context.with(trace.setSpan(parent, span), runInSpan<T>, undefined, span, fn);
}

/**
 * Runs `fn` in the root span of a trace of its own, linked to the active span (if any) rather than its child: for
 * work that repeats without end under one long-lived workflow (a subscription's dispatcher continues as new for as
 * long as the subscription lives), whose spans would otherwise grow one trace forever. Each such trace is sampled on
 * its own, so `OTEL_TRACES_SAMPLER` (e.g. `parentbased_traceidratio`) thins them as it thins requests. Active while
 * `fn` runs, so spans started inside are its children; `fn` may add attributes to it as it ends.
 */
export function inLinkedRoot<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  const from = trace.getSpan(context.active())?.spanContext();
  const links = from && trace.isSpanContextValid(from) ? [{ context: from }] : [];
  const span = tracer().startSpan(name, { kind: SpanKind.INTERNAL, attributes, links, root: true }, ROOT_CONTEXT);
  return context.with(trace.setSpan(ROOT_CONTEXT, span), runInSpan<T>, undefined, span, fn);
}

async function runInSpan<T>(span: Span, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await fn(span);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message?.slice(0, 200) });
    throw err;
  } finally {
    span.end();
  }
}

/** The attributes every request's root span starts with. */
const requestAttributes = (method: string, requestId: string): Attributes => ({ 'http.request.method': method, 'propsync.request_id': requestId });

function endServerSpan(span: Span, status: number, endTime?: number): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(endTime);
}

/**
 * A server span that is the root of a request's trace, active while `fn` runs (for a request whose spans have
 * children: a workflow it starts). `fn` answers the response's status.
 */
export function withServerSpan(method: string, requestId: string, fn: (span: Span) => Promise<number>): Promise<void> {
  const span = tracer().startSpan(method, { kind: SpanKind.SERVER, attributes: requestAttributes(method, requestId) }, ROOT_CONTEXT);
  return context.with(trace.setSpan(ROOT_CONTEXT, span), async () => {
    let status = 500;
    try {
      status = await fn(span);
    } finally {
      endServerSpan(span, status);
    }
  });
}

/**
 * The root span of a request answered without one active (it has no children), recorded once answered: started at
 * `startedAt` (a performance.now() reading), ended now.
 */
export function recordServerSpan(method: string, route: string, requestId: string, status: number, startedAt: number): void {
  const attributes = requestAttributes(method, requestId);
  attributes['http.route'] = route;
  const span = tracer().startSpan(`${method} ${route}`, { kind: SpanKind.SERVER, attributes, startTime: startedAt }, ROOT_CONTEXT);
  endServerSpan(span, status, performance.now());
}

export { SpanKind };
export type { Span };
