/**
 * The Entrata-style RPC API of the sandbox PMS: `POST /<service>` with `{auth: {type: "apikey"}, requestId,
 * method: {name, version, params}}` and the company's key in `X-Api-Key`; replies `{response: {requestId, code,
 * result}}`, errors `{response: {requestId, code, error: {code, message}}}`.
 *
 * Status codes, as a client sees them:
 * - 200 with `code: 200`: success;
 * - 200 with `code: 422`: a business error (bad reference, missing field, closed lease, writes rejected), like
 *   real PMSs that answer 200 and put the failure in the body;
 * - 400 malformed request, unknown method or bad params; 401 missing or unknown key; 404 unknown service;
 * - faults: 503 with an HTML body (a proxy's page, not JSON), 429 with `Retry-After` in seconds, or a slow reply.
 *   A fault scoped to `reads` or `writes` affects (and is counted against) only those methods; one scoped to `all`
 *   affects every request, even one whose method is unknown. A slow read sleeps before it is served; a slow write is
 *   applied (committed) first and answered after the delay, so a client that gives up sooner sees a timeout for a
 *   write that was made, as with a real PMS behind a slow proxy.
 *
 * Read methods take `page_no`, `per_page`, the entity's id list (`leaseIds`, ...) and `propertyId`, which keeps the
 * records of one property (for properties: that property). The setup reads of sandbox/options.ts (`getFloorPlans`,
 * `getPropertyPickLists`, `getUnitSpaces`, `getLeaseTerms`) are read methods too.
 */
import { Hono, type Context } from 'hono';
import { MAX_PER_PAGE, SERVICES, WRITE_METHODS, type NativeEntity } from '../source/entrata/native';
import { optionMethod, OptionParamError } from './options';
import { companyByKey, consumeFault, PageCursors, readPage, type Company, type Fault, type Sql } from './store';
import { applyWrite, BusinessError } from './writes';

export interface RpcOptions {
  sql: Sql;
  /** Delay of a `slow` fault that has none of its own. */
  slowMs: number;
  /** Seconds a rate-limited client is told to wait. */
  retryAfterSeconds?: number;
}

const ENTITY_OF_SERVICE = new Map<string, NativeEntity>(
  (Object.keys(SERVICES) as NativeEntity[]).map((e) => [SERVICES[e].service, e]),
);

class RpcError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
function listJson(entity: NativeEntity, items: string[]): string {
  const { outer, inner } = SERVICES[entity];
  if (items.length === 0) return `"${outer}":{}`;
  if (items.length === 1) return `"${outer}":{"${inner}":${items[0]}}`;
  return `"${outer}":{"${inner}":[${items.join(',')}]}`;
}

type MethodKind = 'read' | 'write';

/** The fault of a kind that applies to a request of this kind (undefined: unknown or malformed method). */
function faultFor(company: Company, kind: Fault['kind'], method: MethodKind | undefined): Fault | undefined {
  const f = company.faults.find((x) => x.kind === kind);
  if (!f) return undefined;
  const scope = f.methods;
  return scope === 'all' || (scope === 'reads' && method === 'read') || (scope === 'writes' && method === 'write') ? f : undefined;
}

/**
 * Apply the company's faults to one request: answer for it, or say how long to delay it. A read's delay is slept
 * here; a write's is returned (`delayAfterMs`), to be slept after the write is applied.
 */
async function applyFaults(
  c: Context,
  opts: RpcOptions,
  company: Company,
  requestId: unknown,
  method: MethodKind | undefined,
): Promise<{ response?: Response; delayAfterMs?: number }> {
  const slow = faultFor(company, 'slow', method);
  let delayAfterMs: number | undefined;
  if (slow && (await consumeFault(opts.sql, company.id, slow))) {
    const ms = slow.delay_ms ?? opts.slowMs;
    if (method === 'write') delayAfterMs = ms;
    else await sleep(ms);
  }
  const down = faultFor(company, 'unavailable', method);
  if (down && (await consumeFault(opts.sql, company.id, down))) {
    if (delayAfterMs !== undefined) await sleep(delayAfterMs);
    return {
      response: c.html('<html><head><title>503 Service Temporarily Unavailable</title></head><body><h1>Service Temporarily Unavailable</h1></body></html>', 503),
    };
  }
  const limited = faultFor(company, 'rate_limited', method);
  if (limited && (await consumeFault(opts.sql, company.id, limited))) {
    if (delayAfterMs !== undefined) await sleep(delayAfterMs);
    c.header('Retry-After', String(opts.retryAfterSeconds ?? 1));
    return { response: reply(c, 429, requestId, 429, errorPayload('RATE_LIMITED', 'API rate limit exceeded; retry after the indicated delay')) };
  }
  return { delayAfterMs };
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
      const company = await companyByKey(opts.sql, key);
      if (!company) throw new RpcError(401, 'AUTHENTICATION_FAILED', 'invalid API key');

      // The method decides which faults apply, so it is known before they are; it is validated after them, as
      // before, so an `all` fault answers for a malformed request too.
      const method = envelope.method as { name?: unknown; params?: unknown } | undefined;
      const svc = SERVICES[entity];
      const writes = entity === 'property' ? undefined : WRITE_METHODS[entity];
      const name = method?.name;
      const action = writes?.create === name ? 'create' : writes?.update === name ? 'update' : undefined;
      const setup = optionMethod(svc.service, name);
      const kind: MethodKind | undefined = name === svc.read || setup ? 'read' : action ? 'write' : undefined;

      const faulted = await applyFaults(c, opts, company, requestId, kind);
      if (faulted.response) return faulted.response;

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
        const { items, total } = await readPage(opts.sql, { company, entity, page, perPage, ids, propertyId }, cursors);
        const pagination = `"pagination":{"page_no":${page},"per_page":${perPage},"total_count":${total}}`;
        return reply(c, 200, requestId, 200, `"result":{${listJson(entity, items)},${pagination}}`);
      }
      if (!action || entity === 'property') throw new RpcError(400, 'UNKNOWN_METHOD', `unknown method ${String(method.name)} of service ${svc.service}`);
      let answer: Response;
      try {
        const rejecting = company.faults.find((f) => f.kind === 'reject_writes');
        if (rejecting && (await consumeFault(opts.sql, company.id, rejecting))) {
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
