/**
 * The export engine: one attempt of an automation run streams the automation's entity, exactly as its list endpoint
 * would serve it with the automation's filters, from the cache into a CSV file delivered to the destination (the
 * body of an HTTP PUT or POST, or a file in a directory under the export root). Postgres writes the CSV: one
 * `COPY (SELECT …) TO STDOUT` (db/exports.ts, where the file format is spelt out) whose output goes to the
 * destination as it comes, with backpressure all the way (the destination's socket, the COPY stream, the database
 * connection), so the file is never whole in memory and no record is decoded in JavaScript.
 *
 * The COPY is the only statement of one REPEATABLE READ, read-only transaction on a connection of its own: the file is
 * one snapshot of the cache, so a record whose sort value changes while it is written is neither skipped nor repeated.
 * That transaction stays open while the bytes go out (the exception to "no network call inside a transaction"):
 * it writes nothing and takes no row lock (only ACCESS SHARE on the tables it reads, which waits out DDL alone), it
 * ends with the attempt's time-out (its statement_timeout), and a failure leaves nothing ambiguous to settle; what it
 * costs is a connection and, for its length, holding back vacuum's horizon. Spooling to a local file first would
 * close it sooner but write every byte twice and start the upload only at the end: an HTTP destination asks for it
 * only when it needs a `content-length` (`content_length: true`; S3 and MinIO presigned URLs refuse a chunked body),
 * and then the connection is closed once the file is whole on disk, before it is sent.
 *
 * Failure: an ExportError, permanent (the automation's settings or the destination are wrong: a 4xx, a 501 or 505, a
 * refused address, a directory outside the root or missing; retrying cannot help) or transient (408, 429, other 5xx,
 * the network, the time-out, the database, the worker's disk for a spooled file). A cancelled attempt rethrows its
 * signal's reason. Nothing is left behind: no request left open, no temporary file, no connection.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { constants as fsConstants, createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { access, mkdir, mkdtemp, open, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { exportCopyStatement, openExportConnection } from '../db/exports';
import type { ListFilters } from '../db/queries';
import type { automations } from '../db/schema';
import { escapeFormulasOf, RECORD_FIELDS } from '../domain/automations';
import type { Entity } from '../domain/cdm';
import { LIST_QUERIES } from '../domain/filters';
import { openAutomationHeaders, SecretError, type Keyring } from '../domain/secrets';
import { defaultResolver, GuardRefusal, lookupThrough, refusalOf, type Resolver } from './address-guard';
import { gatherWrites } from './gather-writes';

/** The default of EXPORT_TIMEOUT_MS: how long one attempt may take in all. */
const DEFAULT_EXPORT_TIMEOUT_MS = 3_600_000;

export interface ExportDeps {
  /** The cache's database: each attempt opens a connection of its own (db/exports.ts openExportConnection). */
  databaseUrl: string;
  secrets: Keyring;
  /** EXPORT_ROOT: directory destinations are relative to it and never leave it. */
  exportRoot: string;
  /** One limit for the whole attempt: reading the cache, connecting, sending, the response. */
  timeoutMs?: number;
  /** Name resolution for HTTP destinations (the SSRF guard checks what it returns); tests map names to loopback. */
  resolver?: Resolver;
}

export class ExportError extends Error {
  override name = 'ExportError';
  constructor(
    message: string,
    /** Retrying cannot help: the run fails at once. */
    readonly permanent: boolean,
    /** The destination's HTTP status, when it answered. */
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

type AutomationRow = typeof automations.$inferSelect;
/** What an export reads of an automation (a full row will do). */
export type ExportedAutomation = Pick<
  AutomationRow,
  'id' | 'entity' | 'organizationId' | 'integrationId' | 'filters' | 'columns' | 'destination' | 'destinationHeaders'
>;

export interface ExportInput {
  automation: ExportedAutomation;
  integration: { id: string; organizationId: string; mode: 'test' | 'live' };
  /** `<automation name>-<run id>.csv` (exportFileName): the directory file's name, the HTTP body's filename. */
  fileName: string;
  /** Aborting stops reading and sending and cleans up; the attempt then rethrows the signal's reason. */
  signal?: AbortSignal;
  /** Records written so far (for heartbeats); called often, so it must be cheap. */
  onProgress?: (records: number) => void;
}

/**
 * UTF-8 with a byte order mark (without it Excel reads the file in the machine's legacy code page and garbles
 * non-ASCII); the rest is Postgres's CSV (LF line ends; db/exports.ts).
 */
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** What goes to the destination per write: the COPY's small chunks (often a record each) gathered, as a write per record costs more than the record. */
const WRITE_BYTES = 64 * 1024;

/** Stream the automation's export to its destination; never the whole file in memory. */
export async function exportAutomation(deps: ExportDeps, input: ExportInput): Promise<{ records: number; bytes: number }> {
  const { automation, integration } = input;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_EXPORT_TIMEOUT_MS;
  const statement = exportStatementOf(automation, integration);

  // One signal stops everything: the caller's cancellation or the attempt's time-out, whichever comes first.
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new ExportError(`the export timed out after ${timeoutMs / 1000} s`, false)), timeoutMs);
  const cancel = () => stop.abort(input.signal?.reason ?? new ExportError('the export was cancelled', false));
  if (input.signal?.aborted) cancel();
  else input.signal?.addEventListener('abort', cancel, { once: true });

