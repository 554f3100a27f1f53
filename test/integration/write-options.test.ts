/**
 * Write options over HTTP against the real stack (API, Temporal dev server, write worker, sandbox PMS): what GET
 * /v1/write_options lists for each write at each property, tenancy, bad parameters; writes checked against the
 * options before anything is stored (422 at the field, the Idempotency-Key left free); a lease built from the
 * options, end to end; and the source down or slow, when writes are still accepted and the source decides.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { and, eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { operations, units } from '../../db/schema';
import { createApiKey } from '../../db/tenants';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, testConfig } from '../support/context';
import { onServices } from '../support/services';
import { eventsOf, runSync, sandbox, sandboxIntegration, type SandboxIntegration, type TestWorker } from '../support/sync';
import { SOURCE_DIALECTS } from '../../source';
import { getJson, keyFor, pollOperation, write, type Reply } from '../support/writes';

let db: Db;
let config: Config;
let syncs: TestWorker;
let api: TestServer;
let s: SandboxIntegration;
let key: string;
/** The two properties of the company: 1001 (odd-numbered) and 1002 (even-numbered). */
let odd: any;
let even: any;

const TYPES = ['lease.create', 'lease.update', 'unit.create', 'unit.update', 'resident.create', 'resident.update'] as const;
/** The request body schema of each write, by its name in the OpenAPI document. */
const BODY_SCHEMA: Record<(typeof TYPES)[number], string> = {
  'lease.create': 'LeaseCreate',
  'lease.update': 'LeaseUpdate',
  'unit.create': 'UnitCreate',
  'unit.update': 'UnitUpdate',
  'resident.create': 'ResidentCreate',
  'resident.update': 'ResidentUpdate',
};
const LEASE_CODED = ['lease_term_id', 'floorplan_id', 'unit_space_id', 'customer_relationship_type_id', 'phone_number_type_id', 'address_type_id'];

onServices({ settings: { WORKER_RECONCILE_SCHEDULES: 'false' }, worker: true, writes: true, api: true }, (started) => {
  ({ db, config, worker: syncs, api } = started);
});
beforeAll(async () => {
  s = await sandboxIntegration(db, { size: 40, seed: 23 });
  // A second property, and units spread over both.
  await sandbox().applyChanges(s.companyId, { create: { property: 1 } });
  await sandbox().applyChanges(s.companyId, { create: { unit: 12 } });
  await runSync(syncs, db, s.row);
  key = await keyFor(db, s.row.organizationId);
  const properties = (await getJson(api.url, '/v1/properties?limit=10', key)).body.results;
  odd = properties.find((p: any) => p.x_id === '1001');
  even = properties.find((p: any) => p.x_id === '1002');
});

const optionsOf = (type: string, propertyId: string, k = key) => getJson(api.url, `/v1/write_options/${type}?property_id=${encodeURIComponent(propertyId)}`, k);

function problem(r: Reply, status: number, slug: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.headers.get('content-type')).toContain('application/problem+json');
  expect(r.body.type).toMatch(new RegExp(`/${slug}$`));
  expect(r.body.request_id).toBe(r.headers.get('x-request-id'));
}

async function operationCount(): Promise<number> {
  return (await db.select({ id: operations.id }).from(operations).where(eq(operations.organizationId, s.row.organizationId))).length;
}

/** What the sandbox holds for a property, as a user reads it from the API: its floor plans and its units. */
async function heldAt(property: any): Promise<{ floorplans: { value: string; label: string }[]; units: any[] }> {
  const full = (await getJson(api.url, `/v1/properties/${property.id}`, key)).body;
  const plans = full.custom_data.floorplans.floorplan;
  const units = (await getJson(api.url, `/v1/units?property_id=${property.id}&limit=100`, key)).body.results.sort(
    (a: any, b: any) => Number(a.x_id) - Number(b.x_id),
  );
  return {
    floorplans: (Array.isArray(plans) ? plans : [plans]).map((f: any) => ({ value: String(f.floorplanId), label: f.name })),
    units,
  };
}

