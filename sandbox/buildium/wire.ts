/**
 * The buildium flavour's wire (docs/sources/buildium.md): the record model encoded as a Buildium-style REST API
 * sends it, and its vocabularies both ways. PascalCase names, integer ids, money as JSON numbers with two decimals
 * (`1035.50`, written literally), dates `YYYY-MM-DD`, times UTC `YYYY-MM-DDTHH:MM:SSZ`, null for an absent value,
 * lists always arrays. Written for the sandbox alone, from that page; the connector is written from it separately.
 * A record marked malformed carries one value of the wrong type for its field, as bad data entry would leave it.
 */
import type { Address, Entity, LeaseKind, LeaseModel, LeaseState, Phone, PhoneKind, PropertyModel, ResidentModel, TenantRole, UnitModel } from '../model';
import { decimalOf, utcTime } from '../time';

export const LEASE_TYPES = { fixed: 'Fixed', fixed_with_rollover: 'FixedWithRollover', month_to_month: 'AtWill' } as const satisfies Record<LeaseKind, string>;
export const ROLES = { primary: 'Primary', responsible: 'CoTenant', occupant: 'Occupant', guarantor: 'Cosigner' } as const satisfies Record<TenantRole, string>;
export const PHONE_TYPES = { home: 'Home', office: 'Work', mobile: 'Mobile', fax: 'Fax' } as const satisfies Record<PhoneKind, string>;
export const ADDRESS_TYPES = ['Primary', 'Alternate'] as const;

/** Lease statuses fold the model's lifecycle into three: not yet begun, running (notice included), over. */
function leaseStatus(state: LeaseState): 'Active' | 'Past' | 'Future' {
  if (state === 'pending') return 'Future';
  return state === 'active' || state === 'notice' ? 'Active' : 'Past';
}

/** `UnitBedrooms`: index = number of bedrooms (0 a studio); more than nine is NineBedPlus; null NotSet. */
export const BEDROOMS = ['Studio', 'OneBed', 'TwoBed', 'ThreeBed', 'FourBed', 'FiveBed', 'SixBed', 'SevenBed', 'EightBed', 'NineBedPlus'] as const;
/** `UnitBathrooms` by number of bathrooms; more than five is FivePlusBath; null NotSet. */
export const BATHROOMS: readonly (readonly [number, string])[] = [
  [1, 'OneBath'],
  [1.5, 'OnePointFiveBath'],
  [2, 'TwoBath'],
  [2.5, 'TwoPointFiveBath'],
  [3, 'ThreeBath'],
  [3.5, 'ThreePointFiveBath'],
  [4, 'FourBath'],
  [4.5, 'FourPointFiveBath'],
  [5, 'FiveBath'],
  [6, 'FivePlusBath'],
];

const bedroomsOut = (n: number | null) => (n === null ? 'NotSet' : BEDROOMS[Math.min(Math.max(0, Math.floor(n)), 9)]!);
function bathroomsOut(n: number | null): string {
  if (n === null || n < 1) return 'NotSet';
  if (n > 5) return 'FivePlusBath';
  // The nearest half at or below.
  const half = Math.floor(n * 2) / 2;
  return BATHROOMS.find(([v]) => v === half)![1];
}

// Money is emitted as a marked string and the marks replaced in the finished JSON text: JSON.stringify cannot write
// 1035.50 (it writes 1035.5), and one replace over a page costs less than a serializer of our own.
const MONEY_MARK = '\u0000money:';
const MONEY_IN_JSON = /"\\u0000money:(-?\d+\.\d\d)"/g;
const money = (cents: number | null) => (cents === null ? null : `${MONEY_MARK}${decimalOf(cents)}`);

/** JSON text of encoded records, with money as numbers of two decimals. */
export const toJson = (value: unknown): string => JSON.stringify(value).replace(MONEY_IN_JSON, '$1');

/** An absent value is null, never "". */
const nz = (s: string) => (s === '' ? null : s);

const addressOut = (a: Address | null) =>
  a === null
    ? null
    : { AddressLine1: a.line1, AddressLine2: nz(a.line2), AddressLine3: null, City: a.city, State: a.state, PostalCode: a.postalCode, Country: a.country };
const phonesOut = (ps: Phone[]) => ps.map((p) => ({ Number: p.number, Type: PHONE_TYPES[p.kind] }));

