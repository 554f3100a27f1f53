/**
 * The entrata flavour of the sandbox PMS, the Entrata-style RPC API: `POST /<service>` with `{auth: {type: "apikey"}, requestId,
 * method: {name, version, params}}` and the company's key in `X-Api-Key`; replies `{response: {requestId, code,
 * result}}`, errors `{response: {requestId, code, error: {code, message}}}`.
 *
 * Status codes, as a client sees them:
 * - 200 with `code: 200`: success;
 * - 200 with `code: 422`: a business error (bad reference, missing field, closed lease, writes rejected), like
 *   real PMSs that answer 200 and put the failure in the body;
 * - 400 malformed request, unknown method or bad params; 401 missing or unknown key; 404 unknown service;
 * - faults (sandbox/faults.ts): 503 with an HTML body (a proxy's page, not JSON), 429 with `Retry-After` in
 *   seconds, or a slow reply; a request whose method is unknown counts as neither read nor write.
 *
 * Only companies created in the entrata flavour answer here: a buildium company's key is refused (401).
 *
 * Read methods take `page_no`, `per_page`, the entity's id list (`leaseIds`, ...) and `propertyId`, which keeps the
 * records of one property (for properties: that property). The setup reads of sandbox/options.ts (`getFloorPlans`,
 * `getPropertyPickLists`, `getUnitSpaces`, `getLeaseTerms`) are read methods too.
 */
import { Hono, type Context } from 'hono';
import { applyFaults, rejectsWrite, sleep, UNAVAILABLE_HTML, type RequestKind } from '../faults';
import type { Entity } from '../model';
import { companyByCredentials, PageCursors, readPage, type Sql } from '../store';
import { optionMethod, OptionParamError } from './options';
import { encode, MAX_PER_PAGE, SERVICES, WRITE_METHODS } from './wire';
import { applyWrite, BusinessError } from './writes';

export interface RpcOptions {
  sql: Sql;
  /** Delay of a `slow` fault that has none of its own. */
  slowMs: number;
  /** Seconds a rate-limited client is told to wait. */
  retryAfterSeconds?: number;
}

const ENTITY_OF_SERVICE = new Map<string, Entity>((Object.keys(SERVICES) as Entity[]).map((e) => [SERVICES[e].service, e]));

class RpcError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function reply(c: Context, httpStatus: number, requestId: unknown, responseCode: number, payload: string): Response {
  return c.body(`{"response":{"requestId":${JSON.stringify(requestId ?? null)},"code":${responseCode},${payload}}}`, httpStatus as 200, {
    'content-type': 'application/json; charset=utf-8',
  });
}
const errorPayload = (code: string, message: string) => `"error":${JSON.stringify({ code, message })}`;

/** A positive integer param given as a number or a numeric string. */
function intParam(params: Record<string, unknown>, key: string, fallback: number): number;
function intParam(params: Record<string, unknown>, key: string, fallback?: number): number | undefined;
function intParam(params: Record<string, unknown>, key: string, fallback?: number): number | undefined {
  const v = params[key];
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new RpcError(400, 'INVALID_PARAMS', `${key} must be a positive integer`);
  return n;
}

/** Comma-separated native ids (or an array of them). */
function idsParam(params: Record<string, unknown>, key: string): number[] | undefined {
  const v = params[key];
  if (v === undefined || v === null || v === '') return undefined;
  const parts = Array.isArray(v) ? v.map(String) : String(v).split(',');
  const ids = parts.map((p) => p.trim()).filter(Boolean);
  if (!ids.every((p) => /^\d{1,9}$/.test(p))) throw new RpcError(400, 'INVALID_PARAMS', `${key} must be a comma-separated list of ids`);
  return ids.map(Number);
}

/** `{outer: {inner: [..]}}` with the list-of-one quirk, built from stored JSON text without re-serializing. */
function listJson(entity: Entity, items: string[]): string {
  const { outer, inner } = SERVICES[entity];
  if (items.length === 0) return `"${outer}":{}`;
  if (items.length === 1) return `"${outer}":{"${inner}":${items[0]}}`;
  return `"${outer}":{"${inner}":[${items.join(',')}]}`;
}

