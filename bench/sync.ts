/**
 * `npm run bench:sync`: the sync engine against baselines measured in the same run, on a separate bench database.
 *
 *   1. read-only: every source page read through the connector, nothing written (how fast the source can be read);
 *   2. bulk insert: the same mapped rows inserted straight into the same tables, one statement per batch;
 *   3. initial sync: the real workflow on a real worker process (a child, so its RSS is its own);
 *   4. incremental sync after 1 % of the records changed, against a second read-only pass over the changed source.
 *
 * Prints records/s, the ratios against their targets and the worker's peak RSS. It never asserts timings.
 * Usage: npm run bench:sync [-- --size 100000]   (size = leases; units ≈ size/2, residents ≈ size)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import postgres from 'postgres';
import { getTableColumns, getTableName, sql } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { triggerSync } from '../control/sync';
import { loadConfigOrExit } from '../config';
import { closeDb, createDb, type Db } from '../db/client';
import { newId } from '../db/ids';
import { migrateDatabase } from '../db/migrate';
import { rowValuesOf, TABLES, type Refs } from '../db/records';
import { events, leaseResidents } from '../db/schema';
import { getSyncJob } from '../db/sync-jobs';
import { createIntegration, createOrganization, type IntegrationRow } from '../db/tenants';
import { SYNC_ORDER, type Entity, type InputOf, type LeaseInput } from '../domain/cdm';
import { SEARCH_ATTRIBUTES, syncWorkflowIdOf } from '../domain/contract';
import { sandboxControlClient } from '../sandbox/control';
import { startSandbox } from '../sandbox/server';
import { TEMPORAL_CLI } from '../scripts/tools';
import { createConnector } from '../source';
import { workerProcessEnv } from '../worker/process-env';
import type { SourceSettings } from '../source/connector';
import { rssSampler } from './lib/processes';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { size: { type: 'string', default: '100000' }, seed: { type: 'string', default: '1' } } });
const SIZE = Number(args.size);
const cfg = loadConfigOrExit();
const PAGE = cfg.SYNC_PAGE_SIZE;
const TASK_QUEUE = 'bench-sync';

const say = (msg: string) => console.log(`[bench:sync] ${msg}`);
const secs = (ms: number) => (ms / 1000).toFixed(2);
const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');

type Source = { [E in Entity]: InputOf[E][] };

/** Read every page of every entity; `keep` holds the records (for the baseline), otherwise they are dropped. */
async function readSource(settings: SourceSettings, keep: boolean): Promise<{ ms: number; count: number; records: Source }> {
  const connector = createConnector(settings);
  const records = { property: [], unit: [], resident: [], lease: [] } as Source;
  let count = 0;
  const t0 = performance.now();
  for (const entity of SYNC_ORDER) {
    for (let page = 1; ; page++) {
      const p = await connector.readPage(entity, page, PAGE);
      count += p.records.length;
      if (keep) (records[entity] as unknown[]).push(...p.records);
      if (!p.hasMore) break;
    }
  }
  return { ms: performance.now() - t0, count, records };
}

/**
 * Baseline: the same mapped rows, bulk-inserted into the same tables under another integration, with the driver's
 * own multi-row INSERT ... VALUES, one statement per batch of a page's size.
 */
