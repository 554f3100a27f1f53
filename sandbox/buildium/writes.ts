/**
 * The writes of the buildium flavour (docs/sources/buildium.md): `POST` creates (201 with the record), `PUT`
 * replaces a record's writable fields (200 with the record; every writable field must be given). A body that does
 * not validate is `400 {UserMessage, Errors: [{Key, Value}]}` with every field error found; fields it does not know
 * (the read-only ones of a record read back, say) are ignored. A lease whose status is `Past` takes no writes.
 *
 * A `POST` may carry `Idempotency-Key`: the created record's answer is kept with the key in Postgres for 24 hours;
 * the same key with the same request answers it again and creates nothing, with another request `409`. The key is
 * looked up and kept inside the write's transaction, under the company's lock, so two concurrent sends of one key
 * create one record.
 */
import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { rejectsWrite, sleep } from '../faults';
import type { Address, Entity, LeaseKind, LeaseModel, ModelOf, Phone, PhoneKind, PropertyContext, ResidentModel, TenantRole, UnitModel } from '../model';
import { idempotentAnswer, saveIdempotentAnswer, type RecordRow } from '../store';
import { addMonths, dayOfIso, isoDate } from '../time';
import { CLOSED_LEASE, inWrite, newLease, newResident, newUnit, type WriteTx } from '../writes';
import { answer, WireError, type BuildiumOptions, type Env } from './http';
import { ADDRESS_TYPES, BATHROOMS, BEDROOMS, encode, LEASE_TYPES, PHONE_TYPES, ROLES, toJson } from './wire';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const inverse = <K extends string, V extends string>(m: Record<K, V>) => new Map(Object.entries(m).map(([k, v]) => [v as V, k as K]));
const LEASE_KIND_OF = inverse<LeaseKind, string>(LEASE_TYPES);
const ROLE_OF = inverse<TenantRole, string>(ROLES);
const PHONE_KIND_OF = inverse<PhoneKind, string>(PHONE_TYPES);

/**
 * Reads a write's body field by field, collecting every error. `complete`: a PUT, where every writable field must be
 * present (null where the field may be null).
 */
class Fields {
  readonly errors: { Key: string; Value: string }[] = [];
  constructor(
    private readonly body: Obj,
    private readonly complete: boolean,
    private readonly prefix = '',
  ) {}

