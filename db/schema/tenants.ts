/** Tenants: organizations, their integrations (a connected source and its cadence) and API keys. */
import { index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { testOrLive, ts } from './columns';

/** An integration's stored source settings: one dialect's, its secret sealed; a sandbox's also its size and seed. */
export type StoredSourceConfig = (
  | { dialect?: 'entrata'; base_url: string; api_key: string }
  | { dialect: 'buildium'; base_url: string; client_id: string; client_secret: string }
) & { size?: number; seed?: number };

/** A tenant's own id, made by the database. */
const uuidId = () => uuid('id').primaryKey().defaultRandom();

export const organizations = pgTable('organizations', {
  id: uuidId(),
  name: text('name').notNull(),
  /** Override of the plan's org-wide limit (requests per minute); null = the highest plan among its integrations. */
  rateLimitPerMinute: integer('rate_limit_per_minute'),
  /** Override of the burst (bucket size); null = 10 % of the per-minute budget. */
  rateLimitBurst: integer('rate_limit_burst'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/** The organization an integration or a key belongs to. */
const organizationRef = () =>
  uuid('organization_id')
    .notNull()
    .references(() => organizations.id);

export const integrations = pgTable(
  'integrations',
  {
    id: uuidId(),
    organizationId: organizationRef(),
    name: text('name'),
    mode: testOrLive(),
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
    id: uuidId(),
    organizationId: organizationRef(),
    mode: testOrLive(),
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
