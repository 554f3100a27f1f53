/**
 * The export bench's floor, a process of its own for the whole bench (as the worker is):
 * `node --import tsx bench/lib/export-floor.ts` with DATABASE_URL (the bench's cache database).
 *
 * Postgres writes the CSV itself: the export's own COPY statement (db/exports.ts exportCopyStatement: the same
 * columns, the lease residents joined in, the same filters and order, the same formula escaping), streamed by
 * postgres.js as it comes off one connection kept open for the whole bench, into the body of one chunked HTTP PUT
 * to the destination, with backpressure (the pipe waits for the socket, the connection waits for the pipe). The
 * request's headers go out before the COPY is sent, as an export's go out before its COPY, so the destination's
 * clock starts at the same point for both. The COPY's chunks (often a row each) go out gathered into 64 KiB writes,
 * by the export's own gatherWrites: one write a row costs more than Postgres takes to make it, and a floor should be
 * the fastest plain way. Nothing else: no Temporal, no activity, no connection to open, no byte order mark.
 *
 * Commands arrive as JSON lines on stdin: {id, statement, url}; each is answered by one stdout line
 * `floor-result <id> <json>` (ExportFloorResult) or `floor-error <id> <message>`. Prints `floor ready` first.
 */
import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { gatherWrites } from '../../activities/gather-writes';
import { loadConfigOrExit } from '../../config';
import { EXPORT_SESSION } from '../../db/exports';
import { serveCommands } from './commands';

export interface ExportFloorCommand {
  id: string;
  /** The COPY statement, complete (its values written in). */
  statement: string;
  url: string;
}

export interface ExportFloorResult {
  /** From the request opened to the destination's answer read. */
  ms: number;
  /** Rows the COPY sent (the header not counted), as postgres.js counted its messages. */
  rows: number;
}

const config = loadConfigOrExit();

/** One connection for the whole bench, with the export's session settings (no statement time-out). */
const sql = postgres(config.DATABASE_URL, {
  max: 1,
  onnotice: () => {},
  connection: { application_name: 'propsync-bench-export-floor', ...EXPORT_SESSION },
});

async function copyTo(cmd: ExportFloorCommand): Promise<ExportFloorResult> {
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
  const copy = (await sql.unsafe(cmd.statement, [], { prepare: false }).readable()) as NodeJS.ReadableStream & { copyRows?: number };
  await pipeline(copy, gatherWrites(64 * 1024), req);
  const status = await answered;
  if (status < 200 || status >= 300) throw new Error(`the destination answered ${status}`);
  return { ms: performance.now() - t0, rows: (copy.copyRows ?? 0) - 1 };
}

serveCommands('floor', copyTo, shutdown);
async function shutdown() {
  await sql.end({ timeout: 5 });
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown());
console.log('floor ready');
