/**
 * A dispatcher's batch is a trace of its own (observability/tracing.ts inLinkedRoot): a root span linked to the span
 * that was active, not its child, so OTEL_TRACES_SAMPLER decides for each batch as it does for each request, while a
 * child span (inSpan) follows its parent's decision. Spans go over OTLP/HTTP to a receiver in this file, as a
 * collector would get them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inLinkedRoot, inSpan, startTracing } from '../../observability/tracing';

interface Received {
  name: string;
  traceId: string;
  parentSpanId: string;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
}

const received: Received[] = [];
let server: Server;
let endpoint = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          scopeSpans: {
            spans: {
              name: string;
              traceId: string;
              parentSpanId?: string;
              links?: { traceId: string; spanId: string }[];
              attributes?: { key: string; value: Record<string, unknown> }[];
            }[];
          }[];
        }[];
      };
      for (const rs of body.resourceSpans)
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            received.push({
              name: s.name,
              traceId: s.traceId,
              parentSpanId: s.parentSpanId ?? '',
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])),
            });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A sampled span of another process (the activity's, as the Temporal interceptor makes it active). */
const PARENT = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };

/** Under the sampled parent: a child span, and a linked root holding a span of its own; what the receiver got. */
async function spansWith(sampler: Record<string, string>): Promise<Received[]> {
  received.length = 0;
  const before = { ...process.env };
  Object.assign(process.env, sampler);
  const tracing = startTracing({ endpoint, serviceName: 'tracing-test' });
  process.env = before;
  await context.with(trace.setSpanContext(ROOT_CONTEXT, PARENT), async () => {
    await inSpan('child', {}, async () => {});
    await inLinkedRoot('batch', { 'propsync.subscription_id': 'wsub_1' }, async (span) => {
      await inSpan('attempt', { 'propsync.delivery_id': 'wdel_1' }, async () => {});
      span.setAttributes({ 'propsync.succeeded': 1 });
    });
  });
  await tracing.shutdown(); // exports what it holds
  return [...received];
}

describe('inLinkedRoot', () => {
  it('starts a trace of its own, linked to the active span, whose spans are its children', async () => {
    const spans = await spansWith({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' });
    const by = (name: string) => spans.find((s) => s.name === name)!;
    expect(spans.map((s) => s.name).sort()).toEqual(['attempt', 'batch', 'child']);
    expect(by('child')).toMatchObject({ traceId: PARENT.traceId, parentSpanId: PARENT.spanId });
    expect(by('batch').traceId).not.toBe(PARENT.traceId);
    expect(by('batch')).toMatchObject({ parentSpanId: '', links: [{ traceId: PARENT.traceId, spanId: PARENT.spanId }] });
    expect(by('batch').attributes).toEqual({ 'propsync.subscription_id': 'wsub_1', 'propsync.succeeded': 1 });
    expect(by('attempt')).toMatchObject({ traceId: by('batch').traceId });
    expect(by('attempt').parentSpanId).not.toBe('');
  });

  it('is sampled on its own: a ratio of 0 drops the batch and its spans, while a child keeps its parent’s decision', async () => {
    const spans = await spansWith({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    expect(spans.map((s) => s.name)).toEqual(['child']);
  });
});
