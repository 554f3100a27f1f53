/**
 * From the Entrata-style wire shapes (source/native.ts) to CDM input. Pure functions; every quirk of the source
 * is undone here and nowhere else:
 * - money: decimal strings to integer minor units with integer arithmetic only (never a float); more decimals than
 *   the currency has are rounded half to even (banker's rounding), so "10.005" is 1000 and "10.015" is 1002;
 * - dates: MM/DD/YYYY (or YYYY-MM-DD) to YYYY-MM-DD;
 * - times: local times with an offset, or without one in a given IANA zone, to UTC ISO with milliseconds;
 * - lists: an array, a lone element, null, "" or {} all become an array;
 * - status ids to CDM names through source/codes.ts;
 * - every field the CDM has no column for lands in custom_data under its source name (nested ones under a dotted
 *   path, e.g. "address.county"), with its dates and times normalized as above, and its keys in sorted order
 *   (a record's content hash is taken over its JSON: see contentHash in db/apply.ts);
 * Anything malformed throws MappingError: the connector reports it as a permanent source failure.
 */
import type { Address, JsonObject, LeaseInput, Money, Phone, PropertyInput, ResidentInput, UnitInput } from '../../domain/cdm';
import type { SourceOption, SourceUnitSpace } from '../connector';
import { addressFrom, DECIMAL, decimalToMinor, exponentOf, Fields, MappingError, pad, validDate, type Normalize } from '../values';
import {
  codeOf,
  CUSTOMER_STATUS_TYPES,
  CUSTOMER_TYPES,
  LEASE_INTERVAL_TYPES,
  LEASE_STATUS_TYPES,
  PHONE_NUMBER_TYPES,
  UNIT_STATUS_TYPES,
  type CodeTable,
} from './codes';

export { MappingError };

/** A decimal amount in a currency as Money, or null when the source has no value. */
export function moneyOf(value: unknown, currency: string): Money | null {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value !== 'string' && typeof value !== 'number') throw new MappingError(`not a decimal amount: ${JSON.stringify(value)}`);
  return { amount: decimalToMinor(value, exponentOf(currency)), currency };
}

// ---------------------------------------------------------------------------------------------------------------
// Dates and times
// ---------------------------------------------------------------------------------------------------------------

const US_DATE = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** "01/31/2025" or "2025-01-31" to "2025-01-31"; null for an absent value. */
export function toIsoDate(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value !== 'string') throw new MappingError(`not a date: ${JSON.stringify(value)}`);
  const s = value.trim();
  const us = US_DATE.exec(s);
  const iso = us ? null : ISO_DATE.exec(s);
  const [y, m, d] = us ? [Number(us[3]), Number(us[1]), Number(us[2])] : iso ? [Number(iso[1]), Number(iso[2]), Number(iso[3])] : [0, 0, 0];
  if (!(us || iso) || !validDate(y, m, d)) throw new MappingError(`not a date: ${JSON.stringify(value)}`);
  return `${pad(y, 4)}-${pad(m)}-${pad(d)}`;
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;
const US_TIME = /^(\d{1,2})\/(\d{1,2})\/(\d{4})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?\s*(AM|PM)?$/i;

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw new MappingError(`unknown time zone: ${timeZone}`);
    }
    formatters.set(timeZone, f);
  }
  return f;
}

/** Offset of a zone from UTC at an instant, in milliseconds (local = utc + offset). */
function zoneOffsetMs(utcMs: number, timeZone: string): number {
  const parts = formatterOf(timeZone).formatToParts(new Date(utcMs));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  const local = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return local - Math.floor(utcMs / 1000) * 1000;
}

/**
 * Wall-clock time in a zone to a UTC instant. For a time that a DST change skips or repeats, the offset in force
 * before the change wins (the earlier of two repeated instants).
 */
export function localToUtcMs(local: { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number }, timeZone: string): number {
  const wall = Date.UTC(local.y, local.mo - 1, local.d, local.h, local.mi, local.s, local.ms);
  const before = zoneOffsetMs(wall - 86_400_000, timeZone);
  const after = zoneOffsetMs(wall + 86_400_000, timeZone);
  const candidates = [wall - before, wall - after].filter((t) => t + zoneOffsetMs(t, timeZone) === wall);
  return candidates.length > 0 ? Math.min(...candidates) : wall - before;
}