  fail(key: string, what: string): undefined {
    this.errors.push({ Key: this.prefix + key, Value: what });
    return undefined;
  }
  /** The raw value; undefined (with an error when `required`, or on a PUT) when absent. */
  raw(key: string, required: boolean): unknown {
    const v = this.body[key];
    if (v === undefined) return required || this.complete ? this.fail(key, 'is required') : undefined;
    return v;
  }
  string(key: string, o: { required?: boolean; max?: number } = {}): string | null | undefined {
    const v = this.raw(key, o.required ?? false);
    if (v === undefined) return undefined;
    if (v === null || (typeof v === 'string' && v.trim() === '')) return o.required ? this.fail(key, 'is required') : null;
    if (typeof v !== 'string') return this.fail(key, 'must be a string');
    if (v.length > (o.max ?? 200)) return this.fail(key, `must be at most ${o.max ?? 200} characters`);
    return v.trim();
  }
  int(key: string, o: { required?: boolean; nullable?: boolean; min?: number; max?: number } = {}): number | null | undefined {
    const v = this.raw(key, o.required ?? false);
    if (v === undefined) return undefined;
    if (v === null) return o.nullable ? null : this.fail(key, 'is required');
    const [min, max] = [o.min ?? 0, o.max ?? 2_147_483_647];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) return this.fail(key, `must be an integer from ${min} to ${max}`);
    return v;
  }
  /** Money: a JSON number, at most two decimals, not negative; in cents. */
  money(key: string, o: { required?: boolean; nullable?: boolean } = {}): number | null | undefined {
    const v = this.raw(key, o.required ?? false);
    if (v === undefined) return undefined;
    if (v === null) return o.nullable ? null : this.fail(key, 'is required');
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.fail(key, 'must be a number');
    const cents = Math.round(v * 100);
    if (Math.abs(cents - v * 100) > 1e-6) return this.fail(key, 'must have at most two decimals');
    if (cents < 0 || cents > 100_000_000_00) return this.fail(key, 'must be from 0 to 100000000.00');
    return cents;
  }
  date(key: string, o: { required?: boolean; nullable?: boolean } = {}): string | null | undefined {
    const v = this.raw(key, o.required ?? false);
    if (v === undefined) return undefined;
    if (v === null) return o.nullable ? null : this.fail(key, 'is required');
    if (typeof v !== 'string' || dayOfIso(v) === undefined) return this.fail(key, 'must be a date YYYY-MM-DD');
    return v;
  }
  oneOf<T>(key: string, values: ReadonlyMap<string, T>, o: { required?: boolean } = {}): T | undefined {
    const v = this.raw(key, o.required ?? false);
    if (v === undefined) return undefined;
    const found = typeof v === 'string' ? values.get(v) : undefined;
    return found === undefined ? this.fail(key, `must be one of ${[...values.keys()].join(', ')}`) : found;
  }
  object(key: string, o: { required?: boolean; nullable?: boolean } = {}): Fields | null | undefined {
    const v = this.raw(key, o.required ?? false);
    if (v === undefined) return undefined;
    if (v === null) return o.nullable ? null : this.fail(key, 'is required');
    if (!isObj(v)) return this.fail(key, 'must be an object');
    return new Fields(v, false, `${this.prefix}${key}.`);
  }
  phones(key: string): Phone[] | undefined {
    const v = this.raw(key, false);
    if (v === undefined) return undefined;
    if (v === null) return [];
    if (!Array.isArray(v)) return this.fail(key, 'must be an array');
    const out: Phone[] = [];
    v.forEach((p, i) => {
      if (!isObj(p)) return this.fail(`${key}[${i}]`, 'must be an object');
      const f = new Fields(p, false, `${this.prefix}${key}[${i}].`);
      const number = f.string('Number', { required: true, max: 40 });
      if (number && !/^[+\d][\d\s().-]{5,}$/.test(number)) f.fail('Number', 'is not a phone number');
      const kind = f.oneOf('Type', PHONE_KIND_OF, { required: true });
      this.errors.push(...f.errors);
      if (number && kind) out.push({ number, kind, primary: out.length === 0 });
    });
    return out;
  }
  address(key: string, o: { required?: boolean; nullable?: boolean } = {}): Address | null | undefined {
    const f = this.object(key, o);
    if (!f) return f;
    const a = {
      line1: f.string('AddressLine1', { required: true }),
      line2: [f.string('AddressLine2'), f.string('AddressLine3')].filter(Boolean).join(', '),
      city: f.string('City', { required: true, max: 100 }),
      state: f.string('State', { required: true, max: 50 }),
      postalCode: f.string('PostalCode', { required: true, max: 20 }),
      country: f.string('Country', { max: 50 }) ?? 'US',
    };
    if (a.postalCode && a.country === 'US' && !/^\d{5}(-\d{4})?$/.test(a.postalCode)) f.fail('PostalCode', 'must be a US ZIP code');
    this.errors.push(...f.errors);
    return a.line1 && a.city && a.state && a.postalCode ? (a as Address) : undefined;
  }
  /** Throw the 400 of every error found so far. */
  check(): void {
    if (this.errors.length > 0) throw new WireError(400, 'The request is invalid.', this.errors);
  }
}

const BEDROOMS_OF = new Map<string, number | null>([['NotSet', null], ...BEDROOMS.map((b, i) => [b, i] as [string, number])]);
const BATHROOMS_OF = new Map<string, number | null>([['NotSet', null], ...BATHROOMS.map(([n, b]) => [b, n] as [string, number])]);

async function property(w: WriteTx, f: Fields, key: string, id: number | null | undefined): Promise<PropertyContext | undefined> {
  if (typeof id !== 'number') return undefined;
  const ctx = await w.property(id);
  if (!ctx) f.fail(key, `no rental property with Id ${id}`);
  return ctx;
}

