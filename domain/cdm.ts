/**
 * The Common Data Model: the four synced entities as the API shows them, and the shape the source mapping
 * produces before references are resolved to CDM ids. Field lists follow docs/api.md and docs/decisions.md; every field is
 * always present, `null` where the source has no value.
 */
export const ENTITIES = ['property', 'unit', 'resident', 'lease'] as const;
export type Entity = (typeof ENTITIES)[number];

/** Sync order: a record's references are synced before it. */
export const SYNC_ORDER: readonly Entity[] = ['property', 'unit', 'resident', 'lease'];
/**
 * SYNC_ORDER in stages, as the sync workflow runs them: an entity after everything it references. Units and
 * residents reference only properties, so they run side by side.
 */
export const SYNC_STAGES: readonly (readonly Entity[])[] = [['property'], ['unit', 'resident'], ['lease']];
if (SYNC_STAGES.flat().join() !== SYNC_ORDER.join()) throw new Error('SYNC_STAGES must list SYNC_ORDER, in order');

export interface Money {
  /** Integer minor units. */
  amount: number;
  currency: string;
}
export interface Address {
  line_1: string | null;
  line_2: string | null;
  city: string | null;
  state: string | null;
  postal_code: string | null;
  country: string | null;
}
export interface Phone {
  type: string;
  number: string;
  primary: boolean;
}
export type JsonObject = Record<string, unknown>;

/** The values a lease's, a unit's, a resident's and a lease resident's coded fields take, whatever the source's dialect. */
export const LEASE_STATUSES = ['pending', 'active', 'notice', 'ended', 'terminated', 'evicted', 'cancelled'] as const;
export type LeaseStatus = (typeof LEASE_STATUSES)[number];
export const UNIT_STATUSES = ['vacant', 'occupied', 'notice'] as const;
export const RESIDENT_STATUSES = ['applicant', 'current', 'notice', 'past'] as const;
export const LEASE_RESIDENT_ROLES = ['primary', 'responsible', 'occupant', 'guarantor'] as const;

interface Common {
  id: string;
  x_id: string;
  organization_id: string;
  integration_id: string;
  custom_data: JsonObject;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  ps_synced_at: string | null;
}

interface PropertyFields {
  name: string | null;
  type: string | null;
  status: string | null;
  address: Address | null;
  description: string | null;
  year_built: number | null;
  total_units: number | null;
  total_buildings: number | null;
  total_floors: number | null;
  website_url: string | null;
  email: string | null;
  phones: Phone[] | null;
  latitude: number | null;
  longitude: number | null;
  timezone_id: string | null;
  management_company_name: string | null;
  tax_id: string | null;
  pet_policy: string | null;
  smoking_policy: string | null;
  media: JsonObject[] | null;
}
export type Property = Common & PropertyFields;
/** The reduced record of the property list. */
export type PropertySummary = Pick<
  Property,
  'id' | 'x_id' | 'organization_id' | 'integration_id' | 'name' | 'type' | 'status' | 'custom_data' | 'created_at' | 'updated_at'
>;

interface UnitFields {
  unit_number: string | null;
  /** The source id of the unit's floor plan: what a lease create on this unit names as `floorplan_id`. */
  floorplan_id: string | null;
  floorplan_name: string | null;
  bedrooms: number | null;
  bathrooms: number | null;
  square_feet: number | null;
  max_occupants: number | null;
  market_rent: Money | null;
  status: string | null;
  note: string | null;
  address: Address | null;
}
export type Unit = Common & { property_id: string | null } & UnitFields;

interface ResidentFields {
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  email: string | null;
  phones: Phone[] | null;
  date_of_birth: string | null;
  address: Address | null;
  status: string | null;
}
export type Resident = Common & { property_id: string | null } & ResidentFields;

interface LeaseFields {
  status: string | null;
  type: string | null;
  start_date: string | null;
  end_date: string | null;
  move_in_date: string | null;
  move_out_date: string | null;
  notice_date: string | null;
  signed_date: string | null;
  rent_amount: Money;
  security_deposit: Money | null;
  balance: Money | null;
  term_months: number | null;
  renewal_status: string | null;
  is_renewal: boolean | null;
  concessions: string | null;
  notes: string | null;
}
export interface LeaseResident {
  resident_id: string;
  x_id: string;
  role: string;
}
export type Lease = Common & {
  property_id: string | null;
  unit_id: string | null;
  resident_ids: string[];
  residents: LeaseResident[];
  previous_lease_id: string | null;
} & LeaseFields;

/**
 * What the source mapping yields: the entity's own fields, `custom_data`, and references by source x_id.
 * The upsert path resolves references to CDM ids.
 */
export type PropertyInput = { x_id: string; custom_data: JsonObject } & PropertyFields;
export type UnitInput = { x_id: string; property_x_id: string | null; custom_data: JsonObject } & UnitFields;
export type ResidentInput = { x_id: string; property_x_id: string | null; custom_data: JsonObject } & ResidentFields;
export type LeaseInput = {
  x_id: string;
  property_x_id: string | null;
  unit_x_id: string | null;
  previous_lease_x_id: string | null;
  residents: { x_id: string; role: string }[];
  custom_data: JsonObject;
} & LeaseFields;

export interface InputOf {
  property: PropertyInput;
  unit: UnitInput;
  resident: ResidentInput;
  lease: LeaseInput;
}
export interface RecordOf {
  property: Property;
  unit: Unit;
  resident: Resident;
  lease: Lease;
}
