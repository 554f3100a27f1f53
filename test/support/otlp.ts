/**
 * An OTLP/HTTP trace receiver for tests: it takes `POST /v1/traces` bodies of ExportTraceServiceRequest as JSON (what
 * @opentelemetry/exporter-trace-otlp-http sends) and flattens them into `spans`, as a collector would show them.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  /** The exporting process's `service.name`. */
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  /** The spans this one links to (another trace's), as `<traceId>/<spanId>`. */
  links: string[];
}

export interface OtlpReceiver {
  /** What to set OTEL_EXPORTER_OTLP_ENDPOINT to. */
  endpoint: string;
  /** Every span received, in arrival order. */
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

interface Attr {
  key: string;
  value: Record<string, unknown>;
}
interface RawSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Attr[];
  links?: { traceId: string; spanId: string }[];
}
interface ExportRequest {
  resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: RawSpan[] }[] }[];
}

const valueOf = (v: Record<string, unknown> | undefined): unknown => (v ? Object.values(v)[0] : undefined);

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
        for (const rs of body.resourceSpans) {
          const service = String(valueOf(rs.resource.attributes.find((a) => a.key === 'service.name')?.value));
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
                links: (s.links ?? []).map((l) => `${l.traceId}/${l.spanId}`),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