/** The unit fields of a POST or PUT (PropertyId aside), applied over `base`. */
async function unitFields(w: WriteTx, f: Fields, ctx: PropertyContext | undefined, base: Partial<UnitModel>): Promise<Partial<UnitModel>> {
  const out: Partial<UnitModel> = { ...base };
  const unitNumber = f.string('UnitNumber', { required: true, max: 20 });
  if (unitNumber) out.unitNumber = unitNumber;
  const floorplanId = f.int('FloorPlanId', { nullable: true, min: 1 });
  if (floorplanId === null) Object.assign(out, { floorplanId: null, floorplanName: '' });
  else if (floorplanId !== undefined && ctx) {
    const fp = ctx.floorplans.find((p) => p.id === floorplanId);
    if (!fp) f.fail('FloorPlanId', `not a floor plan of rental property ${ctx.id}`);
    else Object.assign(out, { floorplanId, floorplanName: fp.name, bedrooms: fp.bedrooms, bathrooms: fp.bathrooms, squareFeet: fp.squareFeet });
  }
  const bedrooms = f.oneOf('UnitBedrooms', BEDROOMS_OF);
  if (bedrooms !== undefined) out.bedrooms = bedrooms;
  const bathrooms = f.oneOf('UnitBathrooms', BATHROOMS_OF);
  if (bathrooms !== undefined) out.bathrooms = bathrooms;
  const size = f.int('UnitSize', { nullable: true, min: 1, max: 100_000 });
  if (size !== undefined) out.squareFeet = size;
  const occupants = f.int('MaxOccupants', { min: 1, max: 50 });
  if (typeof occupants === 'number') out.maxOccupants = occupants;
  const rent = f.money('MarketRent', { nullable: true });
  if (rent !== undefined) out.marketRentCents = rent;
  const description = f.string('Description', { max: 2000 });
  if (description !== undefined) out.remarks = description ?? '';
  if (ctx && out.unitNumber && (await w.unitNumberTaken(ctx.id, out.unitNumber, base.id)))
    f.fail('UnitNumber', `${out.unitNumber} already exists at rental property ${ctx.id}`);
  return out;
}

function tenantFields(f: Fields): Partial<ResidentModel> {
  const out: Partial<ResidentModel> = {};
  const first = f.string('FirstName', { required: true, max: 100 });
  if (first) out.firstName = first;
  const last = f.string('LastName', { required: true, max: 100 });
  if (last) out.lastName = last;
  const middle = f.string('MiddleName', { max: 100 });
  if (middle !== undefined) out.middleName = middle ?? '';
  const email = f.string('Email', { max: 254 });
  if (email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) f.fail('Email', 'is not an email address');
  else if (email !== undefined) out.email = email ?? '';
  const phones = f.phones('PhoneNumbers');
  if (phones !== undefined) out.phones = phones;
  const dob = f.date('DateOfBirth', { nullable: true });
  if (dob !== undefined) out.dateOfBirth = dob;
  const address = f.address('PrimaryAddress', { nullable: true });
  if (address !== undefined) out.address = address;
  return out;
}

/** A lease's type and dates, checked together: a fixed lease has an end after its start; an at-will one none. */
function leaseTerms(f: Fields): Pick<LeaseModel, 'kind' | 'start' | 'end' | 'termMonths'> | undefined {
  const kind = f.oneOf('LeaseType', LEASE_KIND_OF, { required: true });
  const start = f.date('LeaseFromDate', { required: true });
  const to = f.date('LeaseToDate', { nullable: true });
  if (!kind || !start || to === undefined) return undefined;
  const from = dayOfIso(start)!;
  if (kind === 'month_to_month') {
    if (to !== null) return f.fail('LeaseToDate', 'must be null for an AtWill lease');
    return { kind, start, end: isoDate(addMonths(from, 1) - 1), termMonths: 1 };
  }
  if (to === null) return f.fail('LeaseToDate', `is required for a ${LEASE_TYPES[kind]} lease`);
  const end = dayOfIso(to)!;
  if (end <= from) return f.fail('LeaseToDate', 'must be after LeaseFromDate');
  return { kind, start, end: to, termMonths: Math.max(1, Math.round((end + 1 - from) / 30.44)) };
}

/** Whether a lease's type, LeaseFromDate or LeaseToDate (as the wire shows it: null for AtWill) differ from its stored ones. */
function termsChanged(stored: LeaseModel, terms: Pick<LeaseModel, 'kind' | 'start' | 'end'>): boolean {
  const shownEnd = (m: Pick<LeaseModel, 'kind' | 'end'>) => (m.kind === 'month_to_month' ? null : m.end);
  return terms.kind !== stored.kind || terms.start !== stored.start || shownEnd(terms) !== shownEnd(stored);
}

