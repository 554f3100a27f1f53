/**
 * The single source of truth for tables. Migrations in db/migrations are generated from this file
 * (`npm run db:generate`) and committed.
 *
 * Every synced entity row carries organization_id, integration_id and the integration's mode, so that a key's
 * visibility (its organization AND its mode) is a prefix of every list index and pages come straight off an index.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import type { Address, JsonObject, Phone } from '../domain/cdm';

/** An integration's stored source settings: one dialect's, its secret sealed; a sandbox's also its size and seed. */
export type StoredSourceConfig = (
  | { dialect?: 'entrata'; base_url: string; api_key: string }
  | { dialect: 'buildium'; base_url: string; client_id: string; client_secret: string }
) & { size?: number; seed?: number };

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });
const money = (name: string) => bigint(name, { mode: 'number' });

export const organizations = pgTable('organizations', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  /** Override of the plan's org-wide limit (requests per minute); null = the highest plan among its integrations. */
  rateLimitPerMinute: integer('rate_limit_per_minute'),
  /** Override of the burst (bucket size); null = 10 % of the per-minute budget. */
  rateLimitBurst: integer('rate_limit_burst'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const integrations = pgTable(
  'integrations',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name'),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    plan: text('plan', { enum: ['starter', 'growth', 'scale', 'enterprise'] }).notNull(),
    sourceType: text('source_type', { enum: ['sandbox', 'entrata', 'buildium'] }).notNull(),
    /**
     * Connection settings, as the connector of the dialect needs them (source/connector.ts SourceSettings: base_url
     * and api_key, or client_id and client_secret for `buildium`; `dialect` absent means entrata), the secret sealed;
     * a sandbox integration also keeps its company's size and seed. Never logged.
     */
    sourceConfig: jsonb('source_config').$type<StoredSourceConfig>().notNull(),
    /** Override of the plan's default cadence; null = plan default. */
    syncIntervalSeconds: integer('sync_interval_seconds'),
    /** Seconds between full reconciliation runs where the source can read deltas; null = the default (a day). */
    fullSyncIntervalSeconds: integer('full_sync_interval_seconds'),
    /** When the last full run that succeeded began (database clock): the next is due an interval later. */
    lastFullSyncAt: ts('last_full_sync_at'),
    /**
     * The end of the window the last successful run covered (database clock, taken when it began): a delta run reads
     * from here, less the overlap. Null until a run succeeds.
     */
    syncedThrough: ts('synced_through'),
    firstSyncCompletedAt: ts('first_sync_completed_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('integrations_org_idx').on(t.organizationId, t.mode)],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    /** sha256 hex of the full key; the key itself is shown once and never stored. */
    keyHash: text('key_hash').notNull(),
    /** First characters of the key, for operators to recognise it (sk_test_AbCd…). */
    keyPrefix: text('key_prefix').notNull(),
    scopes: text('scopes').array().notNull(),
    revokedAt: ts('revoked_at'),
    lastUsedAt: ts('last_used_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('api_keys_hash_idx').on(t.keyHash), index('api_keys_org_idx').on(t.organizationId)],
);

/** Columns every synced entity has. */
function common() {
  return {
    id: text('id').primaryKey(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
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

export const syncJobs = pgTable(
  'sync_jobs',
  {
    id: text('id').primaryKey(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    status: text('status', { enum: ['queued', 'running', 'succeeded', 'failed'] }).notNull(),
    trigger: text('trigger', { enum: ['initial', 'schedule', 'manual'] }).notNull(),
    /** Id of the Temporal workflow that runs (or ran) this job. */
    workflowId: text('workflow_id'),
    /** Whether this is the integration's first complete sync (no per-record events; FIRST_SYNC_COMPLETE). */
    initial: boolean('initial').notNull().default(false),
    /**
     * `full` reads every record and alone may soft-delete; `delta` reads the records the source says changed in
     * [windowFrom, windowTo] and deletes nothing.
     */
    kind: text('kind', { enum: ['full', 'delta'] }).notNull().default('full'),
    windowFrom: ts('window_from'),
    /** Database time when the run began: the end of what it covers (a full run's too). */
    windowTo: ts('window_to'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    recordsSeen: integer('records_seen').notNull().default(0),
    recordsNew: integer('records_new').notNull().default(0),
    recordsUpdated: integer('records_updated').notNull().default(0),
    recordsSoftDeleted: integer('records_soft_deleted').notNull().default(0),
    /** Records the source served that the mapping could not read: left as they were in the cache (sync_skipped_records). */
    recordsSkipped: integer('records_skipped').notNull().default(0),
    /**
     * Resume point per entity so a retried activity carries on from the last committed page. `tracked: false`: the
     * integration had no row of the entity when the run began, so the run records no seen x_ids and soft-deletes none.
     * `confirmed`: the source confirmed that what the run did not see of the entity is gone (soft-deletes may go ahead).
     */
    progress: jsonb('progress').$type<Record<string, { page: number; done: boolean; tracked?: boolean; confirmed?: boolean }>>().notNull().default({}),
    error: text('error'),
    /**
     * While an entity step is retried (a source outage): the attempt under way or next (1 when none failed), the
     * failure of the last attempt, and when the next attempt starts (null while one runs). Set by the step itself,
     * so the admin API, the CLI, the console and the metrics show a retrying run as such, not as a plain `running`.
     */
    attempt: integer('attempt').notNull().default(1),
    lastError: text('last_error'),
    nextAttemptAt: ts('next_attempt_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('sync_jobs_integration_idx').on(t.integrationId, t.createdAt),
    // The metrics' and the console's health numbers: runs retrying now.
    index('sync_jobs_retrying_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'running' and ${t.attempt} > 1`),
  ],
);

/**
 * x_ids a sync run saw, one row per applied page of an entity: what a complete run did not see is soft-deleted.
 * A row per page rather than per record: writing a thousand index entries on every page cost the sync more than
 * the page's lookup. An x_id may appear in several rows (a source repeating a record across pages). Emptied when
 * the run ends.
 */
export const syncSeen = pgTable(
  'sync_seen_pages',
  {
    syncJobId: text('sync_job_id').notNull(),
    entity: text('entity').notNull(),
    xIds: text('x_ids').array().notNull(),
  },
  (t) => [index('sync_seen_pages_job_idx').on(t.syncJobId, t.entity)],
);

/**
 * Records a sync run quarantined: served by the source but unreadable by the mapping. The run skips them (their
 * cached version stays as it was, never soft-deleted) and carries on; an operator reads this list to fix the source.
 */
export const syncSkippedRecords = pgTable(
  'sync_skipped_records',
  {
    syncJobId: text('sync_job_id').notNull(),
    entity: text('entity', { enum: ['property', 'unit', 'resident', 'lease'] }).notNull(),
    /** The record's native id; null when even that was unreadable. */
    xId: text('x_id'),
    reason: text('reason').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  // NULLS DISTINCT (the default): records without a readable id are each listed.
  (t) => [uniqueIndex('sync_skipped_records_key').on(t.syncJobId, t.entity, t.xId)],
);

/**
 * The outbox: every change event, written in the same transaction as the record change that caused it.
 * Delivery to subscriptions reads from here.
 */
export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    type: text('type').notNull(),
    category: text('category').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    /** The sync job or operation that produced the event, if any. */
    syncJobId: text('sync_job_id'),
    operationId: text('operation_id'),
    /** The automation run an AUTOMATION_* event reports. */
    automationRunId: text('automation_run_id'),
    /** The record the event is about (data_change events). */
    recordId: text('record_id'),
    /**
     * The envelope exactly as sent to receivers, serialized once by the outbox relay (or a replay) and never again,
     * so every attempt and every replay posts and signs the same bytes.
     */
    body: text('body'),
    /** Set by the outbox relay once a delivery workflow of every subscription that wants the event has started. */
    dispatchedAt: ts('dispatched_at'),
    /**
     * The event's place in production order (GET /v1/events), set by the outbox relay in the transaction that marks it
     * dispatched. Numbers are taken from the one `event_positions` row, whose lock is held to the commit, so a higher
     * number always commits after a lower one: a reader never sees a number while a lower one is still uncommitted.
     * Null until the relay has taken the event (the public feed does not show it yet).
     */
    position: bigint('position', { mode: 'number' }),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    index('events_integration_created_idx').on(t.integrationId, t.createdAt, t.id),
    // The public feed: an organization's events of one mode in production order.
    uniqueIndex('events_feed_idx').on(t.organizationId, t.mode, t.position).where(sql`${t.position} is not null`),
    index('events_undispatched_idx').on(t.createdAt).where(sql`${t.dispatchedAt} is null`),
    // A sync run's lifecycle event is recorded once, however often its activity is retried.
    uniqueIndex('events_sync_lifecycle_idx').on(t.syncJobId, t.type).where(sql`${t.category} = 'sync_lifecycle'`),
    // An automation run reports its end once (completed or failed), however often its last activity is retried.
    uniqueIndex('events_automation_run_idx').on(t.automationRunId).where(sql`${t.category} = 'automation'`),
  ],
);

/**
 * The last production-order position handed out (events.position): one row, `events`. The relay's transaction takes
 * the next block with an UPDATE, whose row lock it holds until it commits, so blocks commit in number order.
 */
export const eventPositions = pgTable('event_positions', {
  name: text('name').primaryKey(),
  last: bigint('last', { mode: 'number' }).notNull(),
});

/** Org-wide token buckets for the API rate limit, shared by every API process. */
export const rateLimitBuckets = pgTable('rate_limit_buckets', {
  organizationId: uuid('organization_id').primaryKey(),
  tokens: doublePrecision('tokens').notNull(),
  refilledAt: ts('refilled_at').notNull(),
});

/** Webhook subscriptions of an integration (scale and enterprise plans): where its events go and how they are signed. */
export const webhookSubscriptions = pgTable(
  'webhook_subscriptions',
  {
    id: text('id').primaryKey(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    url: text('url').notNull(),
    /** Event types the subscription wants, or `["*"]` for all. */
    eventTypes: text('event_types').array().notNull(),
    description: text('description'),
    status: text('status', { enum: ['active', 'disabled'] }).notNull(),
    /** Signing secret (`whsec_…`), as shown once at creation; read only inside delivery activities. */
    secret: text('secret').notNull(),
    /** The secret before the last rotation, still signing (X-Service-Signature-Previous) until it expires. */
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** Deliveries the outbox relay has made for the subscription: each new one takes the next number (first-attempt order). */
    deliverySeq: bigint('delivery_seq', { mode: 'number' }).notNull().default(0),
    /**
     * Whether the subscription's dispatcher has nothing queued and waits to be woken: the relay signals it when it
     * queues a delivery while this is true (and sets it false in the same transaction), and only then.
     */
    dispatchIdle: boolean('dispatch_idle').notNull().default(true),
    /** Attempts in flight at once; null: the deployment's WEBHOOK_MAX_IN_FLIGHT. */
    maxInFlight: integer('max_in_flight'),
    /** The dispatcher's circuit breaker: open since (a run of failed first attempts), and when it next probes. Null: closed. */
    circuitOpenedAt: ts('circuit_opened_at'),
    circuitNextProbeAt: ts('circuit_next_probe_at'),
    /**
     * Sign deliveries the Standard Webhooks way too (`webhook-id`, `webhook-timestamp`, `webhook-signature`), besides
     * X-Service-Signature. On for subscriptions made since it exists; older ones opt in.
     */
    standardWebhooks: boolean('standard_webhooks').notNull().default(false),
    /** Why the subscription is disabled, when it is: by an operator, or by the service (its receiver failing or gone). */
    disabledAt: ts('disabled_at'),
    disabledBy: text('disabled_by', { enum: ['operator', 'failures', 'gone'] }),
    disabledReason: text('disabled_reason'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('webhook_subscriptions_integration_idx').on(t.integrationId, t.createdAt)],
);

/** One delivery of one event to one subscription: its state, held by (and mirrored from) its Temporal workflow. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    eventId: text('event_id').notNull(),
    subscriptionId: text('subscription_id').notNull(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    eventType: text('event_type').notNull(),
    status: text('status', { enum: ['pending', 'retrying', 'succeeded', 'dead_lettered', 'cancelled', 'expired'] }).notNull(),
    /**
     * Position in the subscription's queue: its dispatcher makes first attempts in this order. Null for deliveries
     * made before the queue existed, whose own workflow made their first attempt.
     */
    seq: bigint('seq', { mode: 'number' }),
    attempts: integer('attempts').notNull().default(0),
    /**
     * When the dispatcher took the delivery for its first attempt. Set while still `pending` means the outcome is not
     * recorded yet: after a crash the attempt counts as lost and the delivery's own workflow retries it.
     */
    firstStartedAt: ts('first_started_at'),
    /** When the first attempt's request went out. */
    firstSentAt: ts('first_sent_at'),
    lastAttemptAt: ts('last_attempt_at'),
    nextAttemptAt: ts('next_attempt_at'),
    lastResponseStatus: integer('last_response_status'),
    lastError: text('last_error'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_subscription_idx').on(t.eventId, t.subscriptionId),
    index('webhook_deliveries_subscription_idx').on(t.subscriptionId, t.createdAt, t.id),
    index('webhook_deliveries_subscription_status_idx').on(t.subscriptionId, t.status, t.createdAt),
    uniqueIndex('webhook_deliveries_subscription_seq_idx').on(t.subscriptionId, t.seq),
    index('webhook_deliveries_created_idx').on(t.createdAt),
    // The subscriptions' queues: what each dispatcher takes next, in order.
    index('webhook_deliveries_queue_idx').on(t.subscriptionId, t.seq).where(sql`${t.status} = 'pending'`),
    // The metrics' and the console's health numbers (backlogs and dead letters, per subscription for the top few).
    index('webhook_deliveries_open_idx').on(t.status, t.subscriptionId).where(sql`${t.status} in ('pending', 'retrying', 'dead_lettered')`),
  ],
);

/**
 * A subscription's endpoint health, kept by the attempts as they are recorded (a row of its own, so the dispatchers'
 * writes never wait on the relay's lock of the subscription row): its last success and failure, and since when every
 * attempt has failed (null while the last recorded outcome after a success is a success).
 */
export const webhookSubscriptionHealth = pgTable('webhook_subscription_health', {
  subscriptionId: text('subscription_id').primaryKey(),
  lastSuccessAt: ts('last_success_at'),
  lastFailureAt: ts('last_failure_at'),
  failingSince: ts('failing_since'),
});

/** Every attempt of a delivery: when, how long, what the receiver answered (or why there was no answer). */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    deliveryId: text('delivery_id').notNull(),
    number: integer('number').notNull(),
    startedAt: ts('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    responseStatus: integer('response_status'),
    error: text('error'),
    /** The first bytes of the response body. */
    responseBody: text('response_body'),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.number] })],
);

/** Leases of singleton background loops (the outbox relay): one holder at a time, taken over when it lapses. */
export const leaseLocks = pgTable('lease_locks', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: ts('expires_at').notNull(),
});

/**
 * Writes (SPEC.md Operation): one row per accepted write, whose Temporal workflow (id = the Operation id) gets the
 * change into the source and the cache. The row is what GET /v1/operations/{id} shows; the workflow keeps it current.
 */
export const operations = pgTable(
  'operations',
  {
    id: text('id').primaryKey(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    type: text('type', { enum: ['lease.create', 'lease.update', 'unit.create', 'unit.update', 'resident.create', 'resident.update'] }).notNull(),
    status: text('status', { enum: ['queued', 'running', 'succeeded', 'failed'] }).notNull(),
    /** What to write, in the connector's terms (references as x_ids). Read only inside activities. */
    request: jsonb('request').$type<Record<string, unknown>>().notNull(),
    /** An update's record: its CDM id and x_id (shown as `resource` once the write succeeded). */
    targetId: text('target_id'),
    targetXId: text('target_x_id'),
    sourceState: text('source_state', { enum: ['applied', 'rejected'] }),
    appliedAt: ts('applied_at'),
    reconcileState: text('reconcile_state', { enum: ['pending', 'reconciled', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at'),
    lastError: text('last_error'),
    resourceId: text('resource_id'),
    resourceXId: text('resource_x_id'),
    idempotencyKey: text('idempotency_key'),
    /** When the workflow was known to be started (by the API, a retried request or the sweeper). */
    workflowStartedAt: ts('workflow_started_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('operations_org_created_idx').on(t.organizationId, t.mode, t.createdAt),
    // What the sweeper looks for: accepted writes whose workflow may never have been started.
    index('operations_unstarted_idx').on(t.createdAt).where(sql`${t.workflowStartedAt} is null`),
    // The oldest Operation not yet finished (a metric and an alert): the head of this index.
    index('operations_open_idx').on(t.createdAt).where(sql`${t.status} in ('queued', 'running')`),
  ],
);

/**
 * Idempotency keys of writes, per organization and mode, remembered 24 hours: the request they were first used with
 * (method, path and canonical body, hashed) and the Operation it made. The primary key makes racing requests with
 * one key collapse onto one Operation.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    organizationId: uuid('organization_id').notNull(),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    operationId: text('operation_id').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.mode, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/**
 * Automations (DECISIONS.md Automations): a scheduled CSV export of one entity of an integration, with the filters
 * of that entity's list endpoint, to an HTTP endpoint or a directory. Its Temporal Schedule is `automation-<id>`.
 */
export const automations = pgTable(
  'automations',
  {
    id: text('id').primaryKey(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    name: text('name').notNull(),
    entity: text('entity', { enum: ['property', 'unit', 'resident', 'lease'] }).notNull(),
    /** The list endpoint's query parameters, as sent (validated by the same schemas when saved and when run). */
    filters: jsonb('filters').$type<Record<string, string>>().notNull().default({}),
    /** Fields to export, in order; null: every field of the entity. */
    columns: text('columns').array(),
    schedule: jsonb('schedule').$type<{ every: number } | { cron: string; timezone?: string }>().notNull(),
    /**
     * Where the file goes; an HTTP destination's headers are sealed apart (they may hold credentials). Also how the
     * file is written for whoever opens it there: `escape_formulas` (absent: true; domain/automations.ts).
     */
    destination: jsonb('destination')
      .$type<({ type: 'http'; url: string; method?: 'PUT' | 'POST' } | { type: 'directory'; path: string }) & { escape_formulas?: boolean }>()
      .notNull(),
    destinationHeaders: text('destination_headers'),
    status: text('status', { enum: ['active', 'paused'] }).notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('automations_integration_idx').on(t.integrationId, t.createdAt)],
);

/** One run of an automation: its Temporal workflow's id is the run id. */
export const automationRuns = pgTable(
  'automation_runs',
  {
    id: text('id').primaryKey(),
    automationId: text('automation_id').notNull(),
    organizationId: uuid('organization_id').notNull(),
    integrationId: uuid('integration_id').notNull(),
    trigger: text('trigger', { enum: ['schedule', 'manual'] }).notNull(),
    status: text('status', { enum: ['queued', 'running', 'succeeded', 'failed'] }).notNull(),
    fileName: text('file_name').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at'),
    recordsExported: integer('records_exported'),
    error: text('error'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('automation_runs_automation_idx').on(t.automationId, t.createdAt)],
);

/**
 * Operator console sign-ins. The browser holds a random token in an HttpOnly cookie; only its HMAC under a key derived
 * from ADMIN_TOKEN is stored (api/console/session.ts), so a copy of this table signs nobody in and a row written
 * straight into it opens no session. Each session has its own CSRF token for the console's forms, and the digest of
 * the admin token it was opened with: rotating ADMIN_TOKEN ends every session. Sign-out deletes the row.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    csrfToken: text('csrf_token').notNull(),
    adminTokenHash: text('admin_token_hash').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('console_sessions_expires_idx').on(t.expiresAt)],
);

/**
 * Wrong admin tokens (admin API bearers, console sign-ins), counted per client address (`address:<ip or IPv6 /64>`)
 * and per token prefix (`prefix:<HMAC of the first characters>`, never the characters themselves), so that every API
 * process throttles the same guesser (api/admin/auth.ts; the statements are in db/admin-auth-failures.ts). A count is
 * forgotten once the window passes without a failure; `blocked_until` is when the key may try again.
 */
export const adminAuthFailures = pgTable(
  'admin_auth_failures',
  {
    key: text('key').primaryKey(),
    failures: integer('failures').notNull(),
    lastFailedAt: ts('last_failed_at').notNull(),
    blockedUntil: ts('blocked_until'),
  },
  (t) => [index('admin_auth_failures_last_failed_idx').on(t.lastFailedAt)],
);
