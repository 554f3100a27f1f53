/**
 * The export bench's floor, a process of its own for the whole bench (as the worker is):
 * `node --import tsx bench/lib/export-floor.ts` with DATABASE_URL (the bench's cache database).
 *
 * Postgres writes the CSV itself: `COPY (<query>) TO STDOUT WITH (FORMAT csv, HEADER)`, streamed by postgres.js as it
 * comes off the connection into the body of one chunked HTTP PUT to the destination, with backpressure (the pipe
 * waits for the socket, the connection waits for the pipe). The request's headers go out before the COPY is sent,
 * as an export's go out (with its CSV header) before its first query, so the destination's clock starts at the same
 * point for both.
 *
 * It also times the parts of an export's reading, nothing sent (`read` commands): `driver`, the same query's rows
 * through a postgres.js client configured as the worker's (db/client.ts createDb), in cursor batches of 2,000, each
 * row parsed and dropped; `records`, db/queries.ts streamRecords as an export calls it (keyset batches of 2,000 and
 * their lease residents, decoded into API records), each batch dropped.
 *
 * Commands arrive as JSON lines on stdin: {id, kind: 'copy', query, url} or {id, kind: 'read', part, query,
 * principal, integrationId}; each is answered by one stdout line `floor-result <id> <json>` (ExportFloorResult) or
 * `floor-error <id> <message>`. Prints `floor ready` first.
 */
import http from 'node:http';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { loadConfigOrExit } from '../../config';
import { createDb } from '../../db/client';
import { streamRecords, type Principal } from '../../db/queries';

export type ExportFloorCommand =
  | {
      id: string;
      kind: 'copy';
      /** A SELECT with its values written in (COPY takes no parameters). */
      query: string;
      url: string;
    }
  | { id: string; kind: 'read'; part: 'driver' | 'records'; query: string; principal: Principal; integrationId: string };

export interface ExportFloorResult {
  /** copy: from the request opened to the destination's answer read; read: from the first query to the last row. */
  ms: number;
  /** read: rows read. */
  rows?: number;
}

const config = loadConfigOrExit();

/**
 * One connection, whose socket the floor makes (postgres.js's `socket` option) so that it can resume it: postgres.js
 * 3.4 pauses the socket when a COPY's data fills the stream's buffer and, when CopyDone arrives in the same chunk,
 * never resumes it, so the next query on the connection never returns (porsager/postgres#499; the fix, PR #1016, is
 * not released). It hung the second or the fifth floor here.
 */
let socket: net.Socket | undefined;
const sql = postgres(config.DATABASE_URL, {
  max: 1,
  onnotice: () => {},
  connection: { application_name: 'propsync-bench-export-floor' },
  socket: (o: { host: string[]; port: number[]; path?: string | false }) => (socket = o.path ? net.connect(o.path) : net.connect(o.port[0]!, o.host[0]!)),
} as postgres.Options<Record<string, never>>);

/** The reading parts run on a client configured as the worker's (its type parsers, no statement time-out). */
const db = createDb(config.DATABASE_URL, { max: 2, applicationName: 'propsync-bench-export-floor', statementTimeoutMs: 0 });

async function run(cmd: ExportFloorCommand): Promise<ExportFloorResult> {
  if (cmd.kind === 'read') return read(cmd);
  try {
    return await copyTo(cmd);
  } finally {
    if (socket?.isPaused()) socket.resume();
  }
}

async function read(cmd: Extract<ExportFloorCommand, { kind: 'read' }>): Promise<ExportFloorResult> {
  const t0 = performance.now();
  let rows = 0;
  if (cmd.part === 'driver') {
    for await (const batch of db.$client.unsafe(cmd.query).cursor(2000)) rows += batch.length;
  } else {
    for await (const batch of streamRecords(db, 'lease', cmd.principal, { integration_id: [cmd.integrationId] })) rows += batch.length;
  }
  return { ms: performance.now() - t0, rows };
}

async function copyTo(cmd: Extract<ExportFloorCommand, { kind: 'copy' }>): Promise<ExportFloorResult> {
  const t0 = performance.now();
  const req = http.request(cmd.url, { method: 'PUT', headers: { 'content-type': 'text/csv; charset=utf-8' }, agent: false });
  const answered = new Promise<number>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
  });
  answered.catch(() => {});
  req.flushHeaders();
  const copy = await sql.unsafe(`copy (${cmd.query}) to stdout with (format csv, header)`).readable();
  await pipeline(copy, req);
  const status = await answered;
  if (status < 200 || status >= 300) throw new Error(`the destination answered ${status}`);
  return { ms: performance.now() - t0 };
}

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  if (!line.trim()) return;
  // One command at a time, in order.
  queue = queue.then(async () => {
    let cmd: ExportFloorCommand | undefined;
    try {
      cmd = JSON.parse(line) as ExportFloorCommand;
      console.log(`floor-result ${cmd.id} ${JSON.stringify(await run(cmd))}`);
    } catch (err) {
      console.log(`floor-error ${cmd?.id ?? '?'} ${err instanceof Error ? (err.stack ?? err.message).replace(/\n/g, ' | ') : String(err)}`);
    }
  });
});
lines.once('close', () => void queue.then(shutdown));
async function shutdown() {
  await Promise.all([sql.end({ timeout: 5 }), db.$client.end({ timeout: 5 })]);
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown());
console.log('floor ready');
