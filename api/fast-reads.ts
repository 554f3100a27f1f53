/**
 * The read fast path: `GET /v1/{properties,units,residents,leases}`, `GET /v1/{…}/{id}` and the polls of a write's
 * Operation, `GET /v1/operations/{id}`, answered straight from Node's request and response objects, before the Hono
 * app sees them.
 *
 * Why: a retrieve is one indexed row, and the framework cost more CPU than the rest of the request together (routing,
 * the context and its middleware chain, the validators, the Node adapter's web Request and Response, header objects
 * and the garbage they leave): bench:read measured the API at about half a bare node:http server's requests per CPU
 * second, and no change inside the framework closed that gap.
 *
 * What keeps the two paths one API: the fast path takes only requests whose answer it can give exactly as the app
 * would, and decides that before anything happens (no key looked up, no token taken); every other request, including
 * each one that will fail validation, goes to the app unchanged. What it then does, it does with the app's own
 * functions: the request id (middleware/request-id.ts), the key (ApiKeyAuth.principalOf), the rate limit
 * (RateLimiter.admit), the key's scope (middleware/scopes.ts requireScope), the queries and serializer
 * (db/queries.ts), the 404 (routes/resource.ts), an Operation as its route shows it and its 404
 * (routes/operations.ts answerOperation), every error
 * (apiErrorOf and problemParts), the request metrics and the root span (observability/). The headers are those the app
 * sends, in the order it sends them (sorted by name, as a web Headers object iterates, then Content-Length).
 * test/integration/api-fast-reads.test.ts asks both paths the same requests and compares the bytes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getQueryParams } from 'hono/utils/url';
import type { z } from 'zod';
import type { Scope } from '../db/tenants';
import type { Entity } from '../domain/cdm';
import { unknownParameter } from '../domain/filters';
import { isId } from '../domain/ids';
import { isDatabaseUnavailable } from '../db/errors';
import { listRecords, retrieveRecord, type CommonListQuery } from '../db/queries';
import type { ApiMetrics } from '../observability/metrics';
import { recordServerSpan } from '../observability/tracing';
import type { ApiDeps } from './deps';
import type { ApiKeyAuth } from './middleware/auth';
import type { Principal } from './middleware/env';
import { apiErrorOf } from './middleware/errors';
import { malformedQueryParameter } from './middleware/query-encoding';
import { RateLimitedError, type RateLimiter } from './middleware/rate-limit';
import { requestIdFrom } from './middleware/request-id';
import { READ, READ_OR_WRITE, requireScope } from './middleware/scopes';
import { rejectUnstorable } from './middleware/validation';
import { problemParts } from './problem';
import { preferredWaitS, type OperationWaits } from './operation-waits';
import { answerOperation } from './routes/operations';
import { notFoundError } from './routes/resource';
import { LeaseListQuery, PropertyListQuery, ResidentListQuery, UnitListQuery } from './schemas';

/** Answers the request and returns true, or returns false having done nothing (the app answers it). */
export type FastReads = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The read resources, by path segment: the entity and the list query schema their routes register (routes/*.ts). */
const RESOURCES: Record<string, { entity: Entity; listQuery: z.ZodType }> = {
  properties: { entity: 'property', listQuery: PropertyListQuery },
  units: { entity: 'unit', listQuery: UnitListQuery },
  residents: { entity: 'resident', listQuery: ResidentListQuery },
  leases: { entity: 'lease', listQuery: LeaseListQuery },
};

/**
 * The request targets taken: a resource, an id of plain characters (nothing to percent-decode), a query only on a
 * list; an Operation by such an id, without a query. Anything else (a trailing slash, an encoded id, a retrieve's
 * `include_deleted`) is the app's.
 */
const TARGET = /^\/v1\/(?:(properties|units|residents|leases)(?:\/([A-Za-z0-9_]+)|(\?.*)?)|operations\/([A-Za-z0-9_]+))$/;
/** A Host the Node adapter takes as it is (it answers a 400 to one it cannot build a URL from). */
const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** What was answered: the status, and for an error what failed and the headers sent. */
interface Outcome {
  status: number;
  error?: unknown;
}

interface Plan {
  /** The route template, as the metrics and spans name it. */
  route: string;
  /** The request path (a problem's `instance`). */
  path: string;
  /**
   * The JSON body of the 200 and the headers it adds besides the app's own (a held poll's Preference-Applied), or a
   * throw (an ApiError, or what the app's error handler would answer).
   */
  body(principal: Principal): Promise<{ json: string; headers?: Record<string, string> }>;
  /** The scopes that admit a key (api/middleware/scopes.ts), as the route's guard says. */
  scopes: readonly Scope[];
}

export function createFastReads(
  deps: ApiDeps,
  parts: { auth: ApiKeyAuth; rateLimit: RateLimiter; waits: OperationWaits; metrics: ApiMetrics | undefined; tracing: boolean },
): FastReads {
  const { db, config, logger } = deps;
  const { auth, rateLimit, waits, metrics, tracing } = parts;

  /** The plan for a request the app would answer as this path does, or undefined. */
  function planOf(req: IncomingMessage): Plan | undefined {
    if (req.method !== 'GET') return undefined;
    const url = req.url ?? '';
    const m = TARGET.exec(url);
    if (!m) return undefined;
    const host = req.headers.host;
    if (!host || !HOST.test(host) || repeats(req, 'authorization')) return undefined;
    const operationId = m[4];
    if (operationId !== undefined) {
      // Any id: one not of an Operation's form is the route's 404 too, without a query.
      const waitS = preferredWaitS(header(req, 'prefer'));
      return {
        route: '/v1/operations/{id}',
        path: url,
        scopes: READ_OR_WRITE,
        body: async (principal) => {
          const { op, headers } = await answerOperation(db, waits, principal, operationId, waitS);
          return { json: JSON.stringify(op), headers };
        },
      };
    }
    const { entity, listQuery } = RESOURCES[m[1]!]!;
    const id = m[2];
    if (id !== undefined) {
      // An id not of this entity's form is a 404 without a query: the app says so (rare, and no cheaper here).
      if (!isId(entity, id)) return undefined;
      return {
        route: `/v1/${m[1]}/{id}`,
        path: url,
        scopes: READ,
        body: async (principal) => {
          const record = await retrieveRecord(db, entity, principal, id, false);
          if (!record) throw notFoundError(entity, id, false);
          return { json: JSON.stringify(record) };
        },
      };
    }
    const q = listQueryOf(entity, listQuery, url);
    if (!q) return undefined;
    return {
      route: `/v1/${m[1]}`,
      path: m[3] ? url.slice(0, -m[3].length) : url,
      scopes: READ,
      body: async (principal) => ({ json: JSON.stringify(await listRecords(db, entity, principal, q as never)) }),
    };
  }

  /** The app's answer to the request, sent; its status. */
  async function answer(req: IncomingMessage, res: ServerResponse, plan: Plan, requestId: string): Promise<Outcome> {
    let limits: Record<string, string> | undefined;
    try {
      const principal = await auth.principalOf(req.headers.authorization);
      limits = await rateLimit.admit(principal.organizationId);
      requireScope(principal, plan.scopes);
      const { json, headers } = await plan.body(principal);
      send(res, 200, { 'content-type': 'application/json', ...limits, ...headers, 'x-request-id': requestId }, json);
      return { status: 200 };
    } catch (error) {
      const problem = problemParts(config, apiErrorOf(error, logger, { request_id: requestId, method: 'GET', path: plan.path }), plan.path, requestId);
      // As the app's middleware does: the limits of a request that got a token, and the request id, on its error too.
      const headers = { ...problem.headers, ...limits, 'x-request-id': requestId };
      send(res, problem.status, headers, problem.body);
      return { status: problem.status, error };
    }
  }

  /** The app's metrics and root span around the answer (middleware/metrics.ts and tracing.ts, when they are on). */
  async function observed(req: IncomingMessage, res: ServerResponse, plan: Plan): Promise<void> {
    const started = metrics || tracing ? performance.now() : 0;
    const requestId = requestIdFrom(header(req, 'x-request-id'));
    const { status, error } = await answer(req, res, plan, requestId);
    // A read starts no workflow and has no child span: its root span is recorded once answered (middleware/tracing.ts).
    if (tracing) recordServerSpan('GET', plan.route, requestId, status, started);
    if (!metrics) return;
    metrics.request('GET', plan.route, status, (performance.now() - started) / 1000);
    if (status === 503 && error && isDatabaseUnavailable(error)) metrics.databaseUnavailable();
    if (status === 429 && error instanceof RateLimitedError) metrics.rateLimited(error.plan);
  }

  return (req, res) => {
    const plan = planOf(req);
    if (!plan) return false;
    observed(req, res, plan).catch((err: unknown) => {
      // Only a failure to write the answer gets here (the answer's own failures are answered above).
      logger.error({ err, method: 'GET', path: plan.path }, 'read fast path failed');
      res.destroy();
    });
    return true;
  };
}

/**
 * The list query as the app's validator would hand it to the route, or undefined for any query the app would refuse
 * (a name or value that is not percent-encoded UTF-8, an unknown parameter, a value that does not parse or breaks a
 * rule, a NUL): the app answers those.
 */
function listQueryOf(entity: Entity, schema: z.ZodType, url: string): CommonListQuery | undefined {
  // The parser below keeps what does not decode as it came: the app's check (middleware/query-encoding.ts) refuses it.
  if (malformedQueryParameter(url)) return undefined;
  // The app's own parser of the query (c.req.queries()), and its validator's shaping of it (hono/validator).
  const raw = getQueryParams(`http://h${url}`) as Record<string, string[]>;
  const value: Record<string, string | string[]> = {};
  for (const name in raw) {
    if (unknownParameter(entity, name)) return undefined;
    const v = raw[name]!;
    value[name] = v.length === 1 ? v[0]! : v;
  }
  try {
    const r = schema.safeParse(value);
    if (!r.success) return undefined;
    rejectUnstorable(r.data, 'query');
    return r.data as CommonListQuery;
  } catch {
    return undefined;
  }
}

/** A header as the web Headers object of the app's request reads it: repeats joined by `, `. */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Whether the request repeats a header that Node keeps once but the app's Headers would join (`a, b`). */
function repeats(req: IncomingMessage, name: string): boolean {
  let seen = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name && ++seen > 1) return true;
  return false;
}

/** Writes a whole answer with the headers in the app's order: by name, then Content-Length. */
function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  const out: Record<string, string | number> = {};
  for (const name of Object.keys(headers).sort()) out[name] = headers[name]!;
  out['Content-Length'] = Buffer.byteLength(body);
  res.writeHead(status, out);
  res.end(body);
}
