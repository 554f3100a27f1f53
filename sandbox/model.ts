/**
 * The sandbox PMS's own record model: what the simulated system knows about its properties, units, residents and
 * leases, in no wire's words. The generator, the change scripts, the writes and the store work on it; each flavour
 * (sandbox/entrata/, sandbox/buildium/) encodes it for its wire when it serves a record, and decodes its wire's
 * writes into it. So one company's data is the same whichever way it is served, and a flavour is a pure encoding.
 *
 * Conventions: money in integer cents (USD), dates ISO `YYYY-MM-DD` or null, instants epoch milliseconds, absent text
 * "" (a wire that wants null says so in its encoder), lists always arrays. A record's last-update time is not in the
 * model: it is the store's `updated_at` column, set by the database clock on every change and write.
 */

export type Entity = 'property' | 'unit' | 'resident' | 'lease';
/** The next native id to give out, per entity (a company's counters). */
export type NextIds = Record<Entity, number>;
export const ENTITIES: readonly Entity[] = ['property', 'unit', 'resident', 'lease'];

/** A lease's place in its lifecycle. */
export type LeaseState = 'pending' | 'active' | 'notice' | 'ended' | 'cancelled' | 'terminated' | 'evicted';
/** How a lease runs: for a fixed term, for a term that rolls over month to month, or month to month from the start. */
export type LeaseKind = 'fixed' | 'fixed_with_rollover' | 'month_to_month';
export type UnitState = 'vacant_ready' | 'vacant_not_ready' | 'vacant_rented' | 'occupied' | 'notice_unrented' | 'notice_rented';
export type ResidentState = 'applicant' | 'current' | 'notice' | 'past';
export type TenantRole = 'primary' | 'responsible' | 'occupant' | 'guarantor';
export type PhoneKind = 'home' | 'office' | 'mobile' | 'fax';

export interface Address {
  line1: string;
  line2: string;
  city: string;
  state: string;
  postalCode: string;
  country: string;
}

export interface Phone {
  number: string;
  kind: PhoneKind;
  primary: boolean;
}

export interface Floorplan {
  id: number;
  name: string;
  bedrooms: number;
  bathrooms: number;
  squareFeet: number;
}

interface Base {
  id: number;
  /** When the record was first entered (epoch ms). */
  created: number;
  /** The IANA zone of the record's property: a flavour that writes local times writes them in it. */
  zone: string;
  /** Made unreadable by the `corrupt` change script: each flavour serves one value its clients cannot read. */
  malformed?: true;
}

export interface PropertyModel extends Base {
  name: string;
  marketingName: string;
  kind: 'Apartment' | 'Townhome' | 'Senior' | 'Student';
  active: boolean;
  description: string;
  yearBuilt: number | null;
  units: number;
  buildings: number;
  floors: number;
  website: string;
  email: string;
  address: Address;
  phones: Phone[];
  latitude: number;
  longitude: number;
  managementCompany: string;
  taxId: string;
  petPolicy: string;
  smokingPolicy: string;
  photos: { url: string; caption: string }[];
  parkingSpaces: number;
  amenities: string;
  officeHours: string;
  floorplans: Floorplan[];
}

export interface UnitModel extends Base {
  propertyId: number;
  unitNumber: string;
  buildingName: string;
  floorNumber: number;
  floorplanId: number | null;
  floorplanName: string;
  bedrooms: number | null;
  bathrooms: number | null;
  squareFeet: number | null;
  maxOccupants: number;
  marketRentCents: number | null;
  status: UnitState;
  remarks: string;
  address: Address;
  amenities: string;
  furnished: boolean;
  parkingSpaces: number;
  availableOn: string | null;
}

export interface ResidentModel extends Base {
  propertyId: number;
  firstName: string;
  middleName: string;
  lastName: string;
  email: string;
  phones: Phone[];
  dateOfBirth: string | null;
  address: Address | null;
  status: ResidentState;
  leadSource: string;
  preferredLanguage: string;
  employer: string;
}

export interface LeaseModel extends Base {
  propertyId: number;
  unitId: number;
  state: LeaseState;
  kind: LeaseKind;
  start: string;
  end: string;
  moveIn: string | null;
  moveOut: string | null;
  notice: string | null;
  signed: string | null;
  rentCents: number;
  depositCents: number | null;
  balanceCents: number;
  termMonths: number;
  renewalOfferStatus: string;
  previousLeaseId: number | null;
  concessions: string;
  notes: string;
  /** The people on the lease, the primary first. */
  tenants: { id: number; role: TenantRole }[];
  petCount: number;
  parkingSpaces: number;
  occupants: number;
  leadSource: string;
}

export interface ModelOf {
  property: PropertyModel;
  unit: UnitModel;
  resident: ResidentModel;
  lease: LeaseModel;
}
export type AnyModel = ModelOf[Entity];

/** The store's reference columns of a record: what the change scripts and filters look records up by. */
export function refsOf(entity: Entity, m: AnyModel) {
  const lease = entity === 'lease' ? (m as LeaseModel) : undefined;
  return {
    property_id: entity === 'property' ? null : (m as UnitModel | ResidentModel | LeaseModel).propertyId,
    unit_id: lease ? lease.unitId : null,
    previous_id: lease ? lease.previousLeaseId : null,
    customer_ids: lease ? lease.tenants.map((t) => t.id) : null,
  };
}

/** What units, residents and leases of a property take from it. */
export interface PropertyContext {
  id: number;
  timeZone: string;
  address: Address;
  baseRentCents: number;
  floorplans: Floorplan[];
}
