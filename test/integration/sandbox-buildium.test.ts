/**
 * The sandbox PMS's buildium flavour over real HTTP, as a client sees it with plain fetch: the REST wire of
 * docs/sources/buildium.md (paging, filters, by-id reads, credentials, the per-second limit, writes, idempotency
 * keys), the faults and change scripts shared with the entrata flavour, and determinism in both flavours.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { sandboxControlClient, type SandboxControl, type SandboxCredentials } from '../../sandbox/control';

const url = () => inject('sandboxUrl');
let ctl: SandboxControl;

type Rec = Record<string, unknown>;
interface Company {
  id: string;
  creds: SandboxCredentials;
}

async function company(size: number, seed = 11, dialect: 'buildium' | 'entrata' = 'buildium', rate?: number): Promise<Company> {
  const id = `b-${randomUUID()}`;
  const creds = await ctl.createCompany({ companyId: id, size, seed, dialect, ...(rate ? { rate_limit_per_second: rate } : {}) });
  return { id, creds };
}

const headersOf = (c: Company) => ({ 'x-buildium-client-id': c.creds.client_id!, 'x-buildium-client-secret': c.creds.client_secret! });

async function call(c: Company | Record<string, string>, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) {
  const auth = 'creds' in c ? headersOf(c as Company) : (c as Record<string, string>);
  const res = await fetch(`${url()}/v1${path}`, {
    method,
    headers: { ...auth, ...extra, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as any };
}

const get = (c: Company, path: string) => call(c, 'GET', path);

/** Every record of a collection, paging with limit/offset until X-Total-Count says there is no more. */
async function all(c: Company, path: string, limit = 1000, query = ''): Promise<Rec[]> {
  const out: Rec[] = [];
  for (let offset = 0; ; offset += limit) {
    const r = await get(c, `${path}?limit=${limit}&offset=${offset}${query}`);
    expect(r.status, r.text).toBe(200);
    out.push(...(r.json as Rec[]));
    if (offset + (r.json as Rec[]).length >= Number(r.headers.get('x-total-count'))) break;
  }
  return out;
}

const COLLECTIONS = ['/rentals', '/rentals/units', '/leases/tenants', '/leases'];

beforeAll(() => {
  ctl = sandboxControlClient(url(), inject('sandboxControlToken'));
});

