/**
 * The OTLP/HTTP sink of the benches' observability comparison, run as its own process (`node --import tsx
 * bench/lib/span-sink.ts`), so that taking the spans costs the measured processes and the bench nothing: it
 * answers every export at once with 200 and keeps only counts, by span name, so a bench can check that tracing was
 * on while it should be (and off while it should not). Prints `span sink listening on <port>` once up; started and
 * read by bench/lib/observed.ts.
 *
 * A collector runs on a machine of its own; this one shares the bench's two cores with what is measured, so it
 * does no more than it must while a measurement runs: an export's body is kept as it came and parsed (and its spans
 * counted) only when the counts are asked for, between measurements.
 *
 *   POST /v1/traces   an ExportTraceServiceRequest as JSON (what @opentelemetry/exporter-trace-otlp-http sends)
 *   GET  /_stats      {"exports": n, "spans": {"<name>": n, …}, "unparsed": n}
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

interface ExportRequest {
  resourceSpans?: { scopeSpans?: { spans?: { name?: string }[] }[] }[];
}

let exports = 0;
let unparsed = 0;
const spans: Record<string, number> = {};
/** Export bodies taken and not yet counted. */
let pending: Buffer[] = [];

function countPending(): void {
  for (const raw of pending) {
    try {
      const body = JSON.parse(raw.toString('utf8')) as ExportRequest;
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans[s.name ?? ''] = (spans[s.name ?? ''] ?? 0) + 1;
    } catch {
      // Counted: the bench's checks fail on a sink that could not read what it was sent.
      unparsed++;
    }
  }
  pending = [];
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/_stats') {
    countPending();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, spans, unparsed }));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    exports++;
    pending.push(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`span sink listening on ${(server.address() as AddressInfo).port}`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));
