/**
 * The CLI's HTTP client of the admin API: JSON in and out, problem+json turned into one readable line (and, for a
 * 422 naming several fields, a line more for each) that names the verb's flags where the API names its fields.
 */

/** A failure to show the operator as one line on stderr, with the process exit code. */
export class CliError extends Error {
  /**
   * `transient`: a failure that may pass by itself, which a `--wait` polling something rides out: the API did not
   * answer in time, the connection failed, or a 502, 503 or 504 (a proxy, or what the API depends on, being down).
   */
  constructor(
    message: string,
    readonly exitCode = 1,
    readonly transient = false,
  ) {
    super(message);
  }
}

/** `--request-timeout`'s default, in seconds: how long one request may take, its answer's body included. */
export const REQUEST_TIMEOUT_S = 30;

/** The answers a proxy in front of the API, or the API while what it depends on is down, gives for a while. */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);
/** Why a request never left: no connection was made (the request cannot have been applied). */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/** Text on one line (a stored error, a body that is not JSON): stderr gets exactly one line per failure. */
export const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Milliseconds as seconds for a message: `30`, `1.5`. */
const seconds = (ms: number) => String(Number((ms / 1000).toFixed(1)));

interface Problem {
  title?: string;
  status?: number;
  detail?: string;
  request_id?: string;
  errors?: Array<{ pointer?: string; detail?: string }>;
}

/**
 * The flag each API field comes from, where their names differ: a field's JSON pointer (`/source/size`), a top-level
 * field's or query parameter's name (`url`, `event_type`), or one of their parents (`filters` names `/filters/status`
 * too, as `--filter status`). Values are as shown: `--endpoint`.
 */
export type FieldFlags = Record<string, string>;

