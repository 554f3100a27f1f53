/**
 * Once per `npm test`: a fresh database with the migrations applied, and one Temporal dev server (the real
 * server, from the CLI installed in .tools) shared by every test file through provide/inject.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import postgres from 'postgres';
import { migrateDatabase } from '../db/migrate';
import { SEARCH_ATTRIBUTES } from '../domain/contract';
import { TEMPORAL_CLI } from '../scripts/tools';
import { startSandbox, type RunningSandbox } from '../sandbox/server';
import { config } from '../config';

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

const BASE = process.env.TEST_DATABASE_BASE_URL ?? 'postgres://postgres@127.0.0.1:5432';

let env: TestWorkflowEnvironment | undefined;
let dbName = '';
let sandbox: RunningSandbox | undefined;

export async function setup(project: TestProject) {
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
  if (dbName) {
    const sql = postgres(`${BASE}/postgres`, { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
    await sql.end();
  }
}