function digitsAt(s: string, i: number, len: number): number {
  let v = 0;
  for (let k = i; k < i + len; k++) {
    const c = s.charCodeAt(k) - 48;
    if (c < 0 || c > 9) return NaN;
    v = v * 10 + c;
  }
  return v;
}

/**
 * The common shape "2025-01-31T10:04:05-06:00", parsed without a regular expression (a sync converts two of these
 * per record); undefined for anything else, which the general parser then handles.
 */
function offsetTimeMs(s: string): number | undefined {
  if (s.length !== 25 || s.charCodeAt(10) !== 84 /* T */ || s.charCodeAt(22) !== 58 /* : */) return undefined;
  const sign = s.charCodeAt(19) === 45 ? -1 : s.charCodeAt(19) === 43 ? 1 : 0;
  if (sign === 0 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return undefined;
  const y = digitsAt(s, 0, 4),
    mo = digitsAt(s, 5, 2),
    d = digitsAt(s, 8, 2),
    h = digitsAt(s, 11, 2),
    mi = digitsAt(s, 14, 2);
  const sec = digitsAt(s, 17, 2),
    oh = digitsAt(s, 20, 2),
    om = digitsAt(s, 23, 2);
  if (!validDate(y, mo, d) || !(h <= 23 && mi <= 59 && sec <= 59 && oh <= 23 && om <= 59)) return undefined;
  return Date.UTC(y, mo - 1, d, h, mi, sec) - sign * (oh * 60 + om) * 60_000;
}

/**
 * A source time to UTC ISO 8601 with milliseconds ("2025-01-31T16:04:05.000Z"). Accepts ISO times with an
 * offset or Z, and times without one (ISO or "MM/DD/YYYY HH:MM[:SS][ AM|PM]") read in `timeZone`.
 */
export function toUtcIso(value: unknown, timeZone?: string | null): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value !== 'string') throw new MappingError(`not a time: ${JSON.stringify(value)}`);
  const fast = offsetTimeMs(value);
  if (fast !== undefined) return new Date(fast).toISOString();
  const s = value.trim();
  let f: { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number };
  let offset: string | undefined;
  const iso = ISO_TIME.exec(s);
  const us = iso ? null : US_TIME.exec(s);
  if (iso) {
    f = { y: +iso[1]!, mo: +iso[2]!, d: +iso[3]!, h: +iso[4]!, mi: +iso[5]!, s: +(iso[6] ?? 0), ms: +(iso[7] ?? '0').slice(0, 3).padEnd(3, '0') };
    offset = iso[8];
  } else if (us) {
    let h = +us[4]!;
    const ampm = us[7]?.toUpperCase();
    if (ampm && (h < 1 || h > 12)) throw new MappingError(`not a time: ${JSON.stringify(value)}`);
    if (ampm === 'PM' && h < 12) h += 12;
    if (ampm === 'AM' && h === 12) h = 0;
    f = { y: +us[3]!, mo: +us[1]!, d: +us[2]!, h, mi: +us[5]!, s: +(us[6] ?? 0), ms: 0 };
  } else {
    throw new MappingError(`not a time: ${JSON.stringify(value)}`);
  }
  if (!validDate(f.y, f.mo, f.d) || f.h > 23 || f.mi > 59 || f.s > 59) throw new MappingError(`not a time: ${JSON.stringify(value)}`);
  let utc: number;
  if (offset) {
    const wall = Date.UTC(f.y, f.mo - 1, f.d, f.h, f.mi, f.s, f.ms);
    if (offset.toUpperCase() === 'Z') utc = wall;
    else {
      const sign = offset[0] === '-' ? -1 : 1;
      const digits = offset.slice(1).replace(':', '');
      const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2));
      utc = wall - sign * minutes * 60_000;
    }
  } else {
    if (!timeZone) throw new MappingError(`time without offset and no time zone: ${JSON.stringify(value)}`);
    utc = localToUtcMs(f, timeZone);
  }
  return new Date(utc).toISOString();
}

