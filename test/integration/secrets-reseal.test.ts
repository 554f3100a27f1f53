/**
 * The re-encryption pass of the migration job, on a database of its own (it rewrites every row of a database, so
 * it must not touch the rows other test files work with): plaintext values from before encryption get sealed,
 * values of an older key move to the active one, both still open to the same secret, and nothing is logged but counts.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../db/client';
import { insertAutomation } from '../../db/automations';
import { automations, integrations, organizations, webhookSubscriptions } from '../../db/schema';
import { resealStoredSecrets } from '../../db/secrets';
import { createKeyring, kidOf, openAutomationHeaders, openSigningSecret, openSourceConfig, places, type EncryptionKey } from '../../domain/secrets';
import { onOwnDatabase } from '../support/services';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const k0: EncryptionKey = { kid: 'k0', key: randomBytes(32) };
const k1: EncryptionKey = { kid: 'k1', key: randomBytes(32) };
const gone: EncryptionKey = { kid: 'gone', key: randomBytes(32) };
const envOf = (keys: EncryptionKey[]) => keys.map((k) => `${k.kid}:${Buffer.from(k.key).toString('base64')}`).join(',');

let url: string;
let db: Db;
let orgId: string;

onOwnDatabase('reseal', (own) => ({ url, db } = own), 2);
beforeAll(async () => {
  const [org] = await db.insert(organizations).values({ name: 'reseal' }).returning();
  orgId = org!.id;
});

/** An integration row written as an older version of the service would have (no encryption, or another key). */
async function integrationWith(apiKey: (id: string) => string): Promise<string> {
  const id = randomUUID();
  await db.insert(integrations).values({
    id,
    organizationId: orgId,
    mode: 'live',
    plan: 'scale',
    sourceType: 'entrata',
    sourceConfig: { base_url: 'https://pms.example.com', api_key: apiKey(id) },
  });
  return id;
}

async function subscriptionWith(secret: (id: string) => string, previous: ((id: string) => string) | null): Promise<string> {
  const id = `whs_${randomUUID().replace(/-/g, '').slice(0, 26).toUpperCase()}`;
  await db.insert(webhookSubscriptions).values({
    id,
    organizationId: orgId,
    integrationId: randomUUID(),
    url: 'https://hooks.example.com',
    eventTypes: ['*'],
    status: 'active',
    secret: secret(id),
    previousSecret: previous ? previous(id) : null,
    previousSecretExpiresAt: previous ? new Date(Date.now() + 3_600_000) : null,
  });
  return id;
}

const storedKey = async (id: string) => (await db.select().from(integrations).where(eq(integrations.id, id)))[0]!;
const storedSub = async (id: string) => (await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, id)))[0]!;

