/**
 * Every failure becomes problem+json through api/problem.ts: thrown ApiErrors, Hono's own HTTPExceptions, unknown
 * paths (404), known paths with the wrong method (405) and anything unexpected (a logged 500).
 */
import type { Context, ErrorHandler, Hono, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from '../../config/logger';
import { isDatabaseUnavailable } from '../../db/errors';
import { ApiError, problem, type ProblemBases, type ProblemSlug } from '../problem';

const SLUG_OF_STATUS: Record<number, ProblemSlug> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_error',
  429: 'rate_limit_exceeded',
  431: 'request_header_fields_too_large',
  503: 'service_unavailable',
};

/** Hono's own messages for these only repeat the title; say what to do instead. */
const FRAMEWORK_DETAIL: Record<number, string> = {
  415: 'The request body must be JSON, sent with `Content-Type: application/json`.',
};

/** Seconds a client is asked to wait after a 503 for an unreachable database. */
const DATABASE_RETRY_AFTER_S = 5;

/**
 * The ApiError a failure is answered with (the unexpected ones logged with the request they failed): the app's error
 * handler and the read fast path (api/fast-reads.ts) both answer through it.
 */
export function apiErrorOf(err: unknown, logger: Logger, request: { request_id: unknown; method: string; path: string }): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof HTTPException && err.status < 500) {
    const slug = SLUG_OF_STATUS[err.status] ?? 'bad_request';
    return new ApiError(slug, FRAMEWORK_DETAIL[err.status] ?? (err.message || 'The request could not be processed.'));
  }
  if (isDatabaseUnavailable(err)) {
    // Not a bug: the database is down, cut off or overloaded. Clients retry; operators see it in the metrics.
    logger.warn({ err, ...request }, 'database unavailable');
    return new ApiError('service_unavailable', 'The database cannot be reached right now. Retry after the time in Retry-After.', {
      headers: { 'retry-after': String(DATABASE_RETRY_AFTER_S) },
    });
  }
  logger.error({ err, ...request }, 'unhandled error');
  return new ApiError('internal_error', 'An unexpected error occurred. It is safe to retry with exponential backoff; quote the request_id if it persists.');
}

export function errorHandler(bases: ProblemBases, logger: Logger): ErrorHandler {
  return (err, c) => problem(c, bases, apiErrorOf(err, logger, { request_id: c.get('requestId' as never), method: c.req.method, path: c.req.path }));
}

/** Turns a Hono route path (`/v1/leases/:id`, `/admin/*`) into a matcher for 405 detection. */
function matcherOf(path: string): RegExp {
  const body = path
    .split('/')
    .map((seg) => {
      if (seg === '*') return '.*';
      if (seg.startsWith(':')) return '[^/]+';
      return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${body}/?$`);
}

/**
 * 404 for unknown paths, 405 (with `Allow`) for a known path asked with another method. The route table is read
 * lazily, once every route (including mounted sub-apps) is registered.
 */
export function notFoundHandler(app: Hono<any>, bases: ProblemBases): NotFoundHandler {
  let table: { method: string; match: RegExp }[] | undefined;
  return (c: Context) => {
    table ??= app.routes.filter((r) => r.method !== 'ALL').map((r) => ({ method: r.method, match: matcherOf(r.path) }));
    const allowed = new Set(table.filter((r) => r.match.test(c.req.path)).map((r) => r.method));
    if (allowed.size > 0 && !allowed.has(c.req.method)) {
      if (allowed.has('GET')) allowed.add('HEAD');
      const allow = [...allowed].sort().join(', ');
      return problem(
        c,
        bases,
        new ApiError('method_not_allowed', `${c.req.method} is not allowed on ${c.req.path}; allowed: ${allow}.`, { headers: { allow } }),
      );
    }
    return problem(c, bases, new ApiError('not_found', `No endpoint ${c.req.method} ${c.req.path}.`));
  };
}
