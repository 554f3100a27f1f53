/**
 * The CLI's HTTP client of the admin API: JSON in and out, problem+json turned into one readable line (and, for a
 * 422 naming several fields, a line more for each).
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

export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
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
    if (!res.ok) throw new CliError(problemLine(res.status, parsed as Problem | null));
    return parsed as T;
  }
}

function problemLine(status: number, p: Problem | null): string {
  const title = p?.title ?? `HTTP ${status}`;
  const detail = p?.detail ? `: ${p.detail}` : '';
  const rid = p?.request_id ? ` (request ${p.request_id})` : '';
  // One field's error is the detail itself; several are only named there, so each is said on a line of its own.
  const fields = p?.errors && p.errors.length > 1 ? p.errors.map((e) => `\n  ${e.pointer ?? '?'}: ${e.detail ?? ''}`).join('') : '';
  return `${status} ${title}${detail}${rid}${fields}`;
}
