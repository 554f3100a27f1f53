/**
 * Wire shapes of the Entrata-style API, as its documentation describes them (the sandbox PMS emits exactly these).
 * Awkward on purpose, like real systems: money as decimal strings, dates as MM/DD/YYYY, times in the property's
 * local zone with its UTC offset ("2025-01-31T10:04:05-06:00", no milliseconds), status ids instead of names,
 * numbers as strings, "" for absent text, and any list of one element sent as that element alone.
 */

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
