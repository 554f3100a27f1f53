/**
 * The write methods of the sandbox PMS (sendPropertyUnits, updatePropertyUnits, sendCustomers, updateCustomers,
 * sendLeases, updateLease). They validate like a real PMS: a bad reference, a missing or malformed field, an unknown
 * field or a change to a closed lease is a business error in the reply; a success returns the native id.
 * Every write moves the record's `updatedOn`, so a sync sees it.
 */
import { codeOf, LEASE_STATUS_TYPES } from '../source/entrata/codes';
import { MappingError, toIsoDate } from '../source/entrata/mapping';
import { decimalToMinor } from '../source/values';
import type { NativeAddress, NativeCustomer, NativeEntity, NativeLease, NativePhone, NativeUnit } from '../source/entrata/native';
import { ADDRESS_TYPES, codeIn, CUSTOMER_RELATIONSHIP_TYPES, LEASE_TERMS, leaseTermsAt, PHONE_NUMBER_TYPES, type Code } from './codes';
import { contextOf } from './generator';
import { getRecords, lockCompany, putRecords, saveCounters, type NextIds, type Sql } from './store';
import { dayOf, decimalOf, localTime, usDate } from './time';

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

function date(obj: Obj, key: string, required: boolean): number | undefined {
  const v = str(obj, key, required);
  if (v === undefined) return undefined;
  try {
    return dayOf(toIsoDate(v)!);
  } catch {
    throw invalid(`${key} must be a date (MM/DD/YYYY)`);
  }
}

function amount(obj: Obj, key: string): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' && typeof v !== 'number') throw invalid(`${key} must be a decimal amount`);
  try {
    const cents = decimalToMinor(v, 2);
    if (cents < 0) throw invalid(`${key} must not be negative`);
    return cents;
  } catch (err) {
    if (err instanceof MappingError) throw invalid(`${key} must be a decimal amount`);
    throw err;
  }
}

function code<T extends Code>(list: readonly T[], obj: Obj, key: string): T {
  const id = int(obj, key, true, 1)!;
  const entry = codeIn(list, id);
  if (!entry) throw invalid(`${key} ${id} is not a valid code`);
  return entry;
}

function phones(value: unknown): NativePhone[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  return list.map((p, i) => {
    const o = object(p, `phones[${i}]`)!;
    onlyKnown(o, ['phoneNumber', 'phoneNumberTypeId', 'isPrimary'], `phones[${i}]`);
    const number = str(o, 'phoneNumber', true, 40)!;
    if (!/^[+\d][\d\s().-]{5,}$/.test(number)) throw invalid(`phones[${i}].phoneNumber is not a phone number`);
    return { phoneNumber: number, phoneNumberTypeId: code(PHONE_NUMBER_TYPES, o, 'phoneNumberTypeId').id, isPrimary: o.isPrimary === true || o.isPrimary === '1' || (o.isPrimary === undefined && i === 0) ? '1' : '0' };
  });
}

function address(value: unknown, name: string): NativeAddress | null | undefined {
  if (value === null) return null;
  const o = object(value, name, false);
  if (!o) return undefined;
  onlyKnown(o, ['streetLine1', 'streetLine2', 'city', 'state', 'postalCode', 'country'], name);
  return {
    streetLine1: str(o, 'streetLine1', true)!,
    streetLine2: str(o, 'streetLine2', false) ?? '',
    city: str(o, 'city', true)!,
    state: str(o, 'state', true)!,
    postalCode: str(o, 'postalCode', true, 20)!,
    country: str(o, 'country', false) ?? 'US',
  };
}

const emailOk = (e: string) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e);

async function one(sql: Sql, companyId: string, entity: NativeEntity, id: number | undefined, what: string) {
  if (id === undefined) throw invalid(`${what} is required`);
  const [row] = await getRecords(sql, companyId, entity, [id]);
  if (!row) throw new BusinessError('NOT_FOUND', `${what} ${id} does not exist`);
  return row;
}

const UNIT_FIELDS = ['unitNumber', 'floorplanId', 'bedrooms', 'bathrooms', 'squareFeet', 'maxOccupants', 'remarks', 'marketRent'] as const;
const CUSTOMER_FIELDS = ['firstName', 'middleName', 'lastName', 'email', 'phones', 'dateOfBirth', 'address'] as const;
const CLOSED_LEASE = new Set(['ended', 'terminated', 'evicted', 'cancelled']);

