/**
 * The CLI's HTTP client of the admin API: JSON in and out, problem+json turned into one readable line (and, for a
 * 422 naming several fields, a line more for each) that names the verb's flags where the API names its fields.
 */

/** A failure to show the operator as one line on stderr, with the process exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

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
  /** `fields`: the flags of the verb that calls, to name in its errors instead of the API's field names. */
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly fields: FieldFlags = {},
  ) {}

  /** Sends a request to /admin/v1<path>; returns the parsed JSON body (null for 204). */
  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.baseUrl.replace(/\/$/, '')}/admin/v1${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach the admin API at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new CliError(`${method} ${url} answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
      }
    }
    if (!res.ok) throw new CliError(problemLine(res.status, parsed as Problem | null, this.fields));
    return parsed as T;
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