async function createUnit(w: WriteTx, body: Obj) {
  const f = new Fields(body, false);
  const ctx = await property(w, f, 'PropertyId', f.int('PropertyId', { required: true, min: 1 }));
  const fields = await unitFields(w, f, ctx, {});
  f.check();
  const unit = newUnit(w, ctx!, { ...fields, unitNumber: fields.unitNumber! });
  await w.put([{ entity: 'unit', id: unit.id, model: unit }]);
  return { entity: 'unit' as const, id: unit.id };
}

/**
 * A PUT of a unit or a tenant: its row (404 when there is none), the body's fields read over it (its PropertyId
 * cannot change), written once every field is valid.
 */
async function updateAtProperty<E extends 'unit' | 'resident'>(
  w: WriteTx,
  entity: E,
  id: number,
  body: Obj,
  what: string,
  fieldsOf: (f: Fields, row: RecordRow<E>) => Partial<ModelOf[E]> | Promise<Partial<ModelOf[E]>>,
) {
  const row = await w.one(entity, id);
  if (!row) throw new WireError(404, `no ${what} with Id ${id}`);
  const f = new Fields(body, true);
  if (body.PropertyId !== undefined && body.PropertyId !== row.model.propertyId) f.fail('PropertyId', 'cannot be changed');
  const fields = await fieldsOf(f, row);
  f.check();
  await w.put([{ entity, id, model: { ...row.model, ...fields } }]);
  return { entity, id };
}

const updateUnit = (w: WriteTx, id: number, body: Obj) =>
  updateAtProperty(w, 'unit', id, body, 'rental unit', async (f, row) => unitFields(w, f, await w.property(row.model.propertyId), row.model));

async function createTenant(w: WriteTx, body: Obj) {
  const f = new Fields(body, false);
  const ctx = await property(w, f, 'PropertyId', f.int('PropertyId', { required: true, min: 1 }));
  const fields = tenantFields(f);
  f.check();
  const tenant = newResident(w, ctx!, fields);
  await w.put([{ entity: 'resident', id: tenant.id, model: tenant }]);
  return { entity: 'resident' as const, id: tenant.id };
}

const updateTenant = (w: WriteTx, id: number, body: Obj) => updateAtProperty(w, 'resident', id, body, 'tenant', (f) => tenantFields(f));

async function createLease(w: WriteTx, body: Obj) {
  const f = new Fields(body, false);
  const ctx = await property(w, f, 'PropertyId', f.int('PropertyId', { required: true, min: 1 }));
  const unitId = f.int('UnitId', { required: true, min: 1 });
  const floorplanId = f.int('FloorPlanId', { nullable: true, min: 1 });
  const terms = leaseTerms(f);
  const moveIn = f.date('MoveInDate', { nullable: true });
  const a = f.object('Applicant', { required: true });
  let tenant: Partial<ResidentModel> | undefined;
  let role: TenantRole | undefined;
  if (a) {
    const first = a.string('FirstName', { required: true, max: 100 });
    const last = a.string('LastName', { required: true, max: 100 });
    role = a.oneOf('Role', ROLE_OF, { required: true });
    const phones = a.phones('PhoneNumbers');
    const address = a.address('Address', { required: true });
    a.oneOf('AddressType', new Map(ADDRESS_TYPES.map((t) => [t, t])), { required: true });
    f.errors.push(...a.errors);
    tenant = { firstName: first ?? '', lastName: last ?? '', phones: phones ?? [], address: address ?? null };
  }
  let unit: UnitModel | undefined;
  if (typeof unitId === 'number' && ctx) {
    unit = (await w.one('unit', unitId))?.model;
    if (!unit || unit.propertyId !== ctx.id) f.fail('UnitId', `no rental unit with Id ${unitId} at rental property ${ctx.id}`);
    else if (floorplanId !== undefined && floorplanId !== unit.floorplanId)
      f.fail('FloorPlanId', `must be the unit's floor plan (${unit.floorplanId ?? 'null'})`);
  }
  f.check();
  const person = newResident(w, ctx!, tenant!);
  const lease = newLease(w, ctx!, unit!, { ...terms!, moveIn: moveIn ?? null, tenants: [{ id: person.id, role: role! }] });
  await w.put([
    { entity: 'resident', id: person.id, model: person },
    { entity: 'lease', id: lease.id, model: lease },
  ]);
  return { entity: 'lease' as const, id: lease.id };
}

