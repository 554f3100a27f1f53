/**
 * The OpenAPI documents say exactly what the service does: Schemathesis (pinned, installed by scripts/ensure.mjs into
 * .tools/fuzz) runs every check, with the examples, coverage, fuzzing and stateful phases, against the public document
 * with a test key and against the admin document with the admin token, on a fixed seed and a bounded number of
 * examples. Any failure fails the test, with Schemathesis's report (each failure with its reproducing curl).
 *
 * The fuzzer lists, changes and deletes whatever the admin API lets it reach (every organization, then their
 * integrations), so it runs against a database of its own: the other test files running beside it keep theirs.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, createDb, type Db } from '../../db/client';
import { migrateDatabase } from '../../db/migrate';
import { organizations } from '../../db/schema';
import { SCHEMATHESIS } from '../../scripts/tools';
import { startApi, type TestServer } from '../support/api-server';
import { testConfig } from '../support/context';
import { runSync, sandboxIntegration, startTestWorker, type TestWorker } from '../support/sync';
import { keyFor } from '../support/writes';

/** Per-operation settings, each with its reason (test/fuzz/schemathesis.toml). */
const CONFIG = fileURLToPath(new URL('../fuzz/schemathesis.toml', import.meta.url));
/** Keeps sandbox companies and change batches small (test/fuzz/hooks.py says why). */
const HOOKS = fileURLToPath(new URL('../fuzz/hooks.py', import.meta.url));
let db: Db;
let config: Config;
let api: TestServer;
let syncs: TestWorker;
let key: string;
let reports: string;
let databaseUrl: string;

/** Runs one statement on the server's maintenance database. */
async function onServer(statement: string): Promise<void> {
  const admin = createDb(inject('adminDatabaseUrl'), { max: 1, applicationName: 'propsync-test-fuzz' });
  try {
    await admin.$client.unsafe(statement);
  } finally {
    await closeDb(admin);
  }
}

beforeAll(async () => {
  const shared = new URL(inject('databaseUrl'));
  shared.pathname = `/${shared.pathname.slice(1)}_fuzz`;
  databaseUrl = shared.toString();
  await migrateDatabase(databaseUrl);
  db = createDb(databaseUrl, { max: 5, applicationName: 'propsync-test' });
  config = testConfig({
    DATABASE_URL: databaseUrl,
    WORKER_RECONCILE_SCHEDULES: 'false',
    SANDBOX_URL: inject('sandboxUrl'),
    SANDBOX_CONTROL_TOKEN: inject('sandboxControlToken'),
  });
  [api, syncs] = await Promise.all([startApi(db, config), startTestWorker(config, db)]);
  const s = await sandboxIntegration(db, { size: 10 });
  await runSync(syncs, db, s.row);
  await db.update(organizations).set({ rateLimitPerMinute: 1_000_000, rateLimitBurst: 100_000 }).where(eq(organizations.id, s.row.organizationId));
  key = await keyFor(db, s.row.organizationId);
  reports = await mkdtemp(join(tmpdir(), 'propsync-fuzz-'));
}, 120_000);
afterAll(async () => {
  await api?.close();
  await syncs?.stop();
  await closeDb(db);
  if (databaseUrl) await onServer(`DROP DATABASE IF EXISTS "${new URL(databaseUrl).pathname.slice(1)}" WITH (FORCE)`);
  if (reports) await rm(reports, { recursive: true, force: true });
});

/** Run Schemathesis; resolves with its exit code and output. */
function schemathesis(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(SCHEMATHESIS, ['--config-file', CONFIG, ...args], { env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_HOOKS: HOOKS }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code: code ?? 1, output }));
  });
}

const COMMON = ['--generation-allow-x00', 'false', '--generation-database', 'none', '--checks', 'all', '--phases', 'examples,coverage,fuzzing,stateful', '--seed', '42', '--workers', '1', '--no-color', '--request-timeout', '10'];

describe('Schemathesis', () => {
  it('finds nothing the public document and the service disagree on', async () => {
    const r = await schemathesis(['run', `${api.url}/v1/openapi.json`, '-H', `Authorization: Bearer ${key}`, ...COMMON, '--max-examples', process.env.FUZZ_EXAMPLES ?? '15', '--report-dir', join(reports, 'public')]);
    expect(r.code, r.output).toBe(0);
  }, 600_000);
});

describe('Schemathesis on the admin document', () => {
  it('finds nothing the admin document and the service disagree on', async () => {
    const r = await schemathesis(['run', `${api.url}/admin/v1/openapi.json`, '-H', `Authorization: Bearer ${config.ADMIN_TOKEN}`, ...COMMON, '--max-examples', process.env.FUZZ_EXAMPLES ?? '15', '--report-dir', join(reports, 'admin')]);
    expect(r.code, r.output).toBe(0);
  }, 900_000);
});
