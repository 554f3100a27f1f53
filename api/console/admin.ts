/**
 * The console's only way to read or change anything: the admin API itself, called in-process with the admin token.
 * Every rule (validation, plan limits, SSRF guards, state transitions, Temporal calls) is the admin API's, and a
 * refusal comes back as the admin API's own problem detail, which the console shows as it is.
 */
import { Hono, type Context } from 'hono';
import type { ApiDeps } from '../deps';
import { errorHandler } from '../middleware/errors';
import { requestId } from '../middleware/request-id';
import type { ProblemBody } from '../problem';

/** A refusal of the admin API, carried to the console's error page. */
export class AdminProblem extends Error {
  constructor(
    readonly problem: ProblemBody,
    /** The answer's Retry-After (a 429, a 503), passed on to the browser. */
    readonly retryAfter: string | null = null,
  ) {
    super(problem.detail);
  }
}

/** A page of an admin list, as every list endpoint answers it. */
export type { Page } from '../../db/queries';

type Query = Record<string, string | number | undefined>;

export function adminClient(deps: ApiDeps, adminRoutes: Hono) {
  // The admin routes' errors are rendered as the app renders them, so the console sees the same problem bodies.
  const admin = new Hono();
  admin.onError(errorHandler(deps.config, deps.logger));
  // The console's request id, sent below, is the admin answer's too: a refusal's problem body carries it.
  admin.use('*', requestId());
  admin.route('/admin/v1', adminRoutes);

  async function call<T>(c: Context, method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<T> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') qs.set(k, String(v));
    const url = `http://console.internal/admin/v1${path}${qs.size > 0 ? `?${qs}` : ''}`;
    const headers: Record<string, string> = { authorization: `Bearer ${deps.config.ADMIN_TOKEN}` };
    const requestId = c.get('requestId' as never) as string | undefined;
    if (requestId) headers['x-request-id'] = requestId;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await admin.request(url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    if (!res.ok) throw new AdminProblem(JSON.parse(text) as ProblemBody, res.headers.get('retry-after'));
    return JSON.parse(text) as T;
  }

  return {
    get: <T>(c: Context, path: string, query?: Query) => call<T>(c, 'GET', path, { query }),
    post: <T>(c: Context, path: string, body?: unknown) => call<T>(c, 'POST', path, { body: body ?? {} }),
    patch: <T>(c: Context, path: string, body: unknown) => call<T>(c, 'PATCH', path, { body }),
    delete: (c: Context, path: string) => call<void>(c, 'DELETE', path),
  };
}

export type AdminClient = ReturnType<typeof adminClient>;
