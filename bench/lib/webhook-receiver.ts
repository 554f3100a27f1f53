/**
 * The webhook bench's receiver, run as its own process: `node --import tsx bench/lib/webhook-receiver.ts`.
 * Answers every POST at once with 200 and records it (arrival time, the headers that matter, the raw body), and
 * nothing else: the bench verifies the signatures afterwards, from the records, so checking costs the receiver
 * nothing. Prints `receiver listening on <port>` once up.
 *
 *   POST <any path>      a delivery: 200 "ok"
 *   GET  /_stats         {"requests": n}
 *   GET  /_records?from=i  the records from index i on, as JSON
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, PREVIOUS_SIGNATURE_HEADER, SIGNATURE_HEADER } from '../../domain/signature';

export interface ReceivedRecord {
  /** Epoch milliseconds when the whole request had arrived. */
  at: number;
  eventId: string | null;
  attempt: string | null;
  signature: string | null;
  previousSignature: string | null;
  /** The body exactly as received (UTF-8). */
  raw: string;
}

const records: ReceivedRecord[] = [];
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? (v[0] ?? null) : (v ?? null));

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    const url = new URL(req.url ?? '/', 'http://receiver');
    const body =
      url.pathname === '/_stats'
        ? JSON.stringify({ requests: records.length })
        : url.pathname === '/_records'
          ? JSON.stringify(records.slice(Number(url.searchParams.get('from') ?? 0)))
          : null;
    res.writeHead(body === null ? 404 : 200, { 'content-type': 'application/json' }).end(body ?? '{}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    records.push({
      at: Date.now(),
      eventId: one(req.headers[EVENT_ID_HEADER]),
      attempt: one(req.headers[ATTEMPT_HEADER]),
      signature: one(req.headers[SIGNATURE_HEADER]),
      previousSignature: one(req.headers[PREVIOUS_SIGNATURE_HEADER]),
      raw: Buffer.concat(chunks).toString('utf8'),
    });
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => console.log(`receiver listening on ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
