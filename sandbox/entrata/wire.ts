/**
 * The entrata flavour's wire: the record model encoded as an Entrata-style API sends it. Awkward on purpose, like
 * the real thing: money as decimal strings, dates as MM/DD/YYYY, times in the property's local zone with its offset
 * (whole seconds), status ids instead of names, numbers as strings, "" for absent text, and any list of one element
 * sent as that element alone. A record marked malformed carries one value its clients cannot read.
 */
import type { Address, Entity, LeaseModel, Phone, PropertyModel, ResidentModel, UnitModel } from '../model';
import { decimalOf, localTime, usOfIso } from '../time';
import { CUSTOMER_STATUS_ID, leaseStatusId, PHONE_TYPE_ID, ROLE_ID, UNIT_STATUS_ID } from './codes';

/** The RPC service, read method and list keys of each entity. */
export const SERVICES = {
  property: { service: 'properties', read: 'getProperties', ids: 'propertyIds', outer: 'properties', inner: 'property' },
  unit: { service: 'propertyunits', read: 'getPropertyUnits', ids: 'unitIds', outer: 'propertyUnits', inner: 'propertyUnit' },
  resident: { service: 'customers', read: 'getCustomers', ids: 'customerIds', outer: 'customers', inner: 'customer' },
  lease: { service: 'leases', read: 'getLeases', ids: 'leaseIds', outer: 'leases', inner: 'lease' },
} as const satisfies Record<Entity, { service: string; read: string; ids: string; outer: string; inner: string }>;

/** Write methods per entity: create and update. */
export const WRITE_METHODS = {
  unit: { create: 'sendPropertyUnits', update: 'updatePropertyUnits' },
  resident: { create: 'sendCustomers', update: 'updateCustomers' },
  lease: { create: 'sendLeases', update: 'updateLease' },
} as const;

/** The most records one page may hold; a larger `per_page` is capped. */
export const MAX_PER_PAGE = 1000;

const oneOrMany = <T>(items: T[]): T | T[] => (items.length === 1 ? items[0]! : items);
const money = (cents: number | null) => (cents === null ? '' : decimalOf(cents));
const num = (n: number | null) => (n === null ? '' : String(n));

const addressOut = (a: Address) => ({ streetLine1: a.line1, streetLine2: a.line2, city: a.city, state: a.state, postalCode: a.postalCode, country: a.country });
const phoneOut = (p: Phone) => ({ phoneNumber: p.number, phoneNumberTypeId: PHONE_TYPE_ID[p.kind], isPrimary: p.primary ? '1' : '0' });

/** Per entity, a value the connector's mapping refuses, as a PMS with bad data entry would serve it. */
const MALFORMED: Record<Entity, Record<string, unknown>> = {
  property: { updatedOn: '2025-13-45 25:61' },
  unit: { marketRent: 'call for price' },
  resident: { dateOfBirth: '02/30/1990' },
  lease: { rent: 'TBD' },
};

function property(m: PropertyModel, updatedOn: string) {
  return {
    propertyId: m.id,
    propertyName: m.name,
    marketingName: m.marketingName,
    propertyType: m.kind,
    isDisabled: m.active ? '0' : '1',
    description: m.description,
    yearBuilt: num(m.yearBuilt),
    numberOfUnits: m.units,
    numberOfBuildings: m.buildings,
    numberOfFloors: m.floors,
    webSite: m.website,
    email: m.email,
    address: addressOut(m.address),
    phones: { phone: oneOrMany(m.phones.map(phoneOut)) },
    latitude: m.latitude.toFixed(6),
    longitude: m.longitude.toFixed(6),
    timeZone: m.zone,
    managementCompany: m.managementCompany,
    taxId: m.taxId,
    petPolicy: m.petPolicy,
    smokingPolicy: m.smokingPolicy,
    photos: m.photos.length === 0 ? null : { photo: oneOrMany(m.photos) },
    currencyCode: 'USD',
    parkingSpaces: m.parkingSpaces,
    amenities: m.amenities,
    officeHours: m.officeHours,
    floorplans: {
      floorplan: oneOrMany(
        m.floorplans.map((f) => ({ floorplanId: f.id, name: f.name, bedrooms: f.bedrooms, bathrooms: f.bathrooms, squareFeet: f.squareFeet })),
      ),
    },
    createdOn: localTime(m.created, m.zone),
    updatedOn,
  };
}

