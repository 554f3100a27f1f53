/**
 * The OpenAPI 3.1 document, generated from the zod schemas the routes validate with, served at /v1/openapi.json,
 * and the Scalar reference page at /docs, whose Content-Security-Policy lets it load from this service only and never
 * be framed. Also the response fragments every route shares.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { maxHeaderSize } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Scalar } from '@scalar/hono-api-reference';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { Hono, type MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';
import type { Config } from '../config';
import type { AppEnv } from './middleware/env';
import { Problem } from './schemas';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request: a parameter that cannot be parsed (non-numeric `limit`, invalid datetime or boolean, non-UUID `integration_id`, text with a NUL character), a query parameter a list does not know (`detail` names it), bad JSON, or a missing `Idempotency-Key` on a write.',
  401: 'Missing, malformed, unknown, revoked or wrong-environment API key.',
  403: 'Insufficient permissions: a valid key without the scope this endpoint needs (`write` for writes).',
  404: 'No such record for this key: it never existed, is soft-deleted (retry with `include_deleted=true`) or belongs to another organization or mode.',
  405: 'Method not allowed on this path.',
  409: 'The `Idempotency-Key` was used before with a different request (type `{problem_base}/idempotency-key-conflict`).',
  413: 'The request body exceeds 256 KiB.',
  415: 'The request body must be JSON (`Content-Type: application/json`).',
  422: 'A parameter that parses but breaks a rule (for example `limit` above 100, an unknown `order-by` field, or a datetime or date outside years 0001 to 9999), or a write body with an invalid, unknown or non-writable field; `errors[]` names each by its pointer.',
  429: 'Organization-wide rate limit exceeded; retry after `Retry-After` seconds.',
  500: 'Server fault; safe to retry with exponential backoff.',
  502: 'The write was stored as an Operation but could not be queued (`enqueue_failed`); `detail` and `operation_id` name the Operation. Poll it, and if it stays `queued`, resend the same request with the same `Idempotency-Key`.',
  503: 'A dependency this request needs (the database; for a write, also Temporal) cannot be reached right now: type `internal_error`, as every 5xx but the 502, with `Retry-After`. Nothing was changed; retry after that many seconds.',
};

const requestIdHeader = { 'x-request-id': { description: 'Correlation id; echoes a valid caller-supplied one.', schema: { type: 'string' as const } } };
/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), and the older three with the burst's figures. */
const rateLimitHeaders = {
  'RateLimit-Policy': {
    description:
      'The organization\'s two policies, shared by all its keys: `"burst";q=<requests at once>;w=<seconds an empty burst takes to refill>, "minute";q=<requests per minute>;w=60`. Sending at most `q` requests per `w` seconds of either policy is never refused.',
    schema: { type: 'string' as const },
    example: '"burst";q=120;w=6, "minute";q=1200;w=60',
  },
  RateLimit: {
    description: 'What is left of the burst: `"burst";r=<requests left now>;t=<seconds until the burst is full again>`.',
    schema: { type: 'string' as const },
    example: '"burst";r=117;t=1',
  },
  'RateLimit-Limit': { description: 'The burst: requests that may be sent at once (the `q` of the burst policy).', schema: { type: 'integer' as const } },
  'RateLimit-Remaining': { description: 'Requests left in the burst now (the `r` of `RateLimit`).', schema: { type: 'integer' as const } },
  'RateLimit-Reset': { description: 'Seconds until the burst is full again (the `t` of `RateLimit`).', schema: { type: 'integer' as const } },
};

export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      {
        description: DESCRIPTIONS[s] ?? 'Error.',
        headers:
          s === 429
            ? { ...requestIdHeader, ...rateLimitHeaders, 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' as const } } }
            : s === 503
              ? { ...requestIdHeader, 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' as const } } }
              : requestIdHeader,
        content: { 'application/problem+json': { schema: Problem } },
      },
    ]),
  );
}

/** Headers of a successful, authenticated response. */
export const okHeaders = { ...requestIdHeader, ...rateLimitHeaders };
export { requestIdHeader };

const BEARER = 'bearerAuth';

