/**
 * The sandbox PMS over real HTTP against real Postgres: its entrata flavour (the RPC API) as a connector sees it,
 * its generator, its change scripts, its faults and its durability. The buildium flavour: sandbox-buildium.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { sandboxControlClient, SandboxControlError, type SandboxControl } from '../../sandbox/control';
import { startSandbox } from '../../sandbox/server';
import { until } from '../support/until';

// The wire as its documentation states it, written here (not imported from the connector or the sandbox), so
// that a misreading on either side fails this test instead of cancelling out.
type NativeEntity = 'property' | 'unit' | 'resident' | 'lease';
const SERVICES = {
  property: { service: 'properties', read: 'getProperties', outer: 'properties', inner: 'property', idField: 'propertyId' },
  unit: { service: 'propertyunits', read: 'getPropertyUnits', outer: 'propertyUnits', inner: 'propertyUnit', idField: 'unitId' },
  resident: { service: 'customers', read: 'getCustomers', outer: 'customers', inner: 'customer', idField: 'customerId' },
  lease: { service: 'leases', read: 'getLeases', outer: 'leases', inner: 'lease', idField: 'leaseId' },
} as const;
/** `leaseStatusTypeId` to the lifecycle state it means. */
const LEASE_STATUS: Record<number, string> = {
  1: 'pending',
  2: 'pending',
  3: 'active',
  4: 'notice',
  5: 'ended',
  6: 'cancelled',
  7: 'terminated',
  8: 'evicted',
};

const url = () => inject('sandboxUrl');
let ctl: SandboxControl;

interface RpcReply {
  status: number;
  headers: Headers;
  text: string;
  body: { response: { requestId: unknown; code: number; result?: Record<string, unknown>; error?: { code: string; message: string } } };
}

