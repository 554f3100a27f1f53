/**
 * From the Buildium-style wire (docs/sources/buildium.md) to CDM input. Pure functions, and strict where the page is:
 * ids are JSON integers, money a JSON number, dates `YYYY-MM-DD`, times UTC `YYYY-MM-DDTHH:MM:SSZ`, enumerations one
 * of the page's names; anything else throws MappingError and the connector sets the record aside as skipped.
 * - money: the number's shortest decimal form to integer minor units by integer arithmetic (1035.5 -> 103550), in
 *   the company's currency (the wire names none; USD unless the connector is told otherwise);
 * - statuses, lease types, roles and phone types fold into the CDM's vocabularies as the page's last section says;
 * - bedrooms and bathrooms are names (`TwoBed`, `OnePointFiveBath`): whole numbers in the CDM, `NotSet` none (a half
 *   bath counts its whole ones, its name kept in custom_data as `UnitBathrooms`);
 * - a phone list has no primary flag: the first phone listed is the primary one (a write sends the primary first);
 * - every field the CDM has no column for lands in custom_data under its source name (nested ones under a dotted
 *   path, e.g. "Address.AddressLine3"), its times as UTC ISO with milliseconds, keys in sorted order.
 */
import type { Address, JsonObject, LeaseInput, Money, Phone, PropertyInput, ResidentInput, UnitInput } from '../../domain/cdm';
import { addressFrom, decimalToMinor, exponentOf, Fields, MappingError, validDate, type Normalize } from '../values';

export { MappingError };

/** The currency of a company's amounts: the wire does not say, the sandbox and US systems are in dollars. */
export const DEFAULT_CURRENCY = 'USD';

// ---------------------------------------------------------------------------------------------------------------
// Scalars, as the page writes them
// ---------------------------------------------------------------------------------------------------------------

/** Text; null (and an empty string, which the page says is never sent) is none. */
export function str(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw new MappingError(`not text: ${JSON.stringify(value)}`);
  const t = value.trim();
  return t === '' ? null : t;
}

function int(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new MappingError(`not an integer: ${JSON.stringify(value)}`);
  return value;
}

function num(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new MappingError(`not a number: ${JSON.stringify(value)}`);
  return value;
}

function bool(value: unknown): boolean | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'boolean') throw new MappingError(`not a boolean: ${JSON.stringify(value)}`);
  return value;
}

/** A record's `Id` or a reference to one: a positive JSON integer, as text. */
export function idOf(value: unknown, what: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw new MappingError(`${what} is not an id: ${JSON.stringify(value)}`);
  return String(value);
}

/** A JSON number with (up to) two decimals to Money; null is none. Never through a float product. */
export function moneyOf(value: unknown, currency = DEFAULT_CURRENCY): Money | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new MappingError(`not a decimal amount: ${JSON.stringify(value)}`);
  return { amount: decimalToMinor(value, exponentOf(currency)), currency };
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** `YYYY-MM-DD`, a day of the calendar; null is none. */
export function dateOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const m = typeof value === 'string' ? DATE.exec(value) : null;
  if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) throw new MappingError(`not a date: ${JSON.stringify(value)}`);
  return value as string;
}

const TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?Z$/;
/** UTC `YYYY-MM-DDTHH:MM:SSZ` (a fraction of a second allowed) to ISO 8601 with milliseconds; null is none. */
export function timeOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const m = typeof value === 'string' ? TIME.exec(value) : null;
  const [y, mo, d, h, mi, s] = m ? m.slice(1, 7).map(Number) : [];
  if (!m || !validDate(y!, mo!, d!) || h! > 23 || mi! > 59 || s! > 59) throw new MappingError(`not a UTC time: ${JSON.stringify(value)}`);
  return new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, s!, Number((m[7] ?? '.0').slice(1, 4).padEnd(3, '0')))).toISOString();
}

/** One of an enumeration's names, as the CDM value `table` gives it; null is none. */
function oneOf<T>(table: Record<string, T>, value: unknown, what: string): T | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string' || !Object.hasOwn(table, value)) throw new MappingError(`unknown ${what}: ${JSON.stringify(value)}`);
  return table[value]!;
}

/**
 * Property sub-types as the CDM names them (Entrata's words): a multi-family building is an `apartment` property, a
 * condo or townhome a `townhome`; any other name in CDM style (`SingleFamily` -> `single_family`).
 */
const PROPERTY_TYPES: Record<string, string> = { MultiFamily: 'apartment', Townhome: 'townhome', Condo: 'townhome', CondoTownhome: 'townhome' };

function propertyTypeOf(value: unknown): string | null {
  return typeof value === 'string' && Object.hasOwn(PROPERTY_TYPES, value) ? PROPERTY_TYPES[value]! : snakeOf(value);
}

