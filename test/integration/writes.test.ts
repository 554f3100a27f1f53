/**
 * Write-back over HTTP against the real stack (API, Temporal dev server, write worker, sandbox PMS): POST/PATCH,
 * poll the Operation, read the record back; rejections; idempotency; tenancy; bad input changing nothing.
 */
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { events, operations } from '../../db/schema';
import { createApiKey } from '../../db/tenants';
import type { TestServer } from '../support/api-server';
import { makeTenant } from '../support/context';
import { onServices } from '../support/services';
import { expectUpdatedShape, readSource, runSync, sandbox, sandboxIntegration, until, type SandboxIntegration, type TestWorker } from '../support/sync';
import { getJson, keyFor, pollOperation, write, type WriteWorker } from '../support/writes';
import { writeTaskQueueOf } from '../../domain/contract';
import { sweepWrites } from '../../workflows/operation';
import { SOURCE_DIALECTS } from '../../source';

let db: Db;
let config: Config;
let syncs: TestWorker;
let writes: WriteWorker;
let api: TestServer;
let s: SandboxIntegration;
let key: string;

onServices({ settings: { WORKER_RECONCILE_SCHEDULES: 'false', WRITE_SOURCE_TIMEOUT_MS: '2000' }, worker: true, writes: true, api: true }, (started) => {
  ({ db, config, worker: syncs, writes, api } = started);
});
beforeAll(async () => {
  s = await sandboxIntegration(db, { size: 30 });
  await runSync(syncs, db, s.row);
  key = await keyFor(db, s.row.organizationId);
});

async function first(path: string): Promise<any> {
  const r = await getJson(api.url, `${path}?limit=1&order-by=created_at:asc`, key);
  return r.body.results[0];
}

