/**
 * The write methods of the entrata flavour (sendPropertyUnits, updatePropertyUnits, sendCustomers, updateCustomers,
 * sendLeases, updateLease), decoded from its wire into the record model. They validate like a real PMS: a bad
 * reference, a missing or malformed field, an unknown field or a change to a closed lease is a business error in the
 * reply; a success returns the native id. Every write moves the record's last-update time (`updatedOn`), so a sync
 * sees it.
 */
import type { Address, Entity, Floorplan, LeaseModel, Phone, ResidentModel, UnitModel } from '../model';
import { dayOfIso, isoDate } from '../time';
import { CLOSED_LEASE, inWrite, newLease, newResident, newUnit, type WriteTx } from '../writes';
import {
  ADDRESS_TYPES,
  codeIn,
  CUSTOMER_RELATIONSHIP_TYPES,
  LEASE_TERMS,
  leaseTermsAt,
  PHONE_KIND_OF_ID,
  PHONE_NUMBER_TYPES,
  ROLE_OF_ID,
  type Code,
} from './codes';

export class BusinessError extends Error {
  constructor(
    readonly code: 'VALIDATION_FAILED' | 'NOT_FOUND' | 'DUPLICATE' | 'LEASE_CLOSED' | 'WRITES_REJECTED',
    message: string,
  ) {
    super(message);
  }
}

type Obj = Record<string, unknown>;
const invalid = (message: string) => new BusinessError('VALIDATION_FAILED', message);

function object(value: unknown, name: string, required = true): Obj | undefined {
  if (value === undefined || value === null) {
    if (required) throw invalid(`${name} is required`);
    return undefined;
  }
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(`${name} must be an object`);
  return value as Obj;
}

function onlyKnown(obj: Obj, allowed: readonly string[], name: string): void {
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw invalid(`${name}: unknown field(s) ${unknown.join(', ')}`);
}