  let bytes = BOM.length;
  let records = () => 0;
  const gather = gatherWrites(WRITE_BYTES, {
    head: BOM,
    onChunk: (chunk) => {
      bytes += chunk.length;
      input.onProgress?.(records());
    },
  });

  let sink: Sink | undefined;
  let db: Awaited<ReturnType<typeof openExportConnection>> | undefined;
  try {
    stop.signal.throwIfAborted();
    try {
      db = await untilAborted(openExportConnection(deps.databaseUrl, { timeoutMs }), stop.signal);
    } catch (err) {
      throw stop.signal.aborted ? err : cacheFailure(err);
    }
    const destination = automation.destination;
    sink =
      destination.type !== 'http'
        ? await openDirectory(deps.exportRoot, destination.path, input.fileName)
        : destination.content_length === true
          ? await openSpooledHttp(deps, destination, headersOf(deps, automation), integration.mode === 'live', input.fileName)
          : openHttp(deps, destination, headersOf(deps, automation), integration.mode === 'live', input.fileName);
    let copy;
    try {
      copy = await untilAborted(db.copy(statement), stop.signal);
    } catch (err) {
      throw stop.signal.aborted ? err : cacheFailure(err);
    }
    records = copy.records;
    await pipeline(copy.rows, gather, sink.writable, { signal: stop.signal }).catch((err: unknown) => {
      // The COPY's own failure (the database, its time-out), unless the destination's side broke first.
      if (!sink?.failure && !stop.signal.aborted && isDatabaseError(err)) throw cacheFailure(err);
      throw err;
    });
    // A spooled file is whole on disk: its connection goes back now, not after the upload.
    if (sink.spooled) await db.close();
    await sink.commit(stop.signal);
    input.onProgress?.(records());
    return { records: records(), bytes };
  } catch (err) {
    await sink?.discard();
    throw classify(err, stop.signal, sink);
  } finally {
    clearTimeout(timer);
    input.signal?.removeEventListener('abort', cancel);
    await db?.close();
  }
}

/** Errors of postgres.js (the server's, or the connection's). */
function isDatabaseError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Error & { severity?: string; code?: string };
  return (
    e.name === 'PostgresError' ||
    e.severity !== undefined ||
    (typeof e.code === 'string' && e.code.startsWith('CONNECT')) ||
    e.code === 'CONNECTION_CLOSED' ||
    e.code === 'CONNECTION_DESTROYED' ||
    e.code === 'CONNECTION_ENDED'
  );
}

/** The cache's side (the database) failed: another attempt may do better. */
function cacheFailure(err: unknown): ExportError {
  if (err instanceof ExportError) return err;
  // A system error by its code and call: its message names the database's address or socket path (the tenant gets it).
  const why = err instanceof Error ? (systemErrorOf(err) ?? err.message) : String(err);
  return new ExportError(`reading the cache failed: ${why}`, false, undefined, { cause: err });
}

// ---------------------------------------------------------------------------------------------------------------
// What to export
// ---------------------------------------------------------------------------------------------------------------

/** The COPY statement an attempt runs for this automation (bench:export's floor runs it too). */
export function exportStatementOf(automation: ExportedAutomation, integration: ExportInput['integration']): string {
  return exportCopyStatement(automation.entity, { organizationId: integration.organizationId, mode: integration.mode }, filtersOf(automation, integration), {
    fields: fieldsOf(automation),
    escapeFormulas: escapeFormulasOf(automation.destination),
  });
}