// The same public behaviour for a company of either dialect: each write to `succeeded` and read back at once, a
// rejection to `failed` with the source's reason.
describe.each(SOURCE_DIALECTS)('a write to a %s company, start to finish', (dialect) => {
  let s: SandboxIntegration;
  let key: string;
  beforeAll(async () => {
    s = await sandboxIntegration(db, { size: 20, seed: 8, dialect });
    await runSync(syncs, db, s.row);
    key = await keyFor(db, s.row.organizationId);
  });
  const first = async (path: string): Promise<any> => (await getJson(api.url, `${path}?limit=1&order-by=created_at:asc`, key)).body.results[0];

  it('PATCH a lease: 202 queued, then succeeded, the cache and the source both hold the change', async () => {
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1', key)).body.results[0];
    const idem = randomUUID();
    const r = await write(
      api.url,
      'PATCH',
      `/v1/leases/${lease.id}`,
      { rent_amount: { amount: 123_456, currency: 'USD' }, occupants: 3 },
      { key, idempotencyKey: idem },
    );
    expect(r.status).toBe(202);
    expect(r.headers.get('location')).toBe(`/v1/operations/${r.body.id}`);
    expect(r.body).toMatchObject({
      object: 'operation',
      type: 'lease.update',
      status: 'queued',
      source: { state: null, applied_at: null },
      reconcile: { state: 'pending', attempts: 0, last_error: null },
      resource: { type: 'lease', id: null, x_id: null },
      result: null,
      idempotency_key: idem,
    });
    expect(r.body.id).toMatch(/^opr_[0-9A-Z]{26}$/);
    expect(r.body.reconcile.next_attempt_at).toEqual(expect.any(String));

    const done = await pollOperation(api.url, key, r.body.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      source: { state: 'applied' },
      reconcile: { state: 'reconciled', attempts: 1, next_attempt_at: null, last_error: null },
      resource: { type: 'lease', id: lease.id, x_id: lease.x_id },
      result: { id: lease.id },
    });
    expect(Date.parse(done.source.applied_at)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
    const after = (await getJson(api.url, `/v1/leases/${lease.id}`, key)).body;
    expect(after.rent_amount).toEqual({ amount: 123_456, currency: 'USD' });
    const source = (await readSource(s.row)).lease.find((l) => l.x_id === lease.x_id)!;
    expect(source.rent_amount).toEqual({ amount: 123_456, currency: 'USD' });
    // The same event a sync would record, marked with the Operation.
    const evs = await db
      .select()
      .from(events)
      .where(and(eq(events.operationId, r.body.id)));
    expect(evs.map((e) => e.type)).toEqual(['LEASE_UPDATED']);
    expect(evs[0]!.data).toMatchObject({ id: lease.id, rent_amount: { amount: 123_456, currency: 'USD' }, changed: expect.arrayContaining(['rent_amount']) });
    expectUpdatedShape(evs[0]!.type, evs[0]!.data);
  });

  it('POST a unit, a resident and a lease: each GET of result.id works at once', async () => {
    const property = await first('/v1/properties');
    const unitOp = await write(
      api.url,
      'POST',
      '/v1/units',
      { property_id: property.id, unit_number: `W-${Date.now() % 100000}`, bedrooms: 2, bathrooms: 1, note: 'written' },
      { key },
    );
    expect(unitOp.status).toBe(202);
    expect(unitOp.body).toMatchObject({ type: 'unit.create', resource: { type: 'unit', id: null, x_id: null } });
    const unitDone = await pollOperation(api.url, key, unitOp.body.id);
    expect(unitDone.status).toBe('succeeded');
    const unit = (await getJson(api.url, `/v1/units/${unitDone.result.id}`, key)).body;
    expect(unit).toMatchObject({ id: unitDone.resource.id, x_id: unitDone.resource.x_id, property_id: property.id, bedrooms: 2, note: 'written' });

    const resOp = await write(
      api.url,
      'POST',
      '/v1/residents',
      {
        property_id: property.id,
        first_name: 'Ada',
        last_name: 'Writer',
        email: 'ada.writer@example.com',
        phones: [{ type: 'mobile', number: '+1 312 555 0101', primary: true }],
      },
      { key },
    );
    const resDone = await pollOperation(api.url, key, resOp.body.id);
    expect(resDone.status).toBe('succeeded');
    const resident = (await getJson(api.url, `/v1/residents/${resDone.result.id}`, key)).body;
    expect(resident).toMatchObject({ first_name: 'Ada', last_name: 'Writer', email: 'ada.writer@example.com', property_id: property.id });

    const someUnit = (await getJson(api.url, `/v1/units?property_id=${property.id}&limit=1`, key)).body.results[0];
    const leaseOp = await write(api.url, 'POST', '/v1/leases', await leaseBody(key, property, someUnit), { key });
    expect(leaseOp.status).toBe(202);
    const leaseDone = await pollOperation(api.url, key, leaseOp.body.id);
    expect(leaseDone.status, JSON.stringify(leaseDone)).toBe('succeeded');
    const lease = (await getJson(api.url, `/v1/leases/${leaseDone.result.id}`, key)).body;
    expect(lease).toMatchObject({ unit_id: someUnit.id, property_id: property.id, start_date: '2027-01-01', end_date: '2027-12-31' });
    expect(lease.residents).toHaveLength(1);
    const applicant = (await getJson(api.url, `/v1/residents/${lease.residents[0].resident_id}`, key)).body;
    expect(applicant).toMatchObject({ first_name: 'Lea', last_name: 'Sample' });
    // The created records' events: a new lease whose status has no lifecycle event is a LEASE_UPDATED first sighting,
    // with the one *_UPDATED shape (never the record's bookkeeping fields).
    for (const op of [unitOp, resOp, leaseOp]) {
      const evs = await db.select().from(events).where(eq(events.operationId, op.body.id));
      expect(evs.length, op.body.type).toBeGreaterThan(0);
      for (const e of evs) expectUpdatedShape(e.type, e.data);
    }
    const leaseEvents = await db
      .select()
      .from(events)
      .where(and(eq(events.operationId, leaseOp.body.id), eq(events.recordId, lease.id)));
    const [leaseEvent] = leaseEvents;
    if (leaseEvent!.type === 'LEASE_UPDATED') {
      expect(leaseEvent!.data).toMatchObject({ id: lease.id, x_id: lease.x_id, updated_at: lease.updated_at, status: lease.status });
      for (const k of ['organization_id', 'integration_id', 'created_at', 'ps_synced_at']) expect(leaseEvent!.data).not.toHaveProperty(k);
    }
  });

  it('a create the source applied that cannot be read back yet: running, source.state applied, the attempt counted; succeeded once reads return', async () => {
    const property = await first('/v1/properties');
    await sandbox().setFault(s.companyId, { kind: 'unavailable', methods: 'reads' });
    let id: string;
    try {
      const r = await write(api.url, 'POST', '/v1/units', { property_id: property.id, unit_number: `RB-${Date.now() % 100000}` }, { key });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      id = r.body.id;
      const applied = await until('the Operation to say the source applied it', async () => {
        const op = (await getJson(api.url, `/v1/operations/${id}`, key)).body;
        return op.source.state === 'applied' ? op : undefined;
      });
      expect(applied).toMatchObject({
        status: 'running',
        source: { state: 'applied', applied_at: expect.any(String) },
        reconcile: { state: 'pending', attempts: 1, next_attempt_at: expect.any(String) },
        result: null,
      });
      expect(applied.reconcile.last_error).toMatch(/^the source applied the change \(x_id [^)]+\); reading it back failed and is retried: /);
    } finally {
      await sandbox().clearFaults(s.companyId);
    }
    const done = await pollOperation(api.url, key, id);
    expect(done).toMatchObject({
      status: 'succeeded',
      source: { state: 'applied' },
      reconcile: { state: 'reconciled', attempts: 1, next_attempt_at: null },
      result: { id: done.resource.id },
    });
    expect((await getJson(api.url, `/v1/units/${done.result.id}`, key)).status).toBe(200);
  });

  it('a rejection by the source fails the Operation at once, with the source’s reason', async () => {
    const property = await first('/v1/properties');
    const unit = (await getJson(api.url, `/v1/units?property_id=${property.id}&limit=1`, key)).body.results[0];
    // The body is one the API and the source both take, but the source refuses changes right now (a business rule
    // of its own, as a real PMS refuses writes during its month-end close).
    await sandbox().setFault(s.companyId, { kind: 'reject_writes', count: 1 });
    const r = await write(api.url, 'POST', '/v1/leases', await leaseBody(key, property, unit), { key });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const done = await pollOperation(api.url, key, r.body.id);
    expect(done).toMatchObject({
      status: 'failed',
      source: { state: 'rejected', applied_at: null },
      reconcile: { state: 'failed', attempts: 1, next_attempt_at: null },
      resource: { type: 'lease', id: null, x_id: null },
      result: null,
    });
    // Each dialect words it its own way.
    expect(done.reconcile.last_error).toMatch(/not accepting changes at this time/i);
    await sandbox().clearFaults(s.companyId);
  });
});

