/**
 * A dispatcher's batch is a trace of its own (observability/tracing.ts inLinkedRoot): a root span linked to the span
 * that was active, not its child, so OTEL_TRACES_SAMPLER decides for each batch as it does for each request, while a
 * child span (inSpan) follows its parent’s decision. Spans go over OTLP/HTTP to a receiver (test/support/otlp.ts), as a
 * collector would get them.
 */
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inLinkedRoot, inSpan, startTracing } from '../../observability/tracing';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp';

let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
});

afterAll(() => receiver.close());

/** A sampled span of another process (the activity's, as the Temporal interceptor makes it active). */
const PARENT = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };

/** Under the sampled parent: a child span, and a linked root holding a span of its own; what the receiver got. */
async function spansWith(sampler: Record<string, string>): Promise<ReceivedSpan[]> {
  receiver.spans.length = 0;
  const tracing = startTracing({ endpoint: receiver.endpoint, serviceName: 'tracing-test', sampler });
  await context.with(trace.setSpanContext(ROOT_CONTEXT, PARENT), async () => {
    await inSpan('child', {}, async () => {});
    await inLinkedRoot('batch', { 'propsync.subscription_id': 'wsub_1' }, async (span) => {
      await inSpan('attempt', { 'propsync.delivery_id': 'wdel_1' }, async () => {});
      span.setAttributes({ 'propsync.succeeded': 1 });
    });
  });
  await tracing.shutdown(); // exports what it holds
  return [...receiver.spans];
}

describe('inLinkedRoot', () => {
  it('starts a trace of its own, linked to the active span, whose spans are its children', async () => {
    const spans = await spansWith({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' });
    const by = (name: string) => spans.find((s) => s.name === name)!;
    expect(spans.map((s) => s.name).sort()).toEqual(['attempt', 'batch', 'child']);
    expect(by('child')).toMatchObject({ traceId: PARENT.traceId, parentSpanId: PARENT.spanId });
    expect(by('batch').traceId).not.toBe(PARENT.traceId);
    expect(by('batch')).toMatchObject({ service: 'tracing-test', parentSpanId: '', links: [`${PARENT.traceId}/${PARENT.spanId}`] });
    expect(by('batch').attributes).toEqual({ 'propsync.subscription_id': 'wsub_1', 'propsync.succeeded': 1 });
    expect(by('attempt')).toMatchObject({ traceId: by('batch').traceId });
    expect(by('attempt').parentSpanId).not.toBe('');
  });

  it('is sampled on its own: a ratio of 0 drops the batch and its spans, while a child keeps its parent’s decision', async () => {
    const spans = await spansWith({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    expect(spans.map((s) => s.name)).toEqual(['child']);
  });
});
