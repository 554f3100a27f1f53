/** Organizations, integrations and API keys: the rows the admin API, the demo seed and tests create. */
import { hash, randomInt, randomUUID } from 'node:crypto';
import { eq, inArray, sql } from 'drizzle-orm';
import type { Mode, Plan } from '../domain/plans';
import { sealSourceConfig, type Keyring } from '../domain/secrets';
import type { Tx } from './client';
import { apiKeys, integrations, organizations, type StoredSourceConfig } from './schema';

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
