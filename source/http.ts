/**
 * The HTTP of every dialect's client: one request with a timeout, the retries of a read, and the one classification
 * of a failure that every dialect shares. A client only says what its wire means beyond HTTP (an error body, a
 * business code in a 200 reply); what is transient, what may have been applied and how long to wait is decided here.
 *
 * Reads (a client's `retrying`) handle failures per request:
 * - network errors, timeouts (AbortSignal), 408 and 5xx are retried with exponential backoff and jitter, up to
 *   `maxAttempts` in all, then thrown as SourceTransientError;
 * - 429 waits for `Retry-After` (seconds or an HTTP date) and retries within the same attempt budget; a wait longer
 *   than `maxRetryAfterMs` is not slept through but thrown as SourceTransientError carrying `retryAfterMs`;
 * - 401, 403 and other 4xx and a malformed reply are SourcePermanentError (the client builds it: only it can read
 *   the source's own message out of the body).
 *
 * Writes (a client's `once`) make exactly one request: resending a write is decided by the caller (a workflow with
 * durable timers), which alone knows whether a create may already have been applied. The outcome is classified:
 * - rejected: SourcePermanentError (4xx other than 408 and 429, a malformed reply), its message carrying the
 *   source's own;
 * - transient: SourceTransientError (network error, timeout, 408, 429 with `retryAfterMs` and no sleep, 5xx).
 *   `maybeApplied` is true when the request may have reached the source and been applied (a timeout, a connection
 *   lost after sending, 408, 5xx): a create is then looked for with findCreated before it is sent again. It is false
 *   for 429 and for failures before anything was sent (connection refused, DNS lookup failed, host unreachable, no
 *   connection within the timeout).
 *
 * Requests go out through node:http(s) on keep-alive agents, not the global fetch: in bench:writes the worker spent
 * 3–4 ms less CPU per write (two source requests) without fetch's WHATWG streams, abort signals and Request objects.
 * What fetch did besides is done here too: gzip, deflate and br replies are decoded, and a user agent is sent.
 * Redirects are not followed (a 3xx reply goes to the dialect, which refuses it): a write must not be re-sent
 * elsewhere, and a base_url that moved is the operator's to change.
 */
import http from 'node:http';
import https from 'node:https';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { SourceTransientError } from './connector';

export interface ConnectorOptions {
  /** Milliseconds one HTTP request may take before it is aborted and counted as a transient failure. */
  timeoutMs?: number;
  /** Attempts per read request (the first included) before a transient failure is thrown. */
  maxAttempts?: number;
  /** First backoff delay; it doubles with each attempt (with jitter). */
  backoffMs?: number;
  /** Longest Retry-After the client sleeps through itself. */
  maxRetryAfterMs?: number;
  /** Send requests through this fetch instead (tests: counting requests, injecting network faults). */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

const DEFAULTS = { timeoutMs: 30_000, maxAttempts: 5, backoffMs: 250, maxRetryAfterMs: 30_000 };

/** A `Retry-After` value (whole seconds or an HTTP date) in milliseconds from `now`; undefined when unreadable. */
function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The code of a request whose connection was not made within the timeout (nothing was sent). */
const CONNECT_TIMEOUT = 'PROPSYNC_CONNECT_TIMEOUT';

/** Error codes of a network failure that happened before any byte of the request was sent. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', CONNECT_TIMEOUT]);

/** The `code`s along a fetch failure's cause chain (and inside an AggregateError of several connect attempts). */
function errorCodes(err: unknown, depth = 0): string[] {
  if (!err || typeof err !== 'object' || depth > 5) return [];
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  const own = typeof e.code === 'string' ? [e.code] : [];
  const nested = Array.isArray(e.errors) ? e.errors.flatMap((x) => errorCodes(x, depth + 1)) : [];
  return [...own, ...nested, ...errorCodes(e.cause, depth + 1)];
}

/**
 * Connections to sources are kept open between requests (a sync's pages, a write and its read-back), and closed after
 * 4 s idle, or sooner when the server's `Keep-Alive: timeout` says so: before it closes them itself, so that a request
 * rarely goes out on a connection the server is closing (whose write could not be known to have arrived).
 */
const KEEP_ALIVE = { keepAlive: true, timeout: 4_000 };
const AGENTS = { 'http:': new http.Agent(KEEP_ALIVE), 'https:': new https.Agent(KEEP_ALIVE) } as const;

/** A reply's body by its Content-Encoding (none, or `identity`: as it came). A Map: the name is the source's to choose. */
const DECODERS = new Map<string, (b: Buffer) => Promise<Buffer>>([
  ['', async (b) => b],
  ['identity', async (b) => b],
  ['gzip', promisify(zlib.gunzip)],
  ['x-gzip', promisify(zlib.gunzip)],
  ['deflate', promisify(zlib.inflate)],
  ['br', promisify(zlib.brotliDecompress)],
]);

/**
 * One request over node:http(s), its reply read whole (and decoded) within `timeoutMs`. Rejects as fetch does: a
 * `TimeoutError` when the time ran out once connected, the socket's error (with its `code`) otherwise, and an error
 * coded CONNECT_TIMEOUT when no connection was made in time.
 */
function send(url: string, init: SourceRequestInit, timeoutMs: number): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const protocol = target.protocol === 'https:' ? 'https:' : 'http:';
    const { body } = init;
    const headers: Record<string, string> = { 'user-agent': 'propsync', 'accept-encoding': 'gzip, deflate, br', ...init.headers };
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    let connected = false;
    const fail = (err: Error) => {
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const timer = setTimeout(() => {
      const err = connected
        ? Object.assign(new Error(`no reply within ${timeoutMs} ms`), { name: 'TimeoutError' })
        : Object.assign(new Error(`no connection within ${timeoutMs} ms`), { code: CONNECT_TIMEOUT });
      fail(err);
    }, timeoutMs);
    const req = (protocol === 'https:' ? https : http).request(target, { method: init.method, headers, agent: AGENTS[protocol] }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', fail);
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const encoding = String(res.headers['content-encoding'] ?? '')
          .trim()
          .toLowerCase();
        const decode = DECODERS.get(encoding);
        if (!decode) return fail(new Error(`the reply is in an encoding this client cannot read (${encoding})`));
        decode(raw).then(
          (bytes) => {
            clearTimeout(timer);
            const replyHeaders = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              if (value !== undefined) replyHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
            }
            resolve({ status: res.statusCode ?? 0, headers: replyHeaders, text: bytes.toString('utf8') });
          },
          (err: Error) => fail(new Error(`the reply's ${encoding} body could not be decoded: ${err.message}`)),
        );
      });
    });
    req.on('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    req.on('error', fail);
    req.end(body);
  });
}

