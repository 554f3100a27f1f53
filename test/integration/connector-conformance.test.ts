/**
 * The connector conformance suite: what every dialect's connector does against a company of its own sandbox
 * flavour, asserted once for all (describe.each over the dialects). Full reads of every entity, delta reads where
 * the dialect has them, lookups by id for the deletion check, writes of every type with their rejections and
 * ambiguous outcomes, 429 with Retry-After, 5xx, timeouts, bad credentials, malformed records set aside; and, last,
 * that both flavours of one seed read as the same CDM records on every field both wires carry.
 *
 * What only one dialect's wire has (the Entrata-style RPC reply shapes, its codes) is tested beside its client:
 * test/integration/connector.test.ts, test/unit/buildium-mapping.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { Entity, InputOf } from '../../domain/cdm';
import { LEASE_RESIDENT_ROLES, RESIDENT_STATUSES, UNIT_STATUSES } from '../../domain/cdm';
import { sandboxControlClient, type SandboxControl } from '../../sandbox/control';
import {
  createConnector,
  MALFORMED_RECORD,
  SOURCE_DIALECTS,
  SourcePermanentError,
  SourceTransientError,
  type ConnectorOptions,
  type LeaseCreateInput,
  type SourceConnector,
  type SourceDialect,
  type SourceSettings,
} from '../../source';
import { APPLICANT } from '../support/fixtures';

const ENTITIES: Entity[] = ['property', 'unit', 'resident', 'lease'];
const LEASE_STATUSES = ['pending', 'active', 'notice', 'ended', 'cancelled', 'terminated', 'evicted'];
let ctl: SandboxControl;

interface Company {
  id: string;
  settings: SourceSettings;
}

/** A company of a dialect's flavour, made through the sandbox's control API; the settings a connector reaches it with. */
async function company(dialect: SourceDialect, size: number, seed = 31): Promise<Company> {
  const id = `c-${randomUUID()}`;
  const base_url = inject('sandboxUrl');
  const res = await fetch(`${base_url}/control/companies`, {
    method: 'POST',
    headers: { authorization: `Bearer ${inject('sandboxControlToken')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ companyId: id, size, seed, dialect }),
  });
  const body = (await res.json()) as { api_key?: string; client_id?: string; client_secret?: string };
  expect(res.status, JSON.stringify(body)).toBe(201);
  const settings: SourceSettings =
    dialect === 'buildium'
      ? { dialect, base_url, client_id: body.client_id!, client_secret: body.client_secret! }
      : { dialect, base_url, api_key: body.api_key! };
  return { id, settings };
}

/** The same settings with a secret the source does not know. */
const badSecret = (s: SourceSettings): SourceSettings =>
  s.dialect === 'buildium' ? { ...s, client_secret: 'not-the-secret' } : { ...s, api_key: 'sbx_not-a-key' };

const connector = (c: Company, opts: ConnectorOptions = {}) => createConnector(c.settings, { backoffMs: 20, ...opts });

/** A fetch that counts the requests it makes. */
function counting(): { fetch: typeof fetch; count: () => number } {
  let n = 0;
  return {
    fetch: (input, init) => {
      n++;
      return fetch(input, init);
    },
    count: () => n,
  };
}

async function readAll<E extends Entity>(c: SourceConnector, entity: E, perPage: number): Promise<InputOf[E][]> {
  const out: InputOf[E][] = [];
  for (let page = 1; ; page++) {
    const p = await c.readPage(entity, page, perPage);
    expect(p.page).toBe(page);
    expect(p.skipped).toEqual([]);
    out.push(...p.records);
    if (!p.hasMore) return out;
  }
}

async function readAllChanged<E extends Entity>(c: SourceConnector, entity: E, from: Date, to: Date): Promise<string[]> {
  const out: string[] = [];
  for (let page = 1; ; page++) {
    const p = await c.readChangedPage(entity, { from, to }, page, 50);
    out.push(...p.records.map((r) => r.x_id), ...p.skipped.map((r) => r.x_id!));
    if (!p.hasMore) return out;
  }
}

/**
 * A lease create for a unit (one with a floor plan), its coded fields taken from the source's own write options:
 * so the same input suits every dialect.
 */
async function leaseInput(conn: SourceConnector, unit: InputOf['unit'], over: Partial<LeaseCreateInput> = {}): Promise<LeaseCreateInput> {
  const o = await conn.readWriteOptions(unit.property_x_id!);
  const space = o.unit_spaces.find((s) => s.value === unit.x_id)!;
  return {
    property_x_id: unit.property_x_id!,
    lease_start_date: '2026-03-01',
    lease_end_date: '2027-02-28',
    move_in_date: '2026-03-01',
    lease_term_id: (o.lease_terms.find((t) => /12/.test(t.label)) ?? o.lease_terms[0]!).value,
    floorplan_id: space.floorplan_id!,
    unit_space_id: unit.x_id,
    customer_relationship_type_id: o.customer_relationship_types[0]!.value,
    phone_number_type_id: o.phone_number_types.find((t) => /mobile/i.test(t.label))!.value,
    address_type_id: o.address_types[0]!.value,
    ...APPLICANT,
    ...over,
  };
}

async function closedPort(): Promise<number> {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  return port;
}

beforeAll(() => {
  ctl = sandboxControlClient(inject('sandboxUrl'), inject('sandboxControlToken'));
});

describe.each(SOURCE_DIALECTS)('the %s connector against its sandbox flavour', (dialect) => {
  describe('full reads', () => {
    let c: Company;
    const read = {} as { [E in Entity]: InputOf[E][] };
    beforeAll(async () => {
      c = await company(dialect, 300);
      const conn = connector(c);
      expect(conn.dialect).toBe(dialect);
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

    it('maps to CDM values: integer minor units, ISO dates, UTC times, the CDM vocabularies', () => {
      const date = /^\d{4}-\d{2}-\d{2}$/;
      for (const l of read.lease) {
        expect(Number.isSafeInteger(l.rent_amount.amount)).toBe(true);
        expect(l.rent_amount.currency).toBe('USD');
        expect(l.start_date).toMatch(date);
        expect(LEASE_STATUSES).toContain(l.status);
        expect(['fixed', 'fixed_with_rollover', 'month_to_month']).toContain(l.type);
        for (const p of l.residents) expect(LEASE_RESIDENT_ROLES).toContain(p.role);
      }
      for (const u of read.unit) {
        expect(UNIT_STATUSES).toContain(u.status);
        if (u.market_rent) expect(Number.isSafeInteger(u.market_rent.amount)).toBe(true);
      }
      for (const r of read.resident) {
        expect(RESIDENT_STATUSES).toContain(r.status);
        if (r.date_of_birth) expect(r.date_of_birth).toMatch(date);
        for (const p of r.phones ?? []) expect(['home', 'office', 'mobile', 'fax', 'other']).toContain(p.type);
      }
      for (const record of ENTITIES.flatMap((e) => read[e] as { custom_data: Record<string, unknown> }[])) {
        for (const v of Object.values(record.custom_data)) {
          if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v)) expect(v).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        }
      }
      expect(read.property[0]).toMatchObject({ status: 'active', type: expect.stringMatching(/^[a-z_]+$/), timezone_id: expect.stringMatching(/\//) });
    });
  });

  describe('delta reads', () => {
    if (dialect === 'entrata') {
      it('has none: capabilities say so, and readChangedPage is a permanent failure', async () => {
        const c = await company(dialect, 10);
        const conn = connector(c);
        expect(conn.capabilities.delta).toBe(false);
        const now = new Date();
        await expect(conn.readChangedPage('lease', { from: new Date(now.getTime() - 60_000), to: now }, 1, 50)).rejects.toBeInstanceOf(SourcePermanentError);
      });
      return;
    }

    it('lists the records changed in a window covering the change, and not in a window before it', async () => {
      const c = await company(dialect, 60, 8);
      const conn = connector(c);
      expect(conn.capabilities.delta).toBe(true);
      const before = new Date();
      const changed = await ctl.applyChanges(c.id, { update: { unit: 3, resident: 2, lease: 4 } });
      const after = new Date();
      for (const e of ['unit', 'resident', 'lease'] as const) {
        const listed = await readAllChanged(conn, e, new Date(before.getTime() - 1000), new Date(after.getTime() + 1000));
        expect(listed, e).toEqual(expect.arrayContaining(changed.updated[e]));
        const earlier = await readAllChanged(conn, e, new Date(before.getTime() - 3_600_000), new Date(before.getTime() - 5_000));
        for (const x of changed.updated[e]) expect(earlier, `${e} ${x}`).not.toContain(x);
      }
      // A window's records read like a full read's.
      const page = await conn.readChangedPage('lease', { from: new Date(before.getTime() - 1000), to: new Date(after.getTime() + 1000) }, 1, 1000);
      for (const l of page.records) expect(await conn.readOne('lease', l.x_id)).toEqual(l);
    });
  });

  describe('lookups by id (the deletion check)', () => {
    it('returns the records the source has, and none of those it deleted or never had', async () => {
      const c = await company(dialect, 40, 5);
      const conn = connector(c);
      const all = await readAll(conn, 'resident', 100);
      const deleted = (await ctl.applyChanges(c.id, { delete: { resident: 3, lease: 2 } })).deleted;
      const got = await conn.readByIds('resident', [...all.map((r) => r.x_id), '999999999', 'not-a-native-id']);
      expect(got.skipped).toEqual([]);
      expect(got.records.map((r) => r.x_id).sort()).toEqual(
        all
          .map((r) => r.x_id)
          .filter((x) => !deleted.resident.includes(x))
          .sort(),
      );
      expect(got.records).toEqual(all.filter((r) => !deleted.resident.includes(r.x_id)));
      for (const x of deleted.lease) expect(await conn.readOne('lease', x)).toBeNull();
      expect(await conn.readByIds('resident', [])).toEqual({ records: [], skipped: [] });
      // More ids than one request takes: several requests, every record once.
      const leases = await readAll(conn, 'lease', 100);
      const many = await conn.readByIds('lease', leases.map((r) => r.x_id).concat(Array.from({ length: 1200 }, (_, i) => String(800000 + i))));
      expect(many.records.map((r) => r.x_id).sort()).toEqual(leases.map((r) => r.x_id).sort());
    });
  });

  describe('malformed records', () => {
    it('are set aside with their id and what is wrong, in pages and lookups; the rest is read', async () => {
      const c = await company(dialect, 20, 6);
      const conn = connector(c);
      const x = (await ctl.applyChanges(c.id, { corrupt: { unit: 1 } })).corrupted.unit[0]!;
      const pages = [];
      for (let page = 1; ; page++) {
        const p = await conn.readPage('unit', page, 50);
        pages.push(p);
        if (!p.hasMore) break;
      }
      const skipped = pages.flatMap((p) => p.skipped);
      expect(skipped).toEqual([{ x_id: x, reason: expect.stringMatching(/\S/) }]);
      expect(pages.flatMap((p) => p.records)).toHaveLength((await ctl.getCompany(c.id))!.counts.unit - 1);
      expect(await conn.readByIds('unit', [x])).toEqual({ records: [], skipped });
      await expect(conn.readOne('unit', x)).rejects.toMatchObject({ name: 'SourcePermanentError', code: MALFORMED_RECORD });
    });
  });

  describe('failures', () => {
    let c: Company;
    beforeAll(async () => {
      c = await company(dialect, 30);
    });

    it('honours Retry-After on 429 and retries a 5xx', async () => {
      const conn = connector(c);
      await ctl.setFault(c.id, { kind: 'rate_limited', count: 2 });
      const started = Date.now();
      expect((await conn.readPage('lease', 1, 100)).records).toHaveLength(30);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2000); // two 429s, one second each

      await ctl.setFault(c.id, { kind: 'unavailable', count: 3 });
      expect((await conn.readPage('resident', 1, 100)).records.length).toBeGreaterThan(0);
    });

    it('gives up with a transient error after its attempts, and leaves a long Retry-After to the caller', async () => {
      await ctl.setFault(c.id, { kind: 'unavailable', count: 3 });
      const err = await connector(c, { maxAttempts: 3 })
        .readPage('unit', 1, 10)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourceTransientError);
      expect(err).toMatchObject({ status: 503, maybeApplied: false });

      await ctl.setFault(c.id, { kind: 'rate_limited', count: 1 });
      const started = Date.now();
      const limited = await connector(c, { maxRetryAfterMs: 500 })
        .readPage('unit', 1, 10)
        .catch((e: unknown) => e);
      expect(limited).toBeInstanceOf(SourceTransientError);
      expect(limited).toMatchObject({ status: 429, retryAfterMs: 1000 });
      expect(Date.now() - started).toBeLessThan(900);
      expect((await connector(c).readPage('unit', 1, 10)).records).toHaveLength(10);
    });

    it('times out a slow source, and treats a refused connection as transient', async () => {
      await ctl.setFault(c.id, { kind: 'slow', count: 2, delay_ms: 1500 });
      const slow = await connector(c, { timeoutMs: 300, maxAttempts: 2 })
        .readPage('lease', 1, 10)
        .catch((e: unknown) => e);
      expect(slow).toBeInstanceOf(SourceTransientError);
      expect((slow as Error).message).toMatch(/no reply within 300 ms/);
      await ctl.clearFaults(c.id);

      const refused = await createConnector({ ...c.settings, base_url: `http://127.0.0.1:${await closedPort()}` }, { backoffMs: 5, maxAttempts: 2 })
        .readPage('lease', 1, 10)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SourceTransientError);
      expect((refused as Error).message).toMatch(/network error/);
    });

    it('fails permanently, at once, on bad credentials', async () => {
      const net = counting();
      const err = await createConnector(badSecret(c.settings), { fetch: net.fetch })
        .readPage('lease', 1, 10)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect(err).toMatchObject({ status: 401, code: 'AUTHENTICATION_FAILED' });
      expect(net.count()).toBe(1);
    });
  });

  describe('writes', () => {
    let c: Company;
    let conn: SourceConnector;
    let units: InputOf['unit'][];
    beforeAll(async () => {
      c = await company(dialect, 60, 23);
      conn = connector(c);
      units = (await readAll(conn, 'unit', 1000)).filter((u) => u.floorplan_id !== null);
    });

    it('creates and updates a unit, read back through the same mapping', async () => {
      const property = units[0]!.property_x_id!;
      const created = {
        property_x_id: property,
        unit_number: 'W-1',
        bedrooms: 2,
        bathrooms: 1,
        square_feet: 880,
        note: 'New build',
        market_rent: { amount: 155050, currency: 'USD' },
      };
      const u = await conn.create('unit', created);
      expect(u.related).toEqual([]);
      expect(await conn.readOne('unit', u.x_id)).toMatchObject({ x_id: u.x_id, ...created, status: 'vacant' });
      expect(await conn.update('unit', u.x_id, { note: null, max_occupants: 3, market_rent: { amount: 160099, currency: 'USD' } })).toEqual({
        x_id: u.x_id,
        related: [],
      });
      expect(await conn.readOne('unit', u.x_id)).toMatchObject({
        note: null,
        max_occupants: 3,
        unit_number: 'W-1',
        bedrooms: 2,
        market_rent: { amount: 160099, currency: 'USD' },
      });
    });

    it('creates and updates a resident', async () => {
      const r = await conn.create('resident', {
        property_x_id: units[0]!.property_x_id!,
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
        address: { line_1: '1 Main St', city: 'Austin', postal_code: '78701' },
      });
      await conn.update('resident', r.x_id, { email: 'ada@lovelace.example' });
      expect(await conn.readOne('resident', r.x_id)).toMatchObject({ email: 'ada@lovelace.example', first_name: 'Ada', date_of_birth: '1990-12-10' });
      expect(await conn.readOne('resident', '999999999')).toBeNull();
    });

    it('gives a unit moved to another floor plan that plan’s bedrooms, bathrooms and size, unless the patch sets them', async () => {
      const property = units[0]!.property_x_id!;
      const plans = (await conn.readWriteOptions(property)).floorplans.map((p) => p.value);
      expect(plans.length).toBeGreaterThan(1);
      const [from, to] = [plans[0]!, plans[plans.length - 1]!];
      // A unit created with a plan takes the plan's values: what a move to it must give too.
      const planned = await conn.readOne('unit', (await conn.create('unit', { property_x_id: property, unit_number: 'FP-1', floorplan_id: to })).x_id);
      const plan = { bedrooms: planned!.bedrooms, bathrooms: planned!.bathrooms, square_feet: planned!.square_feet };
      const u = await conn.create('unit', { property_x_id: property, unit_number: 'FP-2', floorplan_id: from });
      expect(await conn.readOne('unit', u.x_id)).not.toMatchObject(plan);

      await conn.update('unit', u.x_id, { floorplan_id: to });
      expect(await conn.readOne('unit', u.x_id)).toMatchObject({ floorplan_id: to, ...plan });
      await conn.update('unit', u.x_id, { floorplan_id: from });
      await conn.update('unit', u.x_id, { floorplan_id: to, bedrooms: 1 });
      expect(await conn.readOne('unit', u.x_id)).toMatchObject({ floorplan_id: to, ...plan, bedrooms: 1 });
    });

    it.runIf(dialect === 'buildium')('creates an at-will lease: one without an end, whatever end the caller gave', async () => {
      const input = await leaseInput(conn, units[2]!, { lease_term_id: 'AtWill' });
      const made = await conn.create('lease', input);
      expect(await conn.readOne('lease', made.x_id)).toMatchObject({ start_date: '2026-03-01', end_date: null, type: 'month_to_month' });
    });

    it.runIf(dialect === 'buildium')('refuses to update a record the source holds malformed, saying so, and sends nothing', async () => {
      const x = (await ctl.applyChanges(c.id, { corrupt: { unit: 1 } })).corrupted.unit[0]!;
      const net = counting();
      const err = await createConnector(c.settings, { fetch: net.fetch })
        .update('unit', x, { note: 'x' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect((err as Error).message).toMatch(new RegExp(`^unit ${x} is malformed at the source \\(.+\\): it cannot be updated until it is repaired there$`));
      expect(net.count()).toBe(1);
    });

    it('writes dates of every year the API takes, the first centuries included', async () => {
      const r = await conn.create('resident', { property_x_id: units[0]!.property_x_id!, first_name: 'Old', last_name: 'Timer', date_of_birth: '0001-01-01' });
      expect(await conn.readOne('resident', r.x_id)).toMatchObject({ date_of_birth: '0001-01-01' });
      for (const date of ['0099-06-15', '0100-02-28', '9999-12-31']) {
        await conn.update('resident', r.x_id, { date_of_birth: date });
        expect(await conn.readOne('resident', r.x_id)).toMatchObject({ date_of_birth: date });
      }
    });

    it('creates a lease with its applicant, and updates its rent and move-in date', async () => {
      const input = await leaseInput(conn, units[1]!);
      const made = await conn.create('lease', input);
      expect(made.related).toEqual([{ entity: 'resident', x_id: expect.any(String) }]);
      const lease = (await conn.readOne('lease', made.x_id))!;
      expect(lease).toMatchObject({ unit_x_id: input.unit_space_id, property_x_id: input.property_x_id, start_date: '2026-03-01', move_in_date: '2026-03-01' });
      expect(lease.residents.map((p) => p.x_id)).toContain(made.related[0]!.x_id);
      expect(await conn.readOne('resident', made.related[0]!.x_id)).toMatchObject({ first_name: 'Katherine', last_name: 'Johnson' });

      await conn.update('lease', made.x_id, { rent_amount: { amount: 123456, currency: 'USD' }, move_in_date: '2026-03-02' });
      expect(await conn.readOne('lease', made.x_id)).toMatchObject({
        rent_amount: { amount: 123456, currency: 'USD' },
        move_in_date: '2026-03-02',
        start_date: '2026-03-01',
      });
    });

    it('turns a refusal into a permanent error with the source’s words, in one request', async () => {
      const net = counting();
      const once = createConnector(c.settings, { fetch: net.fetch });
      const err = await once.create('unit', { property_x_id: units[0]!.property_x_id!, unit_number: 'R-1', floorplan_id: '999999' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourcePermanentError);
      expect((err as Error).message).toMatch(/rejected the request: .*\S/);
      expect(net.count()).toBe(1);

      await ctl.setFault(c.id, { kind: 'reject_writes', count: 1 });
      await expect(conn.create('resident', { property_x_id: units[0]!.property_x_id!, first_name: 'No', last_name: 'Body' })).rejects.toBeInstanceOf(
        SourcePermanentError,
      );
      await expect(conn.update('unit', '999999999', { note: 'x' })).rejects.toBeInstanceOf(SourcePermanentError);
    });

    it('refuses an amount in a currency the source does not keep, before writing anything; the record keeps its amount', async () => {
      // What is sent other than a REST read (a JSON-RPC read is a POST too, but the RPC flavour reads nothing first).
      const sent: string[] = [];
      const once = createConnector(c.settings, {
        fetch: (input, init) => {
          if ((init?.method ?? 'GET') !== 'GET') sent.push(`${init?.method} ${String(input)}`);
          return fetch(input, init);
        },
      });
      const unit = units[2]!;
      for (const write of [
        () => once.update('unit', unit.x_id, { market_rent: { amount: 5000, currency: 'JPY' } }),
        () => once.create('unit', { property_x_id: unit.property_x_id!, unit_number: 'C-1', market_rent: { amount: 100000, currency: 'EUR' } }),
      ]) {
        const err = await write().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(SourcePermanentError);
        expect((err as Error).message).toMatch(/keeps amounts in USD, not (JPY|EUR)/);
      }
      expect(sent).toEqual([]);
      expect((await conn.readOne('unit', unit.x_id))!.market_rent).toEqual(unit.market_rent);
    });

    it('sends a write once under 5xx and rate limiting: transient, maybe applied only for the 5xx', async () => {
      const net = counting();
      const once = createConnector(c.settings, { fetch: net.fetch, backoffMs: 1 });
      await ctl.setFault(c.id, { kind: 'unavailable', count: 1, methods: 'writes' });
      const down = await once.create('unit', { property_x_id: units[0]!.property_x_id!, unit_number: 'U-503' }).catch((e: unknown) => e);
      expect(down).toBeInstanceOf(SourceTransientError);
      expect(down).toMatchObject({ maybeApplied: true });
      await ctl.setFault(c.id, { kind: 'rate_limited', count: 1, methods: 'writes' });
      const limited = await once.create('unit', { property_x_id: units[0]!.property_x_id!, unit_number: 'U-429' }).catch((e: unknown) => e);
      expect(limited).toMatchObject({ name: 'SourceTransientError', status: 429, retryAfterMs: 1000, maybeApplied: false });
      expect(net.count()).toBe(2);

      const refused = await createConnector({ ...c.settings, base_url: `http://127.0.0.1:${await closedPort()}` }, { maxAttempts: 5, backoffMs: 1 })
        .create('unit', { property_x_id: '1', unit_number: 'X' })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ name: 'SourceTransientError', maybeApplied: false });
    });

    it('times out a slow write the source applied anyway: maybe applied, and findCreated finds it', async () => {
      const input = { property_x_id: units[2]!.property_x_id!, unit_number: 'Slow-7' };
      const key = `op_${randomUUID()}`;
      await ctl.setFault(c.id, { kind: 'slow', count: 1, delay_ms: 1500, methods: 'writes' });
      const err = await connector(c, { timeoutMs: 300 })
        .create('unit', input, { idempotencyKey: key })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourceTransientError);
      expect(err).toMatchObject({ maybeApplied: true });
      expect((err as Error).message).toMatch(/no reply within 300 ms; the write may have been applied$/);

      const found = await conn.findCreated('unit', { ...input, unit_number: ' slow-7 ' });
      expect(found).toEqual({ x_id: expect.stringMatching(/^\d+$/), related: [] });
      expect(await conn.readOne('unit', found!.x_id)).toMatchObject({ unit_number: 'Slow-7', property_x_id: input.property_x_id });

      if (conn.capabilities.idempotentCreates) {
        // The same create again under its key makes nothing new: the first answer, the same record.
        const units = (await ctl.getCompany(c.id))!.counts.unit;
        expect(await conn.create('unit', input, { idempotencyKey: key })).toEqual(found);
        expect((await ctl.getCompany(c.id))!.counts.unit).toBe(units);
      }
    });
  });

  describe('findCreated', () => {
    let conn: SourceConnector;
    let units: InputOf['unit'][];
    beforeAll(async () => {
      conn = connector(await company(dialect, 200, 29));
      units = (await readAll(conn, 'unit', 1000)).filter((u) => u.floorplan_id !== null);
    });

    it('finds a unit by property and unit number, and nothing for another number or property', async () => {
      const [here, there] = [units[0]!, units.find((u) => u.property_x_id !== units[0]!.property_x_id)];
      const made = await conn.create('unit', { property_x_id: here.property_x_id!, unit_number: 'FC-101', bedrooms: 1 });
      expect(await conn.findCreated('unit', { property_x_id: here.property_x_id!, unit_number: 'fc-101 ' })).toEqual(made);
      expect(await conn.findCreated('unit', { property_x_id: here.property_x_id!, unit_number: 'FC-102' })).toBeNull();
      if (there) expect(await conn.findCreated('unit', { property_x_id: there.property_x_id!, unit_number: 'FC-101' })).toBeNull();
      expect(await conn.findCreated('unit', { property_x_id: 'not-native', unit_number: 'FC-101' })).toBeNull();
    });

    it('finds a resident by name and email, else phone, else name alone; the newest of several', async () => {
      const property = units[0]!.property_x_id!;
      const withEmail = await conn.create('resident', { property_x_id: property, first_name: 'Mary', last_name: 'Jackson', email: 'Mary.Jackson@example.com' });
      expect(
        await conn.findCreated('resident', { property_x_id: property, first_name: ' mary', last_name: 'JACKSON', email: 'mary.jackson@EXAMPLE.com' }),
      ).toEqual(withEmail);
      expect(
        await conn.findCreated('resident', { property_x_id: property, first_name: 'Mary', last_name: 'Jackson', email: 'someone.else@example.com' }),
      ).toBeNull();

      const withPhone = await conn.create('resident', {
        property_x_id: property,
        first_name: 'Dorothy',
        last_name: 'Vaughan',
        phones: [{ type: 'mobile', number: '512-555-0177', primary: true }],
      });
      const byPhone = {
        property_x_id: property,
        first_name: 'Dorothy',
        last_name: 'Vaughan',
        phones: [{ type: 'home', number: '(512) 555 0177', primary: true }],
      };
      expect(await conn.findCreated('resident', byPhone)).toEqual(withPhone);
      expect(await conn.findCreated('resident', { ...byPhone, phones: [{ type: 'home', number: '512-555-0178', primary: true }] })).toBeNull();

      const nameOnly = { property_x_id: property, first_name: 'Christine', last_name: 'Darden' };
      expect(await conn.findCreated('resident', nameOnly)).toBeNull();
      const first = await conn.create('resident', nameOnly);
      const second = await conn.create('resident', nameOnly);
      expect(Number(second.x_id)).toBeGreaterThan(Number(first.x_id));
      expect(await conn.findCreated('resident', nameOnly)).toEqual(second);
    });

    it('finds a lease by unit, dates and applicant, with the applicant as related; nothing for other dates, unit or name', async () => {
      const [unit, neighbour] = units.filter((u) => u.property_x_id === units[0]!.property_x_id);
      const input = await leaseInput(conn, unit!);
      expect(await conn.findCreated('lease', input)).toBeNull();
      const made = await conn.create('lease', input);
      expect(await conn.findCreated('lease', { ...input, first_name: 'KATHERINE ', last_name: ' johnson' })).toEqual(made);
      expect(await conn.findCreated('lease', { ...input, lease_start_date: '2026-03-02' })).toBeNull();
      expect(await conn.findCreated('lease', { ...input, lease_end_date: '2027-03-31' })).toBeNull();
      expect(await conn.findCreated('lease', { ...input, first_name: 'Annie', last_name: 'Easley' })).toBeNull();
      if (neighbour) expect(await conn.findCreated('lease', await leaseInput(conn, neighbour))).toBeNull();
      // Another applicant's lease of the same unit and term is not ours; a second of ours is the newest.
      await conn.create('lease', { ...input, first_name: 'Annie', last_name: 'Easley' });
      expect(await conn.findCreated('lease', input)).toEqual(made);
      const again = await conn.create('lease', input);
      expect(await conn.findCreated('lease', input)).toEqual(again);
    });
  });

  describe('write options', () => {
    it('lists the floor plans, unit spaces (with their floor plans) and code lists a property accepts; none for a property the source lacks', async () => {
      const c = await company(dialect, 40, 17);
      const conn = connector(c);
      const units = await readAll(conn, 'unit', 1000);
      const property = units[0]!.property_x_id!;
      const options = await conn.readWriteOptions(property);
      expect(options.floorplans.length).toBeGreaterThan(0);
      const plans = new Set(options.floorplans.map((p) => p.value));
      const here = units.filter((u) => u.property_x_id === property);
      expect(options.unit_spaces).toEqual(here.map((u) => ({ value: u.x_id, label: u.unit_number, floorplan_id: u.floorplan_id })));
      for (const u of here) if (u.floorplan_id) expect(plans.has(u.floorplan_id)).toBe(true);
      for (const list of [options.lease_terms, options.customer_relationship_types, options.phone_number_types, options.address_types])
        expect(list.length).toBeGreaterThan(0);
      expect(options.phone_number_types.map((o) => o.label.toLowerCase())).toEqual(expect.arrayContaining(['home', 'mobile', 'fax']));

      await expect(conn.readWriteOptions('999999')).rejects.toMatchObject({ name: 'SourcePermanentError', code: 'NOT_FOUND' });
      await expect(conn.readWriteOptions('not-a-number')).rejects.toBeInstanceOf(SourcePermanentError);
      await ctl.setFault(c.id, { kind: 'unavailable', methods: 'reads' });
      try {
        await expect(connector(c, { maxAttempts: 1 }).readWriteOptions(property)).rejects.toBeInstanceOf(SourceTransientError);
      } finally {
        await ctl.clearFaults(c.id);
      }
    });
  });
});