function fieldsOf(automation: ExportedAutomation): readonly string[] {
  const all = RECORD_FIELDS[automation.entity];
  if (automation.columns === null) return all;
  const unknown = automation.columns.filter((c) => !all.includes(c));
  if (automation.columns.length === 0) throw new ExportError('the automation names no columns to export', true);
  if (unknown.length > 0) throw new ExportError(`the automation names columns a ${automation.entity} does not have: ${unknown.join(', ')}`, true);
  return automation.columns;
}

/**
 * The automation's filters, parsed by its entity's list endpoint schema (so they mean what they mean there), without
 * a page, and always within the automation's own integration whatever they say.
 */
function filtersOf(automation: ExportedAutomation, integration: ExportInput['integration']): ListFilters<Entity> {
  if (automation.integrationId !== integration.id || automation.organizationId !== integration.organizationId) {
    throw new ExportError(`automation ${automation.id} does not belong to integration ${integration.id}`, true);
  }
  const parsed = LIST_QUERIES[automation.entity].safeParse(automation.filters ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'filters'}: ${i.message}`).join('; ');
    throw new ExportError(`the automation's filters are invalid: ${issues}`, true);
  }
  const { limit: _limit, offset: _offset, ...filters } = parsed.data as Record<string, unknown>;
  return { ...filters, integration_id: [integration.id] } as ListFilters<Entity>;
}

