/**
 * The buildium flavour of the sandbox PMS: the Buildium-style REST API of docs/sources/buildium.md, mounted at /v1.
 *
 * Every request carries `x-buildium-client-id` (the company id) and `x-buildium-client-secret` (its key); only a
 * company created in this flavour answers (401 otherwise, an entrata key included). Then, in this order: the
 * company's per-second limit (429 with `Retry-After`), its faults (sandbox/faults.ts: the HTML 503 page, a 429 storm,
 * slow replies; GETs are reads, POST and PUT writes), and the request itself. Errors are
 * `{UserMessage, Errors: [{Key, Value}]}`.
 *
 * Collections answer a JSON array in ascending `Id` order with `X-Total-Count`, filtered by `ids`, `propertyids`
 * and the inclusive `lastupdatedfrom`/`lastupdatedto` window on the database clock's last-update time.
 */
import { Hono, type Context } from 'hono';
import { applyFaults, UNAVAILABLE_HTML, type RequestKind } from '../faults';
import type { Entity } from '../model';
import { companyByCredentials, getRecords, PageCursors, readPage, type ListFilter } from '../store';
import { answer, errorBody, WireError, type BuildiumOptions, type Env } from './http';
import { encode, toJson } from './wire';
import { writeRoutes } from './writes';

export type { BuildiumOptions };

/** The collections, by path under /v1, with what a missing record is called. */
const COLLECTIONS: { path: string; entity: Entity; name: string }[] = [
  { path: '/rentals/units', entity: 'unit', name: 'rental unit' },
  { path: '/leases/tenants', entity: 'resident', name: 'tenant' },
  { path: '/rentals', entity: 'property', name: 'rental property' },
  { path: '/leases', entity: 'lease', name: 'lease' },
];

const MAX_LIMIT = 1000;
const UTC_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/;

function intParam(c: Context, key: string, fallback: number, min: number, max: number): number {
  const v = c.req.query(key);
  if (v === undefined || v === '') return fallback;
  const n = /^\d{1,9}$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new WireError(400, `${key} must be an integer from ${min} to ${max}`, [{ Key: key, Value: v }]);
  return n;
}

function idList(c: Context, key: string): number[] | undefined {
  const v = c.req.query(key);
  if (v === undefined || v === '') return undefined;
  const parts = v.split(',').map((p) => p.trim());
  if (parts.length > 1000 || !parts.every((p) => /^\d{1,9}$/.test(p))) {
    throw new WireError(400, `${key} must be a comma-separated list of at most 1000 ids`, [{ Key: key, Value: v.slice(0, 200) }]);
  }
  return parts.map(Number);
}

function timeParam(c: Context, key: string): number | undefined {
  const v = c.req.query(key);
  if (v === undefined || v === '') return undefined;
  const m = UTC_TIME.exec(v);
  const ms = m ? Date.parse(v) : NaN;
  // Date.parse rolls 25:00 or the 31st of a 30-day month over: only a time that reads back the same is one.
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) + 'Z' !== v) {
    throw new WireError(400, `${key} must be a UTC time YYYY-MM-DDTHH:MM:SSZ`, [{ Key: key, Value: v.slice(0, 100) }]);
  }
  return ms;
}

/** Requests per client id in the current second: the per-second limit of the flavour. */
class RateWindow {
  private second = 0;
  private readonly counts = new Map<string, number>();
  /** Count a request; false when it is over the limit of this second. */
  take(clientId: string, limit: number): boolean {
    const now = Math.floor(Date.now() / 1000);
    if (now !== this.second) {
      this.second = now;
      this.counts.clear();
    }
    const n = (this.counts.get(clientId) ?? 0) + 1;
    this.counts.set(clientId, n);
    return n <= limit;
  }
}

export function buildiumRoutes(opts: BuildiumOptions): Hono<Env> {
  const app = new Hono<Env>();
  const cursors = new PageCursors();
  const rate = new RateWindow();
  const retryAfter = String(opts.retryAfterSeconds ?? 1);

  app.onError((err, c) => {
    if (err instanceof WireError) {
      if (err.status === 429) c.header('Retry-After', retryAfter);
      return answer(c, err.status, errorBody(err.message, err.errors));
    }
    throw err;
  });

  app.use('*', async (c, next) => {
    const clientId = c.req.header('x-buildium-client-id');
    const secret = c.req.header('x-buildium-client-secret');
    if (!clientId || !secret) throw new WireError(401, 'x-buildium-client-id and x-buildium-client-secret are required');
    const company = await companyByCredentials(opts.sql, 'buildium', secret, clientId);
    if (!company) throw new WireError(401, 'the client id and secret do not match');
    if (!rate.take(company.id, company.rateLimit)) {
      throw new WireError(429, `more than ${company.rateLimit} requests in one second; retry after the indicated delay`);
    }
    const method = c.req.method;
    const kind: RequestKind | undefined = method === 'GET' ? 'read' : method === 'POST' || method === 'PUT' ? 'write' : undefined;
    const faulted = await applyFaults(opts.sql, company, kind, opts.slowMs);
    if (faulted.answer === 'unavailable') return c.html(UNAVAILABLE_HTML, 503);
    if (faulted.answer === 'rate_limited') throw new WireError(429, 'API rate limit exceeded; retry after the indicated delay');
    c.set('company', company);
    c.set('delayAfterMs', faulted.delayAfterMs);
    await next();
  });

  app.get('/rentals/:id{[0-9]+}/floorplans', async (c) => {
    const [row] = await getRecords(opts.sql, c.get('company').id, 'property', [Number(c.req.param('id'))]);
    if (!row) throw new WireError(404, `no rental property with Id ${c.req.param('id')}`);
    const plans = row.model.floorplans.map((f) => ({ Id: f.id, Name: f.name, Bedrooms: f.bedrooms, Bathrooms: f.bathrooms, Size: f.squareFeet }));
    return answer(c, 200, JSON.stringify(plans));
  });

  for (const { path, entity, name } of COLLECTIONS) {
    app.get(path, async (c) => {
      const filter: ListFilter = {
        ids: idList(c, 'ids'),
        propertyIds: entity === 'property' ? undefined : idList(c, 'propertyids'),
        updatedFrom: timeParam(c, 'lastupdatedfrom'),
        updatedTo: timeParam(c, 'lastupdatedto'),
      };
      const limit = intParam(c, 'limit', 50, 1, MAX_LIMIT);
      const offset = intParam(c, 'offset', 0, 0, 1_000_000_000);
      const { rows, total } = await readPage(
        opts.sql,
        { company: c.get('company'), entity, offset, limit, filter, withUnitNumber: entity === 'lease' },
        cursors,
      );
      c.header('X-Total-Count', String(total));
      return answer(c, 200, toJson(rows.map((r) => encode(entity, r.model, r.updated, r.unit_number))));
    });
    app.get(`${path}/:id{[0-9]+}`, async (c) => {
      const id = Number(c.req.param('id'));
      const { rows } = await readPage(opts.sql, {
        company: c.get('company'),
        entity,
        offset: 0,
        limit: 1,
        filter: { ids: [id] },
        withUnitNumber: entity === 'lease',
      });
      const r = rows[0];
      if (!r) throw new WireError(404, `no ${name} with Id ${id}`);
      return answer(c, 200, toJson(encode(entity, r.model, r.updated, r.unit_number)));
    });
  }

  app.route('/', writeRoutes(opts));
  app.all('*', (c) => answer(c, 404, errorBody(`no resource at ${c.req.method} ${c.req.path}`)));
  return app;
}