describe('buildium reads', () => {
  let c: Company;
  beforeAll(async () => {
    // A limit above what these tests send in a second; its own test below sets a small one.
    c = await company(120, 7, 'buildium', 1000);
  });

  it('creates a company in the dialect with its own credentials', async () => {
    expect(c.creds).toEqual({ api_key: c.creds.client_secret, dialect: 'buildium', client_id: c.id, client_secret: expect.stringMatching(/^sbx_/) });
    expect(await ctl.getCompany(c.id)).toMatchObject({ company_id: c.id, dialect: 'buildium', size: 120 });
    const again = await ctl.createCompany({ companyId: c.id, size: 120, seed: 7 });
    expect(again).toEqual(c.creds);
  });

  it('pages with limit and offset in Id order, with X-Total-Count, and refuses a bad limit', async () => {
    const leases = await all(c, '/leases');
    expect(leases).toHaveLength(120);
    const by7 = await all(c, '/leases', 7);
    expect(by7.map((l) => l.Id)).toEqual(leases.map((l) => l.Id));
    const ids = leases.map((l) => l.Id as number);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    const page = await get(c, '/leases?limit=5&offset=10');
    expect(page.headers.get('x-total-count')).toBe('120');
    expect((page.json as Rec[]).map((l) => l.Id)).toEqual(ids.slice(10, 15));
    const byDefault = await get(c, '/leases');
    expect(byDefault.json).toHaveLength(50);
    const past = await get(c, '/leases?offset=500');
    expect(past.json).toEqual([]);
    expect(past.headers.get('x-total-count')).toBe('120');
    for (const bad of ['limit=0', 'limit=1001', 'limit=x', 'offset=-1']) {
      const r = await get(c, `/leases?${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.json, bad).toMatchObject({ UserMessage: expect.any(String), Errors: [{ Key: bad.split('=')[0], Value: expect.any(String) }] });
    }
  });

  it('speaks its own vocabulary: PascalCase, money with two decimals, ISO dates, UTC times, arrays and nulls', async () => {
    const leases = await all(c, '/leases');
    const lease = leases[0]!;
    for (const key of [
      'Id',
      'PropertyId',
      'UnitId',
      'UnitNumber',
      'LeaseType',
      'LeaseStatus',
      'LeaseFromDate',
      'Rent',
      'Tenants',
      'CreatedDateTime',
      'LastUpdatedDateTime',
    ]) {
      expect(lease).toHaveProperty(key);
    }
    expect(new Set(leases.map((l) => l.LeaseStatus))).toEqual(new Set(['Active', 'Past', 'Future']));
    for (const l of leases) {
      expect(['Fixed', 'FixedWithRollover', 'AtWill']).toContain(l.LeaseType);
      expect(l.LeaseFromDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      if (l.LeaseType === 'AtWill') expect(l.LeaseToDate).toBeNull();
      expect(l.LastUpdatedDateTime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      expect(typeof l.Rent).toBe('number');
      for (const t of l.Tenants as Rec[]) expect(['Primary', 'CoTenant', 'Occupant', 'Cosigner']).toContain(t.Role);
      expect(l.Notes === null || l.Notes !== '').toBe(true);
    }
    // Money is written with two decimals in the JSON text itself, e.g. 1035.50, never 1035.5.
    const text = (await get(c, '/leases?limit=1000')).text;
    expect(text).toMatch(/"Rent":\d+\.\d\d[,}]/);
    expect(text).not.toMatch(/"Rent":\d+(\.\d)?[,}]/);
    const [unit] = await all(c, '/rentals/units');
    expect(unit).toMatchObject({
      UnitBedrooms: expect.stringMatching(/^(NotSet|Studio|OneBed|TwoBed|ThreeBed)$/),
      OccupancyStatus: expect.stringMatching(/^(Vacant|Occupied|Notice)$/),
    });
    const tenants = await all(c, '/leases/tenants');
    for (const t of tenants) for (const p of t.PhoneNumbers as Rec[]) expect(['Home', 'Work', 'Mobile', 'Fax']).toContain(p.Type);
    const [property] = await all(c, '/rentals');
    expect(property).toMatchObject({
      Address: { AddressLine1: expect.any(String), AddressLine2: null },
      Photos: expect.any(Array),
      TimeZone: expect.any(String),
    });
    const plans = await get(c, `/rentals/${String(property!.Id)}/floorplans`);
    expect(plans.json).toEqual(expect.arrayContaining([expect.objectContaining({ Id: unit!.FloorPlanId, Name: unit!.FloorPlanName })]));
  });

  it('filters by ids and propertyids, and reads one record or 404', async () => {
    const leases = await all(c, '/leases');
    const pick = [leases[9]!.Id, leases[2]!.Id];
    const picked = await get(c, `/leases?ids=${pick.join(',')},999999`);
    expect((picked.json as Rec[]).map((l) => l.Id)).toEqual([leases[2]!.Id, leases[9]!.Id]);
    expect(picked.headers.get('x-total-count')).toBe('2');
    const property = leases[0]!.PropertyId as number;
    const here = await all(c, '/leases', 3, `&propertyids=${property}`);
    expect(here.map((l) => l.Id)).toEqual(leases.filter((l) => l.PropertyId === property).map((l) => l.Id));
    expect((await get(c, '/leases?ids=1,x')).status).toBe(400);

    for (const path of COLLECTIONS) {
      const [first] = await all(c, path);
      const one = await get(c, `${path}/${String(first!.Id)}`);
      expect(one.status, path).toBe(200);
      expect(one.json, path).toEqual(first);
      const missing = await get(c, `${path}/99999999`);
      expect(missing.status, path).toBe(404);
      expect(missing.json, path).toMatchObject({ UserMessage: expect.any(String), Errors: [] });
    }
    expect((await get(c, '/widgets')).status).toBe(404);
  });

  it('lists what changed in a lastupdated window: a change shows in a window covering it, not in one before it', async () => {
    const d = await company(60, 31);
    const before = new Date(Date.now() - 2000).toISOString().slice(0, 19) + 'Z';
    const res = await ctl.applyChanges(d.id, { update: { lease: 3, resident: 2 }, delete: { lease: 1 } });
    const after = new Date(Date.now() + 2000).toISOString().slice(0, 19) + 'Z';
    const changed = await all(d, '/leases', 1000, `&lastupdatedfrom=${before}&lastupdatedto=${after}`);
    expect(changed.map((l) => String(l.Id)).sort()).toEqual([...res.updated.lease].sort());
    const people = await all(d, '/leases/tenants', 1000, `&lastupdatedfrom=${before}`);
    expect(people.map((t) => String(t.Id)).sort()).toEqual([...res.updated.resident].sort());
    const earlier = await get(d, `/leases?lastupdatedto=${before}&ids=${res.updated.lease.join(',')}`);
    expect(earlier.json).toEqual([]);
    // Deleted records are in no query, by window or by id.
    expect((await get(d, `/leases/${res.deleted.lease[0]!}`)).status).toBe(404);
    for (const bad of ['lastupdatedfrom=2025-01-01', 'lastupdatedto=2025-02-30T00:00:00Z', 'lastupdatedfrom=yesterday']) {
      expect((await get(d, `/leases?${bad}`)).status, bad).toBe(400);
    }
  });

  it('refuses missing or wrong credentials, and the other flavour’s', async () => {
    expect((await call({}, 'GET', '/leases')).status).toBe(401);
    const wrong = await call({ 'x-buildium-client-id': c.id, 'x-buildium-client-secret': 'sbx_nope' }, 'GET', '/leases');
    expect(wrong.status).toBe(401);
    expect(wrong.json).toMatchObject({ UserMessage: expect.any(String), Errors: [] });
    const other = await company(5, 1);
    expect((await call({ 'x-buildium-client-id': other.id, 'x-buildium-client-secret': c.creds.client_secret! }, 'GET', '/leases')).status).toBe(401);
    // An entrata company's key opens neither the REST API, nor a buildium key the RPC API.
    const e = await company(5, 1, 'entrata');
    expect(e.creds).toEqual({ api_key: expect.any(String), dialect: 'entrata' });
    expect((await call({ 'x-buildium-client-id': e.id, 'x-buildium-client-secret': e.creds.api_key }, 'GET', '/leases')).status).toBe(401);
    const rpc = async (key: string) =>
      (
        await fetch(`${url()}/leases`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: JSON.stringify({ auth: { type: 'apikey' }, requestId: 1, method: { name: 'getLeases', params: {} } }),
        })
      ).status;
    expect(await rpc(c.creds.api_key)).toBe(401);
    expect(await rpc(e.creds.api_key)).toBe(200);
  });

  it('answers 429 with Retry-After over its per-second limit', async () => {
    const d = await company(5, 2, 'buildium', 3);
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof get>> | undefined;
    // Ten requests at once land in at most two seconds' windows of three each.
    const replies = await Promise.all(Array.from({ length: 10 }, () => get(d, '/rentals')));
    for (const r of replies) {
      statuses.push(r.status);
      if (r.status === 429) limited = r;
    }
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(6);
    expect(limited!.headers.get('retry-after')).toBe('1');
    expect(limited!.json).toMatchObject({ UserMessage: expect.any(String), Errors: [] });
  });
});

describe('buildium writes', () => {
  let c: Company;
  let property: Rec;
  let unit: Rec;
  beforeAll(async () => {
    c = await company(40, 8, 'buildium', 1000);
    property = (await all(c, '/rentals'))[0]!;
    unit = (await all(c, '/rentals/units'))[0]!;
  });

  const fullUnit = (over: Rec = {}) => ({
    UnitNumber: 'Z-900',
    FloorPlanId: null,
    UnitBedrooms: 'TwoBed',
    UnitBathrooms: 'OnePointFiveBath',
    UnitSize: 900,
    MaxOccupants: 4,
    MarketRent: 1500.5,
    Description: null,
    ...over,
  });

  it('creates and replaces units with 201 and 200, and answers field errors with 400', async () => {
    const created = await call(c, 'POST', '/rentals/units', { PropertyId: property.Id, ...fullUnit() });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({
      Id: expect.any(Number),
      PropertyId: property.Id,
      UnitNumber: 'Z-900',
      UnitBathrooms: 'OnePointFiveBath',
      MarketRent: 1500.5,
    });
    expect(created.text).toMatch(/"MarketRent":1500\.50/);
    expect((await get(c, `/rentals/units/${String(created.json.Id)}`)).json).toEqual(created.json);

    const replaced = await call(c, 'PUT', `/rentals/units/${String(created.json.Id)}`, fullUnit({ UnitNumber: 'Z-901', MarketRent: 1600 }));
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.json).toMatchObject({ UnitNumber: 'Z-901', MarketRent: 1600 });

    const partial = await call(c, 'PUT', `/rentals/units/${String(created.json.Id)}`, { UnitNumber: 'Z-902' });
    expect(partial.status).toBe(400);
    expect(partial.json.Errors).toEqual(expect.arrayContaining([{ Key: 'MarketRent', Value: 'is required' }]));
    const bad = await call(c, 'POST', '/rentals/units', {
      PropertyId: property.Id,
      ...fullUnit({ UnitNumber: unit.UnitNumber, MarketRent: '1500.00', UnitBedrooms: 'Lots' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({
      UserMessage: expect.any(String),
      Errors: expect.arrayContaining([
        { Key: 'MarketRent', Value: 'must be a number' },
        { Key: 'UnitBedrooms', Value: expect.stringContaining('must be one of') },
        { Key: 'UnitNumber', Value: expect.stringContaining('already exists') },
      ]),
    });
    expect((await call(c, 'PUT', '/rentals/units/99999999', fullUnit())).status).toBe(404);
  });

  it('creates and replaces tenants', async () => {
    const created = await call(c, 'POST', '/leases/tenants', {
      PropertyId: property.Id,
      FirstName: 'Ada',
      LastName: 'Lovelace',
      PhoneNumbers: [{ Number: '512-555-0100', Type: 'Work' }],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({
      FirstName: 'Ada',
      LastName: 'Lovelace',
      Email: null,
      PhoneNumbers: [{ Number: '512-555-0100', Type: 'Work' }],
      Status: 'Future',
    });
    const full = {
      FirstName: 'Ada',
      LastName: 'King',
      MiddleName: null,
      Email: 'ada@example.com',
      PhoneNumbers: [],
      DateOfBirth: '1815-12-10',
      PrimaryAddress: null,
    };
    const replaced = await call(c, 'PUT', `/leases/tenants/${String(created.json.Id)}`, full);
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.json).toMatchObject({ LastName: 'King', Email: 'ada@example.com', PhoneNumbers: [], DateOfBirth: '1815-12-10' });
    const bad = await call(c, 'PUT', `/leases/tenants/${String(created.json.Id)}`, { ...full, Email: 'nope', DateOfBirth: '1815-02-30' });
    expect(bad.status).toBe(400);
    expect(bad.json.Errors).toEqual(
      expect.arrayContaining([
        { Key: 'Email', Value: 'is not an email address' },
        { Key: 'DateOfBirth', Value: 'must be a date YYYY-MM-DD' },
      ]),
    );
  });

  const leaseBody = (u: Rec) => ({
    PropertyId: u.PropertyId,
    UnitId: u.Id,
    FloorPlanId: u.FloorPlanId,
    LeaseType: 'Fixed',
    LeaseFromDate: '2025-08-01',
    LeaseToDate: '2026-07-31',
    MoveInDate: '2025-08-01',
    Applicant: {
      FirstName: 'Grace',
      LastName: 'Hopper',
      Role: 'Primary',
      PhoneNumbers: [{ Number: '512-555-0199', Type: 'Mobile' }],
      Address: { AddressLine1: '1 Navy Way', City: 'Arlington', State: 'VA', PostalCode: '22201' },
      AddressType: 'Primary',
    },
  });

  it('creates a lease with its applicant, replaces it, refuses a Past one', async () => {
    const created = await call(c, 'POST', '/leases', leaseBody(unit));
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({
      UnitId: unit.Id,
      UnitNumber: unit.UnitNumber,
      LeaseType: 'Fixed',
      LeaseStatus: 'Future',
      TermMonths: 12,
      Tenants: [{ Id: expect.any(Number), Role: 'Primary' }],
    });
    const tenantId = (created.json.Tenants as Rec[])[0]!.Id;
    expect((await get(c, `/leases/tenants/${String(tenantId)}`)).json).toMatchObject({ FirstName: 'Grace', LastName: 'Hopper' });

    const put = { LeaseType: 'AtWill', LeaseFromDate: '2025-08-01', LeaseToDate: null, MoveInDate: '2025-08-02', Occupants: 2, Rent: 1234.5 };
    const replaced = await call(c, 'PUT', `/leases/${String(created.json.Id)}`, put);
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.json).toMatchObject({ LeaseType: 'AtWill', LeaseToDate: null, MoveInDate: '2025-08-02', Occupants: 2, Rent: 1234.5 });
    expect(replaced.text).toMatch(/"Rent":1234\.50/);

    const past = (await all(c, '/leases')).find((l) => l.LeaseStatus === 'Past')!;
    const refused = await call(c, 'PUT', `/leases/${String(past.Id)}`, put);
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ UserMessage: expect.any(String), Errors: [{ Key: 'LeaseStatus', Value: 'is Past' }] });

    const wrong = await call(c, 'POST', '/leases', {
      ...leaseBody(unit),
      LeaseType: 'Weekly',
      LeaseToDate: '2025-07-01',
      Applicant: { ...leaseBody(unit).Applicant, Role: 'Boss' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json.Errors.map((e: Rec) => e.Key).sort()).toEqual(['Applicant.Role', 'LeaseType']);
  });

  it('replays a POST with the same Idempotency-Key and body, and answers 409 to another body', async () => {
    const before = (await ctl.getCompany(c.id))!.counts;
    const key = `op-${randomUUID()}`;
    const body = { PropertyId: property.Id, FirstName: 'Katherine', LastName: 'Johnson' };
    const first = await call(c, 'POST', '/leases/tenants', body, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    const again = await call(c, 'POST', '/leases/tenants', body, { 'Idempotency-Key': key });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect((await ctl.getCompany(c.id))!.counts.resident).toBe(before.resident + 1);
    const other = await call(c, 'POST', '/leases/tenants', { ...body, LastName: 'Goble' }, { 'Idempotency-Key': key });
    expect(other.status).toBe(409);
    expect(other.json).toMatchObject({ UserMessage: expect.any(String) });
    expect((await call(c, 'POST', '/leases/tenants', body, { 'Idempotency-Key': 'has space' })).status).toBe(400);
    expect((await ctl.getCompany(c.id))!.counts.resident).toBe(before.resident + 1);
  });
});

describe('faults and changes in both flavours', () => {
  it('unavailable, rate_limited, slow and reject_writes work on the REST API, scoped like the RPC API', async () => {
    const c = await company(20, 9);
    await ctl.setFault(c.id, { kind: 'unavailable', count: 1 });
    const down = await get(c, '/leases');
    expect(down.status).toBe(503);
    expect(down.text).toMatch(/<html>/);
    expect((await get(c, '/leases')).status).toBe(200);

    await ctl.setFault(c.id, { kind: 'rate_limited', count: 2, methods: 'reads' });
    for (let i = 0; i < 2; i++) {
      const r = await get(c, '/rentals');
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
    }
    expect((await get(c, '/rentals')).status).toBe(200);

    await ctl.setFault(c.id, { kind: 'slow', count: 1, delay_ms: 400 });
    const t = Date.now();
    expect((await get(c, '/leases')).status).toBe(200);
    expect(Date.now() - t).toBeGreaterThanOrEqual(400);

    const [property] = await all(c, '/rentals');
    await ctl.setFault(c.id, { kind: 'reject_writes', count: 1 });
    expect((await get(c, '/leases')).status).toBe(200);
    const rejected = await call(c, 'POST', '/leases/tenants', { PropertyId: property!.Id, FirstName: 'A', LastName: 'B' });
    expect(rejected.status).toBe(400);
    expect(rejected.json).toMatchObject({ UserMessage: expect.stringMatching(/not accepting changes/) });
    expect((await call(c, 'POST', '/leases/tenants', { PropertyId: property!.Id, FirstName: 'A', LastName: 'B' })).status).toBe(201);
  });

  it('corrupt serves values the REST wire’s clients cannot read', async () => {
    const c = await company(60, 4);
    const res = await ctl.applyChanges(c.id, { corrupt: { property: 1, unit: 1, resident: 1, lease: 3 } });
    const p = (await get(c, `/rentals/${res.corrupted.property[0]!}`)).json;
    expect(Number.isNaN(Date.parse(p.LastUpdatedDateTime))).toBe(true);
    expect(typeof (await get(c, `/rentals/units/${res.corrupted.unit[0]!}`)).json.MarketRent).toBe('string');
    expect((await get(c, `/leases/tenants/${res.corrupted.resident[0]!}`)).json.DateOfBirth).toBe('1990-02-30');
    for (const id of res.corrupted.lease) {
      const l = (await get(c, `/leases/${id}`)).json;
      const readable =
        /^\d{4}-\d{2}-\d{2}$/.test(l.LeaseFromDate) && typeof l.Rent === 'number' && ['Fixed', 'FixedWithRollover', 'AtWill'].includes(l.LeaseType);
      expect(readable, id).toBe(false);
    }
  });

  it('a company is the same data in both flavours, and the same seed gives the same records in each', async () => {
    const b1 = await company(150, 42);
    const b2 = await company(150, 42);
    for (const path of COLLECTIONS) expect(await all(b2, path), path).toEqual(await all(b1, path));
    const other = await company(150, 43);
    expect(await all(other, '/leases')).not.toEqual(await all(b1, '/leases'));

    const e1 = await company(150, 42, 'entrata');
    const e2 = await company(150, 42, 'entrata');
    const rpcAll = async (c: Company) => {
      const res = await fetch(`${url()}/leases`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': c.creds.api_key },
        body: JSON.stringify({ auth: { type: 'apikey' }, requestId: 1, method: { name: 'getLeases', params: { per_page: 1000 } } }),
      });
      return ((await res.json()) as { response: { result: { leases: { lease: Rec[] } } } }).response.result.leases.lease;
    };
    const entrata = await rpcAll(e1);
    expect(await rpcAll(e2)).toEqual(entrata);
    // One generator: the same leases, rents and tenants, each in its own words.
    const rest = await all(b1, '/leases');
    expect(rest.map((l) => l.Id)).toEqual(entrata.map((l) => l.leaseId));
    expect(rest.map((l) => (l.Rent as number).toFixed(2))).toEqual(entrata.map((l) => l.rent));
    expect(rest.map((l) => l.LastUpdatedDateTime)).toEqual(entrata.map((l) => new Date(l.updatedOn as string).toISOString().slice(0, 19) + 'Z'));
  });
});