export function rpcRoutes(opts: RpcOptions): Hono {
  const app = new Hono();
  const cursors = new PageCursors();
  app.post('/:service', async (c) => {
    let requestId: unknown = null;
    try {
      const entity = ENTITY_OF_SERVICE.get(c.req.param('service'));
      if (!entity) throw new RpcError(404, 'UNKNOWN_SERVICE', `unknown service: ${c.req.param('service')}`);
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        throw new RpcError(400, 'MALFORMED_REQUEST', 'the request body is not JSON');
      }
      const envelope = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
      requestId = envelope.requestId ?? null;

      const key = c.req.header('x-api-key');
      if (!key) throw new RpcError(401, 'AUTHENTICATION_FAILED', 'missing X-Api-Key header');
      const company = await companyByCredentials(opts.sql, 'entrata', key);
      if (!company) throw new RpcError(401, 'AUTHENTICATION_FAILED', 'invalid API key');

      // The method decides which faults apply, so it is known before they are; it is validated after them, as
      // before, so an `all` fault answers for a malformed request too.
      const method = envelope.method as { name?: unknown; params?: unknown } | undefined;
      const svc = SERVICES[entity];
      const writes = entity === 'property' ? undefined : WRITE_METHODS[entity];
      const name = method?.name;
      const action = writes?.create === name ? 'create' : writes?.update === name ? 'update' : undefined;
      const setup = optionMethod(svc.service, name);
      const kind: RequestKind | undefined = name === svc.read || setup ? 'read' : action ? 'write' : undefined;

      const faulted = await applyFaults(opts.sql, company, kind, opts.slowMs);
      if (faulted.answer === 'unavailable') return c.html(UNAVAILABLE_HTML, 503);
      if (faulted.answer === 'rate_limited') {
        c.header('Retry-After', String(opts.retryAfterSeconds ?? 1));
        return reply(c, 429, requestId, 429, errorPayload('RATE_LIMITED', 'API rate limit exceeded; retry after the indicated delay'));
      }

      const auth = envelope.auth as { type?: unknown } | undefined;
      if (auth?.type !== 'apikey') throw new RpcError(400, 'MALFORMED_REQUEST', 'auth.type must be "apikey"');
      if (!method || typeof method.name !== 'string') throw new RpcError(400, 'MALFORMED_REQUEST', 'method.name is required');
      const params = (method.params ?? {}) as Record<string, unknown>;
      if (typeof params !== 'object' || Array.isArray(params)) throw new RpcError(400, 'INVALID_PARAMS', 'method.params must be an object');

      if (setup) {
        try {
          return reply(c, 200, requestId, 200, `"result":${JSON.stringify(await setup(opts.sql, company, params))}`);
        } catch (err) {
          if (err instanceof OptionParamError) throw new RpcError(400, 'INVALID_PARAMS', err.message);
          if (err instanceof BusinessError) return reply(c, 200, requestId, 422, errorPayload(err.code, err.message));
          throw err;
        }
      }
      if (kind === 'read') {
        const page = intParam(params, 'page_no', 1);
        const perPage = Math.min(intParam(params, 'per_page', 100), MAX_PER_PAGE);
        const ids = idsParam(params, svc.ids);
        const propertyId = intParam(params, 'propertyId');
        const filter = { ids, propertyIds: propertyId === undefined ? undefined : [propertyId] };
        const { rows, total } = await readPage(opts.sql, { company, entity, offset: (page - 1) * perPage, limit: perPage, filter }, cursors);
        const items = rows.map((r) => encode(entity, r.model, r.updated));
        const pagination = `"pagination":{"page_no":${page},"per_page":${perPage},"total_count":${total}}`;
        return reply(c, 200, requestId, 200, `"result":{${listJson(entity, items)},${pagination}}`);
      }
      if (!action || entity === 'property') throw new RpcError(400, 'UNKNOWN_METHOD', `unknown method ${String(method.name)} of service ${svc.service}`);
      let answer: Response;
      try {
        if (await rejectsWrite(opts.sql, company)) {
          throw new BusinessError('WRITES_REJECTED', 'the property management system is not accepting changes at this time');
        }
        const result = await applyWrite(opts.sql, company.id, entity, action, params);
        answer = reply(c, 200, requestId, 200, `"result":${JSON.stringify(result)}`);
      } catch (err) {
        if (!(err instanceof BusinessError)) throw err;
        answer = reply(c, 200, requestId, 422, errorPayload(err.code, err.message));
      }
      // A slow write: made already, answered late.
      if (faulted.delayAfterMs !== undefined) await sleep(faulted.delayAfterMs);
      return answer;
    } catch (err) {
      if (err instanceof RpcError) return reply(c, err.httpStatus, requestId, err.httpStatus, errorPayload(err.code, err.message));
      throw err;
    }
  });
  return app;
}
