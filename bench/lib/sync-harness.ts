/**
 * What bench:sync and bench:sync-memory share: a fresh cache database, a Temporal dev server, the sandbox PMS as a
 * process of its own over a database that keeps generated companies between runs, the worker and the floor as
 * child processes, one sync run timed from its trigger to its workflow's end, and the checks every run must pass.
 */
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { sql } from 'drizzle-orm';
import { loadConfigOrExit, type Config } from '../../config';
import { triggerSync } from '../../control/sync';
import { closeDb, createDb, type Db } from '../../db/client';
import { ensureDatabase } from '../../db/migrate';
import { tableOf } from '../../db/records';
import { createIntegration, createOrganization, type IntegrationRow } from '../../db/tenants';
import type { StoredSourceConfig } from '../../db/schema';
import { ENTITIES, type Entity } from '../../domain/cdm';
import { syncWorkflowIdOf, type SyncKind } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import { sandboxControlClient, type SandboxControl, type SandboxCredentials, type SandboxDialect } from '../../sandbox/control';
import { workerProcessEnv } from '../../worker/process-env';
import { commandsTo } from './commands';
import { freePort, freshStack, startChild, waitForPollers, waitHealthy, type Child, type ServiceProcessOptions } from './processes';
import { CheckFailed, int, secs } from './report';
import type { FloorCommand, FloorResult } from './sync-floor';

export type Counts = Record<Entity, number>;
export const total = (c: Counts): number => ENTITIES.reduce((n, e) => n + c[e], 0);

/** The sandbox's database: generated companies stay there between bench runs (a 250k-lease one takes minutes). */
export function sandboxDatabaseUrl(serviceUrl: string): string {
  const u = new URL(serviceUrl);
  u.pathname = `${u.pathname.replace(/\/$/, '')}_bench_sandbox`;
  return u.toString();
}

export interface SyncBench {
  cfg: Config;
  databaseUrl: string;
  db: Db;
  env: TestWorkflowEnvironment;
  client: Client;
  temporalAddress: string;
  sandboxUrl: string;
  /** The sandbox PMS's process. */
  sandboxPid: number;
  control: SandboxControl;
  organizationId: string;
  close(): Promise<void>;
}

/**
 * Fresh cache database `<service db>_<suffix>`, a Temporal dev server (with `temporalDynamicConfig`, see
 * freshStack), the sandbox process, one organization.
 */