/** Apply one write for a company, under its lock. Returns the reply's `result`. */
export async function applyWrite(sql: Sql, companyId: string, entity: 'unit' | 'resident' | 'lease', action: 'create' | 'update', params: Obj): Promise<Obj> {
  return sql.begin(async (tx) => {
    const company = await lockCompany(tx as unknown as Sql, companyId);
    if (!company) throw new BusinessError('NOT_FOUND', 'company does not exist');
    const db = tx as unknown as Sql;
    const next: NextIds = { ...company.next_ids };
    const now = Date.now();
    let result: Obj;
    switch (`${entity}.${action}`) {
      case 'unit.create':
        result = await createUnit(db, companyId, params, next, now);
        break;
      case 'unit.update':
        result = await updateUnit(db, companyId, params, now);
        break;
      case 'resident.create':
        result = await createCustomer(db, companyId, params, next, now);
        break;
      case 'resident.update':
        result = await updateCustomer(db, companyId, params, now);
        break;
      case 'lease.create':
        result = await createLease(db, companyId, params, next, now);
        break;
      default:
        result = await updateLease(db, companyId, params, now);
    }
    await saveCounters(db, companyId, company.change_counter, next);
    return result;
  });
}

function unitFields(o: Obj, floorplans: ReturnType<typeof contextOf>['floorplans'], create: boolean): Partial<NativeUnit> {
  const out: Partial<NativeUnit> = {};
  const unitNumber = str(o, 'unitNumber', create, 20);
  if (unitNumber !== undefined) out.unitNumber = unitNumber;
  const floorplanId = int(o, 'floorplanId', false, 1);
  if (floorplanId !== undefined) {
    const fp = floorplans.find((f) => f.floorplanId === floorplanId);
    if (!fp) throw new BusinessError('NOT_FOUND', `floorplan ${floorplanId} does not exist at this property`);
    Object.assign(out, { floorplanId, floorplanName: fp.name, bedrooms: String(fp.bedrooms), bathrooms: String(fp.bathrooms), squareFeet: String(fp.squareFeet) });
  }
  for (const k of ['bedrooms', 'bathrooms'] as const) {
    const n = int(o, k, false, 0, 20);
    if (n !== undefined) out[k] = String(n);
  }
  const sq = int(o, 'squareFeet', false, 1, 100_000);
  if (sq !== undefined) out.squareFeet = String(sq);
  const occ = int(o, 'maxOccupants', false, 1, 50);
  if (occ !== undefined) out.maxOccupants = occ;
  if (o.remarks !== undefined) out.remarks = str(o, 'remarks', false, 2000) ?? '';
  const rent = amount(o, 'marketRent');
  if (rent !== undefined) out.marketRent = decimalOf(rent);
  return out;
}

async function createUnit(sql: Sql, companyId: string, params: Obj, next: NextIds, now: number): Promise<Obj> {
  onlyKnown(params, ['propertyId', 'unit'], 'params');
  const property = await one(sql, companyId, 'property', int(params, 'propertyId', true, 1), 'property');
  const ctx = contextOf(property.data);
  const input = object(params.unit, 'unit')!;
  onlyKnown(input, UNIT_FIELDS, 'unit');
  const fields = unitFields(input, ctx.floorplans, true);
  const [dup] = await sql`
    select 1 from sandbox.records where company_id = ${companyId} and entity = 'unit' and property_id = ${ctx.id}
      and data->>'unitNumber' = ${fields.unitNumber!} limit 1`;
  if (dup) throw new BusinessError('DUPLICATE', `unit number ${fields.unitNumber} already exists at property ${ctx.id}`);
  const id = next.unit++;
  const unit: NativeUnit = {
    unitId: id,
    propertyId: ctx.id,
    unitNumber: fields.unitNumber!,
    buildingName: '',
    floorNumber: 1,
    floorplanId: 0,
    floorplanName: '',
    bedrooms: '',
    bathrooms: '',
    squareFeet: '',
    maxOccupants: 2,
    marketRent: '',
    currencyCode: 'USD',
    unitStatusTypeId: 2,
    remarks: '',
    address: { ...ctx.address, streetLine2: `Apt ${fields.unitNumber}` },
    amenities: '',
    isFurnished: '0',
    parkingSpaces: 0,
    availableOn: '',
    ...fields,
    createdOn: localTime(now, ctx.timeZone),
    updatedOn: localTime(now, ctx.timeZone),
  };
  await putRecords(sql, companyId, [{ entity: 'unit', id, data: unit as unknown as Obj }]);
  return { unit: { unitId: id } };
}