function str(obj: Obj, key: string, required: boolean, max = 200): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null || v === '') {
    if (required) throw invalid(`${key} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw invalid(`${key} must be a string`);
  if (v.trim() === '' && required) throw invalid(`${key} is required`);
  if (v.length > max) throw invalid(`${key} is longer than ${max} characters`);
  return v.trim();
}

function int(obj: Obj, key: string, required: boolean, min = 0, max = 2_147_483_647): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null || v === '') {
    if (required) throw invalid(`${key} is required`);
    return undefined;
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw invalid(`${key} must be an integer from ${min} to ${max}`);
  return n;
}

/** A date as MM/DD/YYYY (the API's own) or YYYY-MM-DD, as days since the epoch. */
function date(obj: Obj, key: string, required: boolean): number | undefined {
  const v = str(obj, key, required);
  if (v === undefined) return undefined;
  const us = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(v);
  const day = dayOfIso(us ? `${us[3]}-${us[1]!.padStart(2, '0')}-${us[2]!.padStart(2, '0')}` : v);
  if (day === undefined) throw invalid(`${key} must be a date (MM/DD/YYYY)`);
  return day;
}

/** A decimal amount (a string or a number, at most two decimals) in cents. */
function amount(obj: Obj, key: string): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' && typeof v !== 'number') throw invalid(`${key} must be a decimal amount`);
  const m = /^(-)?(\d{1,13})(?:\.(\d{1,2}))?$/.exec(typeof v === 'number' ? String(v) : v.trim());
  if (!m) throw invalid(`${key} must be a decimal amount`);
  if (m[1]) throw invalid(`${key} must not be negative`);
  return Number(m[2]) * 100 + Number((m[3] ?? '').padEnd(2, '0'));
}

function code<T extends Code>(list: readonly T[], obj: Obj, key: string): T {
  const id = int(obj, key, true, 1)!;
  const entry = codeIn(list, id);
  if (!entry) throw invalid(`${key} ${id} is not a valid code`);
  return entry;
}

function phones(value: unknown): Phone[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  return list.map((p, i) => {
    const o = object(p, `phones[${i}]`)!;
    onlyKnown(o, ['phoneNumber', 'phoneNumberTypeId', 'isPrimary'], `phones[${i}]`);
    const number = str(o, 'phoneNumber', true, 40)!;
    if (!/^[+\d][\d\s().-]{5,}$/.test(number)) throw invalid(`phones[${i}].phoneNumber is not a phone number`);
    return {
      number,
      kind: PHONE_KIND_OF_ID[code(PHONE_NUMBER_TYPES, o, 'phoneNumberTypeId').id]!,
      primary: o.isPrimary === true || o.isPrimary === '1' || (o.isPrimary === undefined && i === 0),
    };
  });
}

function address(value: unknown, name: string): Address | null | undefined {
  if (value === null) return null;
  const o = object(value, name, false);
  if (!o) return undefined;
  onlyKnown(o, ['streetLine1', 'streetLine2', 'city', 'state', 'postalCode', 'country'], name);
  return {
    line1: str(o, 'streetLine1', true)!,
    line2: str(o, 'streetLine2', false) ?? '',
    city: str(o, 'city', true)!,
    state: str(o, 'state', true)!,
    postalCode: str(o, 'postalCode', true, 20)!,
    country: str(o, 'country', false) ?? 'US',
  };
}

const emailOk = (e: string) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e);

async function one<E extends Entity>(w: WriteTx, entity: E, id: number | undefined, what: string) {
  if (id === undefined) throw invalid(`${what} is required`);
  const row = await w.one(entity, id);
  if (!row) throw new BusinessError('NOT_FOUND', `${what} ${id} does not exist`);
  return row;
}

async function propertyOf(w: WriteTx, params: Obj) {
  const id = int(params, 'propertyId', true, 1)!;
  const ctx = await w.property(id);
  if (!ctx) throw new BusinessError('NOT_FOUND', `property ${id} does not exist`);
  return ctx;
}

/** The record a write's params carry under `key` (`unit`, `customer`, `lease`), with no field but `fields`. */
function recordIn(params: Obj, key: string, fields: readonly string[]): Obj {
  const input = object(params[key], key)!;
  onlyKnown(input, fields, key);
  return input;
}

/** A create's params: `propertyId` (a property of the company) and the new record under `key`. */
async function createParams(w: WriteTx, params: Obj, key: string, fields: readonly string[]) {
  onlyKnown(params, ['propertyId', key], 'params');
  const ctx = await propertyOf(w, params);
  return { ctx, input: recordIn(params, key, fields) };
}

/** An update's params: `<key>Id` (a record of the company) and its changes under `key`. */
async function updateParams<E extends Entity>(w: WriteTx, params: Obj, entity: E, key: string, fields: readonly string[]) {
  onlyKnown(params, [`${key}Id`, key], 'params');
  const row = await one(w, entity, int(params, `${key}Id`, true, 1), key);
  return { row, input: recordIn(params, key, fields) };
}

const UNIT_FIELDS = ['unitNumber', 'floorplanId', 'bedrooms', 'bathrooms', 'squareFeet', 'maxOccupants', 'remarks', 'marketRent'] as const;
const CUSTOMER_FIELDS = ['firstName', 'middleName', 'lastName', 'email', 'phones', 'dateOfBirth', 'address'] as const;

/** Apply one write for a company, under its lock. Returns the reply's `result`. */
export async function applyWrite(
  sql: Parameters<typeof inWrite>[0],
  companyId: string,
  entity: 'unit' | 'resident' | 'lease',
  action: 'create' | 'update',
  params: Obj,
): Promise<Obj> {
  const done = await inWrite(sql, companyId, async (w) => {
    switch (`${entity}.${action}`) {
      case 'unit.create':
        return createUnit(w, params);
      case 'unit.update':
        return updateUnit(w, params);
      case 'resident.create':
        return createCustomer(w, params);
      case 'resident.update':
        return updateCustomer(w, params);
      case 'lease.create':
        return createLease(w, params);
      default:
        return updateLease(w, params);
    }
  });
  if (!done) throw new BusinessError('NOT_FOUND', 'company does not exist');
  return done.value;
}

function unitFields(o: Obj, floorplans: Floorplan[], create: boolean): Partial<UnitModel> {
  const out: Partial<UnitModel> = {};
  const unitNumber = str(o, 'unitNumber', create, 20);
  if (unitNumber !== undefined) out.unitNumber = unitNumber;
  const floorplanId = int(o, 'floorplanId', false, 1);
  if (floorplanId !== undefined) {
    const fp = floorplans.find((f) => f.id === floorplanId);
    if (!fp) throw new BusinessError('NOT_FOUND', `floorplan ${floorplanId} does not exist at this property`);
    Object.assign(out, { floorplanId, floorplanName: fp.name, bedrooms: fp.bedrooms, bathrooms: fp.bathrooms, squareFeet: fp.squareFeet });
  }
  for (const k of ['bedrooms', 'bathrooms'] as const) {
    const n = int(o, k, false, 0, 20);
    if (n !== undefined) out[k] = n;
  }
  const sq = int(o, 'squareFeet', false, 1, 100_000);
  if (sq !== undefined) out.squareFeet = sq;
  const occ = int(o, 'maxOccupants', false, 1, 50);
  if (occ !== undefined) out.maxOccupants = occ;
  if (o.remarks !== undefined) out.remarks = str(o, 'remarks', false, 2000) ?? '';
  const rent = amount(o, 'marketRent');
  if (rent !== undefined) out.marketRentCents = rent;
  return out;
}

async function createUnit(w: WriteTx, params: Obj): Promise<Obj> {
  const { ctx, input } = await createParams(w, params, 'unit', UNIT_FIELDS);
  const fields = unitFields(input, ctx.floorplans, true);
  if (await w.unitNumberTaken(ctx.id, fields.unitNumber!))
    throw new BusinessError('DUPLICATE', `unit number ${fields.unitNumber} already exists at property ${ctx.id}`);
  const unit = newUnit(w, ctx, { ...fields, unitNumber: fields.unitNumber! });
  await w.put([{ entity: 'unit', id: unit.id, model: unit }]);
  return { unit: { unitId: unit.id } };
}

async function updateUnit(w: WriteTx, params: Obj): Promise<Obj> {
  const { row, input } = await updateParams(w, params, 'unit', 'unit', UNIT_FIELDS);
  const ctx = await w.property(row.model.propertyId);
  const fields = unitFields(input, ctx?.floorplans ?? [], false);
  if (fields.unitNumber !== undefined && (await w.unitNumberTaken(row.model.propertyId, fields.unitNumber, row.id))) {
    throw new BusinessError('DUPLICATE', `unit number ${fields.unitNumber} already exists at this property`);
  }
  await w.put([{ entity: 'unit', id: row.id, model: { ...row.model, ...fields } }]);
  return { unit: { unitId: row.id } };
}

function customerFields(o: Obj, create: boolean): Partial<ResidentModel> {
  const out: Partial<ResidentModel> = {};
  const first = str(o, 'firstName', create, 100);
  if (first !== undefined) out.firstName = first;
  const last = str(o, 'lastName', create, 100);
  if (last !== undefined) out.lastName = last;
  if (o.middleName !== undefined) out.middleName = str(o, 'middleName', false, 100) ?? '';
  if (o.email !== undefined) {
    const email = str(o, 'email', false, 254) ?? '';
    if (email && !emailOk(email)) throw invalid('email is not an email address');
    out.email = email;
  }
  const ph = phones(o.phones);
  if (ph !== undefined) out.phones = ph;
  if (o.dateOfBirth !== undefined) {
    const dob = date(o, 'dateOfBirth', false);
    out.dateOfBirth = dob === undefined ? null : isoDate(dob);
  }
  const addr = address(o.address, 'address');
  if (addr !== undefined) out.address = addr;
  return out;
}

async function createCustomer(w: WriteTx, params: Obj): Promise<Obj> {
  const { ctx, input } = await createParams(w, params, 'customer', CUSTOMER_FIELDS);
  const customer = newResident(w, ctx, customerFields(input, true));
  await w.put([{ entity: 'resident', id: customer.id, model: customer }]);
  return { customer: { customerId: customer.id } };
}

async function updateCustomer(w: WriteTx, params: Obj): Promise<Obj> {
  const { row, input } = await updateParams(w, params, 'resident', 'customer', CUSTOMER_FIELDS);
  await w.put([{ entity: 'resident', id: row.id, model: { ...row.model, ...customerFields(input, false) } }]);
  return { customer: { customerId: row.id } };
}

async function createLease(w: WriteTx, params: Obj): Promise<Obj> {
  const { ctx, input } = await createParams(w, params, 'lease', [
    'leaseStartDate',
    'leaseEndDate',
    'moveInDate',
    'leaseTermId',
    'floorplanId',
    'unitSpaceId',
    'applicant',
  ]);
  const start = date(input, 'leaseStartDate', true)!;
  const end = date(input, 'leaseEndDate', true)!;
  const moveIn = date(input, 'moveInDate', true)!;
  if (end <= start) throw invalid('leaseEndDate must be after leaseStartDate');
  // Lease terms are set up per property: a term of the company that this property does not offer is refused too.
  const termId = code(LEASE_TERMS, input, 'leaseTermId').id;
  const term = codeIn(leaseTermsAt(ctx.id), termId);
  if (!term) throw invalid(`leaseTermId ${termId} is not offered at property ${ctx.id}`);
  const floorplanId = int(input, 'floorplanId', true, 1)!;
  const unitRow = await one(w, 'unit', int(input, 'unitSpaceId', true, 1), 'unit space');
  const unit = unitRow.model;
  if (unit.propertyId !== ctx.id) throw new BusinessError('NOT_FOUND', `unit space ${unitRow.id} does not belong to property ${ctx.id}`);
  if ((unit.floorplanId ?? 0) !== floorplanId)
    throw invalid(`floorplanId ${floorplanId} does not match unit space ${unitRow.id} (floorplan ${unit.floorplanId ?? 0})`);
  const applicant = object(input.applicant, 'applicant')!;
  onlyKnown(applicant, ['firstName', 'lastName', 'customerRelationshipTypeId', 'phone', 'address'], 'applicant');
  const firstName = str(applicant, 'firstName', true, 100)!;
  const lastName = str(applicant, 'lastName', true, 100)!;
  const relationship = code(CUSTOMER_RELATIONSHIP_TYPES, applicant, 'customerRelationshipTypeId').id;
  const phone = phones(object(applicant.phone, 'applicant.phone'))!;
  const addr = object(applicant.address, 'applicant.address')!;
  onlyKnown(addr, ['addressTypeId', 'streetLine1', 'city', 'state', 'stateCode', 'postalCode'], 'applicant.address');
  code(ADDRESS_TYPES, addr, 'addressTypeId');
  const stateCode = str(addr, 'stateCode', true, 3)!;
  if (!/^[A-Za-z]{2}$/.test(stateCode)) throw invalid('stateCode must be a two-letter state code');
  str(addr, 'state', true);
  const postalCode = str(addr, 'postalCode', true, 10)!;
  if (!/^\d{5}(-\d{4})?$/.test(postalCode)) throw invalid('postalCode must be a US ZIP code');

  const customer = newResident(w, ctx, {
    firstName,
    lastName,
    phones: [phone[0]!],
    address: { line1: str(addr, 'streetLine1', true)!, line2: '', city: str(addr, 'city', true)!, state: stateCode.toUpperCase(), postalCode, country: 'US' },
  });
  const lease = newLease(w, ctx, unit, {
    kind: 'fixed',
    start: isoDate(start),
    end: isoDate(end),
    moveIn: isoDate(moveIn),
    termMonths: term.months,
    tenants: [{ id: customer.id, role: ROLE_OF_ID[relationship]! }],
  });
  await w.put([
    { entity: 'resident', id: customer.id, model: customer },
    { entity: 'lease', id: lease.id, model: lease },
  ]);
  return { lease: { leaseId: lease.id, customerId: customer.id } };
}

async function updateLease(w: WriteTx, params: Obj): Promise<Obj> {
  const { row, input } = await updateParams(w, params, 'lease', 'lease', ['moveInDate', 'occupants', 'rent']);
  const status = row.model.state;
  if (CLOSED_LEASE.has(status)) throw new BusinessError('LEASE_CLOSED', `lease ${row.id} is ${status} and can no longer be changed`);
  const changes: Partial<LeaseModel> = {};
  const moveIn = date(input, 'moveInDate', false);
  if (moveIn !== undefined) changes.moveIn = isoDate(moveIn);
  const occupants = int(input, 'occupants', false, 1, 20);
  if (occupants !== undefined) changes.occupants = occupants;
  const rent = amount(input, 'rent');
  if (rent !== undefined) changes.rentCents = rent;
  if (Object.keys(changes).length === 0) throw invalid('lease: nothing to update');
  await w.put([{ entity: 'lease', id: row.id, model: { ...row.model, ...changes } }]);
  return { lease: { leaseId: row.id } };
}
