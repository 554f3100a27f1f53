/**
 * What the sync tests share: a worker on the file's own task queue, sandbox-backed integrations, running a sync
 * to its end, and the comparison of the cache with the source, record for record.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { and, asc, eq, isNull } from 'drizzle-orm';
import { expect, inject } from 'vitest';
import { createPageReader } from '../../activities/page-reader';
import { triggerSync, type SyncControlDeps } from '../../control/sync';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { TABLES, type RowOf } from '../../db/records';
import { toRecords } from '../../db/serialize';
import { events, syncJobs, type StoredSourceConfig } from '../../db/schema';
import { getSyncJob, type SyncJobRow } from '../../db/sync-jobs';
import { createIntegration, createOrganization, getIntegration, type IntegrationRow } from '../../db/tenants';
import { ENTITIES, type Entity, type InputOf, type RecordOf } from '../../domain/cdm';
import { syncWorkflowIdOf, type SyncKind } from '../../domain/contract';
import { openSourceConfig } from '../../domain/secrets';
import type { Plan } from '../../domain/plans';
import { sandboxControlClient, type SandboxControl } from '../../sandbox/control';
import { createConnector, type SourceDialect } from '../../source';
import { createSyncWorker } from '../../worker/roles/sync';
import { testKeyring } from './context';

/** A worker running in this process on a connection of its own, with a client on that connection. */
export interface InProcessWorker {
  connection: NativeConnection;
  client: Client;
  worker: Worker;
  stop(): Promise<void>;
}

/** The worker `create` makes on a connection of its own, running in this process until stop() (which then calls `closed`). */
export async function runInProcess(
  config: Config,
  create: (connection: NativeConnection) => Promise<Worker>,
  closed: () => Promise<void> = async () => {},
): Promise<InProcessWorker> {
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS! });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const worker = await create(connection);
  const running = worker.run();
  return {
    connection,
    client,
    worker,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await closed();
      await connection.close();
    },
  };
}

export interface TestWorker extends InProcessWorker {
  ctl: SyncControlDeps;
}

/** A sync worker of this file's task queue, running in this process until stop(). */
export async function startTestWorker(config: Config, db: Db): Promise<TestWorker> {
  const pages = createPageReader({ threads: config.WORKER_READ_THREADS });
  const started = await runInProcess(
    config,
    (connection) => createSyncWorker({ config, db, connection, pages }),
    () => pages.close(),
  );
  return { ...started, ctl: { db, client: started.client, taskQueue: config.TEMPORAL_TASK_QUEUE } };
}

export function sandbox(): SandboxControl {
  return sandboxControlClient(inject('sandboxUrl'), inject('sandboxControlToken'));
}

export interface SandboxIntegration {
  row: IntegrationRow;
  companyId: string;
}

/**
 * An organization with one test-mode integration over a fresh sandbox company of `size` leases, in the flavour of
 * `dialect` (default entrata), with that dialect's settings; with `organizationId`, one more integration of that one.
 */
export async function sandboxIntegration(
  db: Db,
  opts: { size: number; seed?: number; plan?: Plan; dialect?: SourceDialect; fullSyncIntervalSeconds?: number; organizationId?: string },
): Promise<SandboxIntegration> {
  const org = opts.organizationId ? { id: opts.organizationId } : await createOrganization(db, { name: `sync-${randomUUID().slice(0, 8)}` });
  const companyId = randomUUID();
  const seed = opts.seed ?? 7;
  const dialect = opts.dialect ?? 'entrata';
  const created = await sandbox().createCompany({ companyId, size: opts.size, seed, dialect });
  const base_url = inject('sandboxUrl');
  const settings: StoredSourceConfig =
    dialect === 'buildium'
      ? { dialect, base_url, client_id: created.client_id!, client_secret: created.client_secret! }
      : { base_url, api_key: created.api_key };
  const row = await createIntegration(
    db,
    {
      organizationId: org.id,
      mode: 'test',
      plan: opts.plan ?? 'enterprise',
      sourceType: 'sandbox',
      sourceConfig: { ...settings, size: opts.size, seed },
      fullSyncIntervalSeconds: opts.fullSyncIntervalSeconds ?? null,
    },
    testKeyring(),
  );
  return { row, companyId };
}

export async function reload(db: Db, integration: IntegrationRow): Promise<IntegrationRow> {
  return (await getIntegration(db, integration.id))!;
}

