/**
 * The read benchmark's data: one organization with 250 properties, 50k units, 100k residents and 100k leases in a
 * dedicated database, written through db/apply.ts applyRecords (the sync's own path) in big batches. Reused
 * across runs when complete; rebuilt from scratch otherwise. Its integration is on the enterprise plan and it has no
 * rate-limit override, so the API limits it as it would a customer on that plan. Its record generators (property,
 * unit, resident, lease: the CDM input of record `i`) are also the export bench's (bench/lib/export-data.ts).
 */
import { and, eq, isNotNull, or, sql } from 'drizzle-orm';
import postgres from 'postgres';
import { config } from '../../config';
import { closeDb, createDb, type Db } from '../../db/client';
import { migrateDatabase } from '../../db/migrate';
import { applyRecords, type ApplyContext } from '../../db/apply';
import { integrations, leases, organizations } from '../../db/schema';
import { createApiKey, createIntegration, createOrganization } from '../../db/tenants';
import type { InputOf, LeaseStatus } from '../../domain/cdm';
import { createKeyring } from '../../domain/secrets';
import { propertyInput } from '../../test/support/fixtures';

/** The data for `leases` leases (a multiple of 400): 400 leases, 200 units and 400 residents per property. */
export function sizeOf(leases: number) {
  if (!Number.isInteger(leases) || leases < 400 || leases % 400 !== 0) throw new Error(`the read bench's size must be a multiple of 400 leases, not ${leases}`);
  return { properties: leases / 400, units: leases / 2, residents: leases, leases };
}
/** The full size (100k leases) is what the README's figures are measured on; smaller sizes are for trying the bench. */
export const DEFAULT_LEASES = 100_000;
const orgNameOf = (leases: number) => (leases === DEFAULT_LEASES ? 'bench-read-100k' : `bench-read-${leases}`);
const BATCH = 5_000;
/** Each batch of records is written an hour after the previous one, so created_at and updated_at spread out. */
const BASE = Date.parse('2024-01-01T00:00:00.000Z');
const HOUR = 3_600_000;

export interface BenchData {
  databaseUrl: string;
  organizationId: string;
  integrationId: string;
  mode: 'test';
  /** Read keys of the organization, made for this run. */
  keys: string[];
  /** A sample of lease ids to retrieve. */
  leaseIds: string[];
  /** An updated_after bound that keeps about half the leases. */
  updatedAfter: string;
}

/** The bench database sits next to the service's, under its own name (one per size, so a small try never touches the full data). */
function benchDatabaseUrl(serviceUrl: string, leases = DEFAULT_LEASES): string {
  const u = new URL(serviceUrl);
  u.pathname = leases === DEFAULT_LEASES ? '/propsync_bench_read' : `/propsync_bench_read_${leases}`;
  return u.toString();
}

const address = (n: number) => ({
  line_1: `${n} Main St`,
  line_2: n % 7 === 0 ? `Suite ${n % 100}` : null,
  city: 'Austin',
  state: 'TX',
  postal_code: `787${String(n % 100).padStart(2, '0')}`,
  country: 'US',
});

/** The test fixture's property (its time zone, management company and policies), varied by `i`. */
export function property(i: number): InputOf['property'] {
  return propertyInput(`P${i}`, {
    custom_data: { region: `R${i % 12}`, amenities: ['pool', 'gym'].slice(0, i % 3) },
    name: `Residences ${i}`,
    type: i % 10 === 0 ? 'townhome' : 'apartment',
    status: i % 25 === 0 ? 'inactive' : 'active',
    address: address(i),
    description: `A ${200}-unit community.`,
    year_built: 1960 + (i % 60),
    total_units: 200,
    total_buildings: 1 + (i % 8),
    total_floors: 2 + (i % 12),
    website_url: `https://residences-${i}.example.com`,
    email: `leasing${i}@example.com`,
    phones: [{ type: 'office', number: `+1512555${String(i).padStart(4, '0')}`, primary: true }],
    latitude: 30 + (i % 100) / 100,
    longitude: -97 - (i % 100) / 100,
  });
}

