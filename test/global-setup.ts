/**
 * Once per `npm test`: a fresh database with the migrations applied, and one Temporal dev server (the real
 * server, from the CLI installed in .tools) shared by every test file through provide/inject.
 *
 * The database server: TEST_DATABASE_BASE_URL, else DATABASE_URL's server, else an embedded PostgreSQL of this run's
 * own, in a temporary directory (never whatever happens to answer on 5432).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import postgres from 'postgres';
import { migrateDatabase } from '../db/migrate';
import { SEARCH_ATTRIBUTES } from '../domain/contract';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../scripts/embedded-postgres';
import { TEMPORAL_CLI } from '../scripts/tools';
import { startSandbox, type RunningSandbox } from '../sandbox/server';
import { config } from '../config';
import { freePort } from './support/faults';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    temporalAddress: string;
    adminDatabaseUrl: string;
    /** The sandbox PMS of this test run (one for all files; each file makes its own companies). */
    sandboxUrl: string;
    sandboxControlToken: string;
  }
}

let BASE = '';
let env: TestWorkflowEnvironment | undefined;
let dbName = '';
let sandbox: RunningSandbox | undefined;
let embedded: { pg: EmbeddedPostgres; dir: string } | undefined;

/** The server the test databases are made on (a URL without a database). */
async function databaseServer(): Promise<string> {
  if (process.env.TEST_DATABASE_BASE_URL) return process.env.TEST_DATABASE_BASE_URL.replace(/\/$/, '');
  const cfg = config();
  if (cfg.DATABASE_URL_SET) {
    const url = new URL(cfg.DATABASE_URL);
    url.pathname = '';
    url.search = '';
    return url.toString().replace(/\/$/, '');
  }
  // Neither names a server: the project's own embedded one, initialised afresh in a temporary directory and removed
  // at teardown. A server that merely answers on 5432 may be someone else's, so it is never used unasked.
  const dir = mkdtempSync(join(tmpdir(), 'propsync-test-pg-'));
  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'postgres'), port: await freePort() });
  embedded = { pg, dir };
  console.log(`tests: an embedded PostgreSQL in ${dir} on port ${pg.port} (set TEST_DATABASE_BASE_URL or DATABASE_URL to use a server of yours)`);
  return pg.url();
}

export async function setup(project: TestProject) {
  try {
    await start(project);
  } catch (err) {
    await teardown(); // an embedded server, a dev server or a database made before the failure
    throw err;
  }
}

async function start(project: TestProject) {
  BASE = await databaseServer();
  dbName = `propsync_test_${process.pid}_${Date.now().toString(36)}`;
  const databaseUrl = `${BASE}/${dbName}`;
  await migrateDatabase(databaseUrl);
  env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: TEMPORAL_CLI },
      searchAttributes: [...SEARCH_ATTRIBUTES],
      extraArgs: ['--log-level', 'error'],
    },
  });
  const address = env.connection.options.address;
  project.provide('databaseUrl', databaseUrl);
  project.provide('adminDatabaseUrl', `${BASE}/postgres`);
  project.provide('temporalAddress', address);
  // The configured control token, so that sandboxControlClient(url) without a token works in tests too.
  const controlToken = config().SANDBOX_CONTROL_TOKEN;
  sandbox = await startSandbox({ databaseUrl, port: 0, controlToken, slowMs: 1500 });
  project.provide('sandboxUrl', sandbox.url);
  project.provide('sandboxControlToken', controlToken);
}

export async function teardown() {
  await sandbox?.close();
  await env?.teardown();
  if (embedded) {
    await embedded.pg.stop();
    rmSync(embedded.dir, { recursive: true, force: true });
  } else if (dbName) {
    const sql = postgres(`${BASE}/postgres`, { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
    await sql.end();
  }
}
