/**
 * The webhook bench's receivers, each run as its own process: `node --import tsx bench/lib/webhook-receiver.ts
 * [--hang]`. Prints `receiver listening on <port>` once up.
 *
 * Healthy (the default): answers every POST at once with 200 and records it (arrival time and order, path, the
 * headers that matter, the raw body), and nothing else: the bench verifies the signatures afterwards, from the
 * records, so checking costs the receiver nothing. Deliveries and the bench's plain HTTP floor are told apart by
 * their path only; the receiver handles both alike.
 *
 * Hanging (`--hang`): reads every POST whole, records it, and never answers, holding the socket open until the
 * sender gives up (a webhook attempt's 10 s time-out) or the receiver is stopped: a subscriber that has gone away
 * without closing its port.
 *
 *   POST <any path>        a delivery (or a floor request): 200 "ok", or never an answer with --hang
 *   GET  /_stats           {"requests": n, "open": sockets held (--hang)}
 *   GET  /_records?from=i[&limit=n]  the records from index i on (at most n), as JSON (index = arrival order)
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, PREVIOUS_SIGNATURE_HEADER, SIGNATURE_HEADER } from '../../domain/signature';

export interface ReceivedRecord {
  /** Epoch milliseconds when the whole request had arrived. */
  at: number;
  /** The request path (`/hooks` for deliveries, `/floor` for the bench's plain HTTP floor). */
  path: string;
  eventId: string | null;
  attempt: string | null;
  signature: string | null;
  previousSignature: string | null;
  /** The body exactly as received (UTF-8). */
  raw: string;
}

const { values: args } = parseArgs({ options: { hang: { type: 'boolean', default: false }, port: { type: 'string', default: '0' } } });
const HANG = args.hang;

const records: ReceivedRecord[] = [];
/** Responses held open (--hang), until the client goes away or the receiver stops. */
const held = new Set<ServerResponse>();
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? (v[0] ?? null) : (v ?? null));

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    const url = new URL(req.url ?? '/', 'http://receiver');
    const from = Number(url.searchParams.get('from') ?? 0);
    const to = url.searchParams.has('limit') ? from + Number(url.searchParams.get('limit')) : undefined;
    const body =
      url.pathname === '/_stats'
        ? JSON.stringify({ requests: records.length, open: held.size })
        : url.pathname === '/_records'
          ? JSON.stringify(records.slice(from, to))
          : null;
    res.writeHead(body === null ? 404 : 200, { 'content-type': 'application/json' }).end(body ?? '{}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    records.push({
      at: Date.now(),
      path: new URL(req.url ?? '/', 'http://receiver').pathname,
      eventId: one(req.headers[EVENT_ID_HEADER]),
      attempt: one(req.headers[ATTEMPT_HEADER]),
      signature: one(req.headers[SIGNATURE_HEADER]),
      previousSignature: one(req.headers[PREVIOUS_SIGNATURE_HEADER]),
      raw: Buffer.concat(chunks).toString('utf8'),
    });
    if (HANG) {
      held.add(res);
      res.once('close', () => held.delete(res));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
server.keepAliveTimeout = 60_000;
// A hanging receiver keeps its sockets for as long as the client does.
server.requestTimeout = 0;
server.listen(Number(args.port), '127.0.0.1', () =>
  console.log(`receiver listening on ${(server.address() as AddressInfo).port}${HANG ? ' (hanging: never answers)' : ''}`),
);
process.on('SIGTERM', () => {
  for (const res of held) res.destroy();
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