const byName = (body: any) => new Map<string, any>(body.fields.map((f: any) => [f.name, f]));

// The answer's shape is the same for a property of either dialect's company (the values are the source's own).
describe.each(SOURCE_DIALECTS)('GET /v1/write_options/{operation_type} for a property of a %s company', (dialect) => {
  let k: string;
  let property: any;
  beforeAll(async () => {
    const c = dialect === 'entrata' ? s : await sandboxIntegration(db, { size: 10, seed: 24, dialect });
    if (c !== s) await runSync(syncs, db, c.row);
    k = await keyFor(db, c.row.organizationId);
    property = (await getJson(api.url, '/v1/properties?limit=1', k)).body.results[0];
  });

  it('lists every field of each of the six writes as the document describes its body, options null where not coded', async () => {
    const doc = (await getJson(api.url, '/v1/openapi.json', k)).body;
    for (const type of TYPES) {
      const r = await optionsOf(type, property.id, k);
      expect(r.status, `${type} ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.headers.get('ratelimit-limit')).toEqual(expect.any(String));
      expect(r.body).toMatchObject({ object: 'write_options', operation_type: type, property_id: property.id });
      const schema = doc.components.schemas[BODY_SCHEMA[type]];
      expect(
        r.body.fields.map((f: any) => f.name),
        type,
      ).toEqual(Object.keys(schema.properties));
      for (const f of r.body.fields) {
        expect(f.required, `${type} ${f.name}`).toBe((schema.required ?? []).includes(f.name));
        const coded =
          (type === 'lease.create' && LEASE_CODED.includes(f.name)) || (type.startsWith('unit.') && f.name === 'floorplan_id') || f.name === 'integration_id';
        if (!coded) expect(f.options, `${type} ${f.name}`).toBeNull();
        else expect(f.options, `${type} ${f.name}`).toEqual(expect.any(Array));
      }
      // No source read for a write without coded fields.
      if (type === 'lease.update' || type.startsWith('resident.')) expect(r.body.options_read_at).toBeNull();
      else expect(Date.parse(r.body.options_read_at)).toBeGreaterThan(Date.now() - 120_000);
    }
    const lease = byName((await optionsOf('lease.create', property.id, k)).body);
    expect(lease.get('lease_start_date')).toMatchObject({ type: 'date', required: true, nullable: false });
    expect(lease.get('integration_id')).toMatchObject({ type: 'string', required: false });
    const unit = byName((await optionsOf('unit.update', property.id, k)).body);
    expect(unit.get('bedrooms')).toMatchObject({ type: 'integer', required: false, nullable: false, options: null });
    expect(unit.get('note')).toMatchObject({ type: 'string', nullable: true });
    expect(unit.get('market_rent')).toMatchObject({ type: 'object' });
    expect(byName((await optionsOf('resident.create', property.id, k)).body).get('phones')).toMatchObject({ type: 'array', nullable: true, options: null });
  });
});

describe('GET /v1/write_options/{operation_type}', () => {
  it('gives each coded field the values the sandbox holds for that property (entrata codes)', async () => {
    for (const property of [odd, even]) {
      const held = await heldAt(property);
      const lease = byName((await optionsOf('lease.create', property.id)).body);
      expect(lease.get('floorplan_id').options).toEqual(held.floorplans);
      expect(lease.get('unit_space_id').options).toEqual(held.units.map((u: any) => ({ value: u.x_id, label: u.unit_number, floorplan_id: u.floorplan_id })));
      for (const u of held.units) expect(held.floorplans.map((f) => f.value)).toContain(u.floorplan_id);
      // As the README's sandbox section says: 6 and 12 months everywhere, 18 at even-numbered properties, 24 at odd ones.
      expect(lease.get('lease_term_id').options).toEqual([
        { value: '1', label: '6 Months' },
        { value: '2', label: '12 Months' },
        property === even ? { value: '3', label: '18 Months' } : { value: '4', label: '24 Months' },
      ]);
      expect(lease.get('customer_relationship_type_id').options).toEqual([
        { value: '1', label: 'Primary' },
        { value: '2', label: 'Responsible' },
        { value: '3', label: 'Non-Responsible Occupant' },
        { value: '4', label: 'Guarantor' },
      ]);
      expect(lease.get('phone_number_type_id').options).toEqual([
        { value: '1', label: 'Home' },
        { value: '2', label: 'Office' },
        { value: '3', label: 'Mobile' },
        { value: '4', label: 'Fax' },
      ]);
      expect(lease.get('address_type_id').options).toEqual([
        { value: '1', label: 'Current' },
        { value: '2', label: 'Mailing' },
        { value: '3', label: 'Previous' },
      ]);
      for (const type of ['unit.create', 'unit.update']) {
        expect(byName((await optionsOf(type, property.id)).body).get('floorplan_id').options, type).toEqual(held.floorplans);
      }
    }
    // Two properties, two sets of floor plans.
    const a = byName((await optionsOf('lease.create', odd.id)).body).get('floorplan_id').options;
    const b = byName((await optionsOf('lease.create', even.id)).body).get('floorplan_id').options;
    expect(a.filter((o: any) => b.some((p: any) => p.value === o.value))).toEqual([]);
  });

  it('404 for a property of another organization or mode, or an unknown one, and for an unknown operation type', async () => {
    const other = await makeTenant(db, { mode: 'test' });
    const sameOrgLive = (await createApiKey(db, { organizationId: s.row.organizationId, mode: 'live' })).key;
    for (const k of [other.key, sameOrgLive]) problem(await optionsOf('lease.create', odd.id, k), 404, 'not_found');
    problem(await optionsOf('lease.create', 'prp_01JH0000000000000000000000'), 404, 'not_found');
    for (const type of ['lease.delete', 'property.create', 'LEASE.CREATE', 'leases']) {
      const r = await optionsOf(type, odd.id);
      problem(r, 404, 'not_found');
      expect(r.body.detail).toContain('lease.create');
    }
    problem(await getJson(api.url, `/v1/write_options/lease.create?property_id=${odd.id}`, 'sk_test_nope'), 401, 'unauthorized');
    // A read: a key without the write scope may ask.
    expect((await optionsOf('lease.create', odd.id, await keyFor(db, s.row.organizationId, ['read']))).status).toBe(200);
  });

  it('422 at property_id when it is missing, empty or not a property id; 400 when repeated, or beside an unknown parameter', async () => {
    for (const query of ['', '?property_id=', `?property_id=${encodeURIComponent(' ')}`, '?property_id=unt_01JH0000000000000000000000', '?property_id=1001']) {
      const r = await getJson(api.url, `/v1/write_options/unit.create${query}`, key);
      problem(r, 422, 'validation_error');
      expect(r.body.errors).toEqual([{ pointer: 'property_id', detail: expect.any(String) }]);
    }
    problem(await getJson(api.url, `/v1/write_options/unit.create?property_id=${odd.id}&property_id=${even.id}`, key), 400, 'bad_request');
    const unknown = await getJson(api.url, `/v1/write_options/unit.create?property_id=${odd.id}&propertyid=${odd.id}`, key);
    problem(unknown, 400, 'bad_request');
    expect(unknown.body.detail).toContain('propertyid');
  });

  it('is in the OpenAPI document, with its parameters and an example', async () => {
    const doc = (await getJson(api.url, '/v1/openapi.json', key)).body;
    const op = doc.paths['/v1/write_options/{operation_type}'].get;
    expect(op.operationId).toBe('retrieve_write_options');
    const params = Object.fromEntries(op.parameters.map((p: any) => [p.name, p]));
    expect(params.operation_type).toMatchObject({ in: 'path', required: true, schema: { enum: [...TYPES] } });
    expect(params.property_id).toMatchObject({ in: 'query', required: true });
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '404', '422', '429', '500', '503']);
    const example = op.responses['200'].content['application/json'].example;
    expect(example.operation_type).toBe('lease.create');
    expect(example.fields.find((f: any) => f.name === 'lease_term_id').options).toContainEqual({ value: '2', label: '12 Months' });
  });
});

describe('writes checked against the options', () => {
  /** A lease create at a property built from its write options alone: the first unit space, its floor plan, and so on. */
  async function leaseFromOptions(property: any, over: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const fields = byName((await optionsOf('lease.create', property.id)).body);
    const pick = (name: string, label?: string) => {
      const options = fields.get(name).options as any[];
      return (label ? options.find((o) => o.label === label) : options[0]).value;
    };
    const space = fields.get('unit_space_id').options[0];
    return {
      property_x_id: property.x_id,
      lease_start_date: '2027-03-01',
      lease_end_date: '2028-02-29',
      move_in_date: '2027-03-01',
      lease_term_id: pick('lease_term_id', '12 Months'),
      floorplan_id: space.floorplan_id,
      unit_space_id: space.value,
      first_name: 'Opal',
      last_name: `Options${Date.now() % 100000}`,
      customer_relationship_type_id: pick('customer_relationship_type_id', 'Primary'),
      phone_number: '+1 312 555 0144',
      phone_number_type_id: pick('phone_number_type_id', 'Mobile'),
      address_type_id: pick('address_type_id', 'Current'),
      street_line_1: '1 Main St',
      city: 'Chicago',
      state: 'Illinois',
      state_code: 'IL',
      postal_code: '60601',
      ...over,
    };
  }

  it('a lease built from the options succeeds end to end', async () => {
    const body = await leaseFromOptions(even);
    const r = await write(api.url, 'POST', '/v1/leases', body, { key });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const done = await pollOperation(api.url, key, r.body.id);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const lease = (await getJson(api.url, `/v1/leases/${done.result.id}`, key)).body;
    const unit = (await getJson(api.url, `/v1/units?property_id=${even.id}&limit=100`, key)).body.results.find((u: any) => u.x_id === body.unit_space_id);
    expect(lease).toMatchObject({ property_id: even.id, unit_id: unit.id, start_date: '2027-03-01', end_date: '2028-02-29', term_months: 12 });
    const applicant = (await getJson(api.url, `/v1/residents/${lease.residents[0].resident_id}`, key)).body;
    expect(applicant).toMatchObject({ first_name: 'Opal', last_name: body.last_name, phones: [{ type: 'mobile', number: '+1 312 555 0144', primary: true }] });
  });

  it('integration_id: its option the property’s integration; required, and refused when missing, where two integrations hold the x_id', async () => {
    const fields = byName((await optionsOf('lease.create', odd.id)).body);
    expect(fields.get('integration_id')).toMatchObject({ required: false, options: [{ value: s.row.id, label: expect.any(String) }] });
    // A second company of the same seed: its properties have the same x_ids.
    const first = await sandboxIntegration(db, { size: 10, seed: 23 });
    const second = await sandboxIntegration(db, { size: 10, seed: 23, organizationId: first.row.organizationId });
    await runSync(syncs, db, first.row);
    await runSync(syncs, db, second.row);
    const k = await keyFor(db, first.row.organizationId);
    const property = (await getJson(api.url, `/v1/properties?x_id=1001&integration_id=${second.row.id}`, k)).body.results[0];
    const answer = byName((await optionsOf('lease.create', property.id, k)).body);
    expect(answer.get('integration_id')).toMatchObject({ required: true, options: [{ value: second.row.id, label: expect.any(String) }] });
    const space = answer.get('unit_space_id').options[0];
    const code = (name: string) => answer.get(name).options[0].value;
    const body = {
      ...{ property_x_id: '1001', lease_start_date: '2027-03-01', lease_end_date: '2028-02-29', move_in_date: '2027-03-01' },
      ...{ lease_term_id: code('lease_term_id'), floorplan_id: space.floorplan_id, unit_space_id: space.value, first_name: 'Ida', last_name: 'Twice' },
      ...{
        customer_relationship_type_id: code('customer_relationship_type_id'),
        phone_number: '+1 312 555 0145',
        phone_number_type_id: code('phone_number_type_id'),
      },
      ...{ address_type_id: code('address_type_id'), street_line_1: '1 Main St', city: 'Chicago', state: 'Illinois', state_code: 'IL', postal_code: '60601' },
    };
    let r = await write(api.url, 'POST', '/v1/leases', body, { key: k });
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer)).toEqual(['integration_id']);
    r = await write(api.url, 'POST', '/v1/leases', { ...body, integration_id: answer.get('integration_id').options[0].value }, { key: k });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const done = await pollOperation(api.url, k, r.body.id);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    expect((await getJson(api.url, `/v1/leases/${done.result.id}`, k)).body).toMatchObject({ integration_id: second.row.id, property_id: property.id });
  });

  it('a code the source refuses is a 422 at its pointer before any Operation exists, and the Idempotency-Key stays free', async () => {
    const good = await leaseFromOptions(odd);
    const before = await operationCount();
    const idem = randomUUID();
    // 18 months is a term of the company, but property 1001 does not offer it.
    let r = await write(api.url, 'POST', '/v1/leases', { ...good, lease_term_id: '3' }, { key, idempotencyKey: idem });
    problem(r, 422, 'validation_error');
    expect(r.body.title).toBe('Unprocessable Entity');
    expect(r.body.errors).toEqual([{ pointer: 'lease_term_id', detail: expect.stringContaining('is not a lease term the source accepts at property 1001') }]);
    expect(r.body.errors[0].detail).toContain('4 (24 Months)');
    expect(await operationCount()).toBe(before);

    // Several at once, each under its own pointer; and a floor plan of the property that is not the unit's.
    const fields = byName((await optionsOf('lease.create', odd.id)).body);
    const otherPlan = fields.get('floorplan_id').options.find((o: any) => o.value !== good.floorplan_id).value;
    r = await write(
      api.url,
      'POST',
      '/v1/leases',
      { ...good, lease_term_id: '12', customer_relationship_type_id: '9', unit_space_id: '5000001', phone_number_type_id: '03' },
      { key, idempotencyKey: idem },
    );
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer).sort()).toEqual(['customer_relationship_type_id', 'lease_term_id', 'unit_space_id']);
    r = await write(api.url, 'POST', '/v1/leases', { ...good, floorplan_id: otherPlan }, { key, idempotencyKey: idem });
    problem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([
      { pointer: 'floorplan_id', detail: `${otherPlan} is not the floor plan of unit space ${good.unit_space_id}, which is ${good.floorplan_id}` },
    ]);
    expect(await operationCount()).toBe(before);

    // The key was never taken: the corrected request makes its Operation under it, and succeeds.
    r = await write(api.url, 'POST', '/v1/leases', good, { key, idempotencyKey: idem });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.idempotency_key).toBe(idem);
    expect(await operationCount()).toBe(before + 1);
    expect((await pollOperation(api.url, key, r.body.id)).status).toBe('succeeded');
    // And it now replays that Operation, even with a body the options would refuse being a different request (409).
    const again = await write(api.url, 'POST', '/v1/leases', good, { key, idempotencyKey: idem });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(r.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await write(api.url, 'POST', '/v1/leases', { ...good, lease_term_id: '3' }, { key, idempotencyKey: idem })).status).toBe(409);
  });

  it('a unit takes a floor plan from the options; another is a 422 at floorplan_id on create and update', async () => {
    const plans = byName((await optionsOf('unit.create', odd.id)).body).get('floorplan_id').options;
    const before = await operationCount();
    problem(await write(api.url, 'POST', '/v1/units', { property_id: odd.id, unit_number: 'FP-9', floorplan_id: '424242' }, { key }), 422, 'validation_error');
    // Another property's floor plan is not one of this property's.
    const evenPlan = byName((await optionsOf('unit.create', even.id)).body).get('floorplan_id').options[0].value;
    const r = await write(api.url, 'POST', '/v1/units', { property_id: odd.id, unit_number: 'FP-9', floorplan_id: evenPlan }, { key });
    problem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer)).toEqual(['floorplan_id']);
    expect(await operationCount()).toBe(before);

    const plan = plans[plans.length - 1];
    const created = await write(api.url, 'POST', '/v1/units', { property_id: odd.id, unit_number: 'FP-9', floorplan_id: plan.value }, { key });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const done = await pollOperation(api.url, key, created.body.id);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const unit = (await getJson(api.url, `/v1/units/${done.result.id}`, key)).body;
    expect(unit).toMatchObject({ unit_number: 'FP-9', floorplan_id: plan.value, floorplan_name: plan.label });
    expect(unit.custom_data).not.toHaveProperty('floorplanId');

    problem(await write(api.url, 'PATCH', `/v1/units/${unit.id}`, { floorplan_id: evenPlan }, { key }), 422, 'validation_error');
    // A unit made a moment ago is a unit space at once: the options are read again before a value they lack is refused.
    const lease = await write(api.url, 'POST', '/v1/leases', { ...(await leaseFromOptions(odd)), unit_space_id: unit.x_id, floorplan_id: plan.value }, { key });
    expect(lease.status, JSON.stringify(lease.body)).toBe(202);
    expect((await pollOperation(api.url, key, lease.body.id)).status).toBe('succeeded');
  });
});

describe('the source down or slow', () => {
  it('GET answers 503; a write is still accepted (202, an Operation) and the source decides', async () => {
    // An API process of its own: nothing cached for these properties yet.
    const fresh = await startApi(db, config);
    try {
      // Built from the options the other process serves: this one has read nothing yet.
      const body = await leaseFromOptionsOf(api, odd);
      let accepted: string;
      await sandbox().setFault(s.companyId, { kind: 'unavailable', methods: 'reads' });
      try {
        const down = await getJson(fresh.url, `/v1/write_options/lease.create?property_id=${odd.id}`, key);
        problem(down, 503, 'internal_error');
        expect(down.headers.get('retry-after')).toEqual(expect.any(String));
        expect(down.body.detail).not.toMatch(/127\.0\.0\.1|ECONN/);
        // A write without coded fields does not need the source to be described.
        expect((await getJson(fresh.url, `/v1/write_options/lease.update?property_id=${odd.id}`, key)).status).toBe(200);

        const before = await operationCount();
        const ok = await write(fresh.url, 'POST', '/v1/leases', { ...body, last_name: 'Outage' }, { key });
        expect(ok.status, JSON.stringify(ok.body)).toBe(202);
        expect(ok.body).toMatchObject({ type: 'lease.create', status: 'queued' });
        accepted = ok.body.id;
        // Unchecked now, a refused code is the source's to refuse: accepted here, failed by the source.
        const bad = await write(fresh.url, 'POST', '/v1/leases', { ...body, lease_term_id: '3' }, { key });
        expect(bad.status, JSON.stringify(bad.body)).toBe(202);
        expect(await operationCount()).toBe(before + 2);
        const failed = await pollOperation(fresh.url, key, bad.body.id);
        expect(failed).toMatchObject({ status: 'failed', source: { state: 'rejected' } });
        expect(failed.reconcile.last_error).toMatch(/leaseTermId 3 is not offered at property 1001/);
      } finally {
        await sandbox().clearFaults(s.companyId);
      }
      // Once the source reads again, the accepted write is carried through.
      const done = await pollOperation(fresh.url, key, accepted, 90_000);
      expect(done.status, JSON.stringify(done)).toBe('succeeded');
    } finally {
      await fresh.close();
    }
  }, 150_000);

  it('a slow source costs a write the options time-out, not the source’s delay', async () => {
    const fresh = await startApi(db, testConfig({ TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE, WRITE_OPTIONS_TIMEOUT_MS: '500' }));
    try {
      const body = await leaseFromOptionsOf(api, odd);
      await sandbox().setFault(s.companyId, { kind: 'slow', delay_ms: 5_000, methods: 'reads' });
      try {
        const began = Date.now();
        const r = await write(fresh.url, 'POST', '/v1/leases', { ...body, last_name: 'Slow' }, { key });
        expect(r.status, JSON.stringify(r.body)).toBe(202);
        expect(Date.now() - began).toBeLessThan(3_000);
        const started = Date.now();
        problem(await getJson(fresh.url, `/v1/write_options/unit.create?property_id=${odd.id}`, key), 503, 'internal_error');
        expect(Date.now() - started).toBeLessThan(3_000);
      } finally {
        await sandbox().clearFaults(s.companyId);
      }
    } finally {
      await fresh.close();
    }
  }, 60_000);
});

/** leaseFromOptions against another API process (its own cache). */
async function leaseFromOptionsOf(server: TestServer, property: any): Promise<Record<string, unknown>> {
  const fields = byName((await getJson(server.url, `/v1/write_options/lease.create?property_id=${property.id}`, key)).body);
  const space = fields.get('unit_space_id').options[0];
  const first = (name: string) => fields.get(name).options[0].value;
  return {
    property_x_id: property.x_id,
    lease_start_date: '2027-06-01',
    lease_end_date: '2028-05-31',
    move_in_date: '2027-06-01',
    lease_term_id: '2',
    floorplan_id: space.floorplan_id,
    unit_space_id: space.value,
    first_name: 'Dora',
    last_name: 'Down',
    customer_relationship_type_id: first('customer_relationship_type_id'),
    phone_number: '+1 312 555 0155',
    phone_number_type_id: first('phone_number_type_id'),
    address_type_id: first('address_type_id'),
    street_line_1: '1 Main St',
    city: 'Chicago',
    state: 'Illinois',
    state_code: 'IL',
    postal_code: '60601',
  };
}

describe('a unit’s floor plan', () => {
  it('is floorplan_id on the Unit; the migration moves stored values out of custom_data, and the next sync records nothing for it', async () => {
    const t = await sandboxIntegration(db, { size: 12, seed: 29 });
    await runSync(syncs, db, t.row);
    const tKey = await keyFor(db, t.row.organizationId);
    const listed = (await getJson(api.url, '/v1/units?limit=100', tKey)).body.results;
    expect(listed.length).toBeGreaterThan(0);
    for (const u of listed) {
      expect(u.floorplan_id).toMatch(/^[0-9]+$/);
      expect(u.custom_data).not.toHaveProperty('floorplanId');
    }
    // The cache as the connector used to leave it: the floor plan inside custom_data, under another content hash.
    await db
      .update(units)
      .set({
        customData: sql`${units.customData} || jsonb_build_object('floorplanId', ${units.floorplanId}::int)`,
        floorplanId: null,
        contentHash: 'before-0012',
      })
      .where(eq(units.integrationId, t.row.id));
    // The migration's statement, kept to this integration's rows (the test database is shared).
    const statement = readFileSync(new URL('../../db/migrations/0012_unit_floorplan_id.sql', import.meta.url), 'utf8').split('--> statement-breakpoint')[1]!;
    expect(statement).toContain(`WHERE "custom_data" ? 'floorplanId'`);
    await db.$client.unsafe(
      statement.replace(`WHERE "custom_data" ? 'floorplanId'`, `WHERE "custom_data" ? 'floorplanId' AND "integration_id" = '${t.row.id}'`),
    );
    expect((await getJson(api.url, '/v1/units?limit=100', tKey)).body.results).toEqual(listed);
    const job = await runSync(syncs, db, t.row);
    expect(job.status).toBe('succeeded');
    expect((await eventsOf(db, t.row.id, job.id)).filter((e) => e.type === 'UNIT_UPDATED')).toEqual([]);
    const rehashed = await db
      .select({ hash: units.contentHash })
      .from(units)
      .where(and(eq(units.integrationId, t.row.id), eq(units.contentHash, 'before-0012')));
    expect(rehashed).toEqual([]);
  });
});
