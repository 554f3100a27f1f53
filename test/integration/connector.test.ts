/**
 * What only the Entrata-style connector has, against the sandbox's `entrata` flavour over HTTP: its wire read
 * field by field (decimal strings, US dates, local times, status ids, custom_data), its JSON-RPC reply shapes and
 * business errors with their codes, and its write options' code lists. What every dialect does (reads, delta,
 * lookups, writes, faults, findCreated) is test/integration/connector-conformance.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Entity, InputOf } from '../../domain/cdm';
import { sandboxControlClient, type SandboxControl } from '../../sandbox/control';
import { createConnector, SourcePermanentError, SourceTransientError, type LeaseCreateInput, type SourceConnector } from '../../source';
import { toUtcIso } from '../../source/entrata/mapping';
import { SERVICES } from '../../source/entrata/native';
import { APPLICANT } from '../support/fixtures';

const ENTITIES: Entity[] = ['property', 'unit', 'resident', 'lease'];
let ctl: SandboxControl;

async function company(size: number, seed = 31): Promise<{ id: string; key: string }> {
  const id = `c-${randomUUID()}`;
  const { api_key } = await ctl.createCompany({ companyId: id, size, seed });
  return { id, key: api_key };
}
const connector = (key: string, opts = {}) => createConnector({ base_url: inject('sandboxUrl'), api_key: key }, { backoffMs: 20, ...opts });

async function readAll<E extends Entity>(c: SourceConnector, entity: E, perPage: number): Promise<InputOf[E][]> {
  const out: InputOf[E][] = [];
  for (let page = 1; ; page++) {
    const p = await c.readPage(entity, page, perPage);
    expect(p.page).toBe(page);
    out.push(...p.records);
    if (!p.hasMore) return out;
  }
}

/** The raw wire records, straight from the RPC API. */
async function raw(key: string, entity: Entity): Promise<Record<string, unknown>[]> {
  const svc = SERVICES[entity];
  const res = await fetch(`${inject('sandboxUrl')}/${svc.service}`, {
    method: 'POST',
    headers: { 'x-api-key': key },
    body: JSON.stringify({ auth: { type: 'apikey' }, method: { name: svc.read, params: { per_page: 1000 } } }),
  });
  const body = (await res.json()) as { response: { result: Record<string, Record<string, unknown>> } };
  const inner = body.response.result[svc.outer]![svc.inner];
  return Array.isArray(inner) ? inner : [inner as Record<string, unknown>];
}

/** Source fields each entity maps to CDM columns; everything else must be in custom_data. */
const MAPPED: Record<Entity, string[]> = {
  property: [
    'propertyId',
    'propertyName',
    'propertyType',
    'isDisabled',
    'description',
    'yearBuilt',
    'numberOfUnits',
    'numberOfBuildings',
    'numberOfFloors',
    'webSite',
    'email',
    'address',
    'phones',
    'latitude',
    'longitude',
    'timeZone',
    'managementCompany',
    'taxId',
    'petPolicy',
    'smokingPolicy',
    'photos',
  ],
  unit: [
    'unitId',
    'propertyId',
    'unitNumber',
    'floorplanId',
    'floorplanName',
    'bedrooms',
    'bathrooms',
    'squareFeet',
    'maxOccupants',
    'marketRent',
    'currencyCode',
    'remarks',
    'address',
  ],
  resident: ['customerId', 'propertyId', 'firstName', 'middleName', 'lastName', 'email', 'phones', 'dateOfBirth', 'address', 'customerStatusTypeId'],
  lease: [
    'leaseId',
    'propertyId',
    'unitId',
    'leaseIntervalTypeId',
    'leaseStartDate',
    'leaseEndDate',
    'moveInDate',
    'moveOutDate',
    'noticeDate',
    'leaseSignedDate',
    'rent',
    'securityDeposit',
    'balance',
    'currencyCode',
    'leaseTermMonths',
    'renewalOfferStatus',
    'isRenewal',
    'previousLeaseId',
    'concessions',
    'notes',
    'customers',
  ],
};

beforeAll(() => {
  ctl = sandboxControlClient(inject('sandboxUrl'), inject('sandboxControlToken'));
});