async function updateUnit(sql: Sql, companyId: string, params: Obj, now: number): Promise<Obj> {
  onlyKnown(params, ['unitId', 'unit'], 'params');
  const row = await one(sql, companyId, 'unit', int(params, 'unitId', true, 1), 'unit');
  const input = object(params.unit, 'unit')!;
  onlyKnown(input, UNIT_FIELDS, 'unit');
  const [property] = await getRecords(sql, companyId, 'property', [row.property_id ?? 0]);
  const ctx = property ? contextOf(property.data) : undefined;
  const fields = unitFields(input, ctx?.floorplans ?? [], false);
  if (fields.unitNumber !== undefined) {
    const [dup] = await sql`
      select 1 from sandbox.records where company_id = ${companyId} and entity = 'unit' and property_id = ${row.property_id}
        and data->>'unitNumber' = ${fields.unitNumber} and id <> ${row.id} limit 1`;
    if (dup) throw new BusinessError('DUPLICATE', `unit number ${fields.unitNumber} already exists at this property`);
  }
  const data = { ...row.data, ...fields, updatedOn: localTime(now, ctx?.timeZone ?? 'America/Chicago') };
  await putRecords(sql, companyId, [{ entity: 'unit', id: row.id, data }]);
  return { unit: { unitId: row.id } };
}

function customerFields(o: Obj, create: boolean): Partial<NativeCustomer> {
  const out: Partial<NativeCustomer> = {};
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
  if (ph !== undefined) out.phones = ph.length === 0 ? null : { phone: ph.length === 1 ? ph[0]! : ph };
  if (o.dateOfBirth !== undefined) {
    const dob = date(o, 'dateOfBirth', false);
    out.dateOfBirth = dob === undefined ? '' : usDate(dob);
  }
  const addr = address(o.address, 'address');
  if (addr !== undefined) out.address = addr;
  return out;
}

async function createCustomer(sql: Sql, companyId: string, params: Obj, next: NextIds, now: number): Promise<Obj> {
  onlyKnown(params, ['propertyId', 'customer'], 'params');
  const property = await one(sql, companyId, 'property', int(params, 'propertyId', true, 1), 'property');
  const ctx = contextOf(property.data);
  const input = object(params.customer, 'customer')!;
  onlyKnown(input, CUSTOMER_FIELDS, 'customer');
  const id = next.resident++;
  const customer = newCustomer(id, ctx.id, ctx.timeZone, now, customerFields(input, true));
  await putRecords(sql, companyId, [{ entity: 'resident', id, data: customer as unknown as Obj }]);
  return { customer: { customerId: id } };
}

function newCustomer(id: number, propertyId: number, timeZone: string, now: number, fields: Partial<NativeCustomer>): NativeCustomer {
  return {
    customerId: id,
    propertyId,
    firstName: '',
    middleName: '',
    lastName: '',
    email: '',
    phones: null,
    dateOfBirth: '',
    address: null,
    customerStatusTypeId: 1,
    leadSource: '',
    preferredLanguage: 'en',
    employer: '',
    ...fields,
    createdOn: localTime(now, timeZone),
    updatedOn: localTime(now, timeZone),
  };
}

async function updateCustomer(sql: Sql, companyId: string, params: Obj, now: number): Promise<Obj> {
  onlyKnown(params, ['customerId', 'customer'], 'params');
  const row = await one(sql, companyId, 'resident', int(params, 'customerId', true, 1), 'customer');
  const input = object(params.customer, 'customer')!;
  onlyKnown(input, CUSTOMER_FIELDS, 'customer');
  const [property] = await getRecords(sql, companyId, 'property', [row.property_id ?? 0]);
  const data = { ...row.data, ...customerFields(input, false), updatedOn: localTime(now, property ? contextOf(property.data).timeZone : 'America/Chicago') };
  await putRecords(sql, companyId, [{ entity: 'resident', id: row.id, data }]);
  return { customer: { customerId: row.id } };
}

