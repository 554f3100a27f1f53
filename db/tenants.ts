/** Organizations, integrations and API keys: the rows the admin API, the demo seed and tests create. */
import { hash, randomInt, randomUUID } from 'node:crypto';
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import { ENTITIES } from '../domain/cdm';
import type { Mode, Plan } from '../domain/plans';
import { sealSourceConfig, type Keyring } from '../domain/secrets';
import type { Db, Tx } from './client';
import { newId } from './ids';
import { liveById, livePage } from './live';
import { orderedPage, type OrderedPage } from './order';
import { apiKeys, automations, integrations, organizations, syncJobs, webhookSubscriptions, type StoredSourceConfig } from './schema';
import { softDeleteUnseen } from './seen';
import { cancelQueue, cancelRetries } from './webhooks';

export type OrganizationRow = typeof organizations.$inferSelect;
export type IntegrationRow = typeof integrations.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type Scope = 'read' | 'write';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** A random base62 string from a CSPRNG. */
function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** The stored form of a key (sha256, hex). One-shot `hash` rather than createHash: it runs on every API request. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export async function createOrganization(tx: Tx, input: { name: string }): Promise<OrganizationRow> {
  const [row] = await tx.insert(organizations).values({ name: input.name }).returning();
  return row!;
}

export interface NewIntegration {
  /** Set when the id must be known before the row exists (the sandbox company is provisioned under it). */
  id?: string;
  organizationId: string;
  name?: string | null;
  mode: Mode;
  plan: Plan;
  sourceType: 'sandbox' | 'entrata' | 'buildium';
  /** The source's settings with its secret (`api_key`, or a buildium source's `client_secret`) in plaintext: it is stored encrypted. */
  sourceConfig: StoredSourceConfig;
  syncIntervalSeconds?: number | null;
  /** Seconds between full runs where the source reads deltas; null = the service default. */
  fullSyncIntervalSeconds?: number | null;
}

/** Create an integration; its source `api_key` is stored sealed with the keyring (the row holds the ciphertext). */
export async function createIntegration(tx: Tx, input: NewIntegration, secrets: Keyring): Promise<IntegrationRow> {
  // The id is part of what the sealed key is bound to, so it is known before the insert.
  const id = input.id ?? randomUUID();
  const [row] = await tx
    .insert(integrations)
    .values({
      ...input,
      id,
      name: input.name ?? null,
      sourceConfig: sealSourceConfig(secrets, id, input.sourceConfig),
      syncIntervalSeconds: input.syncIntervalSeconds ?? null,
    })
    .returning();
  return row!;
}

export async function getIntegration(tx: Tx, id: string): Promise<IntegrationRow | undefined> {
  const [row] = await tx.select().from(integrations).where(eq(integrations.id, id));
  return row;
}

/** Create a key; the returned `key` is the only time the secret exists outside the caller. */
export async function createApiKey(tx: Tx, input: { organizationId: string; mode: Mode; scopes?: Scope[] }): Promise<{ row: ApiKeyRow; key: string }> {
  const key = `sk_${input.mode}_${randomBase62(32)}`;
  const [row] = await tx
    .insert(apiKeys)
    .values({
      organizationId: input.organizationId,
      mode: input.mode,
      keyHash: hashApiKey(key),
      keyPrefix: key.slice(0, 12),
      scopes: input.scopes ?? ['read', 'write'],
    })
    .returning();
  return { row: row!, key };
}

/**
 * Revoke a key. Idempotent: a revoked key keeps its first revoked_at. The api_keys trigger announces the change,
 * so every API process drops the key from its auth cache at once.
 */
export async function revokeApiKey(tx: Tx, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await tx
    .update(apiKeys)
    .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
    .where(eq(apiKeys.id, id))
    .returning();
  return row;
}

/**
 * Every integration, deleted ones included (their schedules are removed), or only those of `organizationIds`: what
 * a starting worker reconciles the sync schedules against.
 */
export async function integrationsWithDeleted(tx: Tx, organizationIds?: string[]): Promise<IntegrationRow[]> {
  return tx
    .select()
    .from(integrations)
    .where(organizationIds ? inArray(integrations.organizationId, organizationIds) : undefined);
}

// The admin API's reads and writes.

export async function getOrganization(tx: Tx, id: string): Promise<OrganizationRow | undefined> {
  const [row] = await tx.select().from(organizations).where(eq(organizations.id, id));
  return row;
}

/** Every organization of the deployment, one page. */
export async function organizationsPage(tx: Tx, page: OrderedPage): Promise<OrganizationRow[]> {
  const query = tx.select().from(organizations).$dynamic();
  return orderedPage(query, page, organizations);
}