/** Wait for a job's workflow to end; returns the job row as it ended. Throws when the workflow failed. */
export async function waitForJob(t: TestWorker, db: Db, jobId: string): Promise<SyncJobRow> {
  await t.client.workflow.getHandle(syncWorkflowIdOf(jobId)).result();
  return (await getSyncJob(db, jobId))!;
}

/** A manual run (of the kind asked for, else the kind that is due), to its end. */
export async function runSync(t: TestWorker, db: Db, integration: IntegrationRow, kind?: SyncKind): Promise<SyncJobRow> {
  const job = await triggerSync(t.ctl, integration, { kind });
  return waitForJob(t, db, job.id);
}

/** Every record of every entity as the source serves it now, read through the real connector. */
export async function readSource(integration: IntegrationRow, perPage = 500): Promise<{ [E in Entity]: InputOf[E][] }> {
  const connector = createConnector(openSourceConfig(testKeyring(), integration));
  const out = { property: [], unit: [], resident: [], lease: [] } as { [E in Entity]: InputOf[E][] };
  for (const entity of ENTITIES) {
    for (let page = 1; ; page++) {
      const p = await connector.readPage(entity, page, perPage);
      (out[entity] as unknown[]).push(...p.records);
      if (!p.hasMore) break;
    }
  }
  return out;
}

/** The cache of an integration as the API shows it, per entity (soft-deleted records included). */
export async function readCache(db: Db, integrationId: string): Promise<{ [E in Entity]: RecordOf[E][] }> {
  const out = {} as { [E in Entity]: RecordOf[E][] };
  for (const entity of ENTITIES) {
    const t = TABLES[entity] as unknown as (typeof TABLES)['property'];
    const rows = await db.select().from(t).where(eq(t.integrationId, integrationId)).orderBy(asc(t.xId));
    (out as Record<Entity, unknown>)[entity] = await toRecords(db, entity, rows as RowOf[typeof entity][]);
  }
  return out;
}

/**
 * What the cache must hold for a source record: its own fields as mapped, with references by x_id resolved to
 * the CDM ids of the referenced records.
 */
function expectedRecord(entity: Entity, input: Record<string, unknown>, ids: Record<Entity, Map<string, string>>): Record<string, unknown> {
  const { property_x_id, unit_x_id, previous_lease_x_id, residents, ...own } = input as Record<string, unknown> & {
    property_x_id?: string | null;
    unit_x_id?: string | null;
    previous_lease_x_id?: string | null;
    residents?: { x_id: string; role: string }[];
  };
  const ref = (e: Entity, x: string | null | undefined) => (x ? (ids[e].get(x) ?? null) : null);
  if (entity === 'property') return own;
  if (entity !== 'lease') return { ...own, property_id: ref('property', property_x_id) };
  const people: { resident_id: string; x_id: string; role: string }[] = [];
  for (const p of residents ?? []) {
    const id = ids.resident.get(p.x_id);
    if (id && !people.some((q) => q.resident_id === id)) people.push({ resident_id: id, x_id: p.x_id, role: p.role });
  }
  return {
    ...own,
    property_id: ref('property', property_x_id),
    unit_id: ref('unit', unit_x_id),
    previous_lease_id: ref('lease', previous_lease_x_id),
    residents: people,
    resident_ids: people.map((p) => p.resident_id),
  };
}

/** Assert that the live cache equals the source record for record, and that nothing else is live. */
export async function expectCacheEqualsSource(db: Db, integration: IntegrationRow): Promise<{ [E in Entity]: RecordOf[E][] }> {
  const source = await readSource(integration);
  const cache = await readCache(db, integration.id);
  const ids = Object.fromEntries(ENTITIES.map((e) => [e, new Map(cache[e].map((r) => [r.x_id, r.id]))])) as Record<Entity, Map<string, string>>;
  for (const entity of ENTITIES) {
    const live = cache[entity].filter((r) => r.deleted_at === null);
    const sourceXIds = source[entity].map((r) => r.x_id).sort();
    expect(live.map((r) => r.x_id).sort(), `${entity}: live x_ids`).toEqual(sourceXIds);
    const byXId = new Map(live.map((r) => [r.x_id, r as unknown as Record<string, unknown>]));
    for (const input of source[entity]) {
      const want = expectedRecord(entity, input as unknown as Record<string, unknown>, ids);
      const got = byXId.get(input.x_id)!;
      const shown = Object.fromEntries(Object.keys(want).map((k) => [k, got[k]]));
      expect(shown, `${entity} ${input.x_id}`).toEqual(want);
      expect(got.organization_id).toBe(integration.organizationId);
      expect(got.integration_id).toBe(integration.id);
    }
  }
  return cache;
}