async function createLease(sql: Sql, companyId: string, params: Obj, next: NextIds, now: number): Promise<Obj> {
  onlyKnown(params, ['propertyId', 'lease'], 'params');
  const property = await one(sql, companyId, 'property', int(params, 'propertyId', true, 1), 'property');
  const ctx = contextOf(property.data);
  const input = object(params.lease, 'lease')!;
  onlyKnown(input, ['leaseStartDate', 'leaseEndDate', 'moveInDate', 'leaseTermId', 'floorplanId', 'unitSpaceId', 'applicant'], 'lease');
  const start = date(input, 'leaseStartDate', true)!;
  const end = date(input, 'leaseEndDate', true)!;
  const moveIn = date(input, 'moveInDate', true)!;
  if (end <= start) throw invalid('leaseEndDate must be after leaseStartDate');
  // Lease terms are set up per property: a term of the company that this property does not offer is refused too.
  const termId = code(LEASE_TERMS, input, 'leaseTermId').id;
  const term = codeIn(leaseTermsAt(ctx.id), termId);
  if (!term) throw invalid(`leaseTermId ${termId} is not offered at property ${ctx.id}`);
  const floorplanId = int(input, 'floorplanId', true, 1)!;
  const unitRow = await one(sql, companyId, 'unit', int(input, 'unitSpaceId', true, 1), 'unit space');
  if (unitRow.property_id !== ctx.id) throw new BusinessError('NOT_FOUND', `unit space ${unitRow.id} does not belong to property ${ctx.id}`);
  const unit = unitRow.data as unknown as NativeUnit;
  if (unit.floorplanId !== floorplanId) throw invalid(`floorplanId ${floorplanId} does not match unit space ${unitRow.id} (floorplan ${unit.floorplanId})`);
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

  const customerId = next.resident++;
  const customer = newCustomer(customerId, ctx.id, ctx.timeZone, now, {
    firstName,
    lastName,
    phones: { phone: phone[0]! },
    address: { streetLine1: str(addr, 'streetLine1', true)!, streetLine2: '', city: str(addr, 'city', true)!, state: stateCode.toUpperCase(), postalCode, country: 'US' },
  });
  const leaseId = next.lease++;
  const lease: NativeLease = {
    leaseId,
    propertyId: ctx.id,
    unitId: unitRow.id,
    leaseStatusTypeId: 1,
    leaseIntervalTypeId: 1,
    leaseStartDate: usDate(start),
    leaseEndDate: usDate(end),
    moveInDate: usDate(moveIn),
    moveOutDate: '',
    noticeDate: '',
    leaseSignedDate: '',
    rent: unit.marketRent || '0.00',
    securityDeposit: '',
    balance: '0.00',
    currencyCode: 'USD',
    leaseTermMonths: String(term.months),
    renewalOfferStatus: '',
    isRenewal: '0',
    previousLeaseId: null,
    concessions: '',
    notes: '',
    customers: { customer: { customerId, customerTypeId: relationship } },
    petCount: 0,
    parkingSpaces: 0,
    occupants: 1,
    leadSource: '',
    createdOn: localTime(now, ctx.timeZone),
    updatedOn: localTime(now, ctx.timeZone),
  };
  await putRecords(sql, companyId, [
    { entity: 'resident', id: customerId, data: customer as unknown as Obj },
    { entity: 'lease', id: leaseId, data: lease as unknown as Obj },
  ]);
  return { lease: { leaseId, customerId } };
}

async function updateLease(sql: Sql, companyId: string, params: Obj, now: number): Promise<Obj> {
  onlyKnown(params, ['leaseId', 'lease'], 'params');
  const row = await one(sql, companyId, 'lease', int(params, 'leaseId', true, 1), 'lease');
  const input = object(params.lease, 'lease')!;
  onlyKnown(input, ['moveInDate', 'occupants', 'rent'], 'lease');
  const status = codeOf(LEASE_STATUS_TYPES, row.data.leaseStatusTypeId)?.cdm;
  if (status && CLOSED_LEASE.has(status)) throw new BusinessError('LEASE_CLOSED', `lease ${row.id} is ${status} and can no longer be changed`);
  const changes: Partial<NativeLease> = {};
  const moveIn = date(input, 'moveInDate', false);
  if (moveIn !== undefined) changes.moveInDate = usDate(moveIn);
  const occupants = int(input, 'occupants', false, 1, 20);
  if (occupants !== undefined) changes.occupants = occupants;
  const rent = amount(input, 'rent');
  if (rent !== undefined) changes.rent = decimalOf(rent);
  if (Object.keys(changes).length === 0) throw invalid('lease: nothing to update');
  const [property] = await getRecords(sql, companyId, 'property', [row.property_id ?? 0]);
  const data = { ...row.data, ...changes, updatedOn: localTime(now, property ? contextOf(property.data).timeZone : 'America/Chicago') };
  await putRecords(sql, companyId, [{ entity: 'lease', id: row.id, data }]);
  return { lease: { leaseId: row.id } };
}