async function bulkInsert(db: Db, integration: IntegrationRow, source: Source): Promise<{ ms: number; count: number }> {
  const pg = db.$client;
  const refs: Refs = { property: new Map(), unit: new Map(), resident: new Map(), lease: new Map() };
  for (const entity of SYNC_ORDER) for (const r of source[entity]) refs[entity].set(r.x_id, newId(entity));
  const now = new Date();
  /** Drizzle-keyed values to a row keyed by column name; dates and jsonb as text, as Drizzle sends them. */
  const toRow = (table: PgTable, values: Record<string, unknown>) => {
    const row: Record<string, unknown> = {};
    for (const [key, col] of Object.entries(getTableColumns(table))) {
      if (!(key in values)) continue;
      const v = values[key];
      row[col.name] = v instanceof Date ? v.toISOString() : v !== null && col.columnType === 'PgJsonb' ? JSON.stringify(v) : v;
    }
    return row;
  };
  // Mapping is done before the clock starts: the baseline is the database's cost of writing the rows.
  const batches: { table: string; rows: Record<string, unknown>[] }[] = [];
  let count = 0;
  for (const entity of SYNC_ORDER) {
    const table = TABLES[entity] as unknown as PgTable;
    const rows = (source[entity] as InputOf[Entity][]).map((input) =>
      toRow(table, {
        ...rowValuesOf(entity, input, refs),
        id: refs[entity].get(input.x_id)!,
        organizationId: integration.organizationId,
        integrationId: integration.id,
        mode: integration.mode,
        xId: input.x_id,
        customData: input.custom_data,
        // The sync has Postgres hash the record; any hash of the same width costs the baseline's insert the same.
        contentHash: createHash('sha256').update(JSON.stringify(input)).digest('hex'),
        createdAt: now,
        updatedAt: now,
        deletedAt: null,
        psSyncedAt: now,
      }),
    );
    count += rows.length;
    for (let i = 0; i < rows.length; i += PAGE) batches.push({ table: getTableName(table), rows: rows.slice(i, i + PAGE) });
  }
  const people = source.lease.flatMap((l: LeaseInput) =>
    l.residents.map((p, position) => ({ lease_id: refs.lease.get(l.x_id)!, resident_id: refs.resident.get(p.x_id)!, x_id: p.x_id, role: p.role, position })),
  );
  for (let i = 0; i < people.length; i += PAGE * 2) batches.push({ table: getTableName(leaseResidents), rows: people.slice(i, i + PAGE * 2) });
  const t0 = performance.now();
  for (const b of batches) await pg`insert into ${pg(b.table)} ${pg(b.rows as postgres.Row[], ...Object.keys(b.rows[0]!))}`;
  return { ms: performance.now() - t0, count };
}