export async function eventsOf(db: Db, integrationId: string, syncJobId?: string) {
  return db
    .select()
    .from(events)
    .where(and(eq(events.integrationId, integrationId), syncJobId ? eq(events.syncJobId, syncJobId) : undefined))
    .orderBy(asc(events.createdAt), asc(events.id));
}

export async function jobsOf(db: Db, integrationId: string): Promise<SyncJobRow[]> {
  return db.select().from(syncJobs).where(eq(syncJobs.integrationId, integrationId)).orderBy(asc(syncJobs.createdAt));
}

export async function liveCount(db: Db, integrationId: string, entity: Entity): Promise<number> {
  const t = TABLES[entity] as unknown as (typeof TABLES)['property'];
  const rows = await db
    .select({ id: t.id })
    .from(t)
    .where(and(eq(t.integrationId, integrationId), isNull(t.deletedAt)));
  return rows.length;
}

/** The polling helper, here too for the files that import their sync helpers from this one. */
export { until } from './until';

export type Snapshot = { [E in Entity]: RecordOf[E][] };

const UPDATED_TYPE: Record<Entity, string> = {
  property: 'PROPERTY_UPDATED',
  unit: 'UNIT_UPDATED',
  resident: 'RESIDENT_UPDATED',
  lease: 'LEASE_UPDATED',
};
const CREATED_TYPE: Record<Exclude<Entity, 'lease'>, string> = {
  property: 'PROPERTY_CREATED',
  unit: 'UNIT_CREATED',
  resident: 'RESIDENT_CREATED',
};
/** Fields that are bookkeeping: they move with every write and are never reported as changed. */
const BOOKKEEPING = new Set(['id', 'organization_id', 'integration_id', 'created_at', 'updated_at', 'ps_synced_at']);

interface ExpectedEvent {
  type: string;
  recordId: string;
  data: Record<string, unknown>;
}

/**
 * The events a run must record, derived from the cache before and after it (docs/api.md payload rules, docs/decisions.md
 * lease lifecycle): created records in full, changed ones with only what moved, soft-deletes with deleted_at.
 */
export function expectedEvents(before: Snapshot, after: Snapshot): { events: ExpectedEvent[]; created: number; updated: number; deleted: number } {
  const out: ExpectedEvent[] = [];
  let created = 0;
  let updated = 0;
  let deleted = 0;
  for (const entity of ENTITIES) {
    const old = new Map((before[entity] as unknown as Record<string, unknown>[]).map((r) => [r.x_id as string, r]));
    for (const rec of after[entity] as unknown as Record<string, unknown>[]) {
      const prev = old.get(rec.x_id as string);
      const lifecycle = entity === 'lease' ? lifecycleOf(rec.status as string | null, rec.is_renewal as boolean | null) : null;
      if (!prev || prev.deleted_at !== null) {
        if (rec.deleted_at !== null) continue;
        created++;
        const type = entity === 'lease' ? (lifecycle ?? 'LEASE_UPDATED') : CREATED_TYPE[entity];
        // A first sighting as *_UPDATED (a lease whose status has no lifecycle event) has the one *_UPDATED shape:
        // every content field but x_id counted as changed, and nothing else but id, x_id and updated_at.
        const data = type.endsWith('_UPDATED')
          ? onlyChanged(rec, prev ? changedBetween(prev, rec) : Object.keys(rec).filter((k) => !BOOKKEEPING.has(k) && k !== 'x_id'))
          : rec;
        out.push({ type, recordId: rec.id as string, data });
        continue;
      }
      const changed = changedBetween(prev, rec);
      if (changed.length === 0) continue;
      if (rec.deleted_at !== null) {
        deleted++;
        out.push({
          type: UPDATED_TYPE[entity],
          recordId: rec.id as string,
          data: { id: rec.id, x_id: rec.x_id, deleted_at: rec.deleted_at, updated_at: rec.updated_at, changed: ['deleted_at'] },
        });
        continue;
      }
      updated++;
      if (lifecycle && changed.includes('status')) {
        out.push({ type: lifecycle, recordId: rec.id as string, data: rec });
      } else {
        out.push({ type: UPDATED_TYPE[entity], recordId: rec.id as string, data: onlyChanged(rec, changed) });
      }
    }
  }
  return { events: out, created, updated, deleted };
}

