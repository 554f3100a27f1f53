/**
 * The cache's synced records, one table per entity, and the lease-resident relation. Every synced entity row
 * carries organization_id, integration_id and the integration's mode, so that a key's visibility (its organization
 * AND its mode) is a prefix of every list index and pages come straight off an index.
 */
import { sql } from 'drizzle-orm';
import { boolean, date, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import type { Address, JsonObject, Phone } from '../../domain/cdm';
import { money, ownedBy, prefixedId, testOrLive, ts } from './columns';

/** Columns every synced entity has. */
function common() {
  return {
    id: prefixedId(),
    ...ownedBy(),
    mode: testOrLive(),
    xId: text('x_id').notNull(),
    customData: jsonb('custom_data').$type<JsonObject>().notNull().default({}),
    /** sha256 of the mapped CDM content: a record is changed only when this moves. */
    contentHash: text('content_hash').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    deletedAt: ts('deleted_at'),
    psSyncedAt: ts('ps_synced_at'),
  };
}

type CommonCols = ReturnType<typeof common>;
/** Indexes every entity has: identity per (integration, x_id), and the two generic sort orders per visibility. */
function commonIndexes(name: string, t: { [K in keyof CommonCols]: any }) {
  return [
    uniqueIndex(`${name}_integration_x_id_idx`).on(t.integrationId, t.xId),
    // updated_at trails the sort key so `updated_after` is checked inside the index while pages walk created_at
    // order: rows updated before the bound are skipped without a heap fetch, however they correlate with created_at.
    index(`${name}_org_created_idx`).on(t.organizationId, t.mode, t.createdAt, t.id, t.updatedAt),
    index(`${name}_org_updated_idx`).on(t.organizationId, t.mode, t.updatedAt, t.id),
    index(`${name}_org_x_id_idx`).on(t.organizationId, t.mode, t.xId),
  ];
}

export const properties = pgTable(
  'properties',
  {
    ...common(),
    name: text('name'),
    type: text('type'),
    status: text('status'),
    address: jsonb('address').$type<Address>(),
    description: text('description'),
    yearBuilt: integer('year_built'),
    totalUnits: integer('total_units'),
    totalBuildings: integer('total_buildings'),
    totalFloors: integer('total_floors'),
    websiteUrl: text('website_url'),
    email: text('email'),
    phones: jsonb('phones').$type<Phone[]>(),
    latitude: doublePrecision('latitude'),
    longitude: doublePrecision('longitude'),
    timezoneId: text('timezone_id'),
    managementCompanyName: text('management_company_name'),
    taxId: text('tax_id'),
    petPolicy: text('pet_policy'),
    smokingPolicy: text('smoking_policy'),
    media: jsonb('media').$type<JsonObject[]>(),
  },
  (t) => [
    ...commonIndexes('properties', t),
    index('properties_org_name_idx').on(t.organizationId, t.mode, t.name, t.id),
    index('properties_org_status_idx').on(t.organizationId, t.mode, t.status, t.createdAt),
    index('properties_org_type_idx').on(t.organizationId, t.mode, t.type, t.createdAt),
    index('properties_name_trgm_idx').using('gin', sql`${t.name} gin_trgm_ops`),
  ],
);

export const units = pgTable(
  'units',
  {
    ...common(),
    propertyId: text('property_id'),
    unitNumber: text('unit_number'),
    floorplanId: text('floorplan_id'),
    floorplanName: text('floorplan_name'),
    bedrooms: integer('bedrooms'),
    bathrooms: integer('bathrooms'),
    squareFeet: integer('square_feet'),
    maxOccupants: integer('max_occupants'),
    marketRentAmount: money('market_rent_amount'),
    marketRentCurrency: text('market_rent_currency'),
    status: text('status'),
    note: text('note'),
    address: jsonb('address').$type<Address>(),
  },
  (t) => [
    ...commonIndexes('units', t),
    index('units_property_idx').on(t.propertyId, t.createdAt),
    index('units_org_status_idx').on(t.organizationId, t.mode, t.status, t.createdAt),
    index('units_org_unit_number_idx').on(t.organizationId, t.mode, t.unitNumber, t.id),
  ],
);

export const residents = pgTable(
  'residents',
  {
    ...common(),
    propertyId: text('property_id'),
    firstName: text('first_name'),
    middleName: text('middle_name'),
    lastName: text('last_name'),
    email: text('email'),
    phones: jsonb('phones').$type<Phone[]>(),
    dateOfBirth: date('date_of_birth', { mode: 'string' }),
    address: jsonb('address').$type<Address>(),
    status: text('status'),
  },
  (t) => [
    ...commonIndexes('residents', t),
    index('residents_property_idx').on(t.propertyId, t.createdAt),
    index('residents_org_status_idx').on(t.organizationId, t.mode, t.status, t.createdAt),
    index('residents_org_email_idx').on(t.organizationId, t.mode, sql`lower(${t.email})`),
    index('residents_org_last_name_idx').on(t.organizationId, t.mode, t.lastName, t.id),
  ],
);

export const leases = pgTable(
  'leases',
  {
    ...common(),
    propertyId: text('property_id'),
    unitId: text('unit_id'),
    status: text('status'),
    type: text('type'),
    startDate: date('start_date', { mode: 'string' }),
    endDate: date('end_date', { mode: 'string' }),
    moveInDate: date('move_in_date', { mode: 'string' }),
    moveOutDate: date('move_out_date', { mode: 'string' }),
    noticeDate: date('notice_date', { mode: 'string' }),
    signedDate: date('signed_date', { mode: 'string' }),
    rentAmount: money('rent_amount').notNull(),
    rentCurrency: text('rent_currency').notNull(),
    securityDepositAmount: money('security_deposit_amount'),
    securityDepositCurrency: text('security_deposit_currency'),
    balanceAmount: money('balance_amount'),
    balanceCurrency: text('balance_currency'),
    termMonths: integer('term_months'),
    renewalStatus: text('renewal_status'),
    isRenewal: boolean('is_renewal'),
    previousLeaseId: text('previous_lease_id'),
    concessions: text('concessions'),
    notes: text('notes'),
  },
  (t) => [
    ...commonIndexes('leases', t),
    index('leases_property_idx').on(t.propertyId, t.createdAt),
    index('leases_unit_idx').on(t.unitId, t.createdAt),
    index('leases_org_status_updated_idx').on(t.organizationId, t.mode, t.status, t.updatedAt, t.id),
    index('leases_org_status_created_idx').on(t.organizationId, t.mode, t.status, t.createdAt, t.id, t.updatedAt),
    index('leases_org_type_idx').on(t.organizationId, t.mode, t.type, t.createdAt),
    index('leases_org_start_idx').on(t.organizationId, t.mode, t.startDate, t.id),
    index('leases_org_end_idx').on(t.organizationId, t.mode, t.endDate, t.id),
  ],
);

/** The LeaseResident relation: shown as `residents` / `resident_ids` on a Lease, never an endpoint of its own. */
export const leaseResidents = pgTable(
  'lease_residents',
  {
    leaseId: text('lease_id').notNull(),
    residentId: text('resident_id').notNull(),
    /** The resident's source x_id, as shown in `residents[].x_id`. */
    xId: text('x_id').notNull(),
    role: text('role').notNull(),
    position: integer('position').notNull(),
  },
  (t) => [primaryKey({ columns: [t.leaseId, t.residentId] }), index('lease_residents_resident_idx').on(t.residentId)],
);