export function registerDocs(app: OpenAPIHono<AppEnv>, config: Config): void {
  app.openAPIRegistry.registerComponent('securitySchemes', BEARER, {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key: `sk_live_…` for live mode, `sk_test_…` for test mode.',
  });
  app.doc31('/v1/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Property Data Sync API',
      version: '1.0.0',
      description:
        'Read-mostly REST API over a normalized cache of property-management data. Errors are `application/problem+json` (RFC 7807). ' +
        'Any request may also be refused before it reaches an endpoint, with a problem body, an `x-request-id` and the connection closed: ' +
        `431 (\`request_header_fields_too_large\`) when its request line and headers exceed ${maxHeaderSize / 1024} KiB, 400 when it is not HTTP/1.1, 408 (\`request_timeout\`) when it does not arrive in time. ` +
        'The key prefix selects the mode (`sk_live_` or `sk_test_`).',
    },
    servers: [{ url: config.PUBLIC_BASE_URL }],
    security: [{ [BEARER]: [] }],
  });
  // The reference page's script is served by the service itself (the pinned @scalar/api-reference bundle), never
  // from a public CDN: /docs works offline, behind proxies and on air-gapped installs.
  app.get(SCALAR_SCRIPT_PATH, async (c) => {
    scalarScript ??= readFile(scalarBundlePath());
    return c.body(new Uint8Array(await scalarScript), 200, {
      'content-type': 'application/javascript; charset=utf-8',
      'cache-control': 'public, max-age=86400',
    });
  });
  // Browsers ask every site for /favicon.ico; the service has no icon, and "no content" is an answer, where a 404
  // would be logged as an error in the console of every page (/docs, the console, the error pages).
  app.get('/favicon.ico', (c) => c.body(null, 204, { 'cache-control': 'public, max-age=86400' }));
  const scalar = Scalar(SCALAR_CONFIGURATION);
  // The page is the same on every request: rendered once, so its inline start-up script can be allowed by its hash.
  let page: ScalarPage | undefined;
  app.get(
    '/docs',
    async (_c, next) => {
      page ??= await renderScalar(scalar);
      await next();
    },
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", () => page!.scriptHashes],
        // Scalar inserts its styles (elements and attributes) at run time.
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        // The page's request client calls the API at the document's server URL, which a proxy may put elsewhere.
        connectSrc: ["'self'", new URL(config.PUBLIC_BASE_URL).origin],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
        formAction: ["'self'"],
      },
      referrerPolicy: 'same-origin',
      xFrameOptions: 'DENY',
    }),
    (c) => c.html(page!.html),
  );
}

interface ScalarPage {
  html: string;
  /** CSP sources for the page's inline scripts: `'sha256-…'` each, space-separated. */
  scriptHashes: string;
}

/** `<script>` elements without `src`, and their text. */
const INLINE_SCRIPT = /<script\b(?![^>]*\ssrc=)[^>]*>([\s\S]*?)<\/script>/gi;

async function renderScalar(handler: MiddlewareHandler): Promise<ScalarPage> {
  const html = await (await new Hono().get('/', handler).request('/')).text();
  const hashes = [...html.matchAll(INLINE_SCRIPT)].map((m) => `'sha256-${createHash('sha256').update(m[1]!, 'utf8').digest('base64')}'`);
  return { html, scriptHashes: hashes.join(' ') };
}

/**
 * The reference page's configuration. Only what works offline, against this service: withDefaultFonts: false keeps
 * the page from fetching its fonts from fonts.scalar.com (system fonts instead); the hosted services Scalar offers on a
 * page opened from localhost are turned off, for they cannot work here: its AI agent ("Ask AI": agent), its developer
 * toolbar ("Deploy", "Share", "Configure": showDeveloperTools) and its telemetry. The "Test Request" client stays: it
 * calls this API. The pinned @scalar/api-reference (1.46, the last whose dependencies all run on Node 20) has no MCP
 * server generator yet; mcp keeps "Generate MCP" off should a later one be pinned.
 */
const SCALAR_CONFIGURATION = {
  url: '/v1/openapi.json',
  pageTitle: 'Property Data Sync API',
  cdn: '/docs/assets/scalar-api-reference.js',
  withDefaultFonts: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  telemetry: false,
} as const;

/** Where /docs loads the reference page's script from: this service. */
const SCALAR_SCRIPT_PATH = SCALAR_CONFIGURATION.cdn;
let scalarScript: Promise<Buffer> | undefined;

/** The standalone browser bundle of @scalar/api-reference (the package exports no path to it: found beside its entry). */
function scalarBundlePath(): string {
  const entry = createRequire(import.meta.url).resolve('@scalar/api-reference');
  return join(dirname(entry), 'browser', 'standalone.js');
}
