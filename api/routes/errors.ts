/**
 * A page for every problem `type` URI, so that the URIs the API puts in error bodies resolve when they point at the
 * running service (the defaults: `{PUBLIC_BASE_URL}/docs/errors/<slug>` and `{PUBLIC_BASE_URL}/problems/<slug>`).
 * Public, like the reference page.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { secureHeaders } from 'hono/secure-headers';
import type { AppEnv } from '../middleware/env';
import { ApiError, STATUS, TITLES, type ProblemSlug } from '../problem';

/** When each problem occurs and what the caller does about it (docs/api.md Errors, docs/decisions.md). */
/** The classes a problem's `type` names (typeSlugOf: a 503 is an internal_error). */
type TypeSlug = Exclude<ProblemSlug, 'service_unavailable'>;

const GUIDE: Record<TypeSlug, { when: string; action: string }> = {
  bad_request: {
    when: 'The request is malformed: a query parameter that cannot be parsed (a non-numeric `limit`, an invalid datetime, date or boolean, a non-UUID `integration_id`, text with a NUL character), a query parameter a list does not know (a misspelt filter), bad JSON, or a missing `Idempotency-Key` header; or bytes that are not an HTTP/1.1 request at all (the connection is then closed).',
    action: 'Fix the request as `detail` says; sending it again unchanged fails again.',
  },
  unauthorized: {
    when: 'The `Authorization: Bearer <API key>` header is missing or malformed, the key is unknown or revoked, or its mode is not served by this deployment.',
    action: 'Send a valid, unrevoked key of the right mode (`sk_live_…` or `sk_test_…`).',
  },
  forbidden: {
    when: 'The key is valid but lacks the permission the endpoint needs (for example the `write` scope).',
    action: 'Use a key with the needed scope.',
  },
  not_found: {
    when: 'The record never existed, belongs to another organization or mode, or is soft-deleted; or the path is unknown.',
    action: 'Check the id and the key; a soft-deleted record is returned with `include_deleted=true`.',
  },
  method_not_allowed: {
    when: 'The path exists but not with this HTTP method.',
    action: 'Use one of the methods in the `Allow` header.',
  },
  conflict: {
    when: 'The request conflicts with the current state of the resource.',
    action: 'Read the resource again and decide; `detail` names the conflict.',
  },
  'idempotency-key-conflict': {
    when: 'An `Idempotency-Key` was reused with a different request (method, path or JSON body).',
    action: 'Use a new key for a new logical write; resend the original request unchanged to get its Operation.',
  },
  validation_error: {
    when: 'The request is well-formed but breaks a rule: a value out of range (`limit` above 100), an unknown `order-by` field, a write to a field that is not writable.',
    action: 'Fix each entry of `errors[]`: `pointer` names the parameter or field, `detail` the rule.',
  },
  payload_too_large: {
    when: 'The request body is larger than the service accepts.',
    action: 'Send a smaller body.',
  },
  request_timeout: {
    when: 'The request line, headers or body did not arrive in full in time; the connection is closed.',
    action: 'Send the whole request promptly, on a new connection.',
  },
  request_header_fields_too_large: {
    when: 'The request line (method and URL) and headers together are larger than the service reads (16 KiB by default); the request is refused before it is routed or authenticated, and the connection is closed.',
    action: 'Send a shorter URL (move long filters into fewer parameters) or fewer, smaller headers, on a new connection.',
  },
  unsupported_media_type: {
    when: 'The request body is not sent as `application/json`.',
    action: 'Send JSON with `Content-Type: application/json`.',
  },
  rate_limit_exceeded: {
    when: "The organization's rate limit, shared by all its keys and all API processes, is exhausted; or (admin API, console sign-in) too many wrong admin tokens came from this address, or began like this one.",
    action:
      'Wait the `Retry-After` seconds; `RateLimit-Policy` names the burst and the per-minute budget, `RateLimit` what is left of the burst and when it is full again: pace at most `q` requests per `w` seconds. While admin-token guesses are throttled, every token, the right one too, is refused until then.',
  },
  internal_error: {
    when: 'A fault inside the service (status 500), or a dependency it needs for this request (the database, Temporal, the source) that cannot be reached now (status 503, with `Retry-After` when it knows how long to wait).',
    action: 'Retry with exponential backoff (after `Retry-After` seconds when it is given); if it persists, report the `request_id`.',
  },
  enqueue_failed: {
    when: 'A write was persisted as an Operation but could not be queued; `detail` carries the Operation id.',
    action: 'Poll the Operation; if it stays non-terminal, resend the original request with the same `Idempotency-Key`.',
  },
};

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch]!);
/** `code` spans for backticks, as in the API's own messages. */
const prose = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>');

function page(slug: TypeSlug): string {
  const { when, action } = GUIDE[slug];
  const status = slug === 'internal_error' ? `${STATUS.internal_error} (or ${STATUS.service_unavailable})` : String(STATUS[slug]);
  const title = `${STATUS[slug]} ${TITLES[slug]}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} (${slug})</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
<p>Problem type <code>${slug}</code>, HTTP status ${status}, title <q>${escapeHtml(TITLES[slug])}</q>.</p>
<h2>When</h2><p>${prose(when)}</p>
<h2>What to do</h2><p>${prose(action)}</p>
<p>Error bodies are <code>application/problem+json</code> with <code>type</code>, <code>title</code>, <code>status</code>,
<code>detail</code>, <code>instance</code> and <code>request_id</code> (equal to the <code>x-request-id</code> header).
See the <a href="/docs">API reference</a>.</p>
</body></html>
`;
}

export function registerErrorDocs(app: OpenAPIHono<AppEnv>): void {
  const serve = (slugs: readonly TypeSlug[]) => (c: Context) => {
    const slug = c.req.param('slug') as TypeSlug;
    if (!slugs.includes(slug)) throw new ApiError('not_found', `No problem type ${slug}.`);
    return c.html(page(slug));
  };
  const all = Object.keys(GUIDE) as TypeSlug[];
  // Static HTML with nothing to load or run: a policy that allows nothing, and never framed (as /docs and the console).
  const headers = secureHeaders({
    contentSecurityPolicy: { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"] },
    referrerPolicy: 'same-origin',
    xFrameOptions: 'DENY',
  });
  // Where problemType() points: every slug under the docs, the idempotency conflict under the problem base.
  app.get('/docs/errors/:slug', headers, serve(all.filter((s) => s !== 'idempotency-key-conflict')));
  app.get('/problems/:slug', headers, serve(['idempotency-key-conflict']));
}