/** Rename an organization or change its rate limit override (null: the plan limit); returns it as it now is. */
export async function updateOrganization(
  tx: Tx,
  id: string,
  changes: Partial<Pick<OrganizationRow, 'name' | 'rateLimitPerMinute' | 'rateLimitBurst'>>,
): Promise<OrganizationRow | undefined> {
  const [row] = await tx.update(organizations).set(changes).where(eq(organizations.id, id)).returning();
  return row;
}

/** An integration that is not deleted. */
export async function getLiveIntegration(tx: Tx, id: string): Promise<IntegrationRow | undefined> {
  return liveById(tx, integrations, id);
}

/** An organization's integrations that are not deleted, one page. */
export async function integrationsPage(tx: Tx, organizationId: string, page: OrderedPage): Promise<IntegrationRow[]> {
  return livePage(tx, integrations, integrations.organizationId, organizationId, page);
}

/** Change a live integration's plan, cadences or name; returns it as it now is (undefined: deleted meanwhile). */
export async function updateIntegration(
  tx: Tx,
  id: string,
  changes: Partial<Pick<IntegrationRow, 'plan' | 'syncIntervalSeconds' | 'fullSyncIntervalSeconds' | 'name'>>,
): Promise<IntegrationRow | undefined> {
  const [row] = await tx
    .update(integrations)
    .set(changes)
    .where(and(eq(integrations.id, id), isNull(integrations.deletedAt)))
    .returning();
  return row;
}

/** Undo an integration's creation: the row and the sync job its first run may have queued (nothing else refers to it yet). */
export async function deleteNewIntegration(db: Db, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.delete(syncJobs).where(eq(syncJobs.integrationId, id));
    await tx.delete(integrations).where(eq(integrations.id, id));
  });
}

/**
 * Disconnect an integration, in one transaction: it and its automations are marked deleted, and every live record of
 * it is soft-deleted, without events (its subscriptions go with it). Returns the automations it marked deleted.
 */
export async function disconnectIntegration(db: Db, integration: IntegrationRow, now: Date): Promise<{ automationIds: string[] }> {
  return db.transaction(async (tx) => {
    // The row FOR UPDATE first: a write-back or a sync page writing its records (they hold it FOR KEY SHARE from their
    // first statement, liveIntegrationLock) commits before this goes on, so its records are soft-deleted below with
    // the rest; one that comes later waits for this, finds the integration deleted, and writes nothing.
    await tx.execute(sql`select 1 from ${integrations} where id = ${integration.id} for update`);
    await tx.update(integrations).set({ deletedAt: now }).where(eq(integrations.id, integration.id));
    // Its automations go with it: nothing is left to export, and their schedules are gone.
    const gone = await tx
      .update(automations)
      .set({ deletedAt: now, updatedAt: now })
      .where(and(eq(automations.integrationId, integration.id), isNull(automations.deletedAt)))
      .returning({ id: automations.id });
    // So do its webhook subscriptions, as a DELETE of each does: their queues and retries end cancelled, their history
    // stays readable.
    const subscriptions = await tx
      .update(webhookSubscriptions)
      .set({ deletedAt: now, updatedAt: now })
      .where(and(eq(webhookSubscriptions.integrationId, integration.id), isNull(webhookSubscriptions.deletedAt)))
      .returning({ id: webhookSubscriptions.id });
    for (const { id } of subscriptions) {
      await cancelQueue(tx, id, 'the integration was deleted');
      await cancelRetries(tx, id, 'the integration was deleted');
    }
    // A run id that saw nothing: every live record of the integration counts as gone.
    const ctx = { integration, emitEvents: false, syncJobId: newId('syncJob'), now };
    for (const entity of ENTITIES) await softDeleteUnseen(tx, ctx, entity);
    return { automationIds: gone.map((a) => a.id) };
  });
}

/** An organization's API keys, revoked ones included, one page. */
export async function apiKeysPage(tx: Tx, organizationId: string, page: OrderedPage): Promise<ApiKeyRow[]> {
  const query = tx.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId)).$dynamic();
  return orderedPage(query, page, apiKeys);
}

/** What /v1 authentication reads of a key. */
interface ApiKeyAuthRow {
  id: string;
  organization_id: string;
  mode: Mode;
  scopes: Scope[];
  revoked_at: Date | null;
}

/** A key by its hash (hashApiKey), for /v1 authentication: postgres.js directly, as it runs on every request the cache misses. */
export async function apiKeyByHash(db: Db, hash: string): Promise<ApiKeyAuthRow | undefined> {
  const [row] = await db.$client<ApiKeyAuthRow[]>`
    select id, organization_id, mode, scopes, revoked_at from api_keys where key_hash = ${hash}`;
  return row;
}

/** Record that a key was used: last_used_at moves at most once a minute, whichever process asks. */
export async function recordApiKeyUse(db: Db, keyId: string): Promise<void> {
  await db.$client`
    update api_keys set last_used_at = now()
    where id = ${keyId} and (last_used_at is null or last_used_at < now() - interval '1 minute')`.execute();
}