export class AdminClient {
  /**
   * `fields`: the flags of the verb that calls, to name in its errors instead of the API's field names.
   * `timeoutMs`: how long a request may take, from its start to the last byte of its answer.
   */
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly fields: FieldFlags = {},
    private readonly timeoutMs = REQUEST_TIMEOUT_S * 1000,
  ) {}

  /**
   * Sends a request to /admin/v1<path>; returns the parsed JSON body (null for 204). `opts.timeoutMs`: a shorter
   * deadline for this one (what is left of a `--wait --timeout`). A redirect is not followed (it would drop the
   * token on another origin, and turn a POST into a GET): it is refused with the address it points to.
   */
  async request<T = unknown>(method: string, path: string, body?: unknown, opts: { timeoutMs?: number } = {}): Promise<T> {
    const url = `${this.baseUrl.replace(/\/$/, '')}/admin/v1${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeoutMs = Math.max(1, Math.min(this.timeoutMs, opts.timeoutMs ?? Infinity));
    // One deadline for the whole exchange: the answer's headers and its body.
    const signal = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual', signal });
    } catch (err) {
      throw this.failure(err, timeoutMs, 'before', method);
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => undefined);
      throw new CliError(this.redirected(url, path, res));
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw this.failure(err, timeoutMs, 'during', method);
    }
    const transient = TRANSIENT_STATUSES.has(res.status);
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new CliError(`${method} ${url} answered ${res.status} with a body that is not JSON: ${oneLine(text).slice(0, 200)}`, 1, transient);
      }
    }
    if (!res.ok) throw new CliError(problemLine(res.status, parsed as Problem | null, this.fields), 1, transient);
    return parsed as T;
  }

  /**
   * A request that got no (whole) answer: its time-out passed, or the connection failed `before` the answer or
   * `during` its body. A change (any method but GET) that may have reached the API may also have been applied: the
   * message says to look before sending it again (the CLI never resends one by itself).
   */
  private failure(err: unknown, timeoutMs: number, when: 'before' | 'during', method: string): CliError {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err as Error).message;
    const timedOut = (err as Error).name === 'TimeoutError';
    // Before any answer, an error without a code is the request's own (it was never sent).
    // A TLS failure (a certificate refused) ends the connection before any byte of the request is sent.
    const unsent = !timedOut && when === 'before' && (!cause?.code || NOT_CONNECTED.has(cause.code) || /CERT|TLS|SSL/.test(cause.code));
    const mayHaveApplied = method !== 'GET' && !unsent ? `; the ${method} may have been applied: look before sending it again` : '';
    if (timedOut) return new CliError(`the admin API at ${this.baseUrl} did not answer within ${seconds(timeoutMs)} s${mayHaveApplied}`, 1, true);
    if (when === 'during') return new CliError(`the admin API at ${this.baseUrl} broke off its answer: ${why}${mayHaveApplied}`, 1, true);
    // Connected, then closed before any answer: it was reached.
    if (cause?.code === 'UND_ERR_SOCKET')
      return new CliError(`the admin API at ${this.baseUrl} closed the connection without answering${mayHaveApplied}`, 1, true);
    return new CliError(`cannot reach the admin API at ${this.baseUrl}: ${why}${mayHaveApplied}`, 1, true);
  }

  /**
   * What to say of a redirect: where it points, as the address to give `--url` when it moved the whole admin API
   * (the same /admin/v1/… at another base), else the whole Location.
   */
  private redirected(url: string, path: string, res: Response): string {
    const location = res.headers.get('location');
    if (!location)
      return `the admin API at ${this.baseUrl} answered ${res.status} (a redirect) without saying where to; set --url or PUBLIC_BASE_URL to its address`;
    let to: string;
    try {
      to = new URL(location, url).href;
    } catch {
      to = location;
    }
    const tail = `/admin/v1${path}`;
    if (to.endsWith(tail)) to = to.slice(0, -tail.length) || to;
    return `the admin API at ${this.baseUrl} redirects to ${to}; set --url or PUBLIC_BASE_URL to that address`;
  }
}

/** A segment of a JSON pointer as written (`~1` is `/`, `~0` is `~`). */
const unescape = (segment: string) => segment.replace(/~1/g, '/').replace(/~0/g, '~');

/**
 * The flag a field's pointer or name comes from (`url` → `--endpoint`, `/source/size` → `--size`), or what is inside
 * one (`/filters/status` → `--filter status`, `/event_types/1` → `--events item 2`); undefined when none is known.
 */
export function flagOf(pointer: string, fields: FieldFlags): string | undefined {
  if (fields[pointer] !== undefined) return fields[pointer];
  if (!pointer.startsWith('/')) return undefined;
  const segments = pointer.slice(1).split('/');
  for (let i = segments.length - 1; i > 0; i--) {
    const parent = i === 1 ? unescape(segments[0]!) : `/${segments.slice(0, i).join('/')}`;
    const flag = fields[parent];
    if (flag === undefined) continue;
    const rest = segments.slice(i).map(unescape).join('/');
    return /^\d+$/.test(rest) ? `${flag} item ${Number(rest) + 1}` : `${flag} ${rest}`;
  }
  return undefined;
}

function problemLine(status: number, p: Problem | null, fields: FieldFlags): string {
  const title = p?.title ?? `HTTP ${status}`;
  const errors = (p?.errors ?? []).map((e) => ({ ...e, flag: e.pointer === undefined ? undefined : flagOf(e.pointer, fields) }));
  let text = p?.detail;
  // One field's error is the detail itself: said with the flag it came from instead, when its name differs.
  if (errors.length === 1 && errors[0]!.flag !== undefined) text = `${errors[0]!.flag}: ${errors[0]!.detail ?? ''}`;
  else for (const e of errors) if (e.flag !== undefined && text) text = text.replaceAll(`\`${e.pointer}\``, `\`${e.flag}\``);
  const detail = text ? `: ${text}` : '';
  const rid = p?.request_id ? ` (request ${p.request_id})` : '';
  // Several are only named there, so each is said on a line of its own.
  const lines = errors.length > 1 ? errors.map((e) => `\n  ${e.flag ?? e.pointer ?? '?'}: ${e.detail ?? ''}`).join('') : '';
  return `${status} ${title}${detail}${rid}${lines}`;
}