// ---------------------------------------------------------------------------------------------------------------
// Lists, scalars and codes
// ---------------------------------------------------------------------------------------------------------------

/** A list as the source sends it (array, lone element, null, "", {}) as an array. */
export function asList<T = unknown>(value: unknown): T[] {
  if (value === null || value === undefined || value === '') return [];
  if (Array.isArray(value)) return value as T[];
  if (typeof value === 'object' && Object.keys(value).length === 0) return [];
  return [value as T];
}

/** The elements of a wrapped list such as `{phone: [...]}`/`{phone: {...}}`. */
export function wrappedList<T = unknown>(value: unknown, inner: string): T[] {
  if (value === null || value === undefined || value === '') return [];
  if (typeof value !== 'object' || Array.isArray(value)) return asList<T>(value);
  return asList<T>((value as Record<string, unknown>)[inner]);
}

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'string') throw new MappingError(`not text: ${JSON.stringify(value)}`);
  const t = value.trim();
  return t === '' ? null : t;
}

function integer(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*[+-]?\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new MappingError(`not an integer: ${JSON.stringify(value)}`);
  return n;
}

function decimal(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const n = typeof value === 'number' ? value : typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(n)) throw new MappingError(`not a number: ${JSON.stringify(value)}`);
  return n;
}

const TRUE = new Set(['1', 'true', 't', 'y', 'yes']);
const FALSE = new Set(['0', 'false', 'f', 'n', 'no']);
function bool(value: unknown): boolean | null {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value === 'boolean') return value;
  const s = String(value).trim().toLowerCase();
  if (TRUE.has(s)) return true;
  if (FALSE.has(s)) return false;
  throw new MappingError(`not a boolean: ${JSON.stringify(value)}`);
}

/** "Not Allowed" -> "not_allowed": free-text enumerations to CDM-style names. */
function snakeName(value: unknown): string | null {
  const t = text(value);
  return t === null
    ? null
    : t
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '_')
        .replace(/^_|_$/g, '') || null;
}

function code(table: CodeTable, value: unknown, what: string): string | null {
  if (value === null || value === undefined || value === '') return null;
  const entry = codeOf(table, value);
  if (!entry?.cdm) throw new MappingError(`unknown ${what}: ${JSON.stringify(value)}`);
  return entry.cdm;
}
export const leaseStatusOf = (id: unknown) => code(LEASE_STATUS_TYPES, id, 'leaseStatusTypeId');
export const unitStatusOf = (id: unknown) => code(UNIT_STATUS_TYPES, id, 'unitStatusTypeId');
export const residentStatusOf = (id: unknown) => code(CUSTOMER_STATUS_TYPES, id, 'customerStatusTypeId');
export const roleOf = (id: unknown) => code(CUSTOMER_TYPES, id, 'customerTypeId');
const leaseTypeOf = (id: unknown) => code(LEASE_INTERVAL_TYPES, id, 'leaseIntervalTypeId');
const phoneTypeOf = (id: unknown) => code(PHONE_NUMBER_TYPES, id, 'phoneNumberTypeId');

// ---------------------------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------------------------

/** Fields whose values are source times or dates: normalized even when they land in custom_data. */
const TIME_FIELDS = new Set(['createdOn', 'updatedOn']);
const DATE_FIELDS = new Set(['availableOn']);

/** Entrata-style leftovers: its times (in the property's zone when they carry no offset) and dates, normalized. */
const normalizeIn =
  (timeZone: string | null): Normalize =>
  (key, value) =>
    TIME_FIELDS.has(key) ? toUtcIso(value, timeZone) : DATE_FIELDS.has(key) ? toIsoDate(value) : value;

/** Entrata-style absent objects: null, "" (and a missing field). */
const absentObject = (v: unknown) => v === null || v === undefined || v === '';
/** A wrapped list such as `phones: {phone: [...]}` of a record, each element read with its leftovers. */
const children = (f: Fields, key: string, inner: string): Fields[] => f.list(key, (v) => wrappedList(v, inner), `${key}.${inner}`);
const child = (f: Fields, key: string): Fields | null => f.child(key, absentObject);

function nativeId(value: unknown, what: string): string {
  const t = text(value);
  if (t === null) throw new MappingError(`record without ${what}`);
  return t;
}

