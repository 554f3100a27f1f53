/**
 * Wire shapes of the Entrata-style API, as its documentation describes them (the sandbox PMS emits exactly these).
 * Awkward on purpose, like real systems: money as decimal strings, dates as MM/DD/YYYY, times in the property's
 * local zone with its UTC offset ("2025-01-31T10:04:05-06:00", no milliseconds), status ids instead of names,
 * numbers as strings, "" for absent text, and any list of one element sent as that element alone.
 */

/** A list as the API sends it: an array, or the lone element when there is exactly one. */
export type OneOrMany<T> = T | T[];

export interface NativeAddress {
  streetLine1: string;
  streetLine2: string;
  city: string;
  state: string;
  postalCode: string;
  country: string;
}

export interface NativePhone {
  phoneNumber: string;
  phoneNumberTypeId: number;
  /** "1" or "0" */
  isPrimary: string;
}

export interface NativeProperty {
  propertyId: number;
  propertyName: string;
  marketingName: string;
  propertyType: string;
  /** "0" active, "1" inactive */
  isDisabled: string;
  description: string;
  yearBuilt: string;
  numberOfUnits: number;
  numberOfBuildings: number;
  numberOfFloors: number;
  webSite: string;
  email: string;
  address: NativeAddress;
  phones: { phone: OneOrMany<NativePhone> };
  latitude: string;
  longitude: string;
  timeZone: string;
  managementCompany: string;
  taxId: string;
  petPolicy: string;
  smokingPolicy: string;
  photos: { photo: OneOrMany<{ url: string; caption: string }> } | null;
  currencyCode: string;
  parkingSpaces: number;
  amenities: string;
  officeHours: string;
  createdOn: string;
  updatedOn: string;
}

export interface NativeUnit {
  unitId: number;
  propertyId: number;
  unitNumber: string;
  buildingName: string;
  floorNumber: number;
  floorplanId: number;
  floorplanName: string;
  bedrooms: string;
  bathrooms: string;
  squareFeet: string;
  maxOccupants: number;
  marketRent: string;
  currencyCode: string;
  unitStatusTypeId: number;
  remarks: string;
  address: NativeAddress;
  amenities: string;
  isFurnished: string;
  parkingSpaces: number;
  availableOn: string;
  createdOn: string;
  updatedOn: string;
}

export interface NativeCustomer {
  customerId: number;
  propertyId: number;
  firstName: string;
  middleName: string;
  lastName: string;
  email: string;
  phones: { phone: OneOrMany<NativePhone> } | null;
  dateOfBirth: string;
  address: NativeAddress | null;
  customerStatusTypeId: number;
  leadSource: string;
  preferredLanguage: string;
  employer: string;
  createdOn: string;
  updatedOn: string;
}

export interface NativeLeaseCustomer {
  customerId: number;
  customerTypeId: number;
}

export interface NativeLease {
  leaseId: number;
  propertyId: number;
  unitId: number;
  leaseStatusTypeId: number;
  leaseIntervalTypeId: number;
  leaseStartDate: string;
  leaseEndDate: string;
  moveInDate: string;
  moveOutDate: string;
  noticeDate: string;
  leaseSignedDate: string;
  rent: string;
  securityDeposit: string;
  balance: string;
  currencyCode: string;
  leaseTermMonths: string;
  renewalOfferStatus: string;
  /** "1" or "0" */
  isRenewal: string;
  previousLeaseId: number | null;
  concessions: string;
  notes: string;
  customers: { customer: OneOrMany<NativeLeaseCustomer> };
  petCount: number;
  parkingSpaces: number;
  occupants: number;
  leadSource: string;
  createdOn: string;
  updatedOn: string;
}

export type NativeEntity = 'property' | 'unit' | 'resident' | 'lease';

/** The RPC service, read method and list keys of each entity. */
export const SERVICES = {
  property: { service: 'properties', read: 'getProperties', ids: 'propertyIds', outer: 'properties', inner: 'property', idField: 'propertyId' },
  unit: { service: 'propertyunits', read: 'getPropertyUnits', ids: 'unitIds', outer: 'propertyUnits', inner: 'propertyUnit', idField: 'unitId' },
  resident: { service: 'customers', read: 'getCustomers', ids: 'customerIds', outer: 'customers', inner: 'customer', idField: 'customerId' },
  lease: { service: 'leases', read: 'getLeases', ids: 'leaseIds', outer: 'leases', inner: 'lease', idField: 'leaseId' },
} as const;

/** Write methods per entity: create and update. */
export const WRITE_METHODS = {
  unit: { create: 'sendPropertyUnits', update: 'updatePropertyUnits' },
  resident: { create: 'sendCustomers', update: 'updateCustomers' },
  lease: { create: 'sendLeases', update: 'updateLease' },
} as const;

/** The most records one page may hold; a larger `per_page` is capped. */
export const MAX_PER_PAGE = 1000;

/**
 * Setup reads: what the write methods accept at one property (`propertyId` required). Floor plans, pick lists and
 * lease terms come whole; unit spaces page like the entity reads.
 */
export const SETUP_METHODS = {
  floorPlans: { service: 'properties', method: 'getFloorPlans', outer: 'floorPlans', inner: 'floorPlan' },
  pickLists: { service: 'properties', method: 'getPropertyPickLists', outer: 'pickLists' },
  unitSpaces: { service: 'propertyunits', method: 'getUnitSpaces', outer: 'unitSpaces', inner: 'unitSpace' },
  leaseTerms: { service: 'leases', method: 'getLeaseTerms', outer: 'leaseTerms', inner: 'leaseTerm' },
} as const;

export interface NativeFloorPlan {
  floorplanId: number;
  floorplanName: string;
  bedrooms: string;
  bathrooms: string;
  squareFeet: string;
}

export interface NativeUnitSpace {
  unitSpaceId: number;
  unitNumber: string;
  /** The unit's floor plan (a lease on the unit names it); null when it has none. */
  floorplanId: number | null;
}

export interface NativeLeaseTerm {
  leaseTermId: number;
  name: string;
  termMonths: string;
}

export interface NativePickListItem {
  id: number;
  name: string;
}

/** `getPropertyPickLists`: the code lists of lease applicants, each a wrapped list of `{id, name}`. */
export interface NativePickLists {
  customerRelationshipTypes: { customerRelationshipType: OneOrMany<NativePickListItem> } | Record<string, never>;
  phoneNumberTypes: { phoneNumberType: OneOrMany<NativePickListItem> } | Record<string, never>;
  addressTypes: { addressType: OneOrMany<NativePickListItem> } | Record<string, never>;
}