/** What came back from one request, for the dialect to read. */
export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
}

/** What a dialect sends: a method, plain headers (lower-case names) and a text body. */
interface SourceRequestInit {
  method: string;
  headers?: Record<string, string>;
  body?: string;
}

/** One request: what it is called in messages (`sendLeases`, `POST /v1/leases`) and whether it is a write. */
export interface RequestOf {
  label: string;
  url: string;
  init: SourceRequestInit;
  write: boolean;
}

export class SourceHttp {
  readonly opts: typeof DEFAULTS;
  private readonly fetchFn: typeof fetch | undefined;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: ConnectorOptions = {}) {
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
    this.opts = { ...DEFAULTS, ...given } as typeof DEFAULTS;
    this.fetchFn = options.fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  /**
   * A status that is a transient failure (429, 408, 5xx) as its error, else undefined. Also for a status a source
   * reports inside a 200 reply. `detail` is the source's own message, when it gave one.
   */
  transientStatus(
    label: string,
    status: number,
    write: boolean,
    retryAfter?: string | null,
    detail?: string,
    reported = false,
  ): SourceTransientError | undefined {
    const mayHave = write ? '; the write may have been applied' : '';
    const said = detail ? `: ${detail}` : '';
    const what = reported ? `source reported ${status}` : status === 429 ? 'rate limited by the source (429)' : `source answered HTTP ${status}`;
    if (status === 429) {
      const wait = reported && !retryAfter ? undefined : (parseRetryAfter(retryAfter) ?? this.opts.backoffMs);
      return new SourceTransientError(`${label}: ${what}${said}`, 429, wait);
    }
    if (status >= 500 || status === 408) return new SourceTransientError(`${label}: ${what}${said}${mayHave}`, status, undefined, write);
    return undefined;
  }

  /**
   * One HTTP request with the timeout. A network failure, a timeout and a transient status are returned as
   * SourceTransientError (the caller decides whether to retry); any other reply is returned for the dialect to read.
   */
  async exchange(req: RequestOf): Promise<HttpReply | SourceTransientError> {
    const mayHave = req.write ? '; the write may have been applied' : '';
    let reply: HttpReply;
    try {
      if (this.fetchFn) {
        const res = await this.fetchFn(req.url, { ...req.init, signal: AbortSignal.timeout(this.opts.timeoutMs) });
        reply = { status: res.status, headers: res.headers, text: await res.text() };
      } else {
        reply = await send(req.url, req.init, this.opts.timeoutMs);
      }
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError' || e.name === 'AbortError') {
        return new SourceTransientError(`${req.label}: no reply within ${this.opts.timeoutMs} ms${mayHave}`, undefined, undefined, req.write);
      }
      // A connection never made carried nothing; one lost later may have carried the whole request.
      const sent = !errorCodes(e).some((code) => NOT_SENT.has(code));
      return new SourceTransientError(
        `${req.label}: network error: ${(e.cause as Error | undefined)?.message ?? e.message}${sent ? mayHave : ''}`,
        undefined,
        undefined,
        req.write && sent,
      );
    }
    return this.transientStatus(req.label, reply.status, req.write, reply.headers.get('retry-after')) ?? reply;
  }

  /**
   * A read: `attempt` (one request, read by the dialect) again after a transient failure, with backoff or the
   * source's Retry-After, up to maxAttempts; a permanent failure is thrown by `attempt` and ends it at once.
   */
  async retrying<T>(label: string, attempt: () => Promise<T | SourceTransientError>): Promise<T> {
    let last: SourceTransientError | undefined;
    for (let n = 1; n <= this.opts.maxAttempts; n++) {
      if (last) await this.sleep(last.retryAfterMs ?? this.opts.backoffMs * 2 ** (n - 2) * (0.75 + Math.random() * 0.5));
      const outcome = await attempt();
      if (!(outcome instanceof SourceTransientError)) return outcome;
      last = outcome;
      if (outcome.retryAfterMs !== undefined && outcome.retryAfterMs > this.opts.maxRetryAfterMs) throw outcome;
    }
    throw last ?? new SourceTransientError(`${label}: no attempt made`);
  }

  /** A write: exactly one attempt, never retried here; a transient failure is thrown for the caller to decide. */
  async once<T>(attempt: () => Promise<T | SourceTransientError>): Promise<T> {
    const outcome = await attempt();
    if (outcome instanceof SourceTransientError) throw outcome;
    return outcome;
  }
}