describe('re-encryption of stored secrets', () => {
  it('seals plaintext values, moves old-key values to the active key, and both still open to the same secret', async () => {
    const old = createKeyring([k0]);
    const ring = createKeyring([k1, k0]);
    const plainIds = await Promise.all(Array.from({ length: 5 }, (_, i) => integrationWith(() => `plain-pms-key-${i}`)));
    const oldId = await integrationWith((id) => old.seal('old-pms-key', places.sourceApiKey(id)));
    const currentId = await integrationWith((id) => ring.seal('current-pms-key', places.sourceApiKey(id)));
    const currentBefore = ((await storedKey(currentId)).sourceConfig as { api_key: string }).api_key;
    const subId = await subscriptionWith(
      () => 'whsec_plaintextSecret000000000000000',
      (id) => old.seal('whsec_previousSecret00000000000000000', places.signingSecret(id)),
    );

    const automation = await insertAutomation(db, {
      id: 'atm_01JH0000000000000000000001',
      organizationId: orgId,
      integrationId: currentId,
      name: 'nightly',
      entity: 'lease',
      schedule: { every: 3600 },
      destination: { type: 'http', url: 'https://files.example.com/in' },
      destinationHeaders: old.seal(JSON.stringify({ authorization: 'Bearer dest-token' }), places.automationHeaders('atm_01JH0000000000000000000001')),
      status: 'active',
    });

    // Batches of two: the pass walks every row, not only the first batch.
    const report = await resealStoredSecrets(db, ring, { batch: 2 });
    expect(report).toEqual({
      activeKid: 'k1',
      sourceApiKeys: { encrypted: 5, reencrypted: 1, unreadable: 0 },
      signingSecrets: { encrypted: 1, reencrypted: 1, unreadable: 0 },
      automationHeaders: { encrypted: 0, reencrypted: 1, unreadable: 0 },
      unreadableKids: [],
    });
    const [headersRow] = await db.select().from(automations).where(eq(automations.id, automation.id));
    expect(kidOf(headersRow!.destinationHeaders!)).toBe('k1');
    expect(openAutomationHeaders(createKeyring([k1]), headersRow!)).toEqual({ authorization: 'Bearer dest-token' });

    for (const [i, id] of plainIds.entries()) {
      const row = await storedKey(id);
      expect(kidOf((row.sourceConfig as { api_key: string }).api_key)).toBe('k1');
      expect(openSourceConfig(ring, row)).toEqual({ base_url: 'https://pms.example.com', api_key: `plain-pms-key-${i}` });
    }
    const moved = await storedKey(oldId);
    expect(kidOf((moved.sourceConfig as { api_key: string }).api_key)).toBe('k1');
    // Opens without the old key now.
    expect((openSourceConfig(createKeyring([k1]), moved) as { api_key: string }).api_key).toBe('old-pms-key');
    expect(((await storedKey(currentId)).sourceConfig as { api_key: string }).api_key).toBe(currentBefore);

    const sub = await storedSub(subId);
    expect([kidOf(sub.secret), kidOf(sub.previousSecret!)]).toEqual(['k1', 'k1']);
    expect(openSigningSecret(createKeyring([k1]), subId, sub.secret)).toBe('whsec_plaintextSecret000000000000000');
    expect(openSigningSecret(createKeyring([k1]), subId, sub.previousSecret!)).toBe('whsec_previousSecret00000000000000000');

    // Idempotent: a second run finds nothing to do.
    expect(await resealStoredSecrets(db, ring, { batch: 2 })).toEqual({
      activeKid: 'k1',
      sourceApiKeys: { encrypted: 0, reencrypted: 0, unreadable: 0 },
      signingSecrets: { encrypted: 0, reencrypted: 0, unreadable: 0 },
      automationHeaders: { encrypted: 0, reencrypted: 0, unreadable: 0 },
      unreadableKids: [],
    });
  });

  it('leaves a value whose key is gone as it is, and reports its key id', async () => {
    const lost = await integrationWith((id) => createKeyring([gone]).seal('lost-pms-key', places.sourceApiKey(id)));
    const before = ((await storedKey(lost)).sourceConfig as { api_key: string }).api_key;
    const report = await resealStoredSecrets(db, createKeyring([k1, k0]));
    expect(report.sourceApiKeys).toEqual({ encrypted: 0, reencrypted: 0, unreadable: 1 });
    expect(report.unreadableKids).toEqual(['gone']);
    expect(((await storedKey(lost)).sourceConfig as { api_key: string }).api_key).toBe(before);
    await db.delete(integrations).where(eq(integrations.id, lost));
  });

  it('runs in the migration job after the migrations, printing counts and key ids only', async () => {
    const k2: EncryptionKey = { kid: 'k2', key: randomBytes(32) };
    const id = await integrationWith(() => 'migrated-pms-key-0123456789');
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'db/migrate.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, ENCRYPTION_KEYS: envOf([k2, k1, k0]), LOG_LEVEL: 'silent' },
    });
    expect(stdout).toContain('migrations applied');
    // Every value of k1 (the earlier runs) and the new plaintext move to k2.
    expect(stdout).toMatch(/stored secrets now under key k2: source api keys 1 encrypted, 7 re-encrypted; webhook signing secrets 0 encrypted, 2 re-encrypted/);
    for (const leaked of ['migrated-pms-key', 'plain-pms-key', 'whsec_', Buffer.from(k2.key).toString('base64')]) {
      expect(stdout + stderr).not.toContain(leaked);
    }
    const row = await storedKey(id);
    expect(kidOf((row.sourceConfig as { api_key: string }).api_key)).toBe('k2');
    expect((openSourceConfig(createKeyring([k2]), row) as { api_key: string }).api_key).toBe('migrated-pms-key-0123456789');
  });
});