function property(m: PropertyModel) {
  return {
    Id: m.id,
    Name: m.name,
    StructureDescription: nz(m.description),
    IsActive: m.active,
    RentalType: 'Residential',
    RentalSubType: m.kind === 'Townhome' ? 'Townhome' : 'MultiFamily',
    YearBuilt: m.yearBuilt,
    NumberUnits: m.units,
    NumberBuildings: m.buildings,
    NumberFloors: m.floors,
    Address: addressOut(m.address),
    PhoneNumbers: phonesOut(m.phones),
    Email: nz(m.email),
    Website: nz(m.website),
    Latitude: m.latitude,
    Longitude: m.longitude,
    TimeZone: m.zone,
    ManagementCompany: nz(m.managementCompany),
    TaxId: nz(m.taxId),
    PetPolicy: nz(m.petPolicy),
    SmokingPolicy: nz(m.smokingPolicy),
    Photos: m.photos.map((p) => ({ Url: p.url, Caption: p.caption })),
    MarketingName: nz(m.marketingName),
    Amenities: nz(m.amenities),
    OfficeHours: nz(m.officeHours),
  };
}

function unit(m: UnitModel) {
  return {
    Id: m.id,
    PropertyId: m.propertyId,
    UnitNumber: m.unitNumber,
    FloorPlanId: m.floorplanId,
    FloorPlanName: nz(m.floorplanName),
    UnitBedrooms: bedroomsOut(m.bedrooms),
    UnitBathrooms: bathroomsOut(m.bathrooms),
    UnitSize: m.squareFeet,
    MaxOccupants: m.maxOccupants,
    MarketRent: money(m.marketRentCents),
    OccupancyStatus: m.status === 'occupied' ? 'Occupied' : m.status.startsWith('notice') ? 'Notice' : 'Vacant',
    Description: nz(m.remarks),
    Address: addressOut(m.address),
    BuildingName: nz(m.buildingName),
    FloorNumber: m.floorNumber,
  };
}

function tenant(m: ResidentModel) {
  return {
    Id: m.id,
    PropertyId: m.propertyId,
    FirstName: m.firstName,
    MiddleName: nz(m.middleName),
    LastName: m.lastName,
    Email: nz(m.email),
    PhoneNumbers: phonesOut(m.phones),
    DateOfBirth: m.dateOfBirth,
    PrimaryAddress: addressOut(m.address),
    Status: m.status === 'applicant' ? 'Future' : m.status === 'past' ? 'Past' : 'Current',
    PreferredLanguage: nz(m.preferredLanguage),
    Employer: nz(m.employer),
  };
}

function lease(m: LeaseModel, unitNumber: string | null) {
  return {
    Id: m.id,
    PropertyId: m.propertyId,
    UnitId: m.unitId,
    UnitNumber: unitNumber,
    LeaseType: LEASE_TYPES[m.kind],
    LeaseStatus: leaseStatus(m.state),
    LeaseFromDate: m.start,
    LeaseToDate: m.kind === 'month_to_month' ? null : m.end,
    MoveInDate: m.moveIn,
    MoveOutDate: m.moveOut,
    NoticeGivenDate: m.notice,
    SignedDate: m.signed,
    TermMonths: m.termMonths,
    Rent: money(m.rentCents),
    SecurityDeposit: money(m.depositCents),
    Balance: money(m.balanceCents),
    Occupants: m.occupants,
    IsRenewal: m.previousLeaseId !== null,
    RenewalOfLeaseId: m.previousLeaseId,
    Notes: nz(m.notes),
    Tenants: m.tenants.map((t) => ({ Id: t.id, Role: ROLES[t.role] })),
    PetCount: m.petCount,
    ParkingSpaces: m.parkingSpaces,
  };
}

/** Per entity, the value a malformed record carries instead of its own. */
function malformed(entity: Entity, id: number): Record<string, unknown> {
  switch (entity) {
    case 'property':
      return { LastUpdatedDateTime: '2025-13-45T25:61:00Z' };
    case 'unit':
      return { MarketRent: 'call for price' };
    case 'resident':
      return { DateOfBirth: '1990-02-30' };
    default:
      return [{ LeaseFromDate: 'TBD' }, { Rent: '1,035.50' }, { LeaseType: 'Weekly' }][id % 3]!;
  }
}

/**
 * A stored record as the buildium wire's object (money still marked: finish with toJson). `updated` is its
 * last-update time (epoch ms); `unitNumber` a lease's unit's number.
 */
export function encode(
  entity: Entity,
  model: PropertyModel | UnitModel | ResidentModel | LeaseModel,
  updated: number,
  unitNumber?: string | null,
): Record<string, unknown> {
  let out: Record<string, unknown>;
  switch (entity) {
    case 'property':
      out = property(model as PropertyModel);
      break;
    case 'unit':
      out = unit(model as UnitModel);
      break;
    case 'resident':
      out = tenant(model as ResidentModel);
      break;
    default:
      out = lease(model as LeaseModel, unitNumber ?? null);
  }
  out.CreatedDateTime = utcTime(model.created);
  out.LastUpdatedDateTime = utcTime(updated);
  if (model.malformed) Object.assign(out, malformed(entity, model.id));
  return out;
}