/** A reference to another source record by native id; `0`, like an empty value, names none. */
function reference(value: unknown): string | null {
  const t = text(value);
  return t === null || t === '0' ? null : t;
}

const ADDRESS = { line_1: 'streetLine1', line_2: 'streetLine2', city: 'city', state: 'state', postal_code: 'postalCode', country: 'country' };
const addressOf = (f: Fields | null): Address | null => addressFrom(f, ADDRESS, text);

function phonesOf(list: Fields[], wrapperPresent: boolean): Phone[] | null {
  const phones: Phone[] = [];
  for (const f of list) {
    const number = text(f.take('phoneNumber'));
    const type = phoneTypeOf(f.take('phoneNumberTypeId')) ?? 'other';
    const primary = bool(f.take('isPrimary')) ?? false;
    f.finish();
    if (number) phones.push({ type, number, primary });
  }
  return phones.length > 0 || wrapperPresent ? phones : null;
}

/**
 * The currency of a record that names none (`currencyCode`), and the one a write's amounts are sent in: the wire's
 * write methods take bare decimal amounts, so an amount in any other currency is refused before it is sent.
 */
export const ENTRATA_CURRENCY = 'USD';

function currencyOf(f: Fields): string {
  return text(f.take('currencyCode'))?.toUpperCase() ?? ENTRATA_CURRENCY;
}

export function mapProperty(raw: unknown): PropertyInput {
  const obj = Fields.of(raw, 'property');
  const timeZone = text(obj.timeZone);
  const custom: JsonObject = {};
  const f = new Fields(obj, '', custom, normalizeIn(timeZone));
  const xId = nativeId(f.take('propertyId'), 'propertyId');
  const disabled = bool(f.take('isDisabled'));
  const phonesRaw = obj.phones;
  const photos = children(f, 'photos', 'photo');
  const media = photos.map((p) => {
    const m: JsonObject = { type: 'photo', url: text(p.take('url')), caption: text(p.take('caption')) };
    p.finish();
    return m;
  });
  return {
    x_id: xId,
    name: text(f.take('propertyName')),
    type: snakeName(f.take('propertyType')),
    status: disabled === null ? null : disabled ? 'inactive' : 'active',
    address: addressOf(child(f, 'address')),
    description: text(f.take('description')),
    year_built: integer(f.take('yearBuilt')),
    total_units: integer(f.take('numberOfUnits')),
    total_buildings: integer(f.take('numberOfBuildings')),
    total_floors: integer(f.take('numberOfFloors')),
    website_url: text(f.take('webSite')),
    email: text(f.take('email')),
    phones: phonesOf(children(f, 'phones', 'phone'), phonesRaw !== null && phonesRaw !== undefined && phonesRaw !== ''),
    latitude: decimal(f.take('latitude')),
    longitude: decimal(f.take('longitude')),
    timezone_id: text(f.take('timeZone')),
    management_company_name: text(f.take('managementCompany')),
    tax_id: text(f.take('taxId')),
    pet_policy: snakeName(f.take('petPolicy')),
    smoking_policy: snakeName(f.take('smokingPolicy')),
    media: media.length > 0 ? media : null,
    custom_data: f.customData(),
  };
}

export function mapUnit(raw: unknown): UnitInput {
  const custom: JsonObject = {};
  const f = new Fields(Fields.of(raw, 'unit'), '', custom, normalizeIn(null));
  const statusId = f.take('unitStatusTypeId');
  // Several source statuses fold into one CDM status; the raw id keeps the distinction.
  if (statusId !== null && statusId !== undefined && statusId !== '') custom.unitStatusTypeId = statusId;
  const currency = currencyOf(f);
  return {
    x_id: nativeId(f.take('unitId'), 'unitId'),
    property_x_id: reference(f.take('propertyId')),
    unit_number: text(f.take('unitNumber')),
    floorplan_id: reference(f.take('floorplanId')),
    floorplan_name: text(f.take('floorplanName')),
    bedrooms: integer(f.take('bedrooms')),
    bathrooms: integer(f.take('bathrooms')),
    square_feet: integer(f.take('squareFeet')),
    max_occupants: integer(f.take('maxOccupants')),
    market_rent: moneyOf(f.take('marketRent'), currency),
    status: unitStatusOf(statusId),
    note: text(f.take('remarks')),
    address: addressOf(child(f, 'address')),
    custom_data: f.customData(),
  };
}

