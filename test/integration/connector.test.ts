/**
 * The Entrata-style connector against the running sandbox PMS over HTTP: full reads with mapping, writes with
 * read-back, the retry policy of reads under faults, the single attempt of writes and how its failures are
 * classified, and findCreated after a create whose outcome is unknown.
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
  property: ['propertyId', 'propertyName', 'propertyType', 'isDisabled', 'description', 'yearBuilt', 'numberOfUnits', 'numberOfBuildings', 'numberOfFloors', 'webSite', 'email', 'address', 'phones', 'latitude', 'longitude', 'timeZone', 'managementCompany', 'taxId', 'petPolicy', 'smokingPolicy', 'photos'],
  unit: ['unitId', 'propertyId', 'unitNumber', 'floorplanId', 'floorplanName', 'bedrooms', 'bathrooms', 'squareFeet', 'maxOccupants', 'marketRent', 'currencyCode', 'remarks', 'address'],
  resident: ['customerId', 'propertyId', 'firstName', 'middleName', 'lastName', 'email', 'phones', 'dateOfBirth', 'address', 'customerStatusTypeId'],
  lease: ['leaseId', 'propertyId', 'unitId', 'leaseIntervalTypeId', 'leaseStartDate', 'leaseEndDate', 'moveInDate', 'moveOutDate', 'noticeDate', 'leaseSignedDate', 'rent', 'securityDeposit', 'balance', 'currencyCode', 'leaseTermMonths', 'renewalOfferStatus', 'isRenewal', 'previousLeaseId', 'concessions', 'notes', 'customers'],
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

  it('reads every record of all four entities, once each, with references that resolve', async () => {
    const counts = (await ctl.getCompany(c.id))!.counts;
    for (const e of ENTITIES) {
      expect(read[e], e).toHaveLength(counts[e]);
      expect(new Set(read[e].map((r) => r.x_id)).size, e).toBe(counts[e]);
    }
    const ids = (e: Entity) => new Set(read[e].map((r) => r.x_id));
    const [properties, units, residents, leases] = [ids('property'), ids('unit'), ids('resident'), ids('lease')];
    for (const u of read.unit) expect(properties.has(u.property_x_id!)).toBe(true);
    for (const r of read.resident) expect(properties.has(r.property_x_id!)).toBe(true);
    for (const l of read.lease) {
      expect(units.has(l.unit_x_id!)).toBe(true);
      expect(properties.has(l.property_x_id!)).toBe(true);
      if (l.previous_lease_x_id) expect(leases.has(l.previous_lease_x_id)).toBe(true);
      expect(l.residents.length).toBeGreaterThan(0);
      for (const p of l.residents) expect(residents.has(p.x_id)).toBe(true);
    }
  });

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
  let c: { id: string; key: string };
  beforeAll(async () => {
    c = await company(30);
  });

  it('survives rate limiting by honouring Retry-After, and unavailability by retrying', async () => {
    const conn = connector(c.key);
    await ctl.setFault(c.id, { kind: 'rate_limited', count: 2 });
    const started = Date.now();
    const page = await conn.readPage('lease', 1, 100);
    expect(page.records).toHaveLength(30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000); // two 429s, one second each

    await ctl.setFault(c.id, { kind: 'unavailable', count: 3 });
    expect((await conn.readPage('resident', 1, 100)).records.length).toBeGreaterThan(0);
  });

  it('gives up with a transient error after its attempts, and leaves long Retry-After waits to the caller', async () => {
    await ctl.setFault(c.id, { kind: 'unavailable', count: 3 });
    const err = await connector(c.key, { maxAttempts: 3 }).readPage('unit', 1, 10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceTransientError);
    expect(err).toMatchObject({ status: 503 });

    await ctl.setFault(c.id, { kind: 'rate_limited', count: 1 });
    const started = Date.now();
    const limited = await connector(c.key, { maxRetryAfterMs: 500 }).readPage('unit', 1, 10).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(SourceTransientError);
    expect(limited).toMatchObject({ status: 429, retryAfterMs: 1000 });
    expect(Date.now() - started).toBeLessThan(900);
    expect((await connector(c.key).readPage('unit', 1, 10)).records).toHaveLength(10);
  });

  it('times out a slow source, and treats a refused connection as transient', async () => {
    await ctl.setFault(c.id, { kind: 'slow', count: 2, delay_ms: 1500 });
    const slow = await connector(c.key, { timeoutMs: 300, maxAttempts: 2 }).readPage('lease', 1, 10).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(SourceTransientError);
    expect((slow as Error).message).toMatch(/no reply within 300 ms/);
    await ctl.clearFaults(c.id);

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await createConnector({ base_url: `http://127.0.0.1:${port}`, api_key: 'x' }, { backoffMs: 5, maxAttempts: 2 })
      .readPage('lease', 1, 10)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SourceTransientError);
    expect((refused as Error).message).toMatch(/network error/);
  });

  it('fails permanently, at once, on a bad key', async () => {
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const err = await connector('sbx_not-a-key', { fetch: counting }).readPage('lease', 1, 10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourcePermanentError);
    expect(err).toMatchObject({ status: 401, code: 'AUTHENTICATION_FAILED' });
    expect(calls).toBe(1);
  });

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
      const err = await createConnector({ base_url: base, api_key: 'k' }, { backoffMs: 5 }).readPage('lease', 1, 10).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect((err as Error).message).toMatch(message);
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
      reply = { status: 200, body: '{"response":{"code":200,"result":{"leases":{"lease":[{"leaseId":1,"rent":"1.00"},{"leaseId":2,"rent":"1.00"}]},"pagination":{"total_count":2}}}}' };
      const err = await createConnector({ base_url: base, api_key: 'k' }).readByIds('lease', ['2', '7']).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect((err as Error).message).toMatch(/record not asked for \(1\): the source does not filter by leaseIds/);
    });
  });
});

describe('lookups by id', () => {
  it('returns the records the source has, in batches of the largest page, and nothing for ids it lacks', async () => {
    const c = await company(30, 5);
    const conn = connector(c.key);
    const all = await readAll(conn, 'resident', 100);
    const some = all.filter((_, i) => i % 3 === 0).map((r) => r.x_id);
    const got = await conn.readByIds('resident', [...some, '999999999', 'not-a-native-id', some[0]!]);
    expect(got.records.map((r) => r.x_id).sort()).toEqual([...some].sort());
    expect(got.records).toEqual(all.filter((r) => some.includes(r.x_id)));
    expect(got.skipped).toEqual([]);
    expect(await conn.readByIds('resident', [])).toEqual({ records: [], skipped: [] });
    // More ids than a page holds: several requests, every record once.
    const many = await conn.readByIds('lease', (await readAll(conn, 'lease', 100)).map((r) => r.x_id).concat(Array.from({ length: 1200 }, (_, i) => String(800000 + i))));
    expect(many.records).toHaveLength(30);
  });

  it('lists an unreadable record of a lookup as skipped, with its id and reason', async () => {
    const c = await company(10, 6);
    const changed = await ctl.applyChanges(c.id, { corrupt: { unit: 1 } });
    const x = changed.corrupted.unit[0]!;
    const got = await connector(c.key).readByIds('unit', [x]);
    expect(got).toEqual({ records: [], skipped: [{ x_id: x, reason: expect.stringMatching(/not a decimal amount: "call for price"/) }] });
    await expect(connector(c.key).readOne('unit', x)).rejects.toThrow(/malformed unit .*call for price/);
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

  it('creates and updates units and residents, read back through the same mapping', async () => {
    const u = await conn.create('unit', { property_x_id: unit.property_x_id!, unit_number: 'W-1', bedrooms: 2, bathrooms: 1, square_feet: 880, note: 'New build', market_rent: { amount: 155050, currency: 'USD' } });
    expect(await conn.readOne('unit', u.x_id)).toMatchObject({ x_id: u.x_id, unit_number: 'W-1', bedrooms: 2, square_feet: 880, note: 'New build', market_rent: { amount: 155050, currency: 'USD' }, status: 'vacant' });
    await conn.update('unit', u.x_id, { note: null, max_occupants: 3 });
    expect(await conn.readOne('unit', u.x_id)).toMatchObject({ note: null, max_occupants: 3, unit_number: 'W-1' });

    const r = await conn.create('resident', {
      property_x_id: unit.property_x_id!,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      phones: [{ type: 'mobile', number: '512-555-0101', primary: true }],
      date_of_birth: '1990-12-10',
      address: { line_1: '1 Main St', line_2: null, city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
    });
    expect(await conn.readOne('resident', r.x_id)).toMatchObject({
      first_name: 'Ada',
      last_name: 'Lovelace',
      phones: [{ type: 'mobile', number: '512-555-0101', primary: true }],
      date_of_birth: '1990-12-10',
      status: 'applicant',
      address: { line_1: '1 Main St', city: 'Austin' },
    });
    await conn.update('resident', r.x_id, { email: 'ada@lovelace.example' });
    expect((await conn.readOne('resident', r.x_id))?.email).toBe('ada@lovelace.example');
    expect(await conn.readOne('resident', '999999999')).toBeNull();
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
    await expect(conn.create('resident', { property_x_id: unit.property_x_id!, first_name: 'A', last_name: 'B', phones: [{ type: 'pager', number: '1', primary: true }] })).rejects.toBeInstanceOf(SourcePermanentError);

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
    const down = await conn().create('unit', { property_x_id: property, unit_number: 'ONE-503' }).catch((e: unknown) => e);
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
    const limited = await conn().update('unit', units[0]!.x_id, { note: 'x' }).catch((e: unknown) => e);
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

  it('times out a slow write that the source applied anyway: transient, maybe applied, and findCreated finds it', async () => {
    const input = { property_x_id: units[1]!.property_x_id!, unit_number: 'Slow-7' };
    await ctl.setFault(c.id, { kind: 'slow', count: 1, delay_ms: 1500, methods: 'writes' });
    requests = 0;
    const err = await conn({ timeoutMs: 300 }).create('unit', input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceTransientError);
    expect(err).toMatchObject({ maybeApplied: true });
    expect((err as Error).message).toMatch(/^sendPropertyUnits: no reply within 300 ms; the write may have been applied$/);
    expect(requests).toBe(1);

    const found = await conn().findCreated('unit', { ...input, unit_number: ' slow-7 ' });
    expect(found).toEqual({ x_id: expect.stringMatching(/^\d+$/), related: [] });
    expect(await conn().readOne('unit', found!.x_id)).toMatchObject({ unit_number: 'Slow-7', property_x_id: input.property_x_id });
    // Sending it again is what findCreated prevents: the source refuses a second unit of that number.
    await expect(conn().create('unit', input)).rejects.toMatchObject({ code: 'DUPLICATE' });
  });

  it('knows that a refused connection carried nothing', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    requests = 0;
    const err = await createConnector({ base_url: `http://127.0.0.1:${port}`, api_key: 'x' }, { fetch: counting, maxAttempts: 5, backoffMs: 1 })
      .create('unit', { property_x_id: '1', unit_number: 'X' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceTransientError);
    expect(err).toMatchObject({ maybeApplied: false });
    expect((err as Error).message).toMatch(/network error: .*ECONNREFUSED/);
    expect(requests).toBe(1);
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
    first_name: 'Katherine',
    last_name: 'Johnson',
    customer_relationship_type_id: '1',
    phone_number: '757-555-0142',
    phone_number_type_id: '3',
    address_type_id: '1',
    street_line_1: '1 Langley Blvd',
    city: 'Hampton',
    state: 'Virginia',
    state_code: 'VA',
    postal_code: '23681',
    ...over,
  };
}

describe('findCreated', () => {
  let c: { id: string; key: string };
  let conn: SourceConnector;
  let units: InputOf['unit'][];
  beforeAll(async () => {
    c = await company(800, 23);
    conn = connector(c.key);
    units = await readAll(conn, 'unit', 1000);
  });

  it('finds a created unit by property and unit number, and nothing for another number or property', async () => {
    const [here, there] = [units[0]!, units.find((u) => u.property_x_id !== units[0]!.property_x_id)!];
    const made = await conn.create('unit', { property_x_id: here.property_x_id!, unit_number: 'FC-101', bedrooms: 1 });
    expect(await conn.findCreated('unit', { property_x_id: here.property_x_id!, unit_number: 'fc-101 ' })).toEqual(made);
    expect(await conn.findCreated('unit', { property_x_id: here.property_x_id!, unit_number: 'FC-102' })).toBeNull();
    expect(await conn.findCreated('unit', { property_x_id: there.property_x_id!, unit_number: 'FC-101' })).toBeNull();
    expect(await conn.findCreated('unit', { property_x_id: 'not-native', unit_number: 'FC-101' })).toBeNull();
  });

  it('finds a created resident by name and email, else phone, else name alone; the newest of several', async () => {
    const property = units[0]!.property_x_id!;
    const other = units.find((u) => u.property_x_id !== property)!.property_x_id!;
    const withEmail = await conn.create('resident', { property_x_id: property, first_name: 'Mary', last_name: 'Jackson', email: 'Mary.Jackson@example.com' });
    expect(await conn.findCreated('resident', { property_x_id: property, first_name: ' mary', last_name: 'JACKSON', email: 'mary.jackson@EXAMPLE.com' })).toEqual(withEmail);
    expect(await conn.findCreated('resident', { property_x_id: property, first_name: 'Mary', last_name: 'Jackson', email: 'someone.else@example.com' })).toBeNull();
    expect(await conn.findCreated('resident', { property_x_id: other, first_name: 'Mary', last_name: 'Jackson', email: 'mary.jackson@example.com' })).toBeNull();

    const withPhone = await conn.create('resident', { property_x_id: property, first_name: 'Dorothy', last_name: 'Vaughan', phones: [{ type: 'mobile', number: '512-555-0177', primary: true }] });
    const byPhone = { property_x_id: property, first_name: 'Dorothy', last_name: 'Vaughan', phones: [{ type: 'home', number: '(512) 555 0177', primary: true }] };
    expect(await conn.findCreated('resident', byPhone)).toEqual(withPhone);
    expect(await conn.findCreated('resident', { ...byPhone, phones: [{ type: 'home', number: '512-555-0178', primary: true }] })).toBeNull();

    const nameOnly = { property_x_id: property, first_name: 'Christine', last_name: 'Darden' };
    expect(await conn.findCreated('resident', nameOnly)).toBeNull();
    const first = await conn.create('resident', nameOnly);
    const second = await conn.create('resident', nameOnly);
    expect(Number(second.x_id)).toBeGreaterThan(Number(first.x_id));
    expect(await conn.findCreated('resident', nameOnly)).toEqual(second);
  });

  it('finds a created lease by unit, dates and applicant, with the applicant as related; nothing for other dates, unit or name', async () => {
    const [unit, neighbour] = units.filter((u) => u.property_x_id === units[0]!.property_x_id);
    const floorplan = async (u: InputOf['unit']) => (await conn.readOne('unit', u.x_id))!.floorplan_id!;
    const input = leaseInput(unit!, await floorplan(unit!));
    expect(await conn.findCreated('lease', input)).toBeNull();
    const made = await conn.create('lease', input);
    expect(made.related).toHaveLength(1);
    expect(await conn.findCreated('lease', { ...input, first_name: 'KATHERINE ', last_name: ' johnson' })).toEqual(made);

    expect(await conn.findCreated('lease', { ...input, lease_start_date: '2026-03-02' })).toBeNull();
    expect(await conn.findCreated('lease', { ...input, lease_end_date: '2027-03-31' })).toBeNull();
    expect(await conn.findCreated('lease', { ...input, first_name: 'Annie', last_name: 'Easley' })).toBeNull();
    expect(await conn.findCreated('lease', { ...input, unit_space_id: neighbour!.x_id, floorplan_id: await floorplan(neighbour!) })).toBeNull();

    // Another applicant's lease of the same unit and term is not ours; a second of ours is the newest.
    await conn.create('lease', { ...input, first_name: 'Annie', last_name: 'Easley' });
    expect(await conn.findCreated('lease', input)).toEqual(made);
    const again = await conn.create('lease', input);
    expect(await conn.findCreated('lease', input)).toEqual(again);
  });
});

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

  it('fails permanently for a property the source does not have, and transiently when the source is down', async () => {
    await expect(conn.readWriteOptions('999999')).rejects.toMatchObject({ name: 'SourcePermanentError', code: 'NOT_FOUND' });
    await expect(conn.readWriteOptions('not-a-number')).rejects.toBeInstanceOf(SourcePermanentError);
    await ctl.setFault(c.id, { kind: 'unavailable', methods: 'reads' });
    try {
      await expect(connector(c.key, { maxAttempts: 1 }).readWriteOptions('1001')).rejects.toBeInstanceOf(SourceTransientError);
    } finally {
      await ctl.clearFaults(c.id);
    }
  });
});