export function unit(i: number): InputOf['unit'] {
  const beds = 1 + (i % 3);
  return {
    x_id: `U${i}`,
    property_x_id: `P${Math.floor(i / 200)}`,
    custom_data: i % 4 === 0 ? { view: 'courtyard' } : {},
    unit_number: `${1 + Math.floor((i % 200) / 20)}${String(i % 20).padStart(2, '0')}`,
    floorplan_id: String(beds),
    floorplan_name: `${beds}x${Math.max(1, beds - 1)}`,
    bedrooms: beds,
    bathrooms: Math.max(1, beds - 1),
    square_feet: 550 + beds * 250 + (i % 50),
    max_occupants: beds * 2,
    market_rent: { amount: 95_000 + beds * 30_000 + (i % 40) * 500, currency: 'USD' },
    status: i % 10 === 0 ? 'vacant' : i % 10 === 1 ? 'notice' : 'occupied',
    note: null,
    address: address(i),
  };
}

export function resident(j: number): InputOf['resident'] {
  return {
    x_id: `R${j}`,
    property_x_id: `P${Math.floor(j / 400)}`,
    custom_data: j % 5 === 0 ? { preferred_contact: 'sms' } : {},
    first_name: ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Ken'][j % 6]!,
    middle_name: j % 3 === 0 ? 'Q' : null,
    last_name: `Resident${j}`,
    email: `resident${j}@example.com`,
    phones: [{ type: 'mobile', number: `+1512666${String(j % 10_000).padStart(4, '0')}`, primary: true }],
    date_of_birth: `19${60 + (j % 40)}-${String(1 + (j % 12)).padStart(2, '0')}-${String(1 + (j % 28)).padStart(2, '0')}`,
    address: address(j),
    status: (['current', 'current', 'current', 'notice', 'past', 'applicant'] as const)[j % 6]!,
  };
}

const STATUSES: LeaseStatus[] = [
  ...Array<LeaseStatus>(12).fill('active'),
  'notice',
  'ended',
  'ended',
  'ended',
  'pending',
  'terminated',
  'cancelled',
  'evicted',
];

/** Two leases per unit (an older and a current one); some current ones renew the older; 30 % have a co-signer. */
export function lease(k: number): InputOf['lease'] {
  const p = Math.floor(k / 400);
  const local = k % 400;
  const start = new Date(Date.UTC(2022 + (local >= 200 ? 2 : 0), k % 12, 1 + (k % 28)));
  const end = new Date(start.getTime() + 365 * 86_400_000);
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const renewal = local >= 200 && k % 5 === 0;
  const residents = [{ x_id: `R${k}`, role: 'primary' }];
  if (k % 10 < 3) residents.push({ x_id: `R${p * 400 + ((local + 1) % 400)}`, role: 'responsible' });
  return {
    x_id: `L${k}`,
    property_x_id: `P${p}`,
    unit_x_id: `U${p * 200 + (local % 200)}`,
    previous_lease_x_id: renewal ? `L${k - 200}` : null,
    residents,
    custom_data: k % 3 === 0 ? { lease_term_id: String(12 + (k % 3) * 6) } : {},
    status: STATUSES[k % STATUSES.length]!,
    type: k % 9 === 0 ? 'month_to_month' : 'fixed',
    start_date: day(start),
    end_date: day(end),
    move_in_date: day(start),
    move_out_date: null,
    notice_date: null,
    signed_date: day(new Date(start.getTime() - 14 * 86_400_000)),
    rent_amount: { amount: 100_000 + (k % 80) * 1_250, currency: 'USD' },
    security_deposit: { amount: 50_000, currency: 'USD' },
    balance: k % 4 === 0 ? { amount: (k % 13) * 1_000, currency: 'USD' } : { amount: 0, currency: 'USD' },
    term_months: 12,
    renewal_status: renewal ? 'renewed' : 'not_started',
    is_renewal: renewal,
    concessions: null,
    notes: null,
  };
}