function headersOf(deps: ExportDeps, automation: ExportedAutomation): Record<string, string> {
  try {
    return openAutomationHeaders(deps.secrets, automation);
  } catch (err) {
    if (err instanceof SecretError) throw new ExportError(`the destination headers cannot be read: ${err.message}`, true);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Destinations
// ---------------------------------------------------------------------------------------------------------------

/** Where the bytes go: written through `writable`, then committed (delivered) or discarded (nothing left behind). */
interface Sink {
  writable: Writable;
  commit(signal: AbortSignal): Promise<void>;
  discard(): Promise<void>;
  /** The destination's own verdict (an HTTP status), which explains any error the stream raised after it. */
  readonly failure?: ExportError;
  /** How a stream error of this destination is classified. */
  classify(err: Error & { code?: string }): ExportError;
  /** The whole file is on local disk when `writable` finishes: the cache is no longer needed while it is sent. */
  readonly spooled?: boolean;
}

/** The temporary folders of spooled exports (`content_length`), under os.tmpdir(). */
const SPOOL_PREFIX = 'propsync-export-';
/** A socket's errors, which the database's connection passes on as they are (not the spool file's). */
const SOCKET_ERRORS = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Removes the spool folders that no attempt can still be using: made more than `olderThanMs` ago (an attempt's whole
 * time-out, EXPORT_TIMEOUT_MS, and a minute) by a worker that died before it removed them (SIGKILL, out of memory), so
 * tenant data does not stay on the worker's disk nor fill it. Answers how many it removed; what it cannot read or
 * remove is left (another user's, a file system gone read-only).
 */
export async function sweepSpoolFolders(olderThanMs: number, now = Date.now()): Promise<number> {
  const dir = os.tmpdir();
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith(SPOOL_PREFIX)) continue;
    const folder = path.join(dir, name);
    const info = await stat(folder).catch(() => undefined);
    if (!info?.isDirectory() || now - info.mtimeMs <= olderThanMs) continue;
    await rm(folder, { recursive: true, force: true }).then(
      () => removed++,
      () => {},
    );
  }
  return removed;
}

/** An HTTP destination as stored (db/schema/automations.ts). */
type HttpDestination = { url: string; method?: 'PUT' | 'POST'; content_length?: boolean };

/** Headers a destination may not set: they describe the connection and the framing, which are ours. */
const RESERVED_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer']);
/** Response bytes kept for the error message of a refusal. */
const EXCERPT_BYTES = 300;
/** Node's errors for a URL or header it will not send: the automation's settings, not the network. */
const INVALID_REQUEST = new Set(['ERR_INVALID_URL', 'ERR_INVALID_HTTP_TOKEN', 'ERR_INVALID_CHAR', 'ERR_UNESCAPED_CHARACTERS', 'ERR_INVALID_PROTOCOL']);
/** Added to a refusal of a chunked body that looks like a refusal of chunked bodies (S3 and MinIO presigned URLs: 501 naming Transfer-Encoding; 411). */
const CHUNKED_HINT = '(the destination may not accept a chunked upload: set "content_length": true on the destination)';

/** An HTTP destination's request, checked as far as it can be before a byte is read. */
interface HttpTarget {
  url: URL;
  method: 'PUT' | 'POST';
  headers: Record<string, string>;
  guard: boolean;
  resolver: Resolver;
}

/**
 * The URL (and, for live integrations, the SSRF guard of webhooks: https only, and never to a loopback, private or
 * link-local address, before or after DNS) and the headers of an HTTP destination.
 */
function httpTargetOf(
  deps: ExportDeps,
  destination: HttpDestination,
  destinationHeaders: Record<string, string>,
  guard: boolean,
  fileName: string,
): HttpTarget {
  let url: URL;
  try {
    url = new URL(destination.url);
  } catch {
    throw new ExportError('the destination URL is not a valid URL', true);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ExportError(`the destination URL must be http(s), not ${url.protocol}`, true);
  const refusal = refusalOf(url, guard);
  if (refusal) throw new ExportError(refusal, true);

  const headers: Record<string, string> = { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': contentDisposition(fileName) };
  // The destination's own headers come last, so they may name another content type (a presigned URL may require one).
  for (const [name, value] of Object.entries(destinationHeaders)) {
    if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
  }
  return { url, method: destination.method ?? 'PUT', headers, guard, resolver: deps.resolver ?? defaultResolver };
}

/** One request to an HTTP destination, open: its body is written to `request`, its answer settles `answered`. */
interface HttpRequest {
  request: http.ClientRequest;
  /** The destination's 2xx; rejected by its refusal or the request's error. */
  answered: Promise<void>;
  readonly failure?: ExportError;
  /** The request's own error, which explains the stream errors that follow it. */
  readonly requestError?: Error & { code?: string };
  /** A 2xx came after the whole body was written: delivered, whatever the request's stream says after it. */
  readonly delivered: boolean;
  classify(err: Error & { code?: string }): ExportError;
}

/**
 * Opens the request: with `length`, a body of that many bytes (`content-length`; `written()` says how many are
 * written), else a chunked one. No redirect is followed; a refusal (any answer but a 2xx) stops the body at once, and
 * is said with the start of the answer's body.
 */
function requestOf(target: HttpTarget, length?: { bytes: number; written: () => number }): HttpRequest {
  const chunked = length === undefined;
  const framing = chunked ? {} : { 'content-length': String(length.bytes) };
  let request: http.ClientRequest;
  try {
    request = (target.url.protocol === 'https:' ? https : http).request(target.url, {
      method: target.method,
      headers: { ...target.headers, ...framing },
      // A connection of its own (no pool), resolved through the guard: the address checked is the one connected to.
      agent: false,
      lookup: lookupThrough(target.resolver, target.guard),
    });
  } catch (err) {
    throw unsendable(err);
  }

  let failure: ExportError | undefined;
  let answer: { resolve: () => void; reject: (err: Error) => void };
  const answered = new Promise<void>((resolve, reject) => (answer = { resolve, reject }));
  answered.catch(() => {}); // awaited by commit() only if the body went out
  // The request's own error explains the stream errors that follow it (writing to a request already destroyed).
  let requestError: (Error & { code?: string }) | undefined;
  /** A 2xx that came before the whole file was sent (a destination that answers on the headers). */
  let earlyOk: number | undefined;
  let ok = false;
  request.on('error', (err) => {
    requestError ??= err;
    answer.reject(err);
  });
  request.on('response', (res) => {
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      // With a length, the destination has the whole body once it has that many bytes: its 2xx may come before our
      // end of the request is finished.
      if (!request.writableFinished && !(length && length.written() >= length.bytes)) earlyOk = status;
      ok = true;
      res.resume();
      answer.resolve();
      return;
    }
    // A refusal can come before the body is sent (401, 413): stop sending, and say why with the start of its body.
    const chunks: Buffer[] = [];
    let size = 0;
    const refuse = () => {
      if (failure) return;
      const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8').replace(/\s+/g, ' ').trim();
      // A destination that cannot take a body of unknown length (S3: 501 NotImplemented, <Header>Transfer-Encoding</Header>; 411 Length Required).
      const hint = chunked && (status === 501 || status === 411 || /transfer-encoding/i.test(excerpt)) ? ` ${CHUNKED_HINT}` : '';
      failure = new ExportError(`the destination answered HTTP ${status}${excerpt ? `: ${excerpt}` : ''}${hint}`, isPermanentStatus(status), status);
      answer.reject(failure);
      request.destroy(failure);
    };
    res.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= EXCERPT_BYTES) refuse();
    });
    res.once('end', refuse);
    res.once('error', refuse);
    res.once('aborted', refuse);
    // A body that never ends does not turn the refusal into a time-out.
    setTimeout(refuse, 1_000).unref();
  });

  return {
    request,
    answered,
    get failure() {
      return failure;
    },
    get requestError() {
      return requestError;
    },
    get delivered() {
      return ok && earlyOk === undefined;
    },
    classify(streamError) {
      const err = requestError ?? streamError;
      if (err instanceof GuardRefusal) return new ExportError(err.message, true, undefined, { cause: err });
      if (err.code && INVALID_REQUEST.has(err.code)) return new ExportError(`the request cannot be sent: ${err.code}`, true, undefined, { cause: err });
      // It was reached and said yes, then hung up on the rest: another attempt would be cut short the same way.
      if (earlyOk !== undefined) {
        return new ExportError(
          `the destination answered HTTP ${earlyOk} before it had the whole file, then closed the connection (${err.code ?? err.message}): the file did not arrive whole`,
          true,
          earlyOk,
          { cause: err },
        );
      }
      return new ExportError(`the destination cannot be reached: ${err.code ? `${err.code}: ` : ''}${err.message}`, false, undefined, { cause: err });
    },
  };
}