function spawnWorker(databaseUrl: string, temporalAddress: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...workerProcessEnv(process.env),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      WORKER_RECONCILE_SCHEDULES: 'false',
      SYNC_PAGE_SIZE: String(PAGE),
      LOG_LEVEL: 'info',
      LOG_PRETTY: 'false',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('worker started')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it started`)));
  });
}

async function main() {
  const benchUrl = new URL(cfg.DATABASE_URL);
  benchUrl.pathname = `${benchUrl.pathname.replace(/\/$/, '')}_bench_sync`;
  const databaseUrl = benchUrl.toString();
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const adminSql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  await adminSql.unsafe(`drop database if exists "${benchUrl.pathname.slice(1)}" with (force)`);
  await adminSql.end();
  await migrateDatabase(databaseUrl);
  say(`bench database ${benchUrl.pathname.slice(1)} (fresh), page size ${PAGE}`);

  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: TEMPORAL_CLI }, searchAttributes: [...SEARCH_ATTRIBUTES], extraArgs: ['--log-level', 'error'] },
  });
  const temporalAddress = env.connection.options.address;
  const sandbox = await startSandbox({ databaseUrl, port: 0 });
  const db = createDb(databaseUrl, { max: 5, applicationName: 'propsync-bench' });
  let worker: ChildProcess | undefined;
  try {
    const control = sandboxControlClient(sandbox.url);
    let t0 = performance.now();
    const { api_key } = await control.createCompany({ companyId: 'bench', size: SIZE, seed: Number(args.seed) });
    say(`sandbox company with ${SIZE.toLocaleString('en-US')} leases generated in ${secs(performance.now() - t0)} s`);
    const settings = { base_url: sandbox.url, api_key };
    const org = await createOrganization(db, { name: 'bench' });
    const integration = await createIntegration(db, { organizationId: org.id, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: settings });
    const shadow = await createIntegration(db, { organizationId: org.id, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: settings });

    const read1 = await readSource(settings, true);
    say(`read-only pass: ${read1.count.toLocaleString('en-US')} records in ${secs(read1.ms)} s`);
    const bulk = await bulkInsert(db, shadow, read1.records);
    say(`bulk-insert baseline: ${bulk.count.toLocaleString('en-US')} rows in ${secs(bulk.ms)} s`);
    read1.records = { property: [], unit: [], resident: [], lease: [] };
    // The sync starts from empty tables, as the baseline did.
    await db.execute(sql`truncate properties, units, residents, leases, lease_residents, events, sync_seen_pages`);
    await db.execute(sql`vacuum analyze`);

    worker = await spawnWorker(databaseUrl, temporalAddress);
    const rss = rssSampler(worker.pid!);
    const ctl = { db, client: new Client({ connection: env.connection }), taskQueue: TASK_QUEUE };
    const run = async () => {
      const started = performance.now();
      const job = await triggerSync(ctl, integration);
      await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
      return { ms: performance.now() - started, job: (await getSyncJob(db, job.id))! };
    };

    await new Promise((r) => setTimeout(r, 500));
    const startupRss = rss.peakMb();
    say(`worker started with ${cfg.WORKER_READ_THREADS} page-reading thread(s) (peak RSS while bundling workflows and connecting: ${startupRss} MB)`);
    rss.reset();
    const initial = await run();
    const initialRss = rss.peakMb();
    say(`initial sync: ${initial.job.recordsSeen.toLocaleString('en-US')} records in ${secs(initial.ms)} s (worker peak RSS ${initialRss} MB)`);

    const pct = (n: number) => Math.max(1, Math.round(n / 100));
    t0 = performance.now();
    await control.applyChanges('bench', {
      update: {
        property: pct(await countOf(db, integration.id, 'property')),
        unit: pct(await countOf(db, integration.id, 'unit')),
        resident: pct(await countOf(db, integration.id, 'resident')),
        lease: pct(await countOf(db, integration.id, 'lease')),
      },
    });
    say(`1 % of the records changed in the sandbox (${secs(performance.now() - t0)} s)`);
    const read2 = await readSource(settings, false);
    say(`read-only pass over the changed source: ${secs(read2.ms)} s`);
    rss.reset();
    const incremental = await run();
    const incrementalRss = rss.peakMb();
    const [{ n: eventCount } = { n: 0 }] = await db
      .select({ n: sql<number>`count(*)::int` })
      .from(events)
      .where(sql`${events.syncJobId} = ${incremental.job.id}`);
    say(
      `incremental sync: ${incremental.job.recordsUpdated.toLocaleString('en-US')} updated, ${eventCount} events, in ${secs(incremental.ms)} s (worker peak RSS ${incrementalRss} MB)`,
    );
    rss.stop();

    const initialRatio = bulk.ms / initial.ms;
    const incRatio = incremental.ms / read2.ms;
    const peak = Math.max(initialRss, incrementalRss);
    const mark = (ok: boolean) => (ok ? 'meets target' : 'BELOW TARGET');
    console.log('');
    console.log(`  ${'run'.padEnd(32)}${'records'.padStart(10)}${'seconds'.padStart(10)}${'records/s'.padStart(12)}`);
    const line = (name: string, n: number, ms: number) =>
      console.log(`  ${name.padEnd(32)}${n.toLocaleString('en-US').padStart(10)}${secs(ms).padStart(10)}${rate(n, ms).padStart(12)}`);
    line('read-only (source pages)', read1.count, read1.ms);
    line('bulk insert (baseline)', bulk.count, bulk.ms);
    line('initial sync', initial.job.recordsSeen, initial.ms);
    line('read-only (changed source)', read2.count, read2.ms);
    line('incremental sync (1 % changed)', incremental.job.recordsSeen, incremental.ms);
    console.log('');
    console.log(`  initial sync / bulk-insert throughput   ${initialRatio.toFixed(2)}   (target >= 0.5: ${mark(initialRatio >= 0.5)})`);
    console.log(`  incremental time / read-only time       ${incRatio.toFixed(2)}x  (target <= 1.5x: ${mark(incRatio <= 1.5)})`);
    console.log(`  worker peak RSS                         ${peak} MB (target <= 512 MB: ${mark(peak <= 512)})`);
  } finally {
    worker?.kill('SIGTERM');
    await closeDb(db);
    await sandbox.close();
    await env.teardown();
  }
}

async function countOf(db: Db, integrationId: string, entity: Entity): Promise<number> {
  const t = TABLES[entity] as unknown as (typeof TABLES)['property'];
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(t).where(sql`${t.integrationId} = ${integrationId}`);
  return row?.n ?? 0;
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