/**
 * Fields both wires carry, per entity, with the same vocabulary. Left out: what one wire lacks (the Entrata-style
 * renewal offer status and concessions; a phone's primary flag), and vocabularies one wire folds (lease and resident
 * statuses, lease types, property types), compared below through their folds.
 */
const SHARED: { [E in Entity]: (keyof InputOf[E])[] } = {
  property: [
    'x_id',
    'name',
    'status',
    'address',
    'description',
    'year_built',
    'total_units',
    'total_buildings',
    'total_floors',
    'website_url',
    'email',
    'latitude',
    'longitude',
    'timezone_id',
    'management_company_name',
    'tax_id',
    'pet_policy',
    'smoking_policy',
    'media',
  ],
  unit: [
    'x_id',
    'property_x_id',
    'unit_number',
    'floorplan_id',
    'floorplan_name',
    'bedrooms',
    'bathrooms',
    'square_feet',
    'max_occupants',
    'market_rent',
    'status',
    'note',
    'address',
  ],
  resident: ['x_id', 'property_x_id', 'first_name', 'middle_name', 'last_name', 'email', 'date_of_birth', 'address'],
  lease: [
    'x_id',
    'property_x_id',
    'unit_x_id',
    'previous_lease_x_id',
    'residents',
    'start_date',
    'move_in_date',
    'move_out_date',
    'notice_date',
    'signed_date',
    'rent_amount',
    'security_deposit',
    'balance',
    'term_months',
    'is_renewal',
    'notes',
  ],
};
/**
 * The Buildium-style wire's three lease statuses (a running lease with a notice date read as on notice) and three tenant
 * statuses, as the Entrata-style ones fold into them.
 */