/**
 * The events of run `jobId` are the changes between `before` and the cache now (which must equal the source), each
 * once, and one SYNC_COMPLETE: what the oracle expected, the cache, and the events.
 */
export async function expectEachChangeOnce(db: Db, integration: IntegrationRow, before: Snapshot, jobId: string) {
  const after = await expectCacheEqualsSource(db, integration);
  const want = expectedEvents(before, after);
  const got = await eventsOf(db, integration.id, jobId);
  const key = (e: { type: string; recordId: string | null }) => `${e.type} ${e.recordId}`;
  expect(
    got
      .filter((e) => e.type !== 'SYNC_COMPLETE')
      .map(key)
      .sort(),
  ).toEqual(want.events.map(key).sort());
  expect(got.filter((e) => e.type === 'SYNC_COMPLETE')).toHaveLength(1);
  return { want, after, got };
}

/**
 * Run `jobId` (of more than 200 changes) succeeded with the cache equal to the source, each change recorded once and
 * SYNC_COMPLETE last, and its counts are what it changed.
 */
export async function expectRecordedOnce(db: Db, integration: IntegrationRow, before: Snapshot, jobId: string): Promise<void> {
  const done = (await getSyncJob(db, jobId))!;
  expect(done.status, done.error ?? '').toBe('succeeded');
  const { want, after, got } = await expectEachChangeOnce(db, integration, before, jobId);
  expect(got.at(-1)!.type).toBe('SYNC_COMPLETE');
  expect(done).toMatchObject({ recordsNew: want.created, recordsUpdated: want.updated, recordsSoftDeleted: want.deleted });
  expect(done.recordsSeen).toBe(ENTITIES.reduce((n, e) => n + after[e].filter((r) => r.deleted_at === null).length, 0));
  expect(want.events.length).toBeGreaterThan(200);
}

/** docs/api.md payload rule 2, written out independently of db/apply.ts: id, x_id, updated_at, changed and the changed fields. */
function onlyChanged(rec: Record<string, unknown>, changed: string[]): Record<string, unknown> {
  const data: Record<string, unknown> = { id: rec.id, x_id: rec.x_id, updated_at: rec.updated_at, changed };
  for (const k of changed) data[k] = rec[k];
  return data;
}

/**
 * Every *_UPDATED event's data holds exactly id, x_id, updated_at, changed and the fields named in changed (plus
 * `truncated` on an event cut to fit 1 MB): checked on whatever a test recorded, whichever path recorded it.
 */
export function expectUpdatedShape(type: string, data: Record<string, unknown>): void {
  if (!type.endsWith('_UPDATED')) return;
  const changed = data.changed as string[];
  expect(Array.isArray(changed), `${type} carries changed`).toBe(true);
  const allowed = new Set(['id', 'x_id', 'updated_at', 'changed', ...changed, ...(data.truncated === true ? ['truncated'] : [])]);
  expect(
    Object.keys(data).filter((k) => !allowed.has(k)),
    `${type} fields outside changed`,
  ).toEqual([]);
  if (data.truncated !== true) for (const k of changed) expect(k in data, `${type} carries ${k}`).toBe(true);
  for (const k of ['id', 'x_id', 'updated_at']) expect(k in data, `${type} carries ${k}`).toBe(true);
}

function changedBetween(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  return Object.keys(b).filter((k) => !BOOKKEEPING.has(k) && JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}

/** docs/decisions.md, "Lease lifecycle events", written out independently of domain/events.ts. */
export function lifecycleOf(status: string | null, isRenewal: boolean | null): string | null {
  if (status === 'active') return isRenewal ? 'LEASE_RENEWED' : 'LEASE_SIGNED';
  if (status === 'ended' || status === 'terminated') return 'LEASE_ENDED';
  if (status === 'evicted') return 'LEASE_EVICTED';
  if (status === 'cancelled') return 'LEASE_CANCELLED';
  return null;
}