/** Node refused to make the request (a header it cannot send): the automation's settings. */
function unsendable(err: unknown): ExportError {
  // Header names and values the destination holds never appear in the message (they may be credentials).
  const code = (err as { code?: string }).code;
  return new ExportError(
    `the request cannot be sent: ${code === 'ERR_INVALID_HTTP_TOKEN' || code === 'ERR_INVALID_CHAR' ? 'a destination header is invalid' : (err as Error).message}`,
    true,
  );
}

/**
 * The file as the body of one PUT (or POST), sent chunked as it is written (no `content-length`: its length is known
 * only at the end). The request goes out before the COPY starts.
 */
function openHttp(deps: ExportDeps, destination: HttpDestination, destinationHeaders: Record<string, string>, guard: boolean, fileName: string): Sink {
  const sent = requestOf(httpTargetOf(deps, destination, destinationHeaders, guard, fileName));
  // The request goes out now, before the COPY is sent: the destination sees the upload start (and may refuse it)
  // while the database starts on the file.
  sent.request.flushHeaders();
  return {
    writable: sent.request,
    get failure() {
      return sent.failure;
    },
    commit: (signal) => untilAborted(sent.answered, signal),
    async discard() {
      sent.request.destroy();
    },
    classify: (err) => sent.classify(err),
  };
}

/**
 * The file as the body of one PUT (or POST) with a `content-length` (`content_length: true`: S3 and MinIO presigned
 * URLs refuse a chunked body, Azure Blob requires the length): written whole to a temporary file first, then sent
 * from it, streamed. The file is in a directory of its own under the OS's temporary directory (mode 0700, the file
 * 0600), removed when the attempt ends however it ends. The cost: the export's size on the worker's disk, and the
 * upload starts only when the COPY has ended. A disk error (ENOSPC) is transient.
 */
