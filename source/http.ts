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
 *   for 429 and for failures before anything was sent (connection refused, DNS lookup failed, host unreachable).
 */
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

/** Error codes of a network failure that happened before any byte of the request was sent. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** The `code`s along a fetch failure's cause chain (and inside an AggregateError of several connect attempts). */
function errorCodes(err: unknown, depth = 0): string[] {
  if (!err || typeof err !== 'object' || depth > 5) return [];
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  const own = typeof e.code === 'string' ? [e.code] : [];
  const nested = Array.isArray(e.errors) ? e.errors.flatMap((x) => errorCodes(x, depth + 1)) : [];
  return [...own, ...nested, ...errorCodes(e.cause, depth + 1)];
}

/** What came back from one request, for the dialect to read. */
export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
}

/** One request: what it is called in messages (`sendLeases`, `POST /v1/leases`) and whether it is a write. */
export interface RequestOf {
  label: string;
  url: string;
  init: RequestInit;
  write: boolean;
}

export class SourceHttp {
  readonly opts: typeof DEFAULTS;
  private readonly fetchFn: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: ConnectorOptions = {}) {
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
    this.opts = { ...DEFAULTS, ...given } as typeof DEFAULTS;
    this.fetchFn = options.fetch ?? fetch;
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
      const res = await this.fetchFn(req.url, { ...req.init, signal: AbortSignal.timeout(this.opts.timeoutMs) });
      reply = { status: res.status, headers: res.headers, text: await res.text() };
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