describe('bad requests change nothing', () => {
  async function operationCount(): Promise<number> {
    return (await db.select({ id: operations.id }).from(operations).where(eq(operations.organizationId, s.row.organizationId))).length;
  }
  const problem = (r: { status: number; body: any; headers: Headers }, status: number, slug: string) => {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body.type).toMatch(new RegExp(`/${slug}$`));
    expect(r.body.request_id).toBe(r.headers.get('x-request-id'));
  };

  it('400 without an Idempotency-Key, 400 for bad JSON, 415 for a body that is not JSON, 413 over 256 KiB', async () => {
    const lease = await first('/v1/leases');
    const before = await operationCount();
    let r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2 }, { key, idempotencyKey: null });
    problem(r, 400, 'bad_request');
    expect(r.body.detail).toContain('Idempotency-Key');
    r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, null, { key, raw: '{"occupants": 2,' });
    problem(r, 400, 'bad_request');
    r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, null, { key, raw: 'occupants=2', headers: { 'content-type': 'text/plain' } });
    problem(r, 415, 'unsupported_media_type');
    r = await write(api.url, 'POST', '/v1/units', { property_id: 'prp_x', unit_number: '1', note: 'x'.repeat(300 * 1024) }, { key });
    problem(r, 413, 'payload_too_large');
    expect(await operationCount()).toBe(before);
  });

  it('400 naming a query parameter sent to a write, which is refused rather than ignored; its key stays free', async () => {
    const lease = await first('/v1/leases');
    const before = await operationCount();
    const idem = randomUUID();
    for (const [method, path] of [
      ['PATCH', `/v1/leases/${lease.id}?dry_run=true`],
      ['POST', '/v1/units?validate_only=1&x=2'],
    ] as const) {
      const r = await write(api.url, method, path, method === 'PATCH' ? { occupants: 2 } : { property_id: lease.property_id, unit_number: 'Q1' }, {
        key,
        idempotencyKey: idem,
      });
      problem(r, 400, 'bad_request');
      expect(r.body.detail).toContain(method === 'PATCH' ? '`dry_run`' : '`validate_only`');
      expect(r.body.detail).toContain('a write takes no query parameters');
    }
    expect(await operationCount()).toBe(before);
    const ok = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2 }, { key, idempotencyKey: idem });
    expect(ok.status).toBe(202);
    await pollOperation(api.url, key, ok.body.id);
  });

  it('400 for a body whose bytes are not UTF-8, 415 for one in another charset; spaces around the type parameters are fine', async () => {
    const unit = await first('/v1/units');
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1', key)).body.results[0];
    const before = await operationCount();
    // "José" in ISO-8859-1: one byte 0xE9, not UTF-8. A lenient decoder would store "Jos\uFFFD".
    const latin1 = Buffer.concat([Buffer.from('{"note":"Jos'), Buffer.from([0xe9]), Buffer.from('"}')]);
    let r = await write(api.url, 'PATCH', `/v1/units/${unit.id}`, null, { key, raw: latin1 });
    problem(r, 400, 'bad_request');
    expect(r.body.detail).toMatch(/not valid UTF-8/);
    r = await write(api.url, 'PATCH', `/v1/units/${unit.id}`, null, { key, raw: latin1, headers: { 'content-type': 'application/json; charset=iso-8859-1' } });
    problem(r, 415, 'unsupported_media_type');
    expect(r.body.detail).toMatch(/charset=iso-8859-1/);
    expect(await operationCount()).toBe(before);
    r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2 }, { key, headers: { 'content-type': 'application/json ; charset="UTF-8"' } });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
  });

  it('422 names every unknown and every non-writable field by its pointer', async () => {
    const lease = await first('/v1/leases');
    const before = await operationCount();
    let r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2, status: 'ended', x_id: '9', nonsense: 1 }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.title).toBe('Unprocessable Entity');
    expect(r.body.errors).toEqual(
      expect.arrayContaining([
        { pointer: 'status', detail: 'status is not writable' },
        { pointer: 'x_id', detail: 'x_id is not writable' },
        { pointer: 'nonsense', detail: 'Unknown field.' },
      ]),
    );
    expect(r.body.errors).toHaveLength(3);
    r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { rent_amount: { amount: 10.5, currency: 'USD', cents: 1 } }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer).sort()).toEqual(['/rent_amount/amount', '/rent_amount/cents']);
    r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, {}, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors[0].detail).toContain('nothing to update');
    // A nullable object that is neither null nor whole: each missing or unknown field of it by its own pointer.
    const resident = await first('/v1/residents');
    r = await write(api.url, 'PATCH', `/v1/residents/${resident.id}`, { address: { line_1: 'x', city: 'c', state: 's', zip: '1' } }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer).sort()).toEqual(['/address/postal_code', '/address/zip']);
    r = await write(api.url, 'PATCH', `/v1/residents/${resident.id}`, { address: 'str' }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: 'address', detail: 'Invalid input: expected object or null' }]);
    r = await write(api.url, 'POST', '/v1/leases', { property_x_id: '1' }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer)).toEqual(expect.arrayContaining(['lease_start_date', 'unit_space_id', 'postal_code']));
    r = await write(api.url, 'POST', '/v1/units', { unit_number: '12' }, { key });
    expect(r.body.errors.map((e: any) => e.pointer)).toEqual(['property_id']);
    // What the source would refuse after the fact is refused before: a lease's phone, state code, ZIP code, dates.
    const lease422 = {
      ...{ property_x_id: '1', lease_start_date: '2027-01-01', lease_end_date: '2027-12-31', move_in_date: '2027-01-01', lease_term_id: '1' },
      ...{ floorplan_id: '1', unit_space_id: '1', first_name: 'A', last_name: 'B', customer_relationship_type_id: '1', phone_number_type_id: '1' },
      ...{ address_type_id: '1', street_line_1: '1 Main St', city: 'Austin', state: 'Texas' },
    };
    r = await write(api.url, 'POST', '/v1/leases', { ...lease422, phone_number: 'call me', state_code: 'Texas', postal_code: 'ABCDEFGHIJ' }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer).sort()).toEqual(['phone_number', 'postal_code', 'state_code']);
    const dated = { ...lease422, phone_number: '+1 512 555 0100', state_code: 'TX', postal_code: '78701', lease_end_date: '2026-12-31' };
    r = await write(api.url, 'POST', '/v1/leases', dated, { key });
    expect(r.body.errors).toEqual([{ pointer: 'lease_end_date', detail: 'must be after lease_start_date' }]);
    // An unpaired surrogate is valid JSON but no text Postgres can hold: a 422 at its pointer, never a 500.
    r = await write(api.url, 'POST', '/v1/units', null, { key, raw: '{"property_id":"prp_01M8F2BZGQS3R7M5EAT51VCD5W","unit_number":"\\ud800"}' });
    problem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: 'unit_number', detail: expect.stringContaining('unpaired UTF-16 surrogate') }]);
    r = await write(api.url, 'POST', '/v1/units', null, { key, raw: '{"property_id":"prp_01M8F2BZGQS3R7M5EAT51VCD5W","unit_number":"1","note":"x\\udc00y"}' });
    expect(r.body.errors.map((e: any) => e.pointer)).toEqual(['note']);
    expect(await operationCount()).toBe(before);
  });

  it('403 Insufficient permissions for a key without write; reads still work with it', async () => {
    const readOnly = await keyFor(db, s.row.organizationId, ['read']);
    const lease = await first('/v1/leases');
    const r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2 }, { key: readOnly });
    problem(r, 403, 'forbidden');
    expect(r.body).toMatchObject({ title: 'Forbidden', detail: 'Insufficient permissions', required_scopes: ['write'] });
    expect((await getJson(api.url, `/v1/leases/${lease.id}`, readOnly)).status).toBe(200);
  });

  it('404 for a record, a property or an Operation of another organization or mode', async () => {
    const lease = await first('/v1/leases');
    const property = await first('/v1/properties');
    const done = await pollOperation(api.url, key, (await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2 }, { key })).body.id);
    const other = await makeTenant(db, { mode: 'test' });
    const sameOrgLive = (await createApiKey(db, { organizationId: s.row.organizationId, mode: 'live' })).key;
    const before = await operationCount();
    for (const k of [other.key, sameOrgLive]) {
      problem(await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 2 }, { key: k }), 404, 'not_found');
      problem(await write(api.url, 'POST', '/v1/units', { property_id: property.id, unit_number: 'Z1' }, { key: k }), 404, 'not_found');
      problem(await getJson(api.url, `/v1/operations/${done.id}`, k), 404, 'not_found');
    }
    problem(await getJson(api.url, '/v1/operations/opr_01JH0000000000000000000000', key), 404, 'not_found');
    problem(await getJson(api.url, '/v1/operations/not-an-id', key), 404, 'not_found');
    problem(await write(api.url, 'PATCH', '/v1/units/unt_01JH0000000000000000000000', { bedrooms: 2 }, { key }), 404, 'not_found');
    expect(await operationCount()).toBe(before);
  });
});