export async function startSyncBench(suffix: string, say: (msg: string) => void, temporalDynamicConfig: string[] = []): Promise<SyncBench> {
  const cfg = loadConfigOrExit();
  const { databaseUrl, env, client, temporalAddress } = await freshStack(cfg.DATABASE_URL, suffix, temporalDynamicConfig);
  const sandboxDb = sandboxDatabaseUrl(cfg.DATABASE_URL);
  await ensureDatabase(sandboxDb);
  const port = await freePort();
  const sandbox = startChild(
    'sandbox/main.ts',
    [],
    { DATABASE_URL: sandboxDb, SANDBOX_PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', LOG_PRETTY: 'false' },
    '[sandbox]',
  );
  const sandboxUrl = `http://127.0.0.1:${port}`;
  await waitHealthy(sandboxUrl);
  const db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench' });
  const org = await createOrganization(db, { name: `bench-${suffix}` });
  say(`cache database ${new URL(databaseUrl).pathname.slice(1)} (fresh); sandbox PMS process at ${sandboxUrl} over ${new URL(sandboxDb).pathname.slice(1)}`);
  return {
    cfg,
    databaseUrl,
    db,
    env,
    client,
    temporalAddress,
    sandboxUrl,
    sandboxPid: sandbox.pid,
    control: sandboxControlClient(sandboxUrl),
    organizationId: org.id,
    async close() {
      await closeDb(db).catch(() => {});
      await sandbox.stop();
      await env.teardown();
    },
  };
}

/**
 * A sandbox company of `size` leases as generated (seed `seed`): reused when one with this id exists and was never
 * changed, else generated anew. Returns its key and what it serves, per entity.
 */
export async function ensureCompany(
  b: SyncBench,
  companyId: string,
  size: number,
  seed: number,
  say: (msg: string) => void,
  dialect: SandboxDialect = 'entrata',
): Promise<{ apiKey: string; credentials: SandboxCredentials; counts: Counts }> {
  const existing = await b.control.getCompany(companyId);
  if (existing && (existing.change_counter !== 0 || existing.size !== size || existing.seed !== seed || (existing.dialect ?? 'entrata') !== dialect)) {
    say(`sandbox company ${companyId} was changed by an earlier run (change counter ${existing.change_counter}); generating it anew`);
    await b.control.deleteCompany(companyId);
  }
  const t0 = performance.now();
  const credentials = await b.control.createCompany({ companyId, size, seed, dialect });
  const info = (await b.control.getCompany(companyId))!;
  const pristine = existing?.change_counter === 0 && existing.size === size && existing.seed === seed;
  say(
    `sandbox company ${companyId}: ${int(total(info.counts))} records (${ENTITIES.map((e) => `${int(info.counts[e])} ${e}`).join(', ')}), ` +
      (pristine ? 'reused' : `generated in ${secs(performance.now() - t0)} s`),
  );
  return { apiKey: credentials.api_key, credentials, counts: info.counts };
}

/**
 * A source without page cursors: the sandbox keeps where each page of a listing ended per company version
 * (sandbox/store.ts PageCursors), so a second pass over an unchanged company would read every page by cursor while
 * a first one pays OFFSET scans. An empty change request changes no record and moves the version, which leaves
 * every cursor of the company stale; the sandbox process, its pool and Postgres's cache stay as warm as before.
 */
export async function coldSource(b: SyncBench, companyId: string): Promise<void> {
  const before = (await b.control.getCompany(companyId))?.change_counter;
  const r = await b.control.applyChanges(companyId, {});
  const touched = ENTITIES.reduce((n, e) => n + r.updated[e].length + r.created[e].length + r.deleted[e].length, 0) + r.lease_transitions.length;
  if (touched !== 0) throw new CheckFailed(`an empty change request changed ${touched} record(s) of the sandbox company`);
  // The change counter and the version move together (sandbox/store.ts saveCounters); the version is not exposed.
  const after = (await b.control.getCompany(companyId))?.change_counter;
  if (before === undefined || after !== before + 1)
    throw new CheckFailed(`an empty change request did not move the sandbox company's version (${before} → ${after})`);
}

/** Empty cache tables, fresh statistics and no dirty buffers: the state every initial run starts from. */
export async function resetCache(db: Db): Promise<void> {
  await db.execute(sql`truncate properties, units, residents, leases, lease_residents, events, sync_seen_pages`);
  await db.execute(sql`vacuum analyze`);
  await db.execute(sql`checkpoint`);
}

/** Settle the database before a measured run: fresh statistics, no dirty buffers from what ran before. */
export async function settle(db: Db): Promise<void> {
  await db.execute(sql`vacuum analyze`);
  await db.execute(sql`checkpoint`);
}

export async function newIntegration(b: SyncBench, settings: StoredSourceConfig): Promise<IntegrationRow> {
  return createIntegration(
    b.db,
    { organizationId: b.organizationId, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: settings },
    createKeyring(b.cfg.ENCRYPTION_KEYS),
  );
}

/**
 * The worker (worker/main.ts, or dist/worker.mjs when `built`) as a child, as the service runs it, on its own task
 * queue (`env` over the bench's settings); resolves once it polls.
 */
export async function startWorker(
  b: Pick<SyncBench, 'databaseUrl' | 'temporalAddress' | 'client'>,
  taskQueue: string,
  env: Record<string, string> = {},
  opts: ServiceProcessOptions = {},
): Promise<Child> {
  const worker = startChild(
    opts.built ? 'dist/worker.mjs' : 'worker/main.ts',
    [],
    {
      ...workerProcessEnv(process.env),
      DATABASE_URL: b.databaseUrl,
      TEMPORAL_ADDRESS: b.temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKER_RECONCILE_SCHEDULES: 'false',
      SERVED_MODES: 'test',
      LOG_LEVEL: 'warn',
      LOG_PRETTY: 'false',
      ...env,
    },
    '[worker]',
    { nodeArgs: opts.nodeArgs ?? [], plainNode: opts.built === true },
  );
  await waitForPollers(b.client, taskQueue, 120_000, worker.pid);
  return worker;
}

/** The sync job's row as stored, whatever columns it has gained. */
export type JobRow = {
  id: string;
  status: string;
  initial: boolean;
  records_seen: number;
  records_new: number;
  records_updated: number;
  records_soft_deleted: number;
} & Record<string, unknown>;

/** One sync run through Temporal, timed from the trigger to the workflow's end. */
export async function runSync(b: SyncBench, taskQueue: string, integration: IntegrationRow, kind?: SyncKind): Promise<{ ms: number; job: JobRow }> {
  const ctl = { db: b.db, client: b.client, taskQueue };
  const t0 = performance.now();
  const job = await triggerSync(ctl, integration, { kind });
  await b.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
  const ms = performance.now() - t0;
  const [row] = await b.db.execute<JobRow>(sql`select * from sync_jobs where id = ${job.id}`);
  if (!row) throw new CheckFailed(`sync job ${job.id} vanished`);
  if (row.status !== 'succeeded') throw new CheckFailed(`sync job ${job.id} ended ${row.status}: ${String(row.error)}`);
  return { ms, job: row };
}

/** Live and soft-deleted rows of each entity of an integration, and its lease_residents rows. */
export async function cacheCounts(db: Db, integrationId: string): Promise<{ live: Counts; deleted: Counts; leaseResidents: number }> {
  const live = { property: 0, unit: 0, resident: 0, lease: 0 };
  const deleted = { ...live };
  for (const e of ENTITIES) {
    const t = tableOf(e);
    const [r] = await db
      .select({
        live: sql<number>`(count(*) filter (where ${t.deletedAt} is null))::int`,
        deleted: sql<number>`(count(*) filter (where ${t.deletedAt} is not null))::int`,
      })
      .from(t)
      .where(sql`${t.integrationId} = ${integrationId}`);
    live[e] = r?.live ?? 0;
    deleted[e] = r?.deleted ?? 0;
  }
  const [lr] = await db.execute<{ n: number }>(
    sql`select count(*)::int as n from lease_residents lr join leases l on l.id = lr.lease_id where l.integration_id = ${integrationId}`,
  );
  return { live, deleted, leaseResidents: lr?.n ?? 0 };
}

/**
 * What an integration's cache holds, independent of its ids and times: per entity an md5 over every (x_id, content
 * hash) in x_id order (a hash's marks after the sha256, such as a dangling reference's, left out), and the
 * lease_residents as (lease x_id, resident x_id, role, position). The floor and the sync must write the same.
 */
export async function contentDigest(db: Db, integrationId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of ENTITIES) {
    const t = tableOf(e);
    const [r] = await db
      .select({ d: sql<string>`md5(coalesce(string_agg(${t.xId} || ':' || left(${t.contentHash}, 64), ',' order by ${t.xId}), ''))` })
      .from(t)
      .where(sql`${t.integrationId} = ${integrationId} and ${t.deletedAt} is null`);
    out[e] = r?.d ?? '';
  }
  const [lr] = await db.execute<{ d: string }>(sql`
    select md5(coalesce(string_agg(l.x_id || ':' || lr.x_id || ':' || lr.role || ':' || lr.position, ',' order by l.x_id, lr.position), '')) as d
    from lease_residents lr join leases l on l.id = lr.lease_id where l.integration_id = ${integrationId}`);
  out.lease_residents = lr?.d ?? '';
  return out;
}