describe('reads', () => {
  let c: { id: string; key: string };
  const read = {} as { [E in Entity]: InputOf[E][] };
  beforeAll(async () => {
    c = await company(500);
    const conn = connector(c.key);
    for (const e of ENTITIES) (read as Record<Entity, unknown>)[e] = await readAll(conn, e, 37);
  });

  // Every record once, with references that resolve: the conformance suite checks it for both dialects.

  it('maps to CDM values: minor units, UTC times, ISO dates, status names', async () => {
    const leases = await raw(c.key, 'lease');
    const byId = new Map(read.lease.map((l) => [l.x_id, l]));
    for (const r of leases) {
      const m = byId.get(String(r.leaseId))!;
      const [whole, cents] = String(r.rent).split('.');
      expect(m.rent_amount).toEqual({ amount: Number(whole) * 100 + Number(cents), currency: 'USD' });
      const [mm, dd, yyyy] = String(r.leaseStartDate).split('/');
      expect(m.start_date).toBe(`${yyyy}-${mm}-${dd}`);
      expect(m.custom_data.updatedOn).toBe(toUtcIso(r.updatedOn));
      expect(m.custom_data.updatedOn).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/);
      expect(m.is_renewal).toBe(r.isRenewal === '1');
      expect(m.previous_lease_x_id).toBe(r.previousLeaseId === null ? null : String(r.previousLeaseId));
    }
    const statuses = new Set(read.lease.map((l) => l.status));
    expect([...statuses].sort()).toEqual(['active', 'cancelled', 'ended', 'evicted', 'notice', 'pending', 'terminated']);
    for (const u of read.unit) expect(['vacant', 'occupied', 'notice']).toContain(u.status);
    for (const r of read.resident) expect(['applicant', 'current', 'notice', 'past']).toContain(r.status);
    expect(read.property[0]).toMatchObject({ status: 'active', type: expect.stringMatching(/^[a-z_]+$/), timezone_id: expect.stringMatching(/\//) });
  });

  it('keeps every source field the CDM has no column for in custom_data', async () => {
    for (const e of ENTITIES) {
      const mapped = new Map(read[e].map((r) => [r.x_id, r]));
      for (const r of await raw(c.key, e)) {
        const m = mapped.get(String(r[SERVICES[e].idField]))!;
        for (const key of Object.keys(r)) {
          if (MAPPED[e].includes(key)) continue;
          expect(m.custom_data, `${e} ${m.x_id} ${key}`).toHaveProperty([key]);
        }
      }
    }
    expect(read.lease.every((l) => 'petCount' in l.custom_data && 'parkingSpaces' in l.custom_data)).toBe(true);
    expect(read.property.every((p) => typeof p.custom_data.marketingName === 'string')).toBe(true);
  });
});

describe('faults and failures', () => {
  describe('against a broken source', () => {
    let server: Server;
    let base = '';
    let reply: { status: number; body: string } = { status: 200, body: '' };
    beforeAll(async () => {
      server = createServer((_req, res) => {
        res.writeHead(reply.status, { 'content-type': 'application/json' });
        res.end(reply.body);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it.each([
      ['a body that is not JSON', 200, '<html>oops</html>', /not JSON/],
      ['a reply without "response"', 200, '{"ok":true}', /malformed reply/],
      ['a reply without a result', 200, '{"response":{"code":200}}', /no result/],
      ['a 403', 403, '{"response":{"code":403,"error":{"code":"FORBIDDEN","message":"no access"}}}', /no access/],
    ])('%s is a permanent failure', async (_name, status, body, message) => {
      reply = { status, body };
      const err = await createConnector({ base_url: base, api_key: 'k' }, { backoffMs: 5 })
        .readPage('lease', 1, 10)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect((err as Error).message).toMatch(message);
    });

    it.each([
      ['a body that is not JSON', '<html>oops</html>', /not JSON; the write may have been applied/],
      ['a reply without "response"', '{"ok":true}', /malformed reply without "response"; the write may have been applied/],
      ['a reply without the new id', '{"response":{"code":200,"result":{"units":{}}}}', /no unit\.unitId; the write may have been applied/],
    ])('a write answered 2xx with %s may have been applied: transient, never a rejection', async (_name, body, message) => {
      reply = { status: 200, body };
      const err = await createConnector({ base_url: base, api_key: 'k' })
        .create('unit', { property_x_id: '1', unit_number: 'X-1' } as never)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourceTransientError);
      expect(err).toMatchObject({ maybeApplied: true, message: expect.stringMatching(message) });
    });

    it.each([
      ['a body that is not JSON', '<html>oops</html>', /not JSON; the write may have been applied/],
      ['a record without its Id', '{"UnitNumber":"X-1"}', /no record Id; the write may have been applied/],
    ])('a Buildium write answered 2xx with %s may have been applied: transient, never a rejection', async (_name, body, message) => {
      reply = { status: 201, body };
      const err = await createConnector({ dialect: 'buildium', base_url: base, client_id: 'i', client_secret: 's' })
        .create('unit', { property_x_id: '1', unit_number: 'X-1' } as never)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourceTransientError);
      expect(err).toMatchObject({ maybeApplied: true, message: expect.stringMatching(message) });
    });

    it.each([
      ['a record without its id', '{"rent":"1.00"}', null, /record without leaseId/],
      ['a record with a bad amount', '{"leaseId":1,"rent":"1,00"}', '1', /not a decimal amount/],
      ['an unknown status id', '{"leaseId":"2","leaseStatusTypeId":42}', '2', /leaseStatusTypeId/],
    ])('%s is set aside with its id and reason; the rest of the page is read', async (_name, bad, xId, reason) => {
      reply = { status: 200, body: `{"response":{"code":200,"result":{"leases":{"lease":[${bad},{"leaseId":3,"rent":"10.00"}]}}}}` };
      const page = await createConnector({ base_url: base, api_key: 'k' }).readPage('lease', 1, 10);
      expect(page.records.map((r) => r.x_id)).toEqual(['3']);
      expect(page.skipped).toEqual([{ x_id: xId, reason: expect.stringMatching(reason) }]);
    });

    it('a source that ignores the id list of a lookup is a permanent failure, never "everything else is gone"', async () => {
      reply = {
        status: 200,
        body: '{"response":{"code":200,"result":{"leases":{"lease":[{"leaseId":1,"rent":"1.00"},{"leaseId":2,"rent":"1.00"}]},"pagination":{"total_count":2}}}}',
      };
      const err = await createConnector({ base_url: base, api_key: 'k' })
        .readByIds('lease', ['2', '7'])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect((err as Error).message).toMatch(/record not asked for \(1\): the source does not filter by leaseIds/);
    });
  });
});

describe('writes', () => {
  let c: { id: string; key: string };
  let conn: SourceConnector;
  let unit: InputOf['unit'];
  beforeAll(async () => {
    c = await company(40);
    conn = connector(c.key);
    unit = (await conn.readPage('unit', 1, 1)).records[0]!;
  });

  it('creates a lease with its applicant and updates its rent', async () => {
    const floorplanId = (await conn.readOne('unit', unit.x_id))!.floorplan_id!;
    const w = await conn.create('lease', {
      property_x_id: unit.property_x_id!,
      lease_start_date: '2025-09-01',
      lease_end_date: '2026-08-31',
      move_in_date: '2025-09-01',
      lease_term_id: '2',
      floorplan_id: floorplanId,
      unit_space_id: unit.x_id,
      first_name: 'Grace',
      last_name: 'Hopper',
      customer_relationship_type_id: '1',
      phone_number: '512-555-0199',
      phone_number_type_id: '3',
      address_type_id: '1',
      street_line_1: '1 Navy Way',
      city: 'Arlington',
      state: 'Virginia',
      state_code: 'VA',
      postal_code: '22201',
    });
    expect(w.related).toEqual([{ entity: 'resident', x_id: expect.stringMatching(/^\d+$/) }]);
    const lease = await conn.readOne('lease', w.x_id);
    expect(lease).toMatchObject({
      status: 'pending',
      start_date: '2025-09-01',
      end_date: '2026-08-31',
      move_in_date: '2025-09-01',
      term_months: 12,
      unit_x_id: unit.x_id,
      residents: [{ x_id: w.related[0]!.x_id, role: 'primary' }],
    });
    expect(await conn.readOne('resident', w.related[0]!.x_id)).toMatchObject({ first_name: 'Grace', last_name: 'Hopper' });

    await conn.update('lease', w.x_id, { rent_amount: { amount: 123450, currency: 'USD' }, occupants: 2 });
    const after = await conn.readOne('lease', w.x_id);
    expect(after?.rent_amount).toEqual({ amount: 123450, currency: 'USD' });
    expect(after?.custom_data.occupants).toBe(2);
  });

  it('turns rejections into permanent errors with the source’s code', async () => {
    const missing = await conn.create('unit', { property_x_id: '424242', unit_number: 'X' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(SourcePermanentError);
    expect(missing).toMatchObject({ code: 'NOT_FOUND', status: 422 });
    const closed = (await readAll(conn, 'lease', 100)).find((l) => l.status === 'ended')!;
    await expect(conn.update('lease', closed.x_id, { occupants: 1 })).rejects.toMatchObject({ code: 'LEASE_CLOSED' });
    await expect(
      conn.create('resident', { property_x_id: unit.property_x_id!, first_name: 'A', last_name: 'B', phones: [{ type: 'pager', number: '1', primary: true }] }),
    ).rejects.toBeInstanceOf(SourcePermanentError);

    await ctl.setFault(c.id, { kind: 'reject_writes' });
    await expect(conn.update('unit', unit.x_id, { note: 'x' })).rejects.toMatchObject({ code: 'WRITES_REJECTED' });
    expect((await conn.readPage('unit', 1, 5)).records).toHaveLength(5);
    await ctl.clearFaults(c.id);
    await expect(conn.update('unit', unit.x_id, { note: 'x' })).resolves.toMatchObject({ x_id: unit.x_id });
  });
});

describe('writes: one attempt, classified', () => {
  let c: { id: string; key: string };
  let units: InputOf['unit'][];
  let requests = 0;
  const counting: typeof fetch = (input, init) => {
    requests++;
    return fetch(input, init);
  };
  /** A connector that counts its requests, with retries that would show (five attempts, no real backoff). */
  const conn = (opts = {}) => connector(c.key, { fetch: counting, maxAttempts: 5, backoffMs: 1, ...opts });
  beforeAll(async () => {
    c = await company(800, 17);
    units = await readAll(connector(c.key), 'unit', 1000);
  });

  it('sends a create once against a 503 and a 429, and says whether it may have been applied', async () => {
    const property = units[0]!.property_x_id!;
    await ctl.setFault(c.id, { kind: 'unavailable', count: 3 });
    requests = 0;
    const down = await conn()
      .create('unit', { property_x_id: property, unit_number: 'ONE-503' })
      .catch((e: unknown) => e);
    expect(down).toBeInstanceOf(SourceTransientError);
    expect(down).toMatchObject({ status: 503, maybeApplied: true });
    expect(requests).toBe(1);
    // Reads keep retrying: through the two 503s the create left.
    requests = 0;
    expect((await conn().readPage('unit', 1, 5)).records).toHaveLength(5);
    expect(requests).toBe(3);
    expect(await conn().findCreated('unit', { property_x_id: property, unit_number: 'ONE-503' })).toBeNull();

    await ctl.setFault(c.id, { kind: 'rate_limited', count: 3 });
    requests = 0;
    const started = Date.now();
    const limited = await conn()
      .update('unit', units[0]!.x_id, { note: 'x' })
      .catch((e: unknown) => e);
    await ctl.clearFaults(c.id);
    expect(limited).toBeInstanceOf(SourceTransientError);
    expect(limited).toMatchObject({ status: 429, retryAfterMs: 1000, maybeApplied: false });
    expect(requests).toBe(1);
    expect(Date.now() - started).toBeLessThan(900); // Retry-After is the caller's to honour
  });

  it('turns a business error into a permanent error carrying the source’s message and code', async () => {
    const [a, b] = [units[0]!, units.find((u) => u.property_x_id !== units[0]!.property_x_id)!];
    requests = 0;
    const err = await conn()
      .create('lease', leaseInput(b, (await conn().readOne('unit', a.x_id))!.floorplan_id!, { unit_space_id: a.x_id }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourcePermanentError);
    expect((err as Error).message).toBe(`sendLeases: source rejected the request: unit space ${a.x_id} does not belong to property ${b.property_x_id}`);
    expect(err).toMatchObject({ code: 'NOT_FOUND', status: 422 });
    expect(requests).toBe(2); // the readOne, then the one create
  });
});

/** A lease create for a unit, with a fresh applicant unless told otherwise. */
function leaseInput(unit: InputOf['unit'], floorplanId: string, over: Partial<LeaseCreateInput> = {}): LeaseCreateInput {
  return {
    property_x_id: unit.property_x_id!,
    lease_start_date: '2026-03-01',
    lease_end_date: '2027-02-28',
    move_in_date: '2026-03-01',
    lease_term_id: '2',
    floorplan_id: floorplanId,
    unit_space_id: unit.x_id,
    customer_relationship_type_id: '1',
    phone_number_type_id: '3',
    address_type_id: '1',
    ...APPLICANT,
    ...over,
  };
}

describe('write options', () => {
  let c: { id: string; key: string };
  let conn: SourceConnector;
  let properties: Record<string, unknown>[];
  beforeAll(async () => {
    c = await company(40, 17);
    // A second property (id 1002), with a few units spread over both.
    await ctl.applyChanges(c.id, { create: { property: 1, unit: 6 } });
    conn = connector(c.key);
    properties = await raw(c.key, 'property');
  });

  it('lists what the source accepts at each property: its floor plans, its unit spaces, its lease terms, the code lists', async () => {
    expect(properties.map((p) => p.propertyId)).toEqual([1001, 1002]);
    const units = await readAll(conn, 'unit', 100);
    for (const p of properties) {
      const x = String(p.propertyId);
      const options = await conn.readWriteOptions(x);
      const plans = (p.floorplans as { floorplan: { floorplanId: number; name: string }[] | { floorplanId: number; name: string } }).floorplan;
      expect(options.floorplans).toEqual((Array.isArray(plans) ? plans : [plans]).map((f) => ({ value: String(f.floorplanId), label: f.name })));
      const here = units.filter((u) => u.property_x_id === x);
      expect(options.unit_spaces).toEqual(here.map((u) => ({ value: u.x_id, label: u.unit_number, floorplan_id: u.floorplan_id })));
      // Every property leases for 6 and 12 months; even-numbered ones for 18 too, odd-numbered ones for 24.
      expect(options.lease_terms).toEqual([
        { value: '1', label: '6 Months' },
        { value: '2', label: '12 Months' },
        Number(x) % 2 === 0 ? { value: '3', label: '18 Months' } : { value: '4', label: '24 Months' },
      ]);
      expect(options.customer_relationship_types.map((o) => o.label)).toEqual(['Primary', 'Responsible', 'Non-Responsible Occupant', 'Guarantor']);
      expect(options.phone_number_types).toEqual([
        { value: '1', label: 'Home' },
        { value: '2', label: 'Office' },
        { value: '3', label: 'Mobile' },
        { value: '4', label: 'Fax' },
      ]);
      expect(options.address_types.map((o) => o.label)).toEqual(['Current', 'Mailing', 'Previous']);
    }
  });

  it('maps a unit’s floor plan to floorplan_id, and writes a unit’s floor plan by it', async () => {
    const options = await conn.readWriteOptions('1001');
    const plan = options.floorplans[1]!;
    const u = await conn.create('unit', { property_x_id: '1001', unit_number: 'FP-1', floorplan_id: plan.value });
    expect(await conn.readOne('unit', u.x_id)).toMatchObject({ floorplan_id: plan.value, floorplan_name: plan.label });
    expect((await conn.readWriteOptions('1001')).unit_spaces).toContainEqual({ value: u.x_id, label: 'FP-1', floorplan_id: plan.value });
    // A unit set up without one has none, rather than a 0 that names nothing.
    const bare = await conn.create('unit', { property_x_id: '1001', unit_number: 'FP-2' });
    expect((await conn.readOne('unit', bare.x_id))!.floorplan_id).toBeNull();
    await expect(conn.create('unit', { property_x_id: '1001', unit_number: 'FP-3', floorplan_id: '999999' })).rejects.toBeInstanceOf(SourcePermanentError);
  });
});