/** "MultiFamily" -> "multi_family": PascalCase names to CDM-style ones. */
function snakeOf(value: unknown): string | null {
  const t = str(value);
  if (t === null) return null;
  return (
    t
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_|_$/g, '') || null
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Vocabularies (the page's lists, and what each folds into)
// ---------------------------------------------------------------------------------------------------------------

const LEASE_STATUSES = { Active: 'active', Future: 'pending', Past: 'ended' } as const;
export const LEASE_TYPES = { Fixed: 'fixed', FixedWithRollover: 'fixed_with_rollover', AtWill: 'month_to_month' } as const;
const OCCUPANCY_STATUSES = { Vacant: 'vacant', Occupied: 'occupied', Notice: 'notice' } as const;
const TENANT_STATUSES = { Future: 'applicant', Current: 'current', Past: 'past' } as const;
export const TENANT_ROLES = { Primary: 'primary', CoTenant: 'responsible', Occupant: 'occupant', Cosigner: 'guarantor' } as const;
export const PHONE_TYPES = { Home: 'home', Work: 'office', Mobile: 'mobile', Fax: 'fax' } as const;
export const ADDRESS_TYPES = ['Primary', 'Alternate'] as const;

export const BEDROOMS = {
  NotSet: null,
  Studio: 0,
  OneBed: 1,
  TwoBed: 2,
  ThreeBed: 3,
  FourBed: 4,
  FiveBed: 5,
  SixBed: 6,
  SevenBed: 7,
  EightBed: 8,
  NineBedPlus: 9,
} as const;
export const BATHROOMS = {
  NotSet: null,
  OneBath: 1,
  OnePointFiveBath: 1.5,
  TwoBath: 2,
  TwoPointFiveBath: 2.5,
  ThreeBath: 3,
  ThreePointFiveBath: 3.5,
  FourBath: 4,
  FourPointFiveBath: 4.5,
  FiveBath: 5,
  FivePlusBath: 5,
} as const;

/** The name of a CDM value in a vocabulary (the first that folds into it), for writes; undefined when none does. */
export function nameOf<T>(table: Record<string, T>, value: T): string | undefined {
  return Object.keys(table).find((k) => table[k] === value);
}

// ---------------------------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------------------------

/** Leftover times (every record's CreatedDateTime and LastUpdatedDateTime) as UTC ISO with milliseconds. */
const TIME_FIELDS = new Set(['CreatedDateTime', 'LastUpdatedDateTime']);
const normalize: Normalize = (key, value) => (TIME_FIELDS.has(key) ? timeOf(value) : value);

/** A list the page says is always an array; null is taken as none. */
function array(value: unknown): unknown[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new MappingError(`not a list: ${JSON.stringify(value)}`);
  return value;
}

function recordOf(raw: unknown, what: string): { f: Fields; x_id: string } {
  const f = new Fields(Fields.of(raw, what), '', {}, normalize);
  const x_id = idOf(f.take('Id'), 'Id');
  if (x_id === null) throw new MappingError('record without Id');
  return { f, x_id };
}

const ADDRESS = { line_1: 'AddressLine1', line_2: 'AddressLine2', city: 'City', state: 'State', postal_code: 'PostalCode', country: 'Country' };
const addressOf = (f: Fields | null): Address | null => addressFrom(f, ADDRESS, str);

function phonesOf(f: Fields, key: string): Phone[] | null {
  const present = f.take(key) !== null && f.take(key) !== undefined;
  const phones: Phone[] = [];
  for (const p of f.list(key, array, `${key} element`)) {
    const number = str(p.take('Number'));
    const type = oneOf(PHONE_TYPES, p.take('Type'), 'phone Type') ?? 'other';
    p.finish();
    if (number) phones.push({ type, number, primary: phones.length === 0 });
  }
  return phones.length > 0 || present ? phones : null;
}

export function mapProperty(raw: unknown): PropertyInput {
  const { f, x_id } = recordOf(raw, 'rental property');
  const active = bool(f.take('IsActive'));
  const media = f.list('Photos', array, 'Photos element').map((p) => {
    const m: JsonObject = { type: 'photo', url: str(p.take('Url')), caption: str(p.take('Caption')) };
    p.finish();
    return m;
  });
  return {
    x_id,
    name: str(f.take('Name')),
    type: propertyTypeOf(f.take('RentalSubType')),
    status: active === null ? null : active ? 'active' : 'inactive',
    address: addressOf(f.child('Address')),
    description: str(f.take('StructureDescription')),
    year_built: int(f.take('YearBuilt')),
    total_units: int(f.take('NumberUnits')),
    total_buildings: int(f.take('NumberBuildings')),
    total_floors: int(f.take('NumberFloors')),
    website_url: str(f.take('Website')),
    email: str(f.take('Email')),
    phones: phonesOf(f, 'PhoneNumbers'),
    latitude: num(f.take('Latitude')),
    longitude: num(f.take('Longitude')),
    timezone_id: str(f.take('TimeZone')),
    management_company_name: str(f.take('ManagementCompany')),
    tax_id: str(f.take('TaxId')),
    pet_policy: snakeOf(f.take('PetPolicy')),
    smoking_policy: snakeOf(f.take('SmokingPolicy')),
    media: media.length > 0 ? media : null,
    custom_data: f.customData(),
  };
}

export function mapUnit(raw: unknown, currency = DEFAULT_CURRENCY): UnitInput {
  const { f, x_id } = recordOf(raw, 'rental unit');
  // The CDM counts whole bathrooms; a half bath (`OnePointFiveBath`) counts its whole ones, and the source's own
  // name stays in custom_data (the field is left untaken).
  const baths = oneOf(BATHROOMS, f.peek('UnitBathrooms'), 'UnitBathrooms');
  if (baths === null || Number.isInteger(baths)) f.take('UnitBathrooms');
  return {
    x_id,
    property_x_id: idOf(f.take('PropertyId'), 'PropertyId'),
    unit_number: str(f.take('UnitNumber')),
    floorplan_id: idOf(f.take('FloorPlanId'), 'FloorPlanId'),
    floorplan_name: str(f.take('FloorPlanName')),
    bedrooms: oneOf(BEDROOMS, f.take('UnitBedrooms'), 'UnitBedrooms'),
    bathrooms: baths === null ? null : Math.floor(baths),
    square_feet: int(f.take('UnitSize')),
    max_occupants: int(f.take('MaxOccupants')),
    market_rent: moneyOf(f.take('MarketRent'), currency),
    status: oneOf(OCCUPANCY_STATUSES, f.take('OccupancyStatus'), 'OccupancyStatus'),
    note: str(f.take('Description')),
    address: addressOf(f.child('Address')),
    custom_data: f.customData(),
  };
}

export function mapResident(raw: unknown): ResidentInput {
  const { f, x_id } = recordOf(raw, 'tenant');
  return {
    x_id,
    property_x_id: idOf(f.take('PropertyId'), 'PropertyId'),
    first_name: str(f.take('FirstName')),
    middle_name: str(f.take('MiddleName')),
    last_name: str(f.take('LastName')),
    email: str(f.take('Email')),
    phones: phonesOf(f, 'PhoneNumbers'),
    date_of_birth: dateOf(f.take('DateOfBirth')),
    address: addressOf(f.child('PrimaryAddress')),
    status: oneOf(TENANT_STATUSES, f.take('Status'), 'tenant Status'),
    custom_data: f.customData(),
  };
}

export function mapLease(raw: unknown, currency = DEFAULT_CURRENCY): LeaseInput {
  const { f, x_id } = recordOf(raw, 'lease');
  const residents = f.list('Tenants', array, 'Tenants element').map((t) => {
    const id = idOf(t.take('Id'), 'Tenants.Id');
    if (id === null) throw new MappingError('lease tenant without Id');
    const r = { x_id: id, role: oneOf(TENANT_ROLES, t.take('Role'), 'tenant Role') ?? 'occupant' };
    t.finish();
    return r;
  });
  const rent = moneyOf(f.take('Rent'), currency);
  const status = oneOf(LEASE_STATUSES, f.take('LeaseStatus'), 'LeaseStatus');
  const noticeDate = dateOf(f.take('NoticeGivenDate'));
  return {
    x_id,
    property_x_id: idOf(f.take('PropertyId'), 'PropertyId'),
    unit_x_id: idOf(f.take('UnitId'), 'UnitId'),
    previous_lease_x_id: idOf(f.take('RenewalOfLeaseId'), 'RenewalOfLeaseId'),
    residents,
    // The wire's three statuses have no notice: a running lease whose tenant has given notice is on notice.
    status: status === 'active' && noticeDate !== null ? 'notice' : status,
    type: oneOf(LEASE_TYPES, f.take('LeaseType'), 'LeaseType'),
    start_date: dateOf(f.take('LeaseFromDate')),
    end_date: dateOf(f.take('LeaseToDate')),
    move_in_date: dateOf(f.take('MoveInDate')),
    move_out_date: dateOf(f.take('MoveOutDate')),
    notice_date: noticeDate,
    signed_date: dateOf(f.take('SignedDate')),
    // The CDM requires a rent; a lease without one is shown as zero.
    rent_amount: rent ?? { amount: 0, currency },
    security_deposit: moneyOf(f.take('SecurityDeposit'), currency),
    balance: moneyOf(f.take('Balance'), currency),
    term_months: int(f.take('TermMonths')),
    renewal_status: null,
    is_renewal: bool(f.take('IsRenewal')),
    concessions: null,
    notes: str(f.take('Notes')),
    custom_data: f.customData(),
  };
}

export const MAPPERS = { property: mapProperty, unit: mapUnit, resident: mapResident, lease: mapLease } as const;