async function seed(db: Db, SIZE: ReturnType<typeof sizeOf>, log: (msg: string) => void): Promise<{ organizationId: string; integrationId: string }> {
  const org = await createOrganization(db, { name: orgNameOf(SIZE.leases) });
  // An enterprise integration and no override: the organization's rate limit is the enterprise plan's, as in production.
  const integration = await createIntegration(
    db,
    { organizationId: org.id, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' } },
    createKeyring(config().ENCRYPTION_KEYS),
  );
  let hour = 0;
  const write = async <E extends keyof InputOf>(entity: E, count: number, make: (i: number) => InputOf[E]) => {
    const started = Date.now();
    for (let from = 0; from < count; from += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, count - from) }, (_, i) => make(from + i));
      const ctx: ApplyContext = {
        integration: { id: integration.id, organizationId: org.id, mode: 'test' },
        emitEvents: false,
        now: new Date(BASE + hour++ * HOUR),
      };
      await db.transaction((tx) => applyRecords(tx, ctx, entity, batch));
    }
    log(`seeded ${count} ${entity} records in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  await write('property', SIZE.properties, property);
  await write('unit', SIZE.units, unit);
  await write('resident', SIZE.residents, resident);
  await write('lease', SIZE.leases, lease);
  await db.execute(sql`analyze`);
  return { organizationId: org.id, integrationId: integration.id };
}

/**
 * The bench organization, seeding it first when the bench database lacks a complete one, with `keyCount` new read
 * keys. Its rate limit is its plan's: an override left by an older version of this bench is removed.
 */
export async function ensureBenchData(serviceUrl: string, log: (msg: string) => void, opts: { keys?: number; leases?: number } = {}): Promise<BenchData> {
  const keyCount = opts.keys ?? 1;
  const SIZE = sizeOf(opts.leases ?? DEFAULT_LEASES);
  const databaseUrl = benchDatabaseUrl(serviceUrl, SIZE.leases);
  await migrateDatabase(databaseUrl);
  let db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench-seed' });
  try {
    let [existing] = await db
      .select({ organizationId: integrations.organizationId, integrationId: integrations.id })
      .from(integrations)
      .innerJoin(organizations, eq(organizations.id, integrations.organizationId))
      .where(eq(organizations.name, orgNameOf(SIZE.leases)));
    const count = existing
      ? Number(
          (
            await db
              .select({ n: sql<string>`count(*)` })
              .from(leases)
              .where(eq(leases.integrationId, existing.integrationId))
          )[0]!.n,
        )
      : 0;
    if (!existing || count !== SIZE.leases) {
      if (existing) {
        log('bench database incomplete; recreating it');
        await closeDb(db);
        const admin = new URL(databaseUrl);
        admin.pathname = '/postgres';
        const sqlAdmin = postgres(admin.toString(), { max: 1, onnotice: () => {} });
        await sqlAdmin.unsafe(`drop database if exists "${new URL(databaseUrl).pathname.slice(1)}" with (force)`);
        await sqlAdmin.end();
        await migrateDatabase(databaseUrl);
        db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench-seed' });
      }
      log(`seeding ${SIZE.leases} leases, ${SIZE.residents} residents, ${SIZE.units} units, ${SIZE.properties} properties through applyRecords`);
      existing = await seed(db, SIZE, log);
    } else {
      log(`reusing the seeded bench organization (${count} leases)`);
    }
    const override = await db
      .update(organizations)
      .set({ rateLimitPerMinute: null, rateLimitBurst: null })
      .where(and(eq(organizations.id, existing.organizationId), or(isNotNull(organizations.rateLimitPerMinute), isNotNull(organizations.rateLimitBurst))))
      .returning({ id: organizations.id });
    if (override.length > 0) log("removed a rate-limit override from the bench organization: it runs on its plan's limit");
    const keys: string[] = [];
    for (let i = 0; i < keyCount; i++) keys.push((await createApiKey(db, { organizationId: existing.organizationId, mode: 'test', scopes: ['read'] })).key);
    const sample = await db.execute<{ id: string }>(
      sql`select id from leases where integration_id = ${existing.integrationId} and deleted_at is null order by md5(id) limit 2000`,
    );
    const [median] = await db.execute<{ updated_at: Date | string }>(
      sql`select updated_at from leases where integration_id = ${existing.integrationId} order by updated_at offset ${SIZE.leases / 2} limit 1`,
    );
    return {
      databaseUrl,
      organizationId: existing.organizationId,
      integrationId: existing.integrationId,
      mode: 'test',
      keys,
      leaseIds: sample.map((r) => r.id),
      updatedAfter: new Date(median!.updated_at).toISOString(),
    };
  } finally {
    await closeDb(db);
  }
}