async function updateLease(w: WriteTx, id: number, body: Obj) {
  const row = await w.one('lease', id);
  if (!row) throw new WireError(404, `no lease with Id ${id}`);
  if (CLOSED_LEASE.has(row.model.state)) throw new WireError(400, `lease ${id} is Past and takes no changes`, [{ Key: 'LeaseStatus', Value: 'is Past' }]);
  const f = new Fields(body, true);
  const terms = leaseTerms(f);
  const moveIn = f.date('MoveInDate', { nullable: true });
  const occupants = f.int('Occupants', { min: 1, max: 20 });
  const rent = f.money('Rent');
  f.check();
  // TermMonths is not writable, and an AtWill lease's end is not on the wire: both stand unless what they derive from
  // changes, so a PUT that sends back the record as read (as every update must) leaves them as they were.
  const changed = termsChanged(row.model, terms!);
  const model: LeaseModel = { ...row.model, ...(changed ? terms : {}), moveIn: moveIn ?? null, occupants: occupants!, rentCents: rent! };
  await w.put([{ entity: 'lease', id, model }]);
  return { entity: 'lease' as const, id };
}

/** The routes of the writes (mounted under /v1, after the flavour's authentication, limit and faults). */
export function writeRoutes(opts: BuildiumOptions): Hono<Env> {
  const app = new Hono<Env>();

  async function body(c: Context): Promise<Obj> {
    let raw: unknown;
    try {
      raw = await c.req.json();
    } catch {
      throw new WireError(400, 'The request body is not JSON.');
    }
    if (!isObj(raw)) throw new WireError(400, 'The request body must be a JSON object.');
    return raw;
  }

  /**
   * One write: the reject_writes fault, then the write in its transaction (with its idempotency key, for a POST),
   * answered with the record as it now reads; a slow fault's delay after it is made.
   */
  async function write(c: Context<Env>, status: 200 | 201, run: (w: WriteTx, body: Obj) => Promise<{ entity: Entity; id: number }>): Promise<Response> {
    const company = c.get('company');
    const key = status === 201 ? c.req.header('idempotency-key') : undefined;
    if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw new WireError(400, 'Idempotency-Key must be 1 to 255 visible characters.', [
        { Key: 'Idempotency-Key', Value: 'must be 1 to 255 visible characters' },
      ]);
    }
    const input = await body(c);
    if (await rejectsWrite(opts.sql, company)) throw new WireError(400, 'The property management system is not accepting changes at this time.');
    const hash = createHash('sha256')
      .update(`${c.req.method} ${c.req.path}\n${JSON.stringify(input)}`)
      .digest('hex');
    const done = await inWrite(opts.sql, company.id, async (w) => {
      if (key !== undefined) {
        const before = await idempotentAnswer(w.sql, company.id, key);
        if (before && before.request_hash !== hash)
          throw new WireError(409, 'This Idempotency-Key was used with another request.', [{ Key: 'Idempotency-Key', Value: 'was used with another request' }]);
        if (before) return { status: before.status, text: before.body };
      }
      const made = await run(w, input);
      const row = await w.one(made.entity, made.id);
      const unitNumber = made.entity === 'lease' ? (await w.one('unit', (row!.model as LeaseModel).unitId))?.model.unitNumber : undefined;
      const text = toJson(encode(made.entity, row!.model, row!.updated, unitNumber));
      if (key !== undefined) await saveIdempotentAnswer(w.sql, company.id, key, hash, status, text);
      return { status, text };
    });
    if (!done) throw new WireError(401, 'the company no longer exists');
    const delay = c.get('delayAfterMs');
    if (delay !== undefined) await sleep(delay);
    return answer(c, done.value.status, done.value.text);
  }

  const idOf = (c: Context) => Number(c.req.param('id'));
  app.post('/rentals/units', (c) => write(c, 201, (w, b) => createUnit(w, b)));
  app.put('/rentals/units/:id{[0-9]+}', (c) => write(c, 200, (w, b) => updateUnit(w, idOf(c), b)));
  app.post('/leases/tenants', (c) => write(c, 201, (w, b) => createTenant(w, b)));
  app.put('/leases/tenants/:id{[0-9]+}', (c) => write(c, 200, (w, b) => updateTenant(w, idOf(c), b)));
  app.post('/leases', (c) => write(c, 201, (w, b) => createLease(w, b)));
  app.put('/leases/:id{[0-9]+}', (c) => write(c, 200, (w, b) => updateLease(w, idOf(c), b)));
  return app;
}
