/**
 * Write-back over HTTP against the real stack (API, Temporal dev server, write worker, sandbox PMS): POST/PATCH,
 * poll the Operation, read the record back; rejections; idempotency; tenancy; bad input changing nothing.
 */
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { events } from '../../db/schema';
import { startApi, type TestServer } from '../support/api-server';
import { testConfig, testDb } from '../support/context';
import { readSource, runSync, sandboxIntegration, startTestWorker, type SandboxIntegration, type TestWorker } from '../support/sync';
import { getJson, keyFor, pollOperation, startWriteWorker, write, type WriteWorker } from '../support/writes';

let db: Db;
let config: Config;
let syncs: TestWorker;
let writes: WriteWorker;
let api: TestServer;
let s: SandboxIntegration;
let key: string;

beforeAll(async () => {
  db = testDb();
  config = testConfig({ WORKER_RECONCILE_SCHEDULES: 'false', WRITE_SOURCE_TIMEOUT_MS: '2000' });
  [syncs, writes, api] = await Promise.all([startTestWorker(config, db), startWriteWorker(config, db), startApi(db, config)]);
  s = await sandboxIntegration(db, { size: 30 });
  await runSync(syncs, db, s.row);
  key = await keyFor(db, s.row.organizationId);
});
afterAll(async () => {
  await api?.close();
  await writes?.stop();
  await syncs?.stop();
  await closeDb(db);
});

async function first(path: string): Promise<any> {
  const r = await getJson(api.url, `${path}?limit=1&order-by=created_at:asc`, key);
  return r.body.results[0];
}

describe('a write, start to finish', () => {
  it('PATCH a lease: 202 queued, then succeeded, the cache and the source both hold the change', async () => {
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1', key)).body.results[0];
    const idem = randomUUID();
    const r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, { rent_amount: { amount: 123_456, currency: 'USD' }, occupants: 3 }, { key, idempotencyKey: idem });
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
    const evs = await db.select().from(events).where(and(eq(events.operationId, r.body.id)));
    expect(evs.map((e) => e.type)).toEqual(['LEASE_UPDATED']);
    expect(evs[0]!.data).toMatchObject({ id: lease.id, rent_amount: { amount: 123_456, currency: 'USD' }, changed: expect.arrayContaining(['rent_amount']) });
  });

  it('POST a unit, a resident and a lease: each GET of result.id works at once', async () => {
    const property = await first('/v1/properties');
    const unitOp = await write(api.url, 'POST', '/v1/units', { property_id: property.id, unit_number: `W-${Date.now() % 100000}`, bedrooms: 2, bathrooms: 1, note: 'written' }, { key });
    expect(unitOp.status).toBe(202);
    expect(unitOp.body).toMatchObject({ type: 'unit.create', resource: { type: 'unit', id: null, x_id: null } });
    const unitDone = await pollOperation(api.url, key, unitOp.body.id);
    expect(unitDone.status).toBe('succeeded');
    const unit = (await getJson(api.url, `/v1/units/${unitDone.result.id}`, key)).body;
    expect(unit).toMatchObject({ id: unitDone.resource.id, x_id: unitDone.resource.x_id, property_id: property.id, bedrooms: 2, note: 'written' });

    const resOp = await write(api.url, 'POST', '/v1/residents', { property_id: property.id, first_name: 'Ada', last_name: 'Writer', email: 'ada.writer@example.com', phones: [{ type: 'mobile', number: '+1 312 555 0101', primary: true }] }, { key });
    const resDone = await pollOperation(api.url, key, resOp.body.id);
    expect(resDone.status).toBe('succeeded');
    const resident = (await getJson(api.url, `/v1/residents/${resDone.result.id}`, key)).body;
    expect(resident).toMatchObject({ first_name: 'Ada', last_name: 'Writer', email: 'ada.writer@example.com', property_id: property.id });

    const someUnit = (await getJson(api.url, `/v1/units?property_id=${property.id}&limit=1`, key)).body.results[0];
    const leaseOp = await write(api.url, 'POST', '/v1/leases', leaseBody(property.x_id, someUnit), { key });
    expect(leaseOp.status).toBe(202);
    const leaseDone = await pollOperation(api.url, key, leaseOp.body.id);
    expect(leaseDone.status, JSON.stringify(leaseDone)).toBe('succeeded');
    const lease = (await getJson(api.url, `/v1/leases/${leaseDone.result.id}`, key)).body;
    expect(lease).toMatchObject({ unit_id: someUnit.id, property_id: property.id, start_date: '2027-01-01', end_date: '2027-12-31' });
    expect(lease.residents).toHaveLength(1);
    const applicant = (await getJson(api.url, `/v1/residents/${lease.residents[0].resident_id}`, key)).body;
    expect(applicant).toMatchObject({ first_name: 'Lea', last_name: 'Sample' });
  });

  it('a rejection by the source fails the Operation at once, with the source’s reason', async () => {
    const property = await first('/v1/properties');
    const unit = (await getJson(api.url, `/v1/units?property_id=${property.id}&limit=1`, key)).body.results[0];
    // A floorplan that does not match the unit: the source refuses it.
    const r = await write(api.url, 'POST', '/v1/leases', leaseBody(property.x_id, unit, '999999'), { key });
    const done = await pollOperation(api.url, key, r.body.id);
    expect(done).toMatchObject({
      status: 'failed',
      source: { state: 'rejected', applied_at: null },
      reconcile: { state: 'failed', attempts: 1, next_attempt_at: null },
      resource: { type: 'lease', id: null, x_id: null },
      result: null,
    });
    expect(done.reconcile.last_error).toMatch(/floorplanId 999999 does not match/);
  });
});

/** A lease create body for a unit of the sandbox (its floorplan as given). */
function leaseBody(propertyXId: string, unit: any, floorplanId?: string) {
  return {
    property_x_id: propertyXId,
    lease_start_date: '2027-01-01',
    lease_end_date: '2027-12-31',
    move_in_date: '2027-01-01',
    lease_term_id: '2',
    floorplan_id: floorplanId ?? String(unit.custom_data.floorplanId),
    unit_space_id: unit.x_id,
    first_name: 'Lea',
    last_name: 'Sample',
    customer_relationship_type_id: '1',
    phone_number: '+1 312 555 0199',
    phone_number_type_id: '3',
    address_type_id: '1',
    street_line_1: '1 Main St',
    city: 'Chicago',
    state: 'Illinois',
    state_code: 'IL',
    postal_code: '60601',
  };
}