async function openSpooledHttp(
  deps: ExportDeps,
  destination: HttpDestination,
  destinationHeaders: Record<string, string>,
  guard: boolean,
  fileName: string,
): Promise<Sink> {
  // Everything that can be refused is, before anything is written: the URL, the address as written, the headers.
  const target = httpTargetOf(deps, destination, destinationHeaders, guard, fileName);
  try {
    for (const [name, value] of Object.entries(target.headers)) {
      http.validateHeaderName(name);
      http.validateHeaderValue(name, value);
    }
  } catch (err) {
    throw unsendable(err);
  }
  let folder: string;
  try {
    folder = await mkdtemp(path.join(os.tmpdir(), SPOOL_PREFIX));
  } catch (err) {
    throw spoolFailure('created', err);
  }
  const file = path.join(folder, 'export.csv');
  const writable = createWriteStream(file, { flags: 'wx', mode: 0o600 });
  let reading: ReadStream | undefined;
  let sent: HttpRequest | undefined;
  /** The temporary file's own failure (writing it, or reading it back), which explains the stream errors after it. */
  let fileError: { verb: 'written' | 'read'; err: Error } | undefined;
  // Its own failure only (an fs error, with its syscall): not one the pipeline destroys it with (the database's, the
  // signal's; a connection the database lost is a socket's error, with a syscall too).
  writable.on('error', (err: Error & { code?: string }) => {
    if ('syscall' in err && !SOCKET_ERRORS.has(err.code ?? '')) fileError ??= { verb: 'written', err };
  });

  let removed: Promise<void> | undefined;
  const remove = () =>
    (removed ??= (async () => {
      // Closed first: a file still being opened would otherwise appear after its removal.
      writable.destroy();
      reading?.destroy();
      await Promise.all([closed(writable), reading && closed(reading)]);
      await rm(folder, { recursive: true, force: true }).catch(() => {});
    })());

  return {
    writable,
    spooled: true,
    get failure() {
      return sent?.failure;
    },
    async commit(signal) {
      try {
        await closed(writable);
        if (fileError) throw fileError.err;
        signal.throwIfAborted();
        const { size } = await stat(file);
        const source = createReadStream(file, { highWaterMark: WRITE_BYTES });
        reading = source;
        let written = 0;
        const request = requestOf(target, { bytes: size, written: () => written });
        sent = request;
        // Its own failure only: an error the pipeline destroys it with (the request's, the signal's) is not the file's.
        source.on('error', (err: Error & { code?: string }) => {
          if (!request.requestError && !request.failure && !signal.aborted && err.code !== 'ERR_STREAM_PREMATURE_CLOSE') fileError ??= { verb: 'read', err };
        });
        const sending = pipeline(source, request.request, { signal });
        // After the pipeline's own listener, which has written the chunk to the request when this one runs.
        source.on('data', (chunk: string | Buffer) => {
          written += chunk.length;
        });
        try {
          await sending;
        } catch (err) {
          // The destination had every byte and said 2xx before the request was ended (which then closes early).
          if (signal.aborted || fileError || !request.delivered) throw err;
        }
        await untilAborted(request.answered, signal);
      } finally {
        await remove();
      }
    },
    async discard() {
      sent?.request.destroy();
      await remove();
    },
    classify(err) {
      if (fileError) return spoolFailure(fileError.verb, fileError.err);
      // Before the request, only the temporary file can fail.
      return sent ? sent.classify(err) : spoolFailure('written', err);
    },
  };
}

/** The temporary file of a `content_length` export failed (a full disk): another attempt (or worker) may do better. */
function spoolFailure(verb: 'created' | 'written' | 'read', err: unknown): ExportError {
  const e: Error & { code?: string } = err instanceof Error ? err : new Error(String(err));
  // Not the folder's path: the message is also the AUTOMATION_FAILED event's, which the organization gets.
  const why = systemErrorOf(e) ?? e.message;
  const need = verb === 'read' ? '' : `: with "content_length": true the worker needs free space there for the whole file`;
  return new ExportError(`the export's temporary file could not be ${verb} in the worker's temporary directory (TMPDIR; ${why})${need}`, false, undefined, {
    cause: e,
  });
}

/** Resolves when a file stream has closed (its descriptor released), whether or not it failed. */
function closed(stream: { readonly closed: boolean; once(event: 'close', listener: () => void): unknown }): Promise<void> {
  if (stream.closed) return Promise.resolve();
  return new Promise((resolve) => stream.once('close', () => resolve()));
}

/** 4xx but 408 (time-out) and 429 (rate limit) will not change on a retry, nor will a redirect (not followed), nor a 501 or a 505 (the request's kind is not supported). */
function isPermanentStatus(status: number): boolean {
  if (status === 408 || status === 429) return false;
  if (status === 501 || status === 505) return true;
  return status < 500;
}

/** `attachment; filename="…"`, with an RFC 6266 `filename*` when the name is not plain ASCII (HTTP headers are not UTF-8). */
function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  if (ascii === fileName) return `attachment; filename="${fileName}"`;
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** File system errors that another attempt will meet again: the directory (or its permissions) is wrong. */
const PERMANENT_FS = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP', 'EEXIST']);