/**
 * After a first sync (or a floor's COPY) of an unchanged source: every record the source served is in the cache,
 * once, live; nothing else is.
 */
export async function checkInitial(db: Db, label: string, integrationId: string, served: Counts): Promise<{ leaseResidents: number }> {
  const c = await cacheCounts(db, integrationId);
  const problems: string[] = [];
  for (const e of ENTITIES) {
    if (c.live[e] !== served[e]) problems.push(`${e}: ${int(c.live[e])} live rows cached, the source served ${int(served[e])}`);
    if (c.deleted[e] !== 0) problems.push(`${e}: ${int(c.deleted[e])} soft-deleted rows after a first sync`);
  }
  if (problems.length > 0) throw new CheckFailed(`${label}:\n  - ${problems.join('\n  - ')}`);
  return { leaseResidents: c.leaseResidents };
}

/** The floor process: one for the whole bench, as the worker is, so both keep their warm code and threads alike. */
export interface Floor {
  pid: number;
  run(cmd: Omit<FloorCommand, 'id'>): Promise<FloorResult>;
  stop(): Promise<void>;
}

export async function startFloor(b: SyncBench): Promise<Floor> {
  const child = startChild(
    'bench/lib/sync-floor.ts',
    [],
    { ...workerProcessEnv(process.env), DATABASE_URL: b.databaseUrl, LOG_LEVEL: 'warn', LOG_PRETTY: 'false' },
    '[floor]',
    { stdin: true, echo: (line) => !line.startsWith('floor-result ') },
  );
  await child.line(/^floor ready/, 120_000);
  return { pid: child.pid, run: commandsTo<FloorCommand, FloorResult>(child, 'floor', 'the floor', 60 * 60_000), stop: () => child.stop() };
}
