/**
 * What the contract fuzzing runs against, shared by the contract test (test/integration/contract-fuzz.test.ts, one
 * fixed seed inside `npm test`) and `npm run fuzz:deep` (test/fuzz/deep.ts, a new seed each run): a database of its
 * own, the API and a sync worker over it, one synced sandbox integration with a test key, and Schemathesis with the
 * settings of test/fuzz/schemathesis.toml and the hooks of test/fuzz/hooks.py.
 *
 * The fuzzer lists, changes and deletes whatever the admin API lets it reach (every organization, then their
 * integrations), so it gets a database of its own: whatever else uses the server keeps its own.
 *
 * Plain Node, no vitest state: the caller hands in the Temporal server, the sandbox PMS and the database server.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { eq } from 'drizzle-orm';
import { parseConfig, type Config } from '../../config';
import { closeDb, createDb, type Db } from '../../db/client';
import { migrateDatabase } from '../../db/migrate';
import { organizations } from '../../db/schema';
import { createApiKey, createIntegration, createOrganization } from '../../db/tenants';
import { createKeyring } from '../../domain/secrets';
import { sandboxControlClient } from '../../sandbox/control';
import { SCHEMATHESIS } from '../../scripts/tools';
import { startApi, type TestServer } from '../support/api-server';
import { runSync, startTestWorker, type TestWorker } from '../support/sync';

/** Per-operation settings, each with its reason. */
export const FUZZ_CONFIG = fileURLToPath(new URL('./schemathesis.toml', import.meta.url));
/** Keeps sandbox companies and change batches small (hooks.py says why). */
export const FUZZ_HOOKS = fileURLToPath(new URL('./hooks.py', import.meta.url));

export interface FuzzEnvironment {
  /** The database the stack's own database is named after (`<name>_fuzz`), on the server it is made on. */
  databaseUrl: string;
  /** The server's maintenance database, to drop the stack's own at the end. */
  adminDatabaseUrl: string;
  temporalAddress: string;
  sandboxUrl: string;
  sandboxControlToken: string;
}

export interface FuzzStack {
  api: TestServer;
  config: Config;
  /** A test-mode key of the organization whose integration was synced. */
  key: string;
  /** The public document and the admin one, with the header that authenticates against each. */
  targets: { name: 'public' | 'admin'; document: string; authorization: string }[];
  close(): Promise<void>;
}

/** Runs one statement on the server's maintenance database. */
async function onServer(adminDatabaseUrl: string, statement: string): Promise<void> {
  const admin = createDb(adminDatabaseUrl, { max: 1, applicationName: 'propsync-test-fuzz' });
  try {
    await admin.$client.unsafe(statement);
  } finally {
    await closeDb(admin);
  }
}

/** A database of its own, the API, a worker, and one organization with a synced sandbox integration of `size` leases. */
export async function startFuzzStack(env: FuzzEnvironment, opts: { size?: number } = {}): Promise<FuzzStack> {
  const url = new URL(env.databaseUrl);
  url.pathname = `/${url.pathname.slice(1)}_fuzz`;
  const databaseUrl = url.toString();
  const dbName = url.pathname.slice(1);
  let db: Db | undefined;
  let api: TestServer | undefined;
  let worker: TestWorker | undefined;
  const close = async () => {
    await api?.close();
    await worker?.stop();
    if (db) await closeDb(db);
    await onServer(env.adminDatabaseUrl, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  };
  try {
    await migrateDatabase(databaseUrl);
    db = createDb(databaseUrl, { max: 5, applicationName: 'propsync-test' });
    const config = parseConfig({
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
      ADMIN_TOKEN: 'test-admin-token-0123456789',
      LOG_LEVEL: 'silent',
      PORT: '3000',
      WORKER_RECONCILE_SCHEDULES: 'false',
      SANDBOX_URL: env.sandboxUrl,
      SANDBOX_CONTROL_TOKEN: env.sandboxControlToken,
      // The fuzzer sends one wrong bearer per admin operation from one address and one token family: on purpose, and
      // not a guesser to slow down (the throttle itself is tested in admin-auth-throttle.test.ts).
      ADMIN_AUTH_ADDRESS_FAILURES: '100000',
      ADMIN_AUTH_PREFIX_FAILURES: '100000',
    });
    [api, worker] = await Promise.all([startApi(db, config), startTestWorker(config, db)]);

    const size = opts.size ?? 10;
    const seed = 7;
    const org = await createOrganization(db, { name: `fuzz-${randomUUID().slice(0, 8)}` });
    const { api_key } = await sandboxControlClient(env.sandboxUrl, env.sandboxControlToken).createCompany({ companyId: randomUUID(), size, seed });
    const integration = await createIntegration(
      db,
      { organizationId: org.id, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: { base_url: env.sandboxUrl, api_key, size, seed } },
      createKeyring(config.ENCRYPTION_KEYS),
    );
    await runSync(worker, db, integration);
    await db.update(organizations).set({ rateLimitPerMinute: 1_000_000, rateLimitBurst: 100_000 }).where(eq(organizations.id, org.id));
    const { key } = await createApiKey(db, { organizationId: org.id, mode: 'test' });
    return {
      api,
      config,
      key,
      targets: [
        { name: 'public', document: `${api.url}/v1/openapi.json`, authorization: `Bearer ${key}` },
        { name: 'admin', document: `${api.url}/admin/v1/openapi.json`, authorization: `Bearer ${config.ADMIN_TOKEN}` },
      ],
      close,
    };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

/**
 * The options of every run: every check, every phase, no examples from a database of past runs, one worker (two
 * shared cores), and requests that give up after 10 s.
 */
export function fuzzArgs(opts: { seed: number; examples: number }): string[] {
  return [
    '--generation-database',
    'none',
    '--checks',
    'all',
    '--phases',
    'examples,coverage,fuzzing,stateful',
    '--seed',
    String(opts.seed),
    '--max-examples',
    String(opts.examples),
    '--workers',
    '1',
    '--no-color',
    '--request-timeout',
    '10',
  ];
}

/**
 * Runs Schemathesis with the shared settings and hooks; resolves with its exit code and output. `echo` also
 * streams the output (a long run shows its progress).
 */
export function schemathesis(args: string[], opts: { echo?: NodeJS.WritableStream } = {}): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(SCHEMATHESIS, ['--config-file', FUZZ_CONFIG, ...args], {
      env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_HOOKS: FUZZ_HOOKS },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const take = (d: Buffer) => {
      output += d.toString();
      opts.echo?.write(d);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code: code ?? 1, output }));
  });
}