describe('idempotency', () => {
  it('the same key and request: the same Operation, 202 again; a different request: 409', async () => {
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1&offset=1', key)).body.results[0];
    const idem = randomUUID();
    const body = { occupants: 4, move_in_date: '2026-03-01' };
    const a = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, body, { key, idempotencyKey: idem });
    expect(a.status).toBe(202);
    await pollOperation(api.url, key, a.body.id);
    // The same request with its fields in another order is the same request.
    const b = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { move_in_date: '2026-03-01', occupants: 4 }, { key, idempotencyKey: idem });
    expect(b.status).toBe(202);
    expect(b.body.id).toBe(a.body.id);
    expect(b.body.status).toBe('succeeded');
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    const c = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 5 }, { key, idempotencyKey: idem });
    expect(c.status).toBe(409);
    expect(c.headers.get('content-type')).toContain('application/problem+json');
    expect(c.body.type).toBe(`${config.PROBLEM_BASE_URL}/idempotency-key-conflict`);
    expect(c.body.title).toBe('Idempotency-Key conflict');
    expect(c.body.detail).toContain(a.body.id);
    // The same key on another path is a different request too, whether or not that request would pass on its own
    // (the key is asked before the body is judged), and so is the same body with a field more.
    const other = await first('/v1/units');
    expect((await write(api.url, 'PATCH', `/v1/units/${other.id}`, { occupants: 4 }, { key, idempotencyKey: idem })).status).toBe(409);
    expect((await write(api.url, 'PATCH', `/v1/units/${other.id}`, { bedrooms: 3 }, { key, idempotencyKey: idem })).status).toBe(409);
    expect((await write(api.url, 'POST', '/v1/units', { unit_number: 'Z1' }, { key, idempotencyKey: idem })).status).toBe(409);
    expect((await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { ...body, zzz: 1 }, { key, idempotencyKey: idem })).status).toBe(409);
    // Also one nested some thousands deep (too deep to canonicalize by recursion): a conflict, not a 500.
    const raw = `{"occupants":4,"zzz":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    const nested = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, undefined, { key, idempotencyKey: idem, raw });
    expect([nested.status, nested.body.type]).toEqual([409, `${config.PROBLEM_BASE_URL}/idempotency-key-conflict`]);
    expect((await write(api.url, 'PATCH', `/v1/leases/lse_01JH0000000000000000000000`, body, { key, idempotencyKey: idem })).status).toBe(409);
    // Another organization has keys of its own.
    const t = await sandboxIntegration(db, { size: 3 });
    await runSync(syncs, db, t.row);
    const tKey = await keyFor(db, t.row.organizationId);
    const tLease = (await getJson(api.url, '/v1/leases?limit=1', tKey)).body.results[0];
    const d = await write(api.url, 'PATCH', `/v1/leases/${tLease.id}`, { occupants: 5 }, { key: tKey, idempotencyKey: idem });
    expect(d.status).toBe(202);
    expect(d.body.id).not.toBe(a.body.id);
  });

  it('a write replayed after its record was deleted at the source is its Operation again, not a 404', async () => {
    const t = await sandboxIntegration(db, { size: 12 });
    await runSync(syncs, db, t.row);
    const tKey = await keyFor(db, t.row.organizationId);
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1', tKey)).body.results[0];
    const path = `/v1/leases/${lease.id}`;
    const idem = randomUUID();
    const r = await write(api.url, 'PATCH', path, { occupants: 3 }, { key: tKey, idempotencyKey: idem });
    expect(r.status).toBe(202);
    expect((await pollOperation(api.url, tKey, r.body.id)).status).toBe('succeeded');
    // Every lease goes (the source picks which when told a number), so the written one does too.
    const all = (await getJson(api.url, '/v1/leases?limit=100', tKey)).body.results.length;
    expect((await sandbox().applyChanges(t.companyId, { delete: { lease: all } })).deleted.lease).toContain(lease.x_id);
    await runSync(syncs, db, t.row);
    expect((await getJson(api.url, path, tKey)).status).toBe(404);
    const again = await write(api.url, 'PATCH', path, { occupants: 3 }, { key: tKey, idempotencyKey: idem });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ id: r.body.id, status: 'succeeded' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await write(api.url, 'PATCH', path, { occupants: 4 }, { key: tKey, idempotencyKey: idem })).status).toBe(409);
    // A new key on the deleted record: the 404 it always was.
    expect((await write(api.url, 'PATCH', path, { occupants: 3 }, { key: tKey })).status).toBe(404);
  });

  it('identical requests racing: one Operation, one workflow, one record at the source', async () => {
    const property = await first('/v1/properties');
    const idem = randomUUID();
    const number = `R-${Date.now() % 100000}`;
    const body = { property_id: property.id, unit_number: number, bedrooms: 1 };
    const replies = await Promise.all(Array.from({ length: 8 }, () => write(api.url, 'POST', '/v1/units', body, { key, idempotencyKey: idem })));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(202));
    const ids = new Set(replies.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    const [id] = [...ids] as [string];
    const done = await pollOperation(api.url, key, id);
    expect(done.status).toBe('succeeded');
    expect((await db.select().from(operations).where(eq(operations.idempotencyKey, idem))).length).toBe(1);
    const runs = [];
    for await (const w of writes.client.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push(w);
    expect(runs).toHaveLength(1);
    const units = (await readSource(s.row)).unit.filter((u) => u.unit_number === number);
    expect(units).toHaveLength(1);
  });
});

describe('a slow source', () => {
  it('a create the source applies after the client gave up is looked up, not sent again: succeeded, one record', async () => {
    const property = await first('/v1/properties');
    const unit = (await getJson(api.url, `/v1/units?property_id=${property.id}&limit=1&offset=1`, key)).body.results[0];
    // The worker waits 2 s (WRITE_SOURCE_TIMEOUT_MS); the sandbox applies the write and answers 4 s later.
    await sandbox().setFault(s.companyId, { kind: 'slow', delay_ms: 4_000, count: 1, methods: 'writes' });
    const body = { ...(await leaseBody(key, property, unit)), first_name: 'Slow', last_name: `Source${Date.now() % 10000}` };
    const r = await write(api.url, 'POST', '/v1/leases', body, { key });
    const running = await until('the first attempt to fail', async () => {
      const o = (await getJson(api.url, `/v1/operations/${r.body.id}`, key)).body;
      return o.status === 'running' ? o : undefined;
    });
    expect(running.reconcile).toMatchObject({ state: 'pending', attempts: 1 });
    expect(running.reconcile.last_error).toMatch(/no reply within 2000 ms/);
    expect(Date.parse(running.reconcile.next_attempt_at)).toBeGreaterThan(Date.now() - 5_000);
    const done = await pollOperation(api.url, key, r.body.id);
    expect(done).toMatchObject({ status: 'succeeded', reconcile: { attempts: 2, last_error: null } });
    const source = await readSource(s.row);
    const residents = source.resident.filter((x) => x.last_name === body.last_name);
    expect(residents).toHaveLength(1);
    expect(source.lease.filter((l) => l.residents.some((p) => p.x_id === residents[0]!.x_id))).toHaveLength(1);
    expect(done.resource.x_id).toBe(source.lease.find((l) => l.residents.some((p) => p.x_id === residents[0]!.x_id))!.x_id);
    await sandbox().clearFaults(s.companyId);
  });
});

describe('a workflow stopped from outside', () => {
  it('an Operation whose workflow an operator terminated is failed by the sweeper, with the reason', async () => {
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1&offset=2', key)).body.results[0];
    // The first attempt times out (2 s) and the next is 5 s away: the Operation is running when the operator acts.
    await sandbox().setFault(s.companyId, { kind: 'slow', delay_ms: 4_000, count: 1, methods: 'writes' });
    try {
      const r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { occupants: 4 }, { key });
      expect(r.status).toBe(202);
      await until('the first attempt to fail', async () =>
        (await getJson(api.url, `/v1/operations/${r.body.id}`, key)).body.status === 'running' ? true : undefined,
      );
      await writes.client.workflow.getHandle(r.body.id).terminate('stuck, stopped by the on-call operator');
      // What the sweeper's schedule runs every minute (here at once; Temporal's list of closed workflows lags a moment).
      const sweep = () =>
        writes.client.workflow.execute(sweepWrites, {
          taskQueue: writeTaskQueueOf(config.TEMPORAL_TASK_QUEUE),
          workflowId: `sweep-${randomUUID()}`,
          args: [{}],
        });
      const failed = await until('the sweeper to fail the Operation', async () => {
        await sweep();
        const o = (await getJson(api.url, `/v1/operations/${r.body.id}`, key)).body;
        return o.status === 'failed' ? o : undefined;
      });
      expect(failed).toMatchObject({
        status: 'failed',
        source: { state: null, applied_at: null },
        reconcile: { state: 'failed', attempts: 1, next_attempt_at: null },
        result: null,
      });
      expect(failed.reconcile.last_error).toMatch(/^its workflow was terminated .*: stuck, stopped by the on-call operator before the write finished/);
      // A later sweep leaves it as it is.
      const [before] = await db.select().from(operations).where(eq(operations.id, r.body.id));
      await sweep();
      const [after] = await db.select().from(operations).where(eq(operations.id, r.body.id));
      expect(after).toEqual(before);
    } finally {
      await sandbox().clearFaults(s.companyId);
    }
  });
});

/**
 * A lease create body for a unit of the sandbox, its coded fields taken from the property's write options (the unit's
 * floor plan, a 12-month term, a mobile phone): so the same body suits a company of either dialect.
 */
async function leaseBody(key: string, property: any, unit: any) {
  const fields = new Map<string, any>(
    (await getJson(api.url, `/v1/write_options/lease.create?property_id=${property.id}`, key)).body.fields.map((f: any) => [f.name, f]),
  );
  const pick = (name: string, label?: RegExp) => {
    const options = fields.get(name).options as { value: string; label: string }[];
    return ((label && options.find((o) => label.test(o.label))) || options[0]!).value;
  };
  const space = (fields.get('unit_space_id').options as { value: string; floorplan_id: string }[]).find((o) => o.value === unit.x_id)!;
  return {
    property_x_id: property.x_id,
    lease_start_date: '2027-01-01',
    lease_end_date: '2027-12-31',
    move_in_date: '2027-01-01',
    lease_term_id: pick('lease_term_id', /12/),
    floorplan_id: space.floorplan_id,
    unit_space_id: unit.x_id,
    first_name: 'Lea',
    last_name: 'Sample',
    customer_relationship_type_id: pick('customer_relationship_type_id'),
    phone_number: '+1 312 555 0199',
    phone_number_type_id: pick('phone_number_type_id', /mobile/i),
    address_type_id: pick('address_type_id'),
    street_line_1: '1 Main St',
    city: 'Chicago',
    state: 'Illinois',
    state_code: 'IL',
    postal_code: '60601',
  };
}