async function rpc(key: string | undefined, service: string, method: string, params: Record<string, unknown> = {}, base = url()): Promise<RpcReply> {
  const res = await fetch(`${base}/${service}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: JSON.stringify({ auth: { type: 'apikey' }, requestId: 'r-1', method: { name: method, version: 'r1', params } }),
  });
  const text = await res.text();
  let body: RpcReply['body'];
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined as never;
  }
  return { status: res.status, headers: res.headers, text, body };
}

const list = (v: unknown): Record<string, unknown>[] => (v === undefined ? [] : Array.isArray(v) ? v : [v as Record<string, unknown>]);

/** Every raw record of an entity, paging through with the given page size. */
async function all(key: string, entity: NativeEntity, perPage = 1000, base = url()): Promise<Record<string, unknown>[]> {
  const svc = SERVICES[entity];
  const out: Record<string, unknown>[] = [];
  for (let page = 1; ; page++) {
    const r = await rpc(key, svc.service, svc.read, { page_no: page, per_page: perPage }, base);
    expect(r.status).toBe(200);
    const result = r.body.response.result!;
    const items = list((result[svc.outer] as Record<string, unknown>)[svc.inner]);
    out.push(...items);
    const { total_count } = result.pagination as { total_count: number };
    if (page * perPage >= total_count) break;
  }
  return out;
}

async function company(size: number, seed = 11): Promise<{ id: string; key: string }> {
  const id = `t-${randomUUID()}`;
  const { api_key } = await ctl.createCompany({ companyId: id, size, seed });
  return { id, key: api_key };
}

const idOf = (entity: NativeEntity, r: Record<string, unknown>) => String(r[SERVICES[entity].idField]);
const ENTITIES: NativeEntity[] = ['property', 'unit', 'resident', 'lease'];
const statusName = (id: unknown): string | undefined => LEASE_STATUS[id as number];

/** A sendLeases lease of `unit`: 12 months from 1 August 2025, Grace Hopper its applicant; `over` replaces some of it. */
const leaseOf = (unit: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  leaseStartDate: '08/01/2025',
  leaseEndDate: '07/31/2026',
  moveInDate: '08/01/2025',
  leaseTermId: 2,
  floorplanId: unit.floorplanId,
  unitSpaceId: unit.unitId,
  applicant: {
    firstName: 'Grace',
    lastName: 'Hopper',
    customerRelationshipTypeId: 1,
    phone: { phoneNumber: '512-555-0199', phoneNumberTypeId: 3 },
    address: { addressTypeId: 1, streetLine1: '1 Navy Way', city: 'Arlington', state: 'Virginia', stateCode: 'VA', postalCode: '22201' },
  },
  ...over,
});

beforeAll(() => {
  ctl = sandboxControlClient(url(), inject('sandboxControlToken'));
});

describe('generator', () => {
  let a: { id: string; key: string };
  let leases: Record<string, unknown>[];
  beforeAll(async () => {
    a = await company(400, 42);
    leases = await all(a.key, 'lease');
  });

  it('is deterministic: the same seed gives the same records, another seed other records', async () => {
    const b = await company(400, 42);
    const c = await company(400, 43);
    for (const e of ENTITIES) expect(await all(b.key, e), e).toEqual(await all(a.key, e));
    expect(await all(c.key, 'lease')).not.toEqual(leases);
  });

  it('is idempotent per company id and refuses bad input', async () => {
    const again = await ctl.createCompany({ companyId: a.id, size: 400, seed: 42 });
    expect(again.api_key).toBe(a.key);
    await expect(ctl.createCompany({ companyId: 'x', size: 0, seed: 1 })).rejects.toMatchObject({ status: 422 });
    await expect(ctl.createCompany({ companyId: 'bad id!', size: 10, seed: 1 })).rejects.toBeInstanceOf(SandboxControlError);
    await expect(sandboxControlClient(url(), 'wrong-token-0123456789').createCompany({ companyId: 'y', size: 1, seed: 1 })).rejects.toMatchObject({
      status: 401,
    });
  });

  it('keeps realistic proportions', async () => {
    const size = 2000;
    const c = await company(size, 5);
    const info = await ctl.getCompany(c.id);
    expect(info?.counts.lease).toBe(size);
    expect(info?.counts.property).toBe(5);
    expect(info?.counts.unit).toBe(1000);
    expect(info!.counts.resident).toBeGreaterThan(size * 0.8);
    expect(info!.counts.resident).toBeLessThan(size * 1.25);
    const tiny = await company(1, 1);
    expect((await ctl.getCompany(tiny.id))?.counts).toMatchObject({ property: 1, unit: 1, lease: 1 });
  });

  it('has every lease status, renewals after the lease they renew, and consistent references', async () => {
    const statuses = new Set(leases.map((l) => statusName(l.leaseStatusTypeId)));
    expect([...statuses].sort()).toEqual(['active', 'cancelled', 'ended', 'evicted', 'notice', 'pending', 'terminated']);
    const byId = new Map(leases.map((l) => [l.leaseId as number, l]));
    const renewals = leases.filter((l) => l.isRenewal === '1');
    expect(renewals.length).toBeGreaterThan(10);
    for (const r of renewals) {
      const prev = byId.get(r.previousLeaseId as number);
      expect(prev, `previous of ${String(r.leaseId)}`).toBeDefined();
      expect(r.leaseId as number).toBeGreaterThan(prev!.leaseId as number);
      expect(r.unitId).toBe(prev!.unitId);
      expect(statusName(prev!.leaseStatusTypeId)).toBe('ended');
      expect(list((r.customers as { customer: unknown }).customer)).toEqual(list((prev!.customers as { customer: unknown }).customer));
    }
    const units = new Set((await all(a.key, 'unit')).map((u) => u.unitId));
    const customers = new Set((await all(a.key, 'resident')).map((c) => c.customerId));
    for (const l of leases) {
      expect(units.has(l.unitId)).toBe(true);
      const people = list((l.customers as { customer: unknown }).customer);
      expect(people.length).toBeGreaterThan(0);
      expect(people[0]!.customerTypeId).toBe(1);
      for (const p of people) expect(customers.has(p.customerId)).toBe(true);
    }
  });

  it('speaks like a real PMS: decimal strings, local times with offsets, MM/DD/YYYY dates, status ids, extra fields', async () => {
    for (const l of leases) {
      expect(l.rent).toMatch(/^-?\d+\.\d{2}$/);
      expect(l.balance).toMatch(/^-?\d+\.\d{2}$/);
      expect(l.updatedOn).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
      expect(l.updatedOn).not.toMatch(/Z$|\+00:00$/);
      expect(l.leaseStartDate).toMatch(/^\d{2}\/\d{2}\/\d{4}$/);
      expect(typeof l.leaseStatusTypeId).toBe('number');
      expect(l).toHaveProperty('petCount');
      expect(l).toHaveProperty('parkingSpaces');
    }
    const [p] = await all(a.key, 'property');
    expect(p).toHaveProperty('marketingName');
    const customers = await all(a.key, 'resident');
    expect(customers.some((c) => c.leadSource)).toBe(true);
    // A list of one is sent as the element itself, at every level.
    expect(leases.some((l) => !Array.isArray((l.customers as { customer: unknown }).customer))).toBe(true);
    expect(leases.some((l) => Array.isArray((l.customers as { customer: unknown }).customer))).toBe(true);
    expect(customers.some((c) => c.phones && !Array.isArray((c.phones as { phone: unknown }).phone))).toBe(true);
  });
});

describe('RPC API', () => {
  let c: { id: string; key: string };
  beforeAll(async () => {
    c = await company(60, 3);
  });

  it('pages in a stable order by native id, and a page of one is a lone object', async () => {
    const everything = await all(c.key, 'lease');
    expect(everything).toHaveLength(60);
    const by7 = await all(c.key, 'lease', 7);
    expect(by7.map((l) => l.leaseId)).toEqual(everything.map((l) => l.leaseId));
    const ids = everything.map((l) => l.leaseId as number);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(new Set(ids).size).toBe(60);

    const one = await rpc(c.key, 'leases', 'getLeases', { page_no: 3, per_page: 1 });
    const lone = (one.body.response.result!.leases as { lease: unknown }).lease;
    expect(Array.isArray(lone)).toBe(false);
    expect((lone as { leaseId: number }).leaseId).toBe(ids[2]);
    expect(one.body.response).toMatchObject({ requestId: 'r-1', code: 200 });
    expect(one.body.response.result!.pagination).toEqual({ page_no: 3, per_page: 1, total_count: 60 });

    const past = await rpc(c.key, 'leases', 'getLeases', { page_no: 99, per_page: 10 });
    expect(past.body.response.result!.leases).toEqual({});
    const capped = await rpc(c.key, 'leases', 'getLeases', { page_no: '1', per_page: '5000' });
    expect((capped.body.response.result!.pagination as { per_page: number }).per_page).toBe(1000);
    const picked = await rpc(c.key, 'leases', 'getLeases', { leaseIds: `${ids[4]},${ids[1]}` });
    expect(list((picked.body.response.result!.leases as { lease: unknown }).lease).map((l) => l.leaseId)).toEqual([ids[1], ids[4]]);
  });

  it('pages consistently when the data changes between pages, or the company is created anew', async () => {
    const d = await company(60, 12);
    const page = async (n: number) =>
      list(((await rpc(d.key, 'leases', 'getLeases', { page_no: n, per_page: 10 })).body.response.result!.leases as { lease: unknown }).lease).map(
        (l) => l.leaseId,
      );
    const first = await page(1);
    const res = await ctl.applyChanges(d.id, { delete: { lease: 20 } });
    // Only meaningful when page 1 lost records, so that continuing after its last id would skip some.
    expect(res.deleted.lease.some((id) => first.includes(Number(id)))).toBe(true);
    expect(await page(2)).toEqual((await all(d.key, 'lease')).slice(10, 20).map((l) => l.leaseId));

    await ctl.deleteCompany(d.id);
    const { api_key } = await ctl.createCompany({ companyId: d.id, size: 15, seed: 99 });
    d.key = api_key;
    await page(1);
    const second = await rpc(d.key, 'leases', 'getLeases', { page_no: 2, per_page: 10 });
    expect(second.body.response.result!.pagination).toMatchObject({ total_count: 15 });
    expect(await page(2)).toEqual((await all(d.key, 'lease')).slice(10).map((l) => l.leaseId));
  });

  it('filters every read method by propertyId, pages the filtered list on its own, and refuses a bad one', async () => {
    const d = await company(800, 14);
    const properties = await all(d.key, 'property');
    expect(properties.length).toBeGreaterThan(1);
    const propertyId = properties[1]!.propertyId as number;
    for (const e of ENTITIES) {
      const svc = SERVICES[e];
      const everything = await all(d.key, e);
      // A property's own id and every other record's reference are both `propertyId`.
      const expected = everything.filter((r) => r.propertyId === propertyId).map((r) => idOf(e, r));
      expect(expected.length, e).toBeGreaterThan(0);
      expect(expected.length, e).toBeLessThan(everything.length);
      const ids = (r: RpcReply) => list((r.body.response.result![svc.outer] as Record<string, unknown>)[svc.inner]).map((x) => idOf(e, x));
      // Page 1 of the whole list first: page 2 of the filtered list must not continue after it.
      await rpc(d.key, svc.service, svc.read, { page_no: 1, per_page: 7 });
      expect(ids(await rpc(d.key, svc.service, svc.read, { page_no: 2, per_page: 7, propertyId })), e).toEqual(expected.slice(7, 14));
      const got: string[] = [];
      for (let page = 1; ; page++) {
        const r = await rpc(d.key, svc.service, svc.read, { page_no: page, per_page: 7, propertyId: page % 2 ? propertyId : String(propertyId) });
        got.push(...ids(r));
        expect((r.body.response.result!.pagination as { total_count: number }).total_count, e).toBe(expected.length);
        if (page * 7 >= expected.length) break;
      }
      expect(got, e).toEqual(expected);
    }
    const none = await rpc(d.key, 'leases', 'getLeases', { propertyId: 999999 });
    expect(none.body.response.result).toMatchObject({ leases: {}, pagination: { total_count: 0 } });
    for (const bad of ['3a', 0, -1, 1.5]) {
      const r = await rpc(d.key, 'leases', 'getLeases', { propertyId: bad });
      expect(r.status, String(bad)).toBe(400);
      expect(r.body.response.error!.code).toBe('INVALID_PARAMS');
    }
  });

  it('answers protocol errors with fitting statuses and the error envelope', async () => {
    const noKey = await rpc(undefined, 'leases', 'getLeases');
    expect(noKey.status).toBe(401);
    expect(noKey.body.response).toMatchObject({ requestId: 'r-1', code: 401, error: { code: 'AUTHENTICATION_FAILED' } });
    expect((await rpc('sbx_nope', 'leases', 'getLeases')).status).toBe(401);
    const unknownService = await rpc(c.key, 'widgets', 'getWidgets');
    expect(unknownService.status).toBe(404);
    const unknownMethod = await rpc(c.key, 'leases', 'getProperties');
    expect(unknownMethod.status).toBe(400);
    expect(unknownMethod.body.response.error!.code).toBe('UNKNOWN_METHOD');
    const badPage = await rpc(c.key, 'leases', 'getLeases', { page_no: 0 });
    expect(badPage.status).toBe(400);
    expect(badPage.body.response.error!.code).toBe('INVALID_PARAMS');
    const malformed = await fetch(`${url()}/leases`, { method: 'POST', headers: { 'x-api-key': c.key }, body: '{nope' });
    expect(malformed.status).toBe(400);
    const noAuth = await fetch(`${url()}/leases`, {
      method: 'POST',
      headers: { 'x-api-key': c.key },
      body: JSON.stringify({ method: { name: 'getLeases' } }),
    });
    expect(noAuth.status).toBe(400);
  });
});

describe('faults', () => {
  let c: { id: string; key: string };
  beforeAll(async () => {
    c = await company(20, 9);
  });

  it('unavailable answers 503 (an HTML page) for exactly `count` requests', async () => {
    await ctl.setFault(c.id, { kind: 'unavailable', count: 2 });
    for (let i = 0; i < 2; i++) {
      const r = await rpc(c.key, 'leases', 'getLeases');
      expect(r.status).toBe(503);
      expect(r.text).toMatch(/<html>/);
    }
    expect((await rpc(c.key, 'leases', 'getLeases')).status).toBe(200);
  });

  it('rate_limited answers 429 with Retry-After until cleared', async () => {
    await ctl.setFault(c.id, { kind: 'rate_limited' });
    for (let i = 0; i < 3; i++) {
      const r = await rpc(c.key, 'customers', 'getCustomers');
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.body.response.error!.code).toBe('RATE_LIMITED');
    }
    await ctl.clearFaults(c.id);
    expect((await rpc(c.key, 'customers', 'getCustomers')).status).toBe(200);
  });

  it('slow delays replies; reject_writes refuses writes only', async () => {
    await ctl.setFault(c.id, { kind: 'slow', count: 1, delay_ms: 400 });
    let t = Date.now();
    expect((await rpc(c.key, 'leases', 'getLeases')).status).toBe(200);
    expect(Date.now() - t).toBeGreaterThanOrEqual(400);
    t = Date.now();
    await rpc(c.key, 'leases', 'getLeases');
    expect(Date.now() - t).toBeLessThan(400);

    await ctl.setFault(c.id, { kind: 'reject_writes', count: 1 });
    const [lease] = await all(c.key, 'lease');
    expect((await rpc(c.key, 'leases', 'getLeases')).status).toBe(200);
    const rejected = await rpc(c.key, 'leases', 'updateLease', { leaseId: lease!.leaseId, lease: { occupants: 2 } });
    expect(rejected.status).toBe(200);
    expect(rejected.body.response).toMatchObject({ code: 422, error: { code: 'WRITES_REJECTED' } });
  });

  it('scoped to writes, affect and are counted against writes only; scoped to reads, reads only', async () => {
    const lease = (await all(c.key, 'lease')).find((l) => ['pending', 'active', 'notice'].includes(statusName(l.leaseStatusTypeId)!));
    const write = () => rpc(c.key, 'leases', 'updateLease', { leaseId: lease!.leaseId, lease: { rent: '1000.00' } });
    const read = () => rpc(c.key, 'leases', 'getLeases');
    for (const kind of ['unavailable', 'rate_limited'] as const) {
      const status = kind === 'unavailable' ? 503 : 429;
      await ctl.setFault(c.id, { kind, count: 2, methods: 'writes' });
      expect((await read()).status, kind).toBe(200);
      expect((await write()).status, kind).toBe(status);
      expect((await read()).status, kind).toBe(200);
      expect((await write()).status, kind).toBe(status);
      expect((await write()).body.response.code, kind).toBe(200);

      await ctl.setFault(c.id, { kind, count: 1, methods: 'reads' });
      expect((await write()).body.response.code, kind).toBe(200);
      expect((await read()).status, kind).toBe(status);
      expect((await read()).status, kind).toBe(200);
    }

    // A slow read waits before it is served; a slow write is made at once and answered late.
    await ctl.setFault(c.id, { kind: 'slow', count: 1, delay_ms: 600, methods: 'writes' });
    let t = Date.now();
    expect((await read()).status).toBe(200);
    expect(Date.now() - t).toBeLessThan(600);
    let answered = false;
    const pending = rpc(c.key, 'leases', 'updateLease', { leaseId: lease!.leaseId, lease: { rent: '1111.00' } }).then((r) => {
      answered = true;
      return r;
    });
    const rentNow = async () => list(((await read()).body.response.result!.leases as { lease: unknown }).lease).find((l) => l.leaseId === lease!.leaseId)!.rent;
    await until('the slow write to be made', async () => (await rentNow()) === '1111.00');
    expect(answered, 'the write was answered before it was seen made').toBe(false);
    t = Date.now();
    expect((await pending).body.response.code).toBe(200);
    expect(Date.now() - t).toBeGreaterThan(100);

    await ctl.setFault(c.id, { kind: 'slow', count: 1, delay_ms: 400, methods: 'reads' });
    t = Date.now();
    expect((await write()).body.response.code).toBe(200);
    expect(Date.now() - t).toBeLessThan(400);
    t = Date.now();
    expect((await read()).status).toBe(200);
    expect(Date.now() - t).toBeGreaterThanOrEqual(400);
  });

  it('refuses unknown kinds and scopes, a read-scoped reject_writes, and unknown companies', async () => {
    await expect(ctl.setFault(c.id, { kind: 'explode' as never })).rejects.toMatchObject({ status: 422 });
    await expect(ctl.setFault(c.id, { kind: 'slow', methods: 'some' as never })).rejects.toMatchObject({ status: 422 });
    await expect(ctl.setFault(c.id, { kind: 'reject_writes', methods: 'reads' })).rejects.toMatchObject({ status: 422 });
    await expect(ctl.setFault('no-such-company', { kind: 'slow' })).rejects.toMatchObject({ status: 404 });
  });
});

describe('changes', () => {
  it('touch exactly the reported x_ids, move statuses as reported, and are deterministic', async () => {
    const a = await company(300, 21);
    const b = await company(300, 21);
    const before = new Map<NativeEntity, Map<string, string>>();
    for (const e of ENTITIES) before.set(e, new Map((await all(a.key, e)).map((r) => [idOf(e, r), JSON.stringify(r)])));

    const req = { update: { property: 1, unit: 3, resident: 4, lease: 5 }, create: 6, delete: { unit: 1, resident: 2, lease: 2 }, lease_transitions: 8 };
    const res = await ctl.applyChanges(a.id, req);
    expect(await ctl.applyChanges(b.id, req)).toEqual(res);

    expect(res.updated.lease).toHaveLength(5);
    expect(res.updated.unit).toHaveLength(3);
    expect(res.lease_transitions).toHaveLength(8);
    const createdTotal = ENTITIES.reduce((n, e) => n + res.created[e].length, 0) - res.renewals.length;
    expect(createdTotal).toBeGreaterThanOrEqual(6);

    const transitioned = new Set(res.lease_transitions.map((t) => t.x_id));
    for (const e of ENTITIES) {
      const after = new Map((await all(a.key, e)).map((r) => [idOf(e, r), JSON.stringify(r)]));
      const old = before.get(e)!;
      const changed = [...after.keys()].filter((k) => old.has(k) && old.get(k) !== after.get(k)).sort();
      const created = [...after.keys()].filter((k) => !old.has(k)).sort();
      const deleted = [...old.keys()].filter((k) => !after.has(k)).sort();
      const expectedChanged = [...res.updated[e], ...(e === 'lease' ? [...transitioned] : [])].sort();
      expect(changed, `${e} changed`).toEqual(expectedChanged);
      expect(created, `${e} created`).toEqual([...res.created[e]].sort());
      expect(deleted, `${e} deleted`).toEqual([...res.deleted[e]].sort());
      for (const id of changed) expect(JSON.parse(after.get(id)!).updatedOn, `${e} ${id} updatedOn`).not.toBe(JSON.parse(old.get(id)!).updatedOn);
    }

    const leases = new Map((await all(a.key, 'lease')).map((l) => [String(l.leaseId), l]));
    for (const t of res.lease_transitions) {
      const allowed: Record<string, string[]> = { pending: ['active', 'cancelled'], active: ['notice', 'terminated', 'evicted', 'ended'], notice: ['ended'] };
      expect(allowed[t.from], `${t.from} -> ${t.to}`).toContain(t.to);
      expect(statusName(leases.get(t.x_id)!.leaseStatusTypeId)).toBe(t.to);
    }
    for (const r of res.renewals) {
      const lease = leases.get(r.x_id)!;
      expect(lease).toMatchObject({ isRenewal: '1', previousLeaseId: Number(r.previous_x_id), leaseStatusTypeId: 3 });
      expect(res.lease_transitions.find((t) => t.x_id === r.previous_x_id)?.to).toBe('ended');
    }
  });

  it('spreads a total over entities, cascades a property delete, and refuses bad requests', async () => {
    const a = await company(120, 4);
    const spread = await ctl.applyChanges(a.id, { update: 20 });
    expect(ENTITIES.reduce((n, e) => n + spread.updated[e].length, 0)).toBe(20);

    const gone = await ctl.applyChanges(a.id, { delete: { property: 1 } });
    expect(gone.deleted.property).toHaveLength(1);
    expect((await ctl.getCompany(a.id))?.counts).toEqual({ property: 0, unit: 0, resident: 0, lease: 0 });

    await expect(ctl.applyChanges(a.id, { update: -1 })).rejects.toMatchObject({ status: 422 });
    await expect(ctl.applyChanges(a.id, { explode: 1 } as never)).rejects.toMatchObject({ status: 422 });
    await expect(ctl.applyChanges('no-such-company', { update: 1 })).rejects.toMatchObject({ status: 404 });
  });
});

describe('writes', () => {
  it('create and update records, validating like a real PMS', async () => {
    const c = await company(40, 8);
    const [property] = await all(c.key, 'property');
    const [unit] = await all(c.key, 'unit');
    const propertyId = property!.propertyId;

    const newUnit = await rpc(c.key, 'propertyunits', 'sendPropertyUnits', {
      propertyId,
      unit: { unitNumber: 'Z-900', bedrooms: 2, bathrooms: 1, squareFeet: 900, marketRent: '1500.00' },
    });
    expect(newUnit.body.response).toMatchObject({ code: 200, result: { unit: { unitId: expect.any(Number) } } });
    const dup = await rpc(c.key, 'propertyunits', 'sendPropertyUnits', { propertyId, unit: { unitNumber: 'Z-900' } });
    expect(dup.body.response).toMatchObject({ code: 422, error: { code: 'DUPLICATE' } });

    const lease = leaseOf(unit!);
    const created = await rpc(c.key, 'leases', 'sendLeases', { propertyId, lease });
    expect(created.body.response.code).toBe(200);
    const { leaseId, customerId } = (created.body.response.result as { lease: { leaseId: number; customerId: number } }).lease;
    const read = await rpc(c.key, 'leases', 'getLeases', { leaseIds: String(leaseId) });
    expect((read.body.response.result!.leases as { lease: Record<string, unknown> }).lease).toMatchObject({
      leaseId,
      unitId: unit!.unitId,
      leaseStatusTypeId: 1,
      leaseTermMonths: '12',
      customers: { customer: { customerId, customerTypeId: 1 } },
    });

    const refusals: [Record<string, unknown>, string][] = [
      [{ propertyId: 999999, lease }, 'NOT_FOUND'],
      [{ propertyId, lease: { ...lease, unitSpaceId: 1 } }, 'NOT_FOUND'],
      [{ propertyId, lease: { ...lease, floorplanId: 999999 } }, 'VALIDATION_FAILED'],
      [{ propertyId, lease: { ...lease, leaseTermId: 77 } }, 'VALIDATION_FAILED'],
      [{ propertyId, lease: { ...lease, leaseEndDate: '07/31/2024' } }, 'VALIDATION_FAILED'],
      [{ propertyId, lease: { ...lease, applicant: { ...lease.applicant, firstName: '' } } }, 'VALIDATION_FAILED'],
      [{ propertyId, lease: { ...lease, surprise: 1 } }, 'VALIDATION_FAILED'],
    ];
    for (const [params, code] of refusals) {
      const r = await rpc(c.key, 'leases', 'sendLeases', params);
      expect(r.status).toBe(200);
      expect(r.body.response, JSON.stringify(params).slice(0, 80)).toMatchObject({ code: 422, error: { code } });
    }
    const counts = (await ctl.getCompany(c.id))!.counts;
    expect(counts.lease).toBe(41);

    const updated = await rpc(c.key, 'leases', 'updateLease', { leaseId, lease: { rent: '1234.5', occupants: 2 } });
    expect(updated.body.response.code).toBe(200);
    const after = await rpc(c.key, 'leases', 'getLeases', { leaseIds: String(leaseId) });
    expect((after.body.response.result!.leases as { lease: Record<string, unknown> }).lease).toMatchObject({ rent: '1234.50', occupants: 2 });

    const closed = (await all(c.key, 'lease')).find((l) => statusName(l.leaseStatusTypeId) === 'ended')!;
    const refused = await rpc(c.key, 'leases', 'updateLease', { leaseId: closed.leaseId, lease: { occupants: 2 } });
    expect(refused.body.response).toMatchObject({ code: 422, error: { code: 'LEASE_CLOSED' } });

    const customer = await rpc(c.key, 'customers', 'updateCustomers', { customerId, customer: { email: 'not-an-email' } });
    expect(customer.body.response).toMatchObject({ code: 422, error: { code: 'VALIDATION_FAILED' } });
  });
});

describe('setup reads', () => {
  it('list a property’s floor plans, unit spaces, lease terms and pick lists, with the API’s quirks, and refuse what they cannot serve', async () => {
    const c = await company(6, 21);
    const [property] = await all(c.key, 'property');
    const propertyId = property!.propertyId as number;
    const units = await all(c.key, 'unit');

    const plans = await rpc(c.key, 'properties', 'getFloorPlans', { propertyId });
    const stored = (property!.floorplans as { floorplan: { floorplanId: number; name: string }[] }).floorplan;
    expect(plans.body.response.result).toEqual({
      floorPlans: {
        floorPlan: stored.map((f) => expect.objectContaining({ floorplanId: f.floorplanId, floorplanName: f.name, bedrooms: expect.any(String) })),
      },
    });
    // A page of one unit space is the lone object, numbers where the rest of the API has them.
    const one = await rpc(c.key, 'propertyunits', 'getUnitSpaces', { propertyId, per_page: 1 });
    expect(one.body.response.result).toEqual({
      unitSpaces: { unitSpace: { unitSpaceId: units[0]!.unitId, unitNumber: units[0]!.unitNumber, floorplanId: units[0]!.floorplanId } },
      pagination: { page_no: 1, per_page: 1, total_count: units.length },
    });
    const terms = await rpc(c.key, 'leases', 'getLeaseTerms', { propertyId: String(propertyId) });
    expect(terms.body.response.result).toEqual({
      leaseTerms: {
        leaseTerm: [
          { leaseTermId: 1, name: '6 Months', termMonths: '6' },
          { leaseTermId: 2, name: '12 Months', termMonths: '12' },
          { leaseTermId: 4, name: '24 Months', termMonths: '24' },
        ],
      },
    });
    const picks = await rpc(c.key, 'properties', 'getPropertyPickLists', { propertyId });
    expect(picks.body.response.result).toMatchObject({
      pickLists: {
        customerRelationshipTypes: { customerRelationshipType: expect.arrayContaining([{ id: 1, name: 'Primary' }]) },
        phoneNumberTypes: { phoneNumberType: expect.arrayContaining([{ id: 3, name: 'Mobile' }]) },
        addressTypes: { addressType: expect.arrayContaining([{ id: 1, name: 'Current' }]) },
      },
    });

    expect((await rpc(c.key, 'leases', 'getLeaseTerms', { propertyId: 999999 })).body.response).toMatchObject({ code: 422, error: { code: 'NOT_FOUND' } });
    const missing = await rpc(c.key, 'properties', 'getFloorPlans', {});
    expect(missing.status).toBe(400);
    expect(missing.body.response).toMatchObject({ code: 400, error: { code: 'INVALID_PARAMS' } });
    expect((await rpc(c.key, 'properties', 'constructor', { propertyId })).status).toBe(400);

    // A term the company has but this (odd-numbered) property does not offer is refused by sendLeases too.
    const lease = leaseOf(units[0]!, { leaseTermId: 3, leaseEndDate: '01/31/2027' });
    const refused = await rpc(c.key, 'leases', 'sendLeases', { propertyId, lease });
    expect(refused.body.response).toMatchObject({
      code: 422,
      error: { code: 'VALIDATION_FAILED', message: `leaseTermId 3 is not offered at property ${propertyId}` },
    });

    // They are reads: a read-scoped fault answers for them, a write-scoped one does not.
    await ctl.setFault(c.id, { kind: 'unavailable', methods: 'writes' });
    expect((await rpc(c.key, 'leases', 'getLeaseTerms', { propertyId })).status).toBe(200);
    await ctl.setFault(c.id, { kind: 'unavailable', methods: 'reads' });
    expect((await rpc(c.key, 'leases', 'getLeaseTerms', { propertyId })).status).toBe(503);
    await ctl.clearFaults(c.id);
  });
});

describe('durability', () => {
  it('keeps companies, keys, data and faults across a restart of the sandbox', async () => {
    const first = await startSandbox({ databaseUrl: inject('databaseUrl'), port: 0, controlToken: inject('sandboxControlToken'), poolMax: 2 });
    const local = sandboxControlClient(first.url, inject('sandboxControlToken'));
    const id = `restart-${randomUUID()}`;
    const { api_key } = await local.createCompany({ companyId: id, size: 50, seed: 77 });
    await local.applyChanges(id, { update: 5 });
    await local.setFault(id, { kind: 'unavailable', count: 1 });
    expect((await rpc(api_key, 'leases', 'getLeases', {}, first.url)).status).toBe(503);
    const leases = await all(api_key, 'lease', 1000, first.url);
    await first.close();

    const second = await startSandbox({ databaseUrl: inject('databaseUrl'), port: 0, controlToken: inject('sandboxControlToken'), poolMax: 2 });
    try {
      expect(await all(api_key, 'lease', 1000, second.url)).toEqual(leases);
      expect((await sandboxControlClient(second.url, inject('sandboxControlToken')).getCompany(id))?.change_counter).toBe(1);
    } finally {
      await second.close();
    }
  });
});