/**
 * A file in a directory under the export root, written under a temporary name in that directory and renamed when
 * complete, so a reader sees the whole file or none. The directory must exist, be writable and stay within the root,
 * symbolic links followed: both paths are compared real.
 */
async function openDirectory(exportRoot: string, destinationPath: string, fileName: string): Promise<Sink> {
  const shown = JSON.stringify(destinationPath);
  const outside = () => new ExportError(`the destination directory ${shown} is outside the export root`, true);
  const root = path.resolve(exportRoot);
  const target = path.resolve(root, destinationPath);
  if (!isWithin(root, target)) throw outside();
  if (fileName !== path.basename(fileName) || fileName === '.' || fileName === '..' || fileName.includes('\0')) {
    throw new ExportError(`the file name ${JSON.stringify(fileName)} is not a plain file name`, true);
  }
  // The root is the deployment's to have; a destination directory is the automation owner's to create.
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  let directory: string;
  try {
    directory = await realpath(target);
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Relative to EXPORT_ROOT. The message names no server path: it is also the AUTOMATION_FAILED event's, which the
    // organization's receivers and events feed get (the admin API's check of a new destination says where it looked).
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new ExportError(
        `the destination directory ${shown} does not exist in the export root (EXPORT_ROOT); create it there, or change the automation's destination`,
        true,
      );
    }
    // Its permissions (EACCES on a directory on the way): another attempt meets them again.
    if (code !== undefined && PERMANENT_FS.has(code))
      throw new ExportError(`the destination directory ${shown} cannot be reached: ${code}`, true, undefined, { cause: err });
    throw err;
  }
  if (!isWithin(realRoot, directory)) throw outside();
  if (!(await stat(directory)).isDirectory()) throw new ExportError(`the destination ${shown} is not a directory`, true);
  try {
    await access(directory, fsConstants.W_OK | fsConstants.X_OK);
  } catch {
    throw new ExportError(`the destination directory ${shown} is not writable`, true);
  }

  const final = path.join(directory, fileName);
  // Hidden, and short whatever the file name's length; `wx`: never through a file (or link) already there.
  const temporary = path.join(directory, `.${randomUUID()}.csv.part`);
  const writable = createWriteStream(temporary, { flags: 'wx' });
  return {
    writable,
    async commit(signal) {
      // On disk before it gets its name: a crash must not leave a complete-looking name over a short file.
      const handle = await open(temporary, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      signal.throwIfAborted();
      await rename(temporary, final);
    },
    async discard() {
      // Closed first: a file still being opened would otherwise appear after its removal.
      writable.destroy();
      if (!writable.closed) await once(writable, 'close').catch(() => {});
      await rm(temporary, { force: true }).catch(() => {});
    },
    classify(err) {
      const permanent = err.code !== undefined && PERMANENT_FS.has(err.code);
      return new ExportError(`the file cannot be written to ${shown}: ${err.code ?? err.message}`, permanent, undefined, { cause: err });
    },
  };
}

/** A Node system error as its code and call (`EACCES (mkdir)`), or undefined for another error. */
function systemErrorOf(e: Error & { code?: string; syscall?: string }): string | undefined {
  return typeof e.code === 'string' && typeof e.syscall === 'string' ? `${e.code} (${e.syscall})` : undefined;
}

/** Whether `inner` is `outer` or below it (both absolute and normalized). */
function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

function classify(err: unknown, stop: AbortSignal, sink: Sink | undefined): Error {
  // The destination's answer explains the stream error its refusal caused.
  if (sink?.failure) return sink.failure;
  // The time-out (an ExportError), or the caller's cancellation as its own reason.
  if (stop.aborted) return stop.reason instanceof Error ? stop.reason : new ExportError('the export was cancelled', false);
  if (err instanceof ExportError) return err;
  if (err instanceof GuardRefusal) return new ExportError(err.message, true, undefined, { cause: err });
  const e = err instanceof Error ? (err as Error & { code?: string }) : new Error(String(err));
  // Failing to reach the destination's directory, or (a bug) before it was opened: worth another attempt. A system
  // error by its code and call, not its message, which names the server's paths (the message goes to the tenant).
  if (!sink) return new ExportError(`the export failed: ${systemErrorOf(e) ?? e.message}`, false, undefined, { cause: e });
  return sink.classify(e);
}

/** `promise`, or the signal's reason as soon as it is aborted. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}
