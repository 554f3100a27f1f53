/** What every test file shares: its database handle, a Temporal address, and tenant fixtures of its own. */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { parseConfig, type Config } from '../../config';
import { createDb, type Db } from '../../db/client';
import { createApiKey, createOrganization, type Scope } from '../../db/tenants';
import type { Mode, Plan } from '../../domain/plans';
import { createKeyring, type Keyring } from '../../domain/secrets';
import { unsyncedIntegration } from './fixtures';

export function testDb(max = 5): Db {
  return createDb(inject('databaseUrl'), { max, applicationName: 'propsync-test' });
}

let exportRoot: string | undefined;
/** This test process's EXPORT_ROOT (a temporary directory), with the destination directories given made in it. */
export function testExportRoot(...directories: string[]): string {
  exportRoot ??= mkdtempSync(join(tmpdir(), 'propsync-exports-'));
  for (const d of directories) mkdirSync(join(exportRoot, d), { recursive: true });
  return exportRoot;
}

/** A configuration for in-process services of a test file, with its own task queue. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return parseConfig({
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    ADMIN_TOKEN: 'test-admin-token-0123456789',
    LOG_LEVEL: 'silent',
    PORT: '3000',
    EXPORT_ROOT: testExportRoot(),
    ...overrides,
  });
}

/**
 * What a test configuration adds to serve live-mode keys: a deployment that serves live mode refuses the development
 * tokens and encryption key (the development key stays second, so rows sealed by testKeyring() still open).
 */
export const SERVE_LIVE: Record<string, string> = {
  SERVED_MODES: 'test,live',
  SANDBOX_CONTROL_TOKEN: 'test-live-sandbox-control-token',
  ENCRYPTION_KEYS: `live-test:${Buffer.alloc(32, 7).toString('base64')},dev:${Buffer.from(parseConfig({}).ENCRYPTION_KEYS[0]!.key).toString('base64')}`,
};

/**
 * The keyring of a test configuration (the built-in development key, as testConfig() leaves ENCRYPTION_KEYS
 * unset): what rows written straight to the database are sealed with, so that workers and APIs open them.
 */
export function testKeyring(): Keyring {
  return createKeyring(parseConfig({}).ENCRYPTION_KEYS);
}

export interface Tenant {
  organizationId: string;
  integrationId: string;
  mode: Mode;
  key: string;
}

/** A fresh organization with one integration and a key of the given mode. */
export async function makeTenant(db: Db, opts: { mode?: Mode; plan?: Plan; scopes?: Scope[]; name?: string } = {}): Promise<Tenant> {
  const mode = opts.mode ?? 'test';
  const org = await createOrganization(db, { name: opts.name ?? `org-${randomUUID().slice(0, 8)}` });
  const integration = await unsyncedIntegration(db, org.id, { mode, plan: opts.plan });
  const { key } = await createApiKey(db, { organizationId: org.id, mode, scopes: opts.scopes });
  return { organizationId: org.id, integrationId: integration.id, mode, key };
}