function unit(m: UnitModel, updatedOn: string) {
  return {
    unitId: m.id,
    propertyId: m.propertyId,
    unitNumber: m.unitNumber,
    buildingName: m.buildingName,
    floorNumber: m.floorNumber,
    floorplanId: m.floorplanId ?? 0,
    floorplanName: m.floorplanName,
    bedrooms: num(m.bedrooms),
    bathrooms: num(m.bathrooms),
    squareFeet: num(m.squareFeet),
    maxOccupants: m.maxOccupants,
    marketRent: money(m.marketRentCents),
    currencyCode: 'USD',
    unitStatusTypeId: UNIT_STATUS_ID[m.status],
    remarks: m.remarks,
    address: addressOut(m.address),
    amenities: m.amenities,
    isFurnished: m.furnished ? '1' : '0',
    parkingSpaces: m.parkingSpaces,
    availableOn: usOfIso(m.availableOn),
    createdOn: localTime(m.created, m.zone),
    updatedOn,
  };
}

function customer(m: ResidentModel, updatedOn: string) {
  return {
    customerId: m.id,
    propertyId: m.propertyId,
    firstName: m.firstName,
    middleName: m.middleName,
    lastName: m.lastName,
    email: m.email,
    phones: m.phones.length === 0 ? null : { phone: oneOrMany(m.phones.map(phoneOut)) },
    dateOfBirth: usOfIso(m.dateOfBirth),
    address: m.address ? addressOut(m.address) : null,
    customerStatusTypeId: CUSTOMER_STATUS_ID[m.status],
    leadSource: m.leadSource,
    preferredLanguage: m.preferredLanguage,
    employer: m.employer,
    createdOn: localTime(m.created, m.zone),
    updatedOn,
  };
}

function lease(m: LeaseModel, updatedOn: string) {
  return {
    leaseId: m.id,
    propertyId: m.propertyId,
    unitId: m.unitId,
    leaseStatusTypeId: leaseStatusId(m),
    leaseIntervalTypeId: m.kind === 'month_to_month' ? 2 : 1,
    leaseStartDate: usOfIso(m.start),
    leaseEndDate: usOfIso(m.end),
    moveInDate: usOfIso(m.moveIn),
    moveOutDate: usOfIso(m.moveOut),
    noticeDate: usOfIso(m.notice),
    leaseSignedDate: usOfIso(m.signed),
    rent: decimalOf(m.rentCents),
    securityDeposit: money(m.depositCents),
    balance: decimalOf(m.balanceCents),
    currencyCode: 'USD',
    leaseTermMonths: String(m.termMonths),
    renewalOfferStatus: m.renewalOfferStatus,
    isRenewal: m.previousLeaseId !== null ? '1' : '0',
    previousLeaseId: m.previousLeaseId,
    concessions: m.concessions,
    notes: m.notes,
    customers: { customer: oneOrMany(m.tenants.map((t) => ({ customerId: t.id, customerTypeId: ROLE_ID[t.role] }))) },
    petCount: m.petCount,
    parkingSpaces: m.parkingSpaces,
    occupants: m.occupants,
    leadSource: m.leadSource,
    createdOn: localTime(m.created, m.zone),
    updatedOn,
  };
}

/** A stored record as the entrata wire's JSON text; `updated` is its last-update time (epoch ms). */
export function encode(entity: Entity, model: PropertyModel | UnitModel | ResidentModel | LeaseModel, updated: number): string {
  const updatedOn = localTime(updated, model.zone);
  let out: Record<string, unknown>;
  switch (entity) {
    case 'property':
      out = property(model as PropertyModel, updatedOn);
      break;
    case 'unit':
      out = unit(model as UnitModel, updatedOn);
      break;
    case 'resident':
      out = customer(model as ResidentModel, updatedOn);
      break;
    default:
      out = lease(model as LeaseModel, updatedOn);
  }
  if (model.malformed) Object.assign(out, MALFORMED[entity]);
  return JSON.stringify(out);
}
