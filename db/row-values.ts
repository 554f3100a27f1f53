/** Mapping CDM input to the column values of the cache's rows, references resolved by x_id. */
import type { Entity, InputOf, LeaseInput, PropertyInput, ResidentInput, UnitInput } from '../domain/cdm';

/** CDM ids of referenced records, by entity and source x_id. */
export interface Refs {
  property: Map<string, string>;
  unit: Map<string, string>;
  resident: Map<string, string>;
  lease: Map<string, string>;
}

/** The CDM id of a referenced record, by its x_id; null when there is no reference or the record is not cached. */
const idOf = (ids: Map<string, string>, xId: string | null | undefined): string | null => (xId ? (ids.get(xId) ?? null) : null);

function propertyValues(i: PropertyInput) {
  return {
    name: i.name,
    type: i.type,
    status: i.status,
    address: i.address,
    description: i.description,
    yearBuilt: i.year_built,
    totalUnits: i.total_units,
    totalBuildings: i.total_buildings,
    totalFloors: i.total_floors,
    websiteUrl: i.website_url,
    email: i.email,
    phones: i.phones,
    latitude: i.latitude,
    longitude: i.longitude,
    timezoneId: i.timezone_id,
    managementCompanyName: i.management_company_name,
    taxId: i.tax_id,
    petPolicy: i.pet_policy,
    smokingPolicy: i.smoking_policy,
    media: i.media,
  };
}
function unitValues(i: UnitInput, refs: Refs) {
  return {
    propertyId: idOf(refs.property, i.property_x_id),
    unitNumber: i.unit_number,
    floorplanId: i.floorplan_id,
    floorplanName: i.floorplan_name,
    bedrooms: i.bedrooms,
    bathrooms: i.bathrooms,
    squareFeet: i.square_feet,
    maxOccupants: i.max_occupants,
    marketRentAmount: i.market_rent?.amount ?? null,
    marketRentCurrency: i.market_rent?.currency ?? null,
    status: i.status,
    note: i.note,
    address: i.address,
  };
}
function residentValues(i: ResidentInput, refs: Refs) {
  return {
    propertyId: idOf(refs.property, i.property_x_id),
    firstName: i.first_name,
    middleName: i.middle_name,
    lastName: i.last_name,
    email: i.email,
    phones: i.phones,
    dateOfBirth: i.date_of_birth,
    address: i.address,
    status: i.status,
  };
}
function leaseValues(i: LeaseInput, refs: Refs) {
  return {
    propertyId: idOf(refs.property, i.property_x_id),
    unitId: idOf(refs.unit, i.unit_x_id),
    status: i.status,
    type: i.type,
    startDate: i.start_date,
    endDate: i.end_date,
    moveInDate: i.move_in_date,
    moveOutDate: i.move_out_date,
    noticeDate: i.notice_date,
    signedDate: i.signed_date,
    rentAmount: i.rent_amount.amount,
    rentCurrency: i.rent_amount.currency,
    securityDepositAmount: i.security_deposit?.amount ?? null,
    securityDepositCurrency: i.security_deposit?.currency ?? null,
    balanceAmount: i.balance?.amount ?? null,
    balanceCurrency: i.balance?.currency ?? null,
    termMonths: i.term_months,
    renewalStatus: i.renewal_status,
    isRenewal: i.is_renewal,
    previousLeaseId: idOf(refs.lease, i.previous_lease_x_id),
    concessions: i.concessions,
    notes: i.notes,
  };
}

/** Column values of one mapped record (its own fields, references resolved through `refs`); also used by bench baselines. */
export function rowValuesOf<E extends Entity>(entity: E, input: InputOf[E], refs: Refs): Record<string, unknown> {
  switch (entity) {
    case 'property':
      return propertyValues(input as PropertyInput);
    case 'unit':
      return unitValues(input as UnitInput, refs);
    case 'resident':
      return residentValues(input as ResidentInput, refs);
    default:
      return leaseValues(input as LeaseInput, refs);
  }
}