export function mapResident(raw: unknown): ResidentInput {
  const obj = Fields.of(raw, 'customer');
  const custom: JsonObject = {};
  const f = new Fields(obj, '', custom, normalizeIn(null));
  const phonesRaw = obj.phones;
  return {
    x_id: nativeId(f.take('customerId'), 'customerId'),
    property_x_id: reference(f.take('propertyId')),
    first_name: text(f.take('firstName')),
    middle_name: text(f.take('middleName')),
    last_name: text(f.take('lastName')),
    email: text(f.take('email')),
    phones: phonesOf(children(f, 'phones', 'phone'), phonesRaw !== null && phonesRaw !== undefined && phonesRaw !== ''),
    date_of_birth: toIsoDate(f.take('dateOfBirth')),
    address: addressOf(child(f, 'address')),
    status: residentStatusOf(f.take('customerStatusTypeId')),
    custom_data: f.customData(),
  };
}

export function mapLease(raw: unknown): LeaseInput {
  const custom: JsonObject = {};
  const f = new Fields(Fields.of(raw, 'lease'), '', custom, normalizeIn(null));
  const statusId = f.take('leaseStatusTypeId');
  if (statusId !== null && statusId !== undefined && statusId !== '') custom.leaseStatusTypeId = statusId;
  const currency = currencyOf(f);
  const residents = children(f, 'customers', 'customer').map((c) => {
    const r = { x_id: nativeId(c.take('customerId'), 'customerId'), role: roleOf(c.take('customerTypeId')) ?? 'occupant' };
    c.finish();
    return r;
  });
  const rent = moneyOf(f.take('rent'), currency);
  return {
    x_id: nativeId(f.take('leaseId'), 'leaseId'),
    property_x_id: reference(f.take('propertyId')),
    unit_x_id: reference(f.take('unitId')),
    previous_lease_x_id: reference(f.take('previousLeaseId')),
    residents,
    status: leaseStatusOf(statusId),
    type: leaseTypeOf(f.take('leaseIntervalTypeId')),
    start_date: toIsoDate(f.take('leaseStartDate')),
    end_date: toIsoDate(f.take('leaseEndDate')),
    move_in_date: toIsoDate(f.take('moveInDate')),
    move_out_date: toIsoDate(f.take('moveOutDate')),
    notice_date: toIsoDate(f.take('noticeDate')),
    signed_date: toIsoDate(f.take('leaseSignedDate')),
    // The CDM requires a rent; a source without one is shown as zero.
    rent_amount: rent ?? { amount: 0, currency },
    security_deposit: moneyOf(f.take('securityDeposit'), currency),
    balance: moneyOf(f.take('balance'), currency),
    term_months: integer(f.take('leaseTermMonths')),
    renewal_status: snakeName(f.take('renewalOfferStatus')),
    is_renewal: bool(f.take('isRenewal')),
    concessions: text(f.take('concessions')),
    notes: text(f.take('notes')),
    custom_data: f.customData(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Setup lists (what writes accept at a property)
// ---------------------------------------------------------------------------------------------------------------

/** An entry of a setup list (`{floorplanId, floorplanName}`, `{id, name}`, …) as a write option; its name defaults to its id. */
export function setupOption(raw: unknown, idField: string, nameField: string): SourceOption {
  const obj = Fields.of(raw, idField.replace(/Id$/, ''));
  const value = nativeId(obj[idField], idField);
  return { value, label: text(obj[nameField]) ?? value };
}

/** An entry of `getUnitSpaces`: the unit's native id, its number, and the floor plan a lease on it names. */
export function unitSpaceOption(raw: unknown): SourceUnitSpace {
  const obj = Fields.of(raw, 'unitSpace');
  return { ...setupOption(obj, 'unitSpaceId', 'unitNumber'), floorplan_id: reference(obj.floorplanId) };
}

export const MAPPERS = { property: mapProperty, unit: mapUnit, resident: mapResident, lease: mapLease } as const;
