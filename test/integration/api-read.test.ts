/**
 * The public read API over real HTTP and real Postgres: every list filter of every entity, order-by, pagination
 * edges, soft-delete visibility, the 400/422 split, retrieve, and isolation between organizations and modes.
 * Records are seeded only through db/apply.ts applyRecords and db/seen.ts softDeleteUnseen, the path the sync uses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inArray } from 'drizzle-orm';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { applyRecords, type ApplyContext } from '../../db/apply';
import { softDeleteUnseen } from '../../db/seen';
import { organizations } from '../../db/schema';
import { createApiKey, createIntegration } from '../../db/tenants';
import type { Entity, InputOf } from '../../domain/cdm';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, SERVE_LIVE, testConfig, testDb, testKeyring, type Tenant } from '../support/context';
import { leaseInput, propertyInput, residentInput, unitInput } from '../support/fixtures';

let db: Db;
let config: Config;
let api: TestServer;
let a: Tenant; // the organization under test (test mode), integration A1
let a2: string; // a second test-mode integration of the same organization
let aLive: { integrationId: string; key: string }; // a live-mode integration and key of the same organization
let b: Tenant; // another organization
const ids = new Map<string, string>(); // x_id -> CDM id (A1 unless noted)

const T0 = Date.parse('2025-06-01T00:00:00.000Z');
const at = (i: number) => new Date(T0 + i * 1000);

async function apply<E extends Entity>(
  integration: { id: string; organizationId: string; mode: 'test' | 'live' },
  entity: E,
  inputs: InputOf[E][],
  now: Date,
  syncJobId?: string,
) {
  const ctx: ApplyContext = { integration, emitEvents: false, now, syncJobId };
  const r = await db.transaction((tx) => applyRecords(tx, ctx, entity, inputs));
  for (const [x, id] of r.ids) {
    if (!ids.has(`${integration.id}:${x}`)) ids.set(`${integration.id}:${x}`, id);
  }
  return r;
}
const idOf = (x: string, integrationId = a.integrationId) => ids.get(`${integrationId}:${x}`)!;
const ref = (t: Tenant) => ({ id: t.integrationId, organizationId: t.organizationId, mode: t.mode });

beforeAll(async () => {
  db = testDb(4);
  // Live-mode keys are read here too.
  config = testConfig(SERVE_LIVE);
  api = await startApi(db, config);
  a = await makeTenant(db);
  b = await makeTenant(db);
  // This file is about reads; api-rate-limit.test.ts is about the limit.
  await db
    .update(organizations)
    .set({ rateLimitPerMinute: 1_000_000, rateLimitBurst: 100_000 })
    .where(inArray(organizations.id, [a.organizationId, b.organizationId]));
  const source = { base_url: 'http://127.0.0.1:1', api_key: 'unused' };
  a2 = (
    await createIntegration(db, { organizationId: a.organizationId, mode: 'test', plan: 'scale', sourceType: 'sandbox', sourceConfig: source }, testKeyring())
  ).id;
  const live = await createIntegration(
    db,
    { organizationId: a.organizationId, mode: 'live', plan: 'scale', sourceType: 'entrata', sourceConfig: source },
    testKeyring(),
  );
  aLive = { integrationId: live.id, key: (await createApiKey(db, { organizationId: a.organizationId, mode: 'live' })).key };

  const A = ref(a);
  const people = (...xs: [string, string][]) => xs.map(([x_id, role]) => ({ x_id, role }));
  const seed: { [E in Entity]: InputOf[E][] } = {
    property: [
      propertyInput('P1', { name: 'Sunset Towers', status: 'active', type: 'apartment' }),
      propertyInput('P2', { name: 'Maple 100%_Court', status: 'inactive', type: 'condo' }),
      propertyInput('P3', { name: 'sunrise lofts', status: 'active', type: 'townhome' }),
      propertyInput('P4', { name: 'Gone Gardens', status: 'active', type: 'apartment' }),
    ],
    unit: [
      unitInput('U1', 'P1', { status: 'vacant', unit_number: '101' }),
      unitInput('U2', 'P1', { status: 'occupied', unit_number: '102' }),
      unitInput('U3', 'P2', { status: 'notice', unit_number: '201', market_rent: null }),
      unitInput('U4', 'P4', { status: 'vacant', unit_number: '999' }),
    ],
    resident: [
      residentInput('R1', 'P1', { email: 'Ada.One@Example.com', status: 'current', last_name: 'Zed' }),
      residentInput('R2', 'P1', { email: 'bob@example.com', status: 'applicant', last_name: 'Adams' }),
      residentInput('R3', 'P2', { email: 'cy@example.com', status: 'past', last_name: 'Moss', phones: null }),
      residentInput('R4', 'P4', { email: 'gone@example.com', status: 'past', last_name: 'Gone' }),
    ],
    lease: [
      leaseInput('L1', { property: 'P1', unit: 'U1', residents: people(['R1', 'primary'], ['R2', 'responsible']) }),
      leaseInput(
        'L2',
        { property: 'P1', unit: 'U2', residents: people(['R2', 'primary']) },
        {
          status: 'pending',
          type: 'month_to_month',
          start_date: '2025-03-01',
          end_date: '2026-02-28',
        },
      ),
      leaseInput(
        'L3',
        { property: 'P2', unit: 'U3', residents: people(['R3', 'primary']) },
        {
          status: 'ended',
          start_date: '2024-01-01',
          end_date: '2024-12-31',
          security_deposit: null,
          balance: null,
        },
      ),
      leaseInput('L4', { property: 'P4', unit: 'U4', residents: people(['R4', 'primary']) }, { status: 'terminated' }),
    ],
  };
  // One record per second, so the default order (created_at) is known: P1..P4 at 1-4 s, U1..U4 at 5-8 s, and so on.
  let second = 0;
  for (const entity of ['property', 'unit', 'resident', 'lease'] as const) {
    for (const input of seed[entity]) await apply(A, entity, [input as never], at(++second));
  }
  // A later sync run sees everything but P4, U4, R4 and L4 (content unchanged) and soft-deletes those four.
  const job = 'syj_01JH00000000000000000000AP';
  for (const entity of ['property', 'unit', 'resident', 'lease'] as const) {
    await db.transaction(async (tx) => {
      const kept = seed[entity].filter((i) => !i.x_id.endsWith('4'));
      const r = await applyRecords(tx, { integration: A, emitEvents: false, syncJobId: job, now: at(29) }, entity, kept as never);
      expect(r.unchanged).toBe(3);
      await softDeleteUnseen(tx, { integration: A, emitEvents: false, syncJobId: job, now: at(30) }, entity);
    });
  }

  // A second integration of the same organization: six units created in one batch (equal created_at), for ties.
  await apply({ id: a2, organizationId: a.organizationId, mode: 'test' }, 'property', [propertyInput('Q1', { name: 'Other Place' })], at(40));
  await apply(
    { id: a2, organizationId: a.organizationId, mode: 'test' },
    'unit',
    ['V1', 'V2', 'V3', 'V4', 'V5', 'V6'].map((x) => unitInput(x, 'Q1', { status: 'occupied' })),
    at(41),
  );
  // The live integration of the same organization and another organization, each with a full chain.
  for (const [integration, tag] of [
    [{ id: aLive.integrationId, organizationId: a.organizationId, mode: 'live' as const }, 'LV'],
    [ref(b), 'B'],
  ] as const) {
    await apply(integration, 'property', [propertyInput(`${tag}P`, { name: 'Sunset Towers' })], at(50));
    await apply(integration, 'unit', [unitInput(`${tag}U`, `${tag}P`)], at(51));
    await apply(integration, 'resident', [residentInput(`${tag}R`, `${tag}P`, { email: 'Ada.One@Example.com' })], at(52));
    await apply(
      integration,
      'lease',
      [leaseInput(`${tag}L`, { property: `${tag}P`, unit: `${tag}U`, residents: [{ x_id: `${tag}R`, role: 'primary' }] })],
      at(53),
    );
  }
});

afterAll(async () => {
  await api?.close();
  await closeDb(db);
});

interface ListBody {
  meta: { limit: number; offset: number; hasMore: boolean };
  results: Record<string, any>[];
}

async function list(path: string, key = a.key): Promise<ListBody> {
  const res = await api.get(path, { key });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return body as ListBody;
}
const xids = (body: ListBody) => body.results.map((r) => r.x_id);

async function expectProblem(path: string, status: number, slug: string, key: string | undefined = a.key) {
  const res = await api.get(path, { key });
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as Record<string, any>;
  expect(body).toMatchObject({ type: `${config.DOCS_BASE_URL}/errors/${slug}`, status, instance: new URL(api.url + path).pathname });
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  expect(body.request_id).toBe(res.headers.get('x-request-id'));
  expect(body.request_id).toMatch(/^req_[0-9A-Z]{26}$/);
  if (status === 422) expect(body.errors.length).toBeGreaterThan(0);
  else expect(body.errors).toBeUndefined();
  return body;
}

describe('list envelope, defaults and soft-delete visibility', () => {
  it('lists the organization and mode records, oldest first, without soft-deleted ones', async () => {
    const body = await list('/v1/leases');
    expect(body.meta).toEqual({ limit: 25, offset: 0, hasMore: false });
    expect(xids(body)).toEqual(['L1', 'L2', 'L3']);
    expect(xids(await list('/v1/properties'))).toEqual(['P1', 'P2', 'P3', 'Q1']);
    // V1..V6 share one created_at; their ids (monotonic ULIDs in batch order) break the tie.
    expect(xids(await list('/v1/units'))).toEqual(['U1', 'U2', 'U3', 'V1', 'V2', 'V3', 'V4', 'V5', 'V6']);
    expect(xids(await list('/v1/residents'))).toEqual(['R1', 'R2', 'R3']);
  });

  it('includes soft-deleted records with include_deleted=true, carrying deleted_at', async () => {
    for (const [path, gone] of [
      ['/v1/leases', 'L4'],
      ['/v1/properties', 'P4'],
      ['/v1/units', 'U4'],
      ['/v1/residents', 'R4'],
    ] as const) {
      const body = await list(`${path}?include_deleted=true&integration_id=${a.integrationId}`);
      expect(xids(body)).toContain(gone);
      expect(xids(await list(`${path}?include_deleted=false&integration_id=${a.integrationId}`))).not.toContain(gone);
      const deleted = body.results.find((r) => r.x_id === gone)!;
      if (path !== '/v1/properties') expect(deleted.deleted_at).toBe('2025-06-01T00:00:30.000Z');
      expect(deleted.updated_at).toBe('2025-06-01T00:00:30.000Z');
    }
  });

  it('returns the reduced record on the property list and the full one on retrieve', async () => {
    const [p] = (await list('/v1/properties?limit=1')).results;
    expect(Object.keys(p!).sort()).toEqual(
      ['id', 'x_id', 'organization_id', 'integration_id', 'name', 'type', 'status', 'custom_data', 'created_at', 'updated_at'].sort(),
    );
    const full = (await (await api.get(`/v1/properties/${p!.id}`, { key: a.key })).json()) as any;
    expect(full).toMatchObject({ id: p!.id, x_id: 'P1', name: 'Sunset Towers', pet_policy: 'restricted', deleted_at: null, total_units: 10 });
    expect(full.address).toEqual({ line_1: '101 Main St', line_2: null, city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' });
    expect(full.phones).toEqual([{ type: 'office', number: '+15125550100', primary: true }]);
  });

  it('shows leases with resident_ids, nested residents and Money in minor units; every field present', async () => {
    const body = await list(`/v1/leases?x_id=L1,L3`);
    const l1 = body.results.find((r) => r.x_id === 'L1')!;
    expect(l1).toMatchObject({
      id: idOf('L1'),
      organization_id: a.organizationId,
      integration_id: a.integrationId,
      property_id: idOf('P1'),
      unit_id: idOf('U1'),
      resident_ids: [idOf('R1'), idOf('R2')],
      residents: [
        { resident_id: idOf('R1'), x_id: 'R1', role: 'primary' },
        { resident_id: idOf('R2'), x_id: 'R2', role: 'responsible' },
      ],
      rent_amount: { amount: 103500, currency: 'USD' },
      security_deposit: { amount: 50000, currency: 'USD' },
      created_at: '2025-06-01T00:00:13.000Z',
      deleted_at: null,
    });
    const l3 = body.results.find((r) => r.x_id === 'L3')!;
    expect(l3.security_deposit).toBeNull();
    expect(l3.balance).toBeNull();
    expect(Object.keys(l3).sort()).toEqual(Object.keys(l1).sort());
    expect(Object.keys(l1)).toHaveLength(30);
  });
});

describe('common filters', () => {
  it('updated_after, created_after and created_before are inclusive to the millisecond', async () => {
    const [l2] = (await list('/v1/leases?x_id=L2')).results;
    expect(xids(await list(`/v1/leases?created_before=${l2!.created_at}`))).toEqual(['L1', 'L2']);
    expect(xids(await list(`/v1/leases?created_after=${l2!.created_at}`))).toEqual(['L2', 'L3']);
    expect(xids(await list(`/v1/leases?created_after=${l2!.created_at}&created_before=${l2!.created_at}`))).toEqual(['L2']);
    expect(xids(await list(`/v1/leases?updated_after=${l2!.updated_at}`))).toEqual(['L2', 'L3']);
    expect(xids(await list('/v1/leases?updated_after=2025-06-01T00:00:14.001Z'))).toEqual(['L3']);
    // An offset written with an unencoded "+" arrives as a space; it still means the same instant.
    expect(xids(await list('/v1/leases?created_before=2025-06-01T02:00:14+02:00'))).toEqual(['L1', 'L2']);
    expect(xids(await list('/v1/leases?created_before=2025-06-01T02:00:14%2B02:00'))).toEqual(['L1', 'L2']);
  });

  it('a date alone is that day at midnight UTC', async () => {
    // Every lease was created on 2025-06-01 after 00:00:00.000Z.
    expect(xids(await list('/v1/leases?updated_after=2025-06-01'))).toEqual(['L1', 'L2', 'L3']);
    expect(xids(await list('/v1/leases?created_after=2025-06-02'))).toEqual([]);
    expect(xids(await list('/v1/leases?created_before=2025-06-01'))).toEqual([]);
    expect(xids(await list('/v1/leases?created_before=2025-06-02'))).toEqual(['L1', 'L2', 'L3']);
  });

  it('x_id and integration_id match exactly, comma lists match any', async () => {
    expect(xids(await list('/v1/leases?x_id=L3'))).toEqual(['L3']);
    expect(xids(await list('/v1/leases?x_id=L3,L1,nope'))).toEqual(['L1', 'L3']);
    expect(xids(await list('/v1/leases?x_id=L'))).toEqual([]);
    expect(xids(await list(`/v1/units?integration_id=${a2}`))).toHaveLength(6);
    expect(xids(await list(`/v1/properties?integration_id=${a.integrationId}`))).toEqual(['P1', 'P2', 'P3']);
    expect(xids(await list(`/v1/properties?integration_id=${a.integrationId},${a2.toUpperCase()}`))).toEqual(['P1', 'P2', 'P3', 'Q1']);
    // Another organization's integration is simply not this key's: nothing matches.
    expect(xids(await list(`/v1/properties?integration_id=${b.integrationId}`))).toEqual([]);
  });

  it('refuses an unknown query parameter with a 400 naming it, rather than ignoring it', async () => {
    // A misspelt filter would otherwise list the whole organization.
    const body = await expectProblem('/v1/residents?propertyid=prp_x', 400, 'bad_request');
    expect(body.detail).toContain('`propertyid`');
    expect(body.detail).toContain('not a query parameter of GET /v1/residents');
    expect(body.detail).toContain('property_id');
    // Every list, each unknown name; the known ones of another entity are unknown here.
    for (const path of ['/v1/properties?colour=blue', '/v1/units?colour=blue', '/v1/leases?colour=blue&x_id=L1', '/v1/properties?start_date_gte=2025-01-01']) {
      const b = await expectProblem(path, 400, 'bad_request');
      expect(b.detail).toMatch(/query parameter `(colour|start_date_gte)`/);
    }
    const both = await expectProblem('/v1/leases?colour=blue&size=9&limit=2', 400, 'bad_request');
    expect(both.detail).toContain('`colour`');
    expect(both.detail).toContain('`size`');
    // The known ones still work, with or without values.
    expect(xids(await list('/v1/leases?x_id=L1&status=&limit=5'))).toEqual(['L1']);
  });
});

describe('order-by', () => {
  const cases: [string, string, string[]][] = [
    ['/v1/leases?order-by=created_at:desc', 'created_at desc', ['L3', 'L2', 'L1']],
    ['/v1/leases?order-by=updated_at:asc', 'updated_at asc', ['L1', 'L2', 'L3']],
    ['/v1/leases?order-by=start_date:asc', 'start_date asc', ['L3', 'L1', 'L2']],
    ['/v1/leases?order-by=start_date:desc', 'start_date desc', ['L2', 'L1', 'L3']],
    ['/v1/leases?order-by=end_date:desc', 'end_date desc', ['L2', 'L1', 'L3']],
    ['/v1/leases?order-by=end_date:asc', 'end_date asc', ['L3', 'L1', 'L2']],
  ];
  it.each(cases)('%s orders by %s', async (path, _what, expected) => {
    expect(xids(await list(path))).toEqual(expected);
  });

  it('orders every entity by its own fields, ties broken by id', async () => {
    const A = `integration_id=${a.integrationId}`;
    // The exact name order depends on the database collation; asc and desc must mirror each other.
    const names = xids(await list(`/v1/properties?order-by=name:asc&${A}`));
    expect(new Set(names)).toEqual(new Set(['P1', 'P2', 'P3']));
    expect(xids(await list(`/v1/properties?order-by=name:desc&${A}`))).toEqual([...names].reverse());
    expect(xids(await list(`/v1/properties?order-by=updated_at:desc&${A}`))).toEqual(['P3', 'P2', 'P1']);
    expect(xids(await list(`/v1/units?order-by=unit_number:desc&${A}`))).toEqual(['U3', 'U2', 'U1']);
    expect(xids(await list(`/v1/residents?order-by=last_name:asc`))).toEqual(['R2', 'R3', 'R1']);
    expect(xids(await list(`/v1/residents?order-by=created_at:desc`))).toEqual(['R3', 'R2', 'R1']);
    const tied = xids(await list(`/v1/units?integration_id=${a2}`));
    expect(xids(await list(`/v1/units?integration_id=${a2}&order-by=created_at:desc`))).toEqual([...tied].reverse());
  });

  it.each([
    ['/v1/leases?order-by=rent_amount:asc'],
    ['/v1/leases?order-by=created_at'],
    ['/v1/leases?order-by=created_at:up'],
    ['/v1/leases?order-by=name:asc'],
    ['/v1/properties?order-by=start_date:asc'],
    ['/v1/units?order-by=last_name:asc'],
    ['/v1/residents?order-by=unit_number:desc'],
  ])('%s is 422 with pointer order-by', async (path) => {
    const body = await expectProblem(path, 422, 'validation_error');
    expect(body.errors).toEqual([{ pointer: 'order-by', detail: expect.stringContaining('created_at:asc') }]);
  });
});

describe('pagination', () => {
  const V = () => `/v1/units?integration_id=${a2}`;
  it('pages through equal created_at without skipping or repeating, with hasMore exact at multiples', async () => {
    const all = xids(await list(V()));
    expect(all).toHaveLength(6);
    const p1 = await list(`${V()}&limit=3`);
    const p2 = await list(`${V()}&limit=3&offset=3`);
    expect(p1.meta).toEqual({ limit: 3, offset: 0, hasMore: true });
    expect(p2.meta).toEqual({ limit: 3, offset: 3, hasMore: false });
    expect([...xids(p1), ...xids(p2)]).toEqual(all);
    const walked: string[] = [];
    for (let offset = 0; ; offset += 4) {
      const page = await list(`${V()}&limit=4&offset=${offset}`);
      walked.push(...xids(page));
      if (!page.meta.hasMore) break;
    }
    expect(walked).toEqual(all);
    expect((await list(`${V()}&limit=6`)).meta.hasMore).toBe(false);
    expect((await list(`${V()}&limit=5`)).meta.hasMore).toBe(true);
    expect((await list(`${V()}&limit=1&offset=5`)).meta).toEqual({ limit: 1, offset: 5, hasMore: false });
  });

  it('returns an empty page past the end', async () => {
    expect(await list(`${V()}&offset=6`)).toEqual({ meta: { limit: 25, offset: 6, hasMore: false }, results: [] });
    expect(await list(`${V()}&offset=1000000`)).toEqual({ meta: { limit: 25, offset: 1000000, hasMore: false }, results: [] });
  });

  it('accepts the limit bounds 1 and 100', async () => {
    expect((await list('/v1/leases?limit=1')).results).toHaveLength(1);
    expect((await list('/v1/leases?limit=100')).meta.limit).toBe(100);
  });
});

describe('entity filters', () => {
  it('properties: status and type (comma lists), name as a case-insensitive substring with literal wildcards', async () => {
    const A = `integration_id=${a.integrationId}`;
    expect(xids(await list(`/v1/properties?${A}&status=active`))).toEqual(['P1', 'P3']);
    expect(xids(await list(`/v1/properties?${A}&status=inactive,active`))).toEqual(['P1', 'P2', 'P3']);
    expect(xids(await list(`/v1/properties?${A}&type=condo,townhome`))).toEqual(['P2', 'P3']);
    expect(xids(await list(`/v1/properties?${A}&type=apartment&include_deleted=true`))).toEqual(['P1', 'P4']);
    expect(xids(await list(`/v1/properties?name=SUN`))).toEqual(['P1', 'P3']);
    expect(xids(await list(`/v1/properties?name=set%20tow`))).toEqual(['P1']);
    expect(xids(await list(`/v1/properties?name=100%25_`))).toEqual(['P2']);
    expect(xids(await list(`/v1/properties?name=%25`))).toEqual(['P2']);
    expect(xids(await list(`/v1/properties?name=_`))).toEqual(['P2']);
    expect(xids(await list(`/v1/properties?name=s_n`))).toEqual([]);
  });

  it('units: property_id and status', async () => {
    expect(xids(await list(`/v1/units?property_id=${idOf('P1')}`))).toEqual(['U1', 'U2']);
    expect(xids(await list(`/v1/units?property_id=${idOf('P1')},${idOf('P2')}&status=notice,vacant`))).toEqual(['U1', 'U3']);
    expect(xids(await list(`/v1/units?property_id=prp_nope`))).toEqual([]);
    const [u3] = (await list('/v1/units?x_id=U3')).results;
    expect(u3).toMatchObject({ market_rent: null, unit_number: '201', property_id: idOf('P2'), status: 'notice' });
    const [u1] = (await list('/v1/units?x_id=U1')).results;
    expect(u1!.market_rent).toEqual({ amount: 150000, currency: 'USD' });
  });

  it('residents: property_id, status and email (case-insensitive, exact)', async () => {
    expect(xids(await list(`/v1/residents?property_id=${idOf('P1')}`))).toEqual(['R1', 'R2']);
    expect(xids(await list(`/v1/residents?status=past,applicant`))).toEqual(['R2', 'R3']);
    expect(xids(await list(`/v1/residents?email=ada.one@example.COM`))).toEqual(['R1']);
    expect(xids(await list(`/v1/residents?email=ada.one@example`))).toEqual([]);
    // Empty is no filter, like `status=` and `name=`.
    expect(xids(await list(`/v1/residents?email=`))).toEqual(['R1', 'R2', 'R3']);
    expect(xids(await list(`/v1/properties?name=`))).toEqual(['P1', 'P2', 'P3', 'Q1']);
    expect(xids(await list(`/v1/residents?email=gone@example.com&include_deleted=true`))).toEqual(['R4']);
    const [r3] = (await list('/v1/residents?x_id=R3')).results;
    expect(r3).toMatchObject({ phones: null, date_of_birth: '1990-12-10', last_name: 'Moss', status: 'past' });
  });

  it('leases: property_id, unit_id, resident_id, status, type (comma lists)', async () => {
    expect(xids(await list(`/v1/leases?property_id=${idOf('P1')}`))).toEqual(['L1', 'L2']);
    expect(xids(await list(`/v1/leases?unit_id=${idOf('U3')},${idOf('U2')}`))).toEqual(['L2', 'L3']);
    expect(xids(await list(`/v1/leases?resident_id=${idOf('R2')}`))).toEqual(['L1', 'L2']);
    expect(xids(await list(`/v1/leases?resident_id=${idOf('R1')},${idOf('R3')}`))).toEqual(['L1', 'L3']);
    expect(xids(await list(`/v1/leases?resident_id=${idOf('R4')}&include_deleted=true`))).toEqual(['L4']);
    expect(xids(await list(`/v1/leases?resident_id=${idOf('R4')}`))).toEqual([]);
    expect(xids(await list(`/v1/leases?status=active`))).toEqual(['L1']);
    expect(xids(await list(`/v1/leases?status=pending,ended`))).toEqual(['L2', 'L3']);
    expect(xids(await list(`/v1/leases?type=month_to_month`))).toEqual(['L2']);
    expect(xids(await list(`/v1/leases?type=fixed&status=ended`))).toEqual(['L3']);
  });

  it('leases: the four date bounds, inclusive', async () => {
    expect(xids(await list('/v1/leases?start_date_gte=2025-01-01'))).toEqual(['L1', 'L2']);
    expect(xids(await list('/v1/leases?start_date_gte=2025-01-02'))).toEqual(['L2']);
    expect(xids(await list('/v1/leases?start_date_lte=2025-01-01'))).toEqual(['L1', 'L3']);
    expect(xids(await list('/v1/leases?end_date_gte=2025-12-31'))).toEqual(['L1', 'L2']);
    expect(xids(await list('/v1/leases?end_date_lte=2025-12-31'))).toEqual(['L1', 'L3']);
    expect(xids(await list('/v1/leases?start_date_gte=2024-06-01&end_date_lte=2026-01-01'))).toEqual(['L1']);
  });
});

describe('400 versus 422', () => {
  it.each([
    ['/v1/leases?limit=abc', 'limit'],
    ['/v1/leases?limit=1.5', 'limit'],
    ['/v1/leases?limit=', 'limit'],
    ['/v1/leases?limit=1&limit=2', 'limit'],
    ['/v1/leases?offset=x', 'offset'],
    ['/v1/leases?include_deleted=maybe', 'include_deleted'],
    ['/v1/leases?updated_after=yesterday', 'updated_after'],
    ['/v1/leases?created_after=2025-13-01T00:00:00Z', 'created_after'],
    ['/v1/leases?created_before=2025-01-01T00:00:00', 'created_before'],
    ['/v1/leases?created_before=2025-02-30', 'created_before'],
    ['/v1/leases?integration_id=not-a-uuid', 'integration_id'],
    ['/v1/leases?start_date_gte=2025-02-30', 'start_date_gte'],
    ['/v1/leases?end_date_lte=31/12/2025', 'end_date_lte'],
    ['/v1/properties?include_deleted=2', 'include_deleted'],
    ['/v1/leases/lse_x?include_deleted=yes', 'include_deleted'],
    // Postgres text cannot hold NUL: refused up front, never a 500 from deep inside a query.
    ['/v1/properties?name=Sun%00', 'name'],
    ['/v1/residents?email=a%00b', 'email'],
    ['/v1/units?status=vacant,%00', 'status'],
    ['/v1/leases?x_id=L1%00', 'x_id'],
    ['/v1/leases?property_id=%00', 'property_id'],
    // Percent-encoding that does not decode as UTF-8 is no text at all: refused, never taken as the literal `%FF`.
    ['/v1/properties?name=%FF', 'name'],
    ['/v1/properties?name=%', 'name'],
    ['/v1/leases?x_id=%E2%82', 'x_id'],
    ['/v1/leases?limit=1&%FF=1', '%FF'],
    ['/v1/leases/lse_x?include_deleted=true&q=%C0%AF', 'q'],
  ])('%s is 400 naming %s', async (path, param) => {
    const body = await expectProblem(path, 400, 'bad_request');
    expect(body.title).toBe('Bad Request');
    expect(body.detail).toContain(param);
  });

  it.each([
    ['/v1/leases?limit=0', 'limit'],
    ['/v1/leases?limit=101', 'limit'],
    ['/v1/units?limit=-1', 'limit'],
    ['/v1/residents?offset=-1', 'offset'],
    // Datetimes and dates the database cannot hold (years 0001 to 9999, in UTC): never a 500 from Postgres.
    ['/v1/residents?created_before=0001-01-01T01:04:22%2B04:05', 'created_before'],
    ['/v1/residents?created_before=0001-01-01T01:04:22+04:05', 'created_before'],
    ['/v1/properties?created_after=0000-12-31T23:59:59Z', 'created_after'],
    ['/v1/units?updated_after=9999-12-31T23:59:59-00:01', 'updated_after'],
    ['/v1/leases?updated_after=0000-06-01', 'updated_after'],
    ['/v1/leases?start_date_gte=0000-12-31', 'start_date_gte'],
    ['/v1/leases?end_date_lte=0000-01-01', 'end_date_lte'],
  ])('%s is 422 with pointer %s', async (path, pointer) => {
    const body = await expectProblem(path, 422, 'validation_error');
    expect(body.title).toBe('Unprocessable Entity');
    expect(body.errors).toEqual([{ pointer, detail: expect.any(String) }]);
  });

  it('names the documented bound of limit and offset, however far past it the value is', async () => {
    for (const [path, pointer, detail] of [
      ['/v1/leases?limit=9007199254740993', 'limit', /<=100$/],
      ['/v1/leases?limit=101', 'limit', /<=100$/],
      ['/v1/leases?offset=-9007199254740993', 'offset', />=0$/],
    ] as const) {
      const body = await expectProblem(path, 422, 'validation_error');
      expect(body.errors, path).toEqual([{ pointer, detail: expect.stringMatching(detail) }]);
    }
  });

  it('takes the first and the last instant of the bounds, in UTC', async () => {
    expect(xids(await list('/v1/leases?created_after=0001-01-01T00:00:00Z&created_before=9999-12-31T23:59:59.999Z'))).toEqual(['L1', 'L2', 'L3']);
    expect(xids(await list('/v1/leases?updated_after=0001-01-02T00:00:00%2B23:59&start_date_gte=0001-01-01&end_date_lte=9999-12-31'))).toEqual([
      'L1',
      'L2',
      'L3',
    ]);
    expect(xids(await list('/v1/residents?created_before=0001-01-01'))).toEqual([]);
  });

  it('refuses a query that does not decode, lists and retrieves alike, with the body of every other 400', async () => {
    const other = await expectProblem('/v1/properties?limit=abc', 400, 'bad_request');
    for (const path of ['/v1/properties?name=%FF&limit=5', `/v1/leases/${idOf('L1')}?note=%E2%82`, '/v1/units?%FF=vacant']) {
      const body = await expectProblem(path, 400, 'bad_request');
      expect(Object.keys(body).sort(), path).toEqual(Object.keys(other).sort());
      expect(body.title).toBe('Bad Request');
      expect(body.detail, path).toMatch(/^Malformed request: (the name of )?query parameter `(name|note|%FF)` is not valid percent-encoded UTF-8/);
    }
    // Encoded as it should be, the same text is a filter like any other.
    expect(xids(await list('/v1/properties?name=%C3%BFnone'))).toEqual([]);
  });

  it('reports a 400 before a 422 when both are present, and changes nothing', async () => {
    await expectProblem('/v1/leases?limit=0&include_deleted=nah', 400, 'bad_request');
    const body = await expectProblem('/v1/leases?limit=0&offset=-5', 422, 'validation_error');
    expect(body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(['limit', 'offset']);
  });
});

describe('retrieve', () => {
  it.each([
    ['leases', 'L1'],
    ['properties', 'P2'],
    ['units', 'U2'],
    ['residents', 'R3'],
  ])('GET /v1/%s/{id} returns the same record as the list', async (path, x) => {
    const res = await api.get(`/v1/${path}/${idOf(x)}`, { key: a.key });
    expect(res.status).toBe(200);
    const record = (await res.json()) as any;
    expect(record.x_id).toBe(x);
    if (path !== 'properties') expect(record).toEqual((await list(`/v1/${path}?x_id=${x}`)).results[0]);
  });

  it.each([
    ['leases', 'L4'],
    ['properties', 'P4'],
    ['units', 'U4'],
    ['residents', 'R4'],
  ])('a soft-deleted %s is 404 unless include_deleted=true', async (path, x) => {
    const body = await expectProblem(`/v1/${path}/${idOf(x)}`, 404, 'not_found');
    expect(body.detail).toContain('include_deleted=true');
    const res = await api.get(`/v1/${path}/${idOf(x)}?include_deleted=true`, { key: a.key });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).deleted_at).toBe('2025-06-01T00:00:30.000Z');
  });

  it('a soft-deleted lease may have empty residents', async () => {
    const res = await api.get(`/v1/leases/${idOf('L4')}?include_deleted=true`, { key: a.key });
    const lease = (await res.json()) as any;
    expect(lease.resident_ids).toEqual(lease.residents.map((p: { resident_id: string }) => p.resident_id));
  });

  it('unknown and malformed ids are 404', async () => {
    await expectProblem('/v1/leases/lse_01JH0000000000000000000000', 404, 'not_found');
    await expectProblem('/v1/leases/whatever', 404, 'not_found');
    await expectProblem('/v1/leases/lse_01JH0000000000000000000000%00', 404, 'not_found');
    await expectProblem(`/v1/units/${idOf('L1')}`, 404, 'not_found');
  });
});

describe('isolation', () => {
  it("another organization's records are invisible: lists skip them and retrieve is 404, never 403", async () => {
    const bLease = idOf('BL', b.integrationId);
    expect(xids(await list('/v1/leases', b.key))).toEqual(['BL']);
    expect(xids(await list('/v1/residents?email=ada.one@example.com', b.key))).toEqual(['BR']);
    await expectProblem(`/v1/leases/${bLease}`, 404, 'not_found', a.key);
    await expectProblem(`/v1/leases/${idOf('L1')}`, 404, 'not_found', b.key);
    await expectProblem(`/v1/leases/${idOf('L4')}?include_deleted=true`, 404, 'not_found', b.key);
    expect(xids(await list(`/v1/leases?x_id=BL`))).toEqual([]);
  });

  it("a key sees only its own mode's integrations of its organization", async () => {
    expect(xids(await list('/v1/properties', aLive.key))).toEqual(['LVP']);
    expect(xids(await list('/v1/leases?include_deleted=true', aLive.key))).toEqual(['LVL']);
    expect(xids(await list('/v1/properties?x_id=LVP'))).toEqual([]);
    await expectProblem(`/v1/properties/${idOf('LVP', aLive.integrationId)}`, 404, 'not_found', a.key);
    await expectProblem(`/v1/properties/${idOf('P1')}`, 404, 'not_found', aLive.key);
    expect(xids(await list(`/v1/units?integration_id=${a2}`, aLive.key))).toEqual([]);
  });
});
