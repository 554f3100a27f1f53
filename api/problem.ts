/**
 * The one problem+json (RFC 7807) builder. Every error response of the API, public or admin, goes through
 * `problem()`; route code throws `ApiError` and the app's error handler renders it.
 */
import type { Context } from 'hono';

export type ProblemSlug =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'idempotency-key-conflict'
  | 'validation_error'
  | 'payload_too_large'
  | 'request_timeout'
  | 'request_header_fields_too_large'
  | 'unsupported_media_type'
  | 'rate_limit_exceeded'
  | 'internal_error'
  | 'enqueue_failed'
  | 'service_unavailable';

export const TITLES: Record<ProblemSlug, string> = {
  bad_request: 'Bad Request',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not Found',
  method_not_allowed: 'Method Not Allowed',
  conflict: 'Conflict',
  'idempotency-key-conflict': 'Idempotency-Key conflict',
  validation_error: 'Unprocessable Entity',
  payload_too_large: 'Payload Too Large',
  request_timeout: 'Request Timeout',
  request_header_fields_too_large: 'Request Header Fields Too Large',
  unsupported_media_type: 'Unsupported Media Type',
  rate_limit_exceeded: 'Too Many Requests',
  internal_error: 'Internal Server Error',
  enqueue_failed: 'Bad Gateway',
  // Every 5xx but the 502 is the contract's internal_error, by type and title (typeSlugOf).
  service_unavailable: 'Internal Server Error',
};

export const STATUS: Record<ProblemSlug, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  'idempotency-key-conflict': 409,
  validation_error: 422,
  payload_too_large: 413,
  request_timeout: 408,
  request_header_fields_too_large: 431,
  unsupported_media_type: 415,
  rate_limit_exceeded: 429,
  internal_error: 500,
  enqueue_failed: 502,
  service_unavailable: 503,
};

export interface FieldError {
  /** The offending query parameter, header or body field (JSON pointer for nested body fields). */
  pointer: string;
  detail: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  request_id: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/** An error that renders as problem+json. */
export class ApiError extends Error {
  constructor(
    readonly slug: ProblemSlug,
    readonly detail: string,
    readonly opts: { errors?: FieldError[]; headers?: Record<string, string>; extra?: Record<string, unknown>; title?: string } = {},
  ) {
    super(detail);
  }
  get status(): number {
    return STATUS[this.slug];
  }
}

export interface ProblemBases {
  PROBLEM_BASE_URL: string;
  DOCS_BASE_URL: string;
}

/**
 * The slug a problem's `type` names. A dependency that cannot be reached (the database, Temporal, the source) is
 * answered 503 with `Retry-After`, but its class is the contract's one for every 5xx other than the 502:
 * `internal_error`, "Internal Server Error", so a client switching on `type` needs one case for "retry later".
 */
const typeSlugOf = (slug: ProblemSlug): ProblemSlug => (slug === 'service_unavailable' ? 'internal_error' : slug);

/** `type` URI of a problem: `{docs_base}/errors/<slug>`, except the idempotency conflict under `{problem_base}`. */
export function problemType(bases: ProblemBases, slug: ProblemSlug): string {
  return slug === 'idempotency-key-conflict' ? `${bases.PROBLEM_BASE_URL}/idempotency-key-conflict` : `${bases.DOCS_BASE_URL}/errors/${typeSlugOf(slug)}`;
}

export function problemBody(bases: ProblemBases, err: ApiError, instance: string, requestId: string): ProblemBody {
  return {
    type: problemType(bases, err.slug),
    title: err.opts.title ?? TITLES[err.slug],
    status: err.status,
    detail: err.detail,
    instance,
    request_id: requestId,
    ...(err.slug === 'validation_error' ? { errors: err.opts.errors ?? [] } : {}),
    ...err.opts.extra,
  };
}

/** Status, headers and body of the problem response to `err`: what problem() and the read fast path (api/fast-reads.ts) send. */
export function problemParts(
  bases: ProblemBases,
  err: ApiError,
  instance: string,
  requestId: string,
): { status: number; headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = { 'content-type': 'application/problem+json', ...err.opts.headers };
  if (requestId) headers['x-request-id'] = requestId;
  return { status: err.status, headers, body: JSON.stringify(problemBody(bases, err, instance, requestId)) };
}

/** Render an ApiError on a Hono context. The request id comes from the request-id middleware. */
export function problem(c: Context, bases: ProblemBases, err: ApiError): Response {
  const requestId = (c.get('requestId' as never) as string | undefined) ?? c.res.headers.get('x-request-id') ?? '';
  const { status, headers, body } = problemParts(bases, err, new URL(c.req.url).pathname, requestId);
  return new Response(body, { status, headers });
}
