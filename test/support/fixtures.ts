/**
 * What tests seed: integrations whose source no test reads, and CDM input builders for seeding through the one write
 * path (db/apply.ts applyRecords). Free of vitest: the bench seeds with it too.
 */
import { parseConfig } from '../../config';
import type { Db } from '../../db/client';
import { createIntegration, type IntegrationRow } from '../../db/tenants';
import type { LeaseInput, PropertyInput, ResidentInput, UnitInput } from '../../domain/cdm';
import type { Mode, Plan } from '../../domain/plans';
import { createKeyring } from '../../domain/secrets';

/** Sources nothing reads: a sandbox one at a closed port, an entrata one (what live mode serves) at a name of no PMS. */
const UNREAD_SOURCES = {
  sandbox: { base_url: 'http://127.0.0.1:1', api_key: 'unused' },
  entrata: { base_url: 'https://pms.example.com', api_key: 'unused' },
};

/**
 * An integration of `organizationId` that no test syncs (by default a test-mode sandbox one on the enterprise plan),
 * its source sealed with the test configuration's key.
 */
export function unsyncedIntegration(
  db: Db,
  organizationId: string,
  opts: { mode?: Mode; plan?: Plan; source?: keyof typeof UNREAD_SOURCES } = {},
): Promise<IntegrationRow> {
  const source = opts.source ?? 'sandbox';
  return createIntegration(
    db,
    { organizationId, mode: opts.mode ?? 'test', plan: opts.plan ?? 'enterprise', sourceType: source, sourceConfig: UNREAD_SOURCES[source] },
    createKeyring(parseConfig({}).ENCRYPTION_KEYS),
  );
}

const address = (n: number) => ({
  line_1: `${100 + n} Main St`,
  line_2: null,
  city: 'Austin',
  state: 'TX',
  postal_code: '78701',
  country: 'US',
});

export function propertyInput(xId: string, over: Partial<PropertyInput> = {}): PropertyInput {
  return {
    x_id: xId,
    name: `Property ${xId}`,
    type: 'apartment',
    status: 'active',
    address: address(1),
    description: null,
    year_built: 1999,
    total_units: 10,
    total_buildings: 1,
    total_floors: 3,
    website_url: null,
    email: 'office@example.com',
    phones: [{ type: 'office', number: '+15125550100', primary: true }],
    latitude: 30.27,
    longitude: -97.74,
    timezone_id: 'America/Chicago',
    management_company_name: 'Acme Management',
    tax_id: null,
    pet_policy: 'restricted',
    smoking_policy: 'not_allowed',
    media: null,
    custom_data: {},
    ...over,
  };
}

export function unitInput(xId: string, propertyXId: string, over: Partial<UnitInput> = {}): UnitInput {
  return {
    x_id: xId,
    property_x_id: propertyXId,
    unit_number: `U-${xId}`,
    floorplan_id: '7',
    floorplan_name: '2x1',
    bedrooms: 2,
    bathrooms: 1,
    square_feet: 850,
    max_occupants: 4,
    market_rent: { amount: 150000, currency: 'USD' },
    status: 'occupied',
    note: null,
    address: address(2),
    custom_data: {},
    ...over,
  };
}

export function residentInput(xId: string, propertyXId: string, over: Partial<ResidentInput> = {}): ResidentInput {
  return {
    x_id: xId,
    property_x_id: propertyXId,
    first_name: 'Ada',
    middle_name: null,
    last_name: `Lovelace-${xId}`,
    email: `ada.${xId}@example.com`,
    phones: [{ type: 'mobile', number: '+15125550101', primary: true }],
    date_of_birth: '1990-12-10',
    address: address(3),
    status: 'current',
    custom_data: {},
    ...over,
  };
}

/** The applicant of the lease creates the tests send: a name, a phone number and an address. */
export const APPLICANT = {
  first_name: 'Katherine',
  last_name: 'Johnson',
  phone_number: '757-555-0142',
  street_line_1: '1 Langley Blvd',
  city: 'Hampton',
  state: 'Virginia',
  state_code: 'VA',
  postal_code: '23681',
};

/** A lease's residents by x_id: the first one primary, the others responsible. */
export function leaseResidents(...xIds: string[]): { x_id: string; role: string }[] {
  return xIds.map((x_id, i) => ({ x_id, role: i === 0 ? 'primary' : 'responsible' }));
}

export function leaseInput(
  xId: string,
  refs: { property: string; unit: string; residents: { x_id: string; role: string }[] },
  over: Partial<LeaseInput> = {},
): LeaseInput {
  return {
    x_id: xId,
    property_x_id: refs.property,
    unit_x_id: refs.unit,
    previous_lease_x_id: null,
    residents: refs.residents,
    status: 'active',
    type: 'fixed',
    start_date: '2025-01-01',
    end_date: '2025-12-31',
    move_in_date: '2025-01-01',
    move_out_date: null,
    notice_date: null,
    signed_date: '2024-12-15',
    rent_amount: { amount: 103500, currency: 'USD' },
    security_deposit: { amount: 50000, currency: 'USD' },
    balance: { amount: 0, currency: 'USD' },
    term_months: 12,
    renewal_status: 'not_started',
    is_renewal: false,
    concessions: null,
    notes: null,
    custom_data: {},
    ...over,
  };
}