const LEASE_STATUS_FOLD: Record<string, string> = {
  pending: 'pending',
  active: 'active',
  notice: 'notice',
  ended: 'ended',
  cancelled: 'ended',
  terminated: 'ended',
  evicted: 'ended',
};
const RESIDENT_STATUS_FOLD: Record<string, string> = { applicant: 'applicant', current: 'current', notice: 'current', past: 'past' };

describe('both flavours of one seed', () => {
  it('read as the same CDM records on every field both wires carry', async () => {
    const [entrata, buildium] = await Promise.all([company('entrata', 120, 44), company('buildium', 120, 44)]);
    for (const e of ENTITIES) {
      const [a, b] = await Promise.all([readAll(connector(entrata), e, 1000), readAll(connector(buildium), e, 1000)]);
      expect(
        b.map((r) => r.x_id),
        e,
      ).toEqual(a.map((r) => r.x_id));
      const pick = (r: InputOf[typeof e]) => Object.fromEntries((SHARED[e] as string[]).map((k) => [k, (r as unknown as Record<string, unknown>)[k]]));
      const phones = (r: { phones?: { type: string; number: string }[] | null }) => (r.phones ?? []).map((p) => `${p.type} ${p.number}`).sort();
      for (let i = 0; i < a.length; i++) {
        const [x, y] = [a[i]!, b[i]!];
        expect(pick(y), `${e} ${x.x_id}`).toEqual(pick(x));
        if (e === 'resident' || e === 'property') expect(phones(y as InputOf['resident']), `${e} ${x.x_id} phones`).toEqual(phones(x as InputOf['resident']));
        if (e === 'lease') {
          const [l, m] = [x as InputOf['lease'], y as InputOf['lease']];
          expect(m.status, `lease ${l.x_id} status ${l.status}`).toBe(LEASE_STATUS_FOLD[l.status!]);
          if (l.type === 'month_to_month') expect(m.type).toBe('month_to_month');
          else expect(['fixed', 'fixed_with_rollover']).toContain(m.type);
          if (m.type !== 'month_to_month') expect(m.end_date).toBe(l.end_date);
        }
        if (e === 'resident') expect((y as InputOf['resident']).status).toBe(RESIDENT_STATUS_FOLD[(x as InputOf['resident']).status!]);
      }
    }
  });
});
