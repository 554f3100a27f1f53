/**
 * The one write path for synced records, used by the sync, by write-back read-backs and by test seeding:
 * map CDM input to rows (db/row-values.ts), upsert only what changed (by content hash), resolve references by x_id,
 * and record the change events in the outbox in the same transaction. What a complete run did not see is
 * soft-deleted through db/seen.ts, with events built here.
 */
import { and, eq, getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Entity, InputOf, LeaseInput, LeaseResident } from '../domain/cdm';
import { SYNC_ORDER } from '../domain/cdm';
import { categoryOf, eventFor, type EventType } from '../domain/events';
import { canonicalJson, hashRecord, recordOf, type HashedRecord } from '../domain/content';
import type { Mode } from '../domain/plans';
import type { Db, Tx } from './client';
import { newId } from './ids';
import { databaseNow } from './clock';
import { tableOf, type LeaseRow, type RowOf } from './records';
import { rowValuesOf, type Refs } from './row-values';
import { byLease, leaseRecord, loadLeaseResidents, serializeOne } from './serialize';
import { events, integrations, leaseResidents, leases, syncSeen } from './schema';

/** Max JSON size of an event; larger ones are sent truncated (docs/decisions.md). */
const MAX_EVENT_BYTES = 1_000_000;

// ---------------------------------------------------------------------------------------------------------------
// Diffs (content hashes: domain/content.ts)
// ---------------------------------------------------------------------------------------------------------------

/** Fields that are bookkeeping, never "changed" content. */
const NOT_CONTENT = new Set(['id', 'organization_id', 'integration_id', 'created_at', 'updated_at', 'ps_synced_at']);
/** Names of a serialized record's content fields. */
const contentFields = (record: Record<string, unknown>): string[] => Object.keys(record).filter((k) => !NOT_CONTENT.has(k));
/** What a first sighting reported as `*_UPDATED` counts as changed: every content field but its identity. */
const firstSightingChanges = (record: Record<string, unknown>): string[] => contentFields(record).filter((k) => k !== 'x_id');

/**
 * The data of every `*_UPDATED` event (docs/api.md payload rule 2): exactly `id`, `x_id`, `updated_at`, `changed` and
 * the fields named in `changed`, in the names and shapes of a full record.
 */
export function updatedPayload(record: Record<string, unknown>, changed: string[]): Record<string, unknown> {
  return { ...Object.fromEntries(changed.map((k) => [k, record[k]])), id: record.id, x_id: record.x_id, updated_at: record.updated_at, changed };
}

/** Names of the record fields whose values differ between two serialized records. */
function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const key of Object.keys(after)) {
    if (NOT_CONTENT.has(key)) continue;
    if (canonicalJson(before[key]) !== canonicalJson(after[key])) out.push(key);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Stored rows and references, by x_id
// ---------------------------------------------------------------------------------------------------------------

async function resolveRefs(tx: Tx, integrationId: string, wanted: { [K in keyof Refs]: Set<string> }): Promise<Refs> {
  const refs: Refs = { property: new Map(), unit: new Map(), resident: new Map(), lease: new Map() };
  const entities = (Object.keys(wanted) as (keyof Refs)[]).filter((e) => wanted[e].size > 0);
  // Sent together (see applyRecords).
  const found = await Promise.all(entities.map((e) => lookupByXIds(tx, e).execute({ integrationId, xIds: [...wanted[e]] })));
  entities.forEach((e, i) => {
    for (const r of found[i]!) refs[e].set(r.xId, r.id);
  });
  return refs;
}

/** The records the inputs name by x_id, by kind. */
function wantedRefs(inputs: object[]): { [K in keyof Refs]: Set<string> } {
  const wanted = { property: new Set<string>(), unit: new Set<string>(), resident: new Set<string>(), lease: new Set<string>() };
  for (const input of inputs) for (const [kind, xId] of referencesOf(input)) wanted[kind].add(xId);
  return wanted;
}

/**
 * A write-back's rows of these x_ids (whole, soft-deleted ones too), their lease residents and the references of its
 * inputs: the statements go out together, one round trip.
 */
async function readWhole<E extends Entity>(
  tx: Tx,
  entity: E,
  integrationId: string,
  xIds: string[],
  inputs: InputOf[E][],
): Promise<{ rows: RowOf[E][]; people: Map<string, LeaseResident[]>; refs: Refs }> {
  const table = tableOf(entity);
  const [rows, people, refs] = await Promise.all([
    tx
      .select()
      .from(table)
      .where(and(eq(table.integrationId, integrationId), anyOf(table.xId, xIds))),
    entity === 'lease' ? leaseResidentsOfXIds(tx, integrationId, xIds) : Promise.resolve(new Map<string, LeaseResident[]>()),
    resolveRefs(tx, integrationId, wantedRefs(inputs)),
  ]);
  return { rows: rows as unknown as RowOf[E][], people, refs };
}

/** Marks a stored content hash as that of a record with a reference the cache could not resolve. */
const DANGLING = ':dangling';

/** The records an input names by x_id (its property, unit, previous lease, residents), with their kinds. */
function referencesOf(input: object): [keyof Refs, string][] {
  const i = input as Record<string, unknown>;
  const out: [keyof Refs, string][] = [];
  if (typeof i.property_x_id === 'string') out.push(['property', i.property_x_id]);
  if (typeof i.unit_x_id === 'string') out.push(['unit', i.unit_x_id]);
  if (typeof i.previous_lease_x_id === 'string') out.push(['lease', i.previous_lease_x_id]);
  if (Array.isArray(i.residents)) for (const p of i.residents as { x_id: string }[]) out.push(['resident', p.x_id]);
  return out;
}

/** Whether a record names another by x_id that `refs` does not resolve. */
function danglingRefs(input: object, refs: Refs): boolean {
  return referencesOf(input).some(([kind, xId]) => !refs[kind].has(xId));
}

/**
 * Rows of an integration by x_id, as a prepared statement with the x_ids as one array parameter: the driver's
 * unprepared path re-plans a 1,000-element array on every page and costs a second round trip.
 */
function lookupByXIds(tx: Tx, entity: Entity) {
  const t = tableOf(entity);
  return tx
    .select(storedColumns(entity))
    .from(t)
    .where(and(eq(t.integrationId, sql.placeholder('integrationId')), sql`${t.xId} = any(${sql.placeholder('xIds')}::text[])`))
    .prepare(`lookup_${entity}`);
}

/**
 * The same lookup for a sync page, which also records the page's x_ids as seen by the run (what the run's end
 * does not soft-delete): one statement that sends the x_ids once.
 */
function lookupMarkingSeen(tx: Tx, entity: Entity) {
  const t = tableOf(entity);
  const seen = tx
    .$with('seen', { xIds: syncSeen.xIds })
    .as(
      sql`insert into ${syncSeen} (sync_job_id, entity, x_ids) values (${sql.placeholder('syncJobId')}, ${sql.placeholder('entity')}, ${sql.placeholder('xIds')}::text[]) returning x_ids`,
    );
  return tx
    .with(seen)
    .select(storedColumns(entity))
    .from(t)
    .where(and(eq(t.integrationId, sql.placeholder('integrationId')), sql`${t.xId} = any((select x_ids from seen)::text[])`))
    .prepare(`lookup_seen_${entity}`);
}

/** What a lookup needs of a stored row: whether the record is live is all it needs of deleted_at. */
function storedColumns(entity: Entity) {
  const t = tableOf(entity);
  return { id: t.id, xId: t.xId, contentHash: t.contentHash, live: sql<boolean>`${t.deletedAt} is null`, syncedAt: t.psSyncedAt };
}

/** The nested `residents` of the leases of an integration with these x_ids (by lease id), for a write-back. */
async function leaseResidentsOfXIds(tx: Tx, integrationId: string, xIds: string[]): Promise<Map<string, LeaseResident[]>> {
  const rows = await tx
    .select({ leaseId: leaseResidents.leaseId, residentId: leaseResidents.residentId, xId: leaseResidents.xId, role: leaseResidents.role })
    .from(leaseResidents)
    .innerJoin(leases, eq(leases.id, leaseResidents.leaseId))
    .where(and(eq(leases.integrationId, integrationId), anyOf(leases.xId, xIds)))
    .orderBy(leaseResidents.leaseId, leaseResidents.position);
  return byLease(rows);
}
// ---------------------------------------------------------------------------------------------------------------
// Upsert
// ---------------------------------------------------------------------------------------------------------------

interface IntegrationRef {
  id: string;
  organizationId: string;
  mode: Mode;
}

export interface ApplyContext {
  integration: IntegrationRef;
  /** Record change events in the outbox (false during an integration's first sync). */
  emitEvents: boolean;
  /** When set, the x_ids are recorded as seen by this sync run (for soft-deleting what vanished). */
  syncJobId?: string;
  /** False: do not record seen x_ids (a run that will soft-delete nothing of this entity). Default true. */
  trackSeen?: boolean;
  operationId?: string;
  /**
   * The time the records are stored at (ps_synced_at, updated_at, the events'); default the transaction's database
   * time. Whatever a readAt is compared with must come from the database's clock too.
   */
  now?: Date;
  /**
   * When the source was read for these records (a sync page), by the database's clock (db/clock.ts). A record the cache got from the source after that
   * (a write-back's read-back while the page was in flight) is newer than the page's version and is left as it is,
   * so a sync never reverts a write it read too early (nor announces the old value as a change).
   */
  readAt?: Date;
  /**
   * The caller holds lockForWriteBack over these records (a write-back's store): no entity lock is taken here, and
   * the few rows are read whole at once instead of hashes first.
   */
  recordsLocked?: boolean;
  /**
   * A statement of the caller's, given every input record's CDM id by x_id, sent with the last batch of writes (the
   * same round trip): a write-back's move of its Operation. `stale` holds the x_ids whose version in hand the
   * stale-page guard left out (the cache holds a different one, stored after `readAt`).
   */
  alongside?: (ids: ReadonlyMap<string, string>, stale: ReadonlySet<string>) => Promise<unknown>;
}

export interface ApplyResult {
  created: number;
  updated: number;
  unchanged: number;
  /** CDM id of every input record, by x_id. */
  ids: Map<string, string>;
  /** Ids of the events recorded, in order. */
  eventIds: string[];
}

/**
 * Serializes a sync's writers of one integration's entity table (a page, a run's end) with each other and with
 * write-backs, which hold the same lock shared (lockForWriteBack).
 */
export async function lockEntity(tx: Tx, integrationId: string, entity: Entity): Promise<Date> {
  // The transaction's database time rides along (no round trip of its own): when the records are stored.
  const [row] = await tx.execute<{ now: string | Date }>(sql`select pg_advisory_xact_lock(hashtextextended(${`${integrationId}:${entity}`}, 0)), now() as now`);
  return new Date(row!.now);
}

/**
 * A write-back's locks, in one statement, before it reads what it stores (a statement's snapshot is taken when it
 * starts, so the reads must come after): the lock of each entity table it writes, shared, so a sync page or a run's
 * end waits for it and it for them (taken in the order a run's end takes them exclusively, the reverse of
 * SYNC_ORDER, so neither waits on the other in a circle); then each record it writes, exclusively, in one order, so
 * two write-backs of one record go one after the other and write-backs of different records go side by side.
 * Then applyRecords with `recordsLocked`.
 */
export async function lockForWriteBack(tx: Tx, integrationId: string, records: { entity: Entity; xId: string }[]): Promise<{ now: Date; live: boolean }> {
  const entities = [...SYNC_ORDER].reverse().filter((e) => records.some((r) => r.entity === e));
  const keys = [...new Set(records.map((r) => `${integrationId}:${r.entity}:${r.xId}`))].sort();
  const locks = [
    // First, before any record is touched: the integration's row, held against its deletion (liveIntegrationLock).
    sql`(${liveIntegrationLock(integrationId)}) as live`,
    ...entities.map((e) => sql`pg_advisory_xact_lock_shared(hashtextextended(${`${integrationId}:${e}`}, 0))`),
    ...keys.map((k) => sql`pg_advisory_xact_lock(hashtextextended(${k}, 0))`),
  ];
  // Evaluated left to right: the integration, then the tables' locks before any record's. The transaction's database
  // time rides along.
  const [row] = await tx.execute<{ now: string | Date; live: boolean | null }>(sql`select ${sql.join(locks, sql`, `)}, now() as now`);
  return { now: new Date(row!.now), live: row!.live === true };
}

/**
 * Whether the integration exists and is not deleted, holding its row (FOR KEY SHARE) until the transaction ends: a
 * transaction that writes an integration's records asks it before its first record, so that it and the integration's
 * deletion (disconnectIntegration, which takes the row FOR UPDATE first) run one after the other. Either the records
 * are written before the deletion begins, and it soft-deletes them with the rest, or the deletion commits first and
 * this says false (after waiting for it): nothing is written, and no deleted record comes back. A sync's own updates
 * of the row (FOR NO KEY UPDATE) do not conflict with it.
 */
export function liveIntegrationLock(integrationId: string): SQL {
  return sql`select i.deleted_at is null from ${integrations} i where i.id = ${integrationId} for key share`;
}

/**
 * `fn` in a transaction that holds the integration against its deletion (liveIntegrationLock) until it commits, or
 * undefined without calling it when the integration is deleted (or was while this waited). What `fn` adds under an
 * integration (a subscription, an automation) is then either there before the deletion, which takes it along, or not
 * made at all.
 */
export async function whileIntegrationLive<T>(db: Db, integrationId: string, fn: (tx: Tx) => Promise<T>): Promise<T | undefined> {
  return db.transaction(async (tx) => {
    const [held] = await tx.execute<{ live: boolean | null }>(sql`select (${liveIntegrationLock(integrationId)}) as live`);
    return held?.live === true ? fn(tx) : undefined;
  });
}

interface EventDraft {
  type: EventType;
  data: Record<string, unknown>;
  recordId: string;
  /** The fields that moved, when `data` does not say (a lifecycle event's full record): what a truncated event lists. */
  changed?: string[];
}

/** Build the outbox row of an event, truncating data that would make the envelope exceed 1 MB. */
export function eventRow(ctx: ApplyContext, draft: EventDraft, createdAt: Date) {
  const id = newId('event');
  let data = draft.data;
  if (Buffer.byteLength(JSON.stringify(data)) > MAX_EVENT_BYTES - 2_000) {
    data = {
      id: data.id,
      x_id: data.x_id,
      updated_at: data.updated_at,
      changed: data.changed ?? draft.changed ?? contentFields(draft.data),
      truncated: true,
    };
  }
  return {
    id,
    organizationId: ctx.integration.organizationId,
    integrationId: ctx.integration.id,
    mode: ctx.integration.mode,
    type: draft.type,
    category: categoryOf(draft.type),
    data,
    syncJobId: ctx.syncJobId ?? null,
    operationId: ctx.operationId ?? null,
    recordId: draft.recordId,
    createdAt,
  };
}

/**
 * Upsert a batch of mapped records of one entity inside the caller's transaction. Only records whose mapped
 * content changed are written; `updated_at` moves only for them. Idempotent: applying the same batch again
 * changes nothing and records no event, so a retried sync page never duplicates events.
 */
export async function applyRecords<E extends Entity>(tx: Tx, ctx: ApplyContext, entity: E, inputs: InputOf[E][]): Promise<ApplyResult> {
  return applyHashedRecords(
    tx,
    ctx,
    entity,
    inputs.map((input) => hashRecord(input)),
  );
}

/**
 * The stale-page guard: whether the cached version was stored after `readAt`, so the version in hand (read at
 * readAt) may be older and is left out. Both times are the database's, in milliseconds; in a tie (the same
 * millisecond) the order is unknown and the write-back wins: a sync page in hand is left out (the record already holds
 * a version read after the write), a write-back's read-back is stored. Either way the next sync reads the source again.
 */
function storedAfterRead(syncedAt: Date, readAt: Date, ctx: Pick<ApplyContext, 'operationId'>): boolean {
  return ctx.operationId ? syncedAt > readAt : syncedAt >= readAt;
}

/** applyRecords for records hashed already (a sync page, hashed by the thread that read it). */
export async function applyHashedRecords<E extends Entity>(tx: Tx, ctx: ApplyContext, entity: E, records: HashedRecord<InputOf[E]>[]): Promise<ApplyResult> {
  const result: ApplyResult = { created: 0, updated: 0, unchanged: 0, ids: new Map(), eventIds: [] };
  if (records.length === 0) return result;
  const integrationId = ctx.integration.id;
  const table = tableOf(entity);
  const lockedAt = ctx.recordsLocked ? undefined : await lockEntity(tx, integrationId, entity);
  // ps_synced_at is what the stale-page guard compares (readAt): the database's clock, never a worker's.
  const now = ctx.now ?? lockedAt ?? (await databaseNow(tx));

  // The last occurrence of an x_id in a batch wins (a source may repeat a record across a page boundary).
  const byXId = new Map<string, HashedRecord<InputOf[E]>>();
  for (const r of records) byXId.set(r.x_id, r);
  const xIds = [...byXId.keys()];

  // A write-back's few records: their rows, their lease residents and the references of their inputs, read in one
  // round trip (the statements go out together) under the locks the caller took.
  const preloaded = ctx.recordsLocked ? await readWhole(tx, entity, integrationId, xIds, [...byXId.values()].map(recordOf)) : undefined;
  // Most records of a sync page are unchanged: compare content hashes first, and load and write only what moved.
  const found = preloaded
    ? preloaded.rows.map((r) => ({ id: r.id, xId: r.xId, contentHash: r.contentHash, live: r.deletedAt === null, syncedAt: r.psSyncedAt }))
    : await (ctx.syncJobId && ctx.trackSeen !== false
        ? lookupMarkingSeen(tx, entity).execute({ integrationId, xIds, syncJobId: ctx.syncJobId, entity })
        : lookupByXIds(tx, entity).execute({ integrationId, xIds }));
  const stored = new Map(found.map((r) => [r.xId, r]));
  const changed: { input: InputOf[E]; hash: string; id: string; existed: boolean }[] = [];
  const stale = new Set<string>();
  for (const r of byXId.values()) {
    const cur = stored.get(r.x_id);
    if (cur && cur.live && (cur.contentHash === r.hash || (ctx.readAt && cur.syncedAt && storedAfterRead(cur.syncedAt, ctx.readAt, ctx)))) {
      if (cur.contentHash !== r.hash) stale.add(r.x_id);
      result.unchanged++;
      result.ids.set(r.x_id, cur.id);
      continue;
    }
    const id = cur?.id ?? newId(entity);
    result.ids.set(r.x_id, id);
    changed.push({ input: recordOf(r), hash: r.hash, id, existed: cur !== undefined });
  }
  if (changed.length === 0) {
    if (ctx.alongside) await ctx.alongside(result.ids, stale);
    return result;
  }

  // Each round trip waits behind whatever else this process is doing (mapping the next page, another entity's
  // page), so the statements that do not depend on each other are sent together: inside a transaction the driver
  // pipelines them on its one connection. (It does not keep the order of the calls, hence the separate batches.)
  const existingIds = changed.filter((c) => c.existed).map((c) => c.id);
  const [rows, existingPeople, refs] = preloaded
    ? [preloaded.rows, preloaded.people, preloaded.refs]
    : await Promise.all([
        existingIds.length > 0 ? tx.select().from(table).where(anyOf(table.id, existingIds)) : Promise.resolve([]),
        entity === 'lease' ? loadLeaseResidents(tx, existingIds) : Promise.resolve(new Map<string, LeaseResident[]>()),
        // Resolve references by x_id.
        resolveRefs(tx, integrationId, wantedRefs(changed.map((c) => c.input))),
      ]);
  const existing = new Map<string, RowOf[E]>();
  for (const r of rows as RowOf[E][]) existing.set(r.xId, r);
  // Renewals may point at a lease of the same batch: its id is already decided.
  if (entity === 'lease') for (const c of changed) if (!refs.lease.has(c.input.x_id)) refs.lease.set(c.input.x_id, c.id);

  const inserts: Record<string, unknown>[] = [];
  const updates: Record<string, unknown>[] = [];
  const rehashed: Record<string, unknown>[] = [];
  const peopleOf = new Map<string, LeaseResident[]>();
  const drafts: { row: RowOf[E]; before: Record<string, unknown> | null; after?: Record<string, unknown>; changed: string[]; previousStatus: string | null }[] =
    [];
  const serialize = (row: RowOf[E], people: LeaseResident[] | undefined) =>
    (entity === 'lease' ? leaseRecord(row as LeaseRow, people ?? []) : serializeOne(entity, row)) as unknown as Record<string, unknown>;

  for (const { input, hash, id } of changed) {
    const { x_id: xId, custom_data: customData } = input;
    const prev = existing.get(xId);
    // The row is completed field by field: an object literal that starts with a spread of the values and goes on
    // with a dozen fields falls off V8's fast path (about 18 µs instead of 0.5 µs a row, most of a first sync's CPU).
    const row = rowValuesOf(entity, input, refs);
    row.id = id;
    row.organizationId = ctx.integration.organizationId;
    row.integrationId = integrationId;
    row.mode = ctx.integration.mode;
    row.xId = xId;
    row.customData = customData;
    // A record that names one the cache does not hold yet (created in the source after its page of the run was read,
    // or missing there) keeps a hash no content matches: the next sync looks at it again and fills the reference in.
    row.contentHash = danglingRefs(input, refs) ? `${hash}${DANGLING}` : hash;
    row.createdAt = prev?.createdAt ?? now;
    row.updatedAt = now;
    row.deletedAt = null;
    row.psSyncedAt = now;
    const full = row as unknown as RowOf[E];
    if (entity === 'lease') {
      const people: LeaseResident[] = [];
      for (const p of (input as LeaseInput).residents) {
        const residentId = refs.resident.get(p.x_id);
        if (residentId && !people.some((q) => q.resident_id === residentId)) people.push({ resident_id: residentId, x_id: p.x_id, role: p.role });
      }
      peopleOf.set(id, people);
    }
    if (prev) {
      const before = serialize(prev, existingPeople.get(prev.id));
      const after = serialize(full, peopleOf.get(id));
      const moved = changedFields(before, after);
      if (moved.length === 0) {
        // Another hash of the same content (a mapping detail that shows in no field, or a reference still dangling):
        // not a change.
        if ((prev as { contentHash: string }).contentHash !== row.contentHash) rehashed.push({ id, contentHash: row.contentHash });
        peopleOf.delete(id);
        result.unchanged++;
        continue;
      }
      updates.push(row);
      result.updated++;
      drafts.push({ row: full, before, after, changed: moved, previousStatus: (prev as { status?: string | null }).status ?? null });
    } else {
      inserts.push(row);
      result.created++;
      drafts.push({ row: full, before: null, changed: [], previousStatus: null });
    }
  }

  // One batch of independent writes; a lease's new residents follow the removal of its old ones. A lease whose
  // residents did not change keeps their rows.
  const writes: Promise<unknown>[] = [insertRows(tx, table, inserts), updateRows(tx, table, updates), updateRows(tx, table, rehashed)];
  if (ctx.alongside) writes.push(ctx.alongside(result.ids, stale));
  if (entity === 'lease') {
    for (const d of drafts) if (d.before && !d.changed.includes('residents')) peopleOf.delete(d.row.id);
  }
  const replaced = entity === 'lease' ? updates.map((u) => u.id as string).filter((id) => peopleOf.has(id)) : [];
  if (replaced.length > 0) writes.push(Promise.resolve(tx.delete(leaseResidents).where(anyOf(leaseResidents.leaseId, replaced))));

  if (ctx.emitEvents && drafts.length > 0) {
    const rows = drafts.map((d) => {
      const after = d.after ?? serialize(d.row, peopleOf.get(d.row.id));
      const changed = d.changed;
      const pick = eventFor(
        entity,
        d.before ? { kind: 'updated', previousStatus: d.previousStatus, changed } : { kind: 'created' },
        after as { status?: string | null; is_renewal?: boolean | null; deleted_at?: string | null },
      );
      // Created and lifecycle events carry the full record and nothing else (SPEC.md: "Full Lease record, shaped as in
      // the Lease table"). Every *_UPDATED has the one shape of updatedPayload: a lease first seen with a status that
      // has no lifecycle event arrives as LEASE_UPDATED with every content field counted as changed.
      const data = pick.type.endsWith('_UPDATED') ? updatedPayload(after, d.before ? changed : firstSightingChanges(after)) : after;
      // Event ids are monotonic ULIDs, so (created_at, id) keeps production order within a batch.
      return eventRow(ctx, { type: pick.type, data, recordId: d.row.id, changed: d.before ? changed : undefined }, now);
    });
    writes.push(insertRows(tx, events, rows));
    result.eventIds.push(...rows.map((r) => r.id));
  }
  await Promise.all(writes);
  if (entity === 'lease') {
    const people = [...peopleOf].flatMap(([leaseId, list]) =>
      list.map((p, position) => ({ leaseId, residentId: p.resident_id, xId: p.x_id, role: p.role, position })),
    );
    await insertRows(tx, leaseResidents, people);
  }
  return result;
}

/** `column = any($1)` with the values as one array parameter (a list of 1,000 parameters is slow to build and plan). */
function anyOf(column: AnyPgColumn, values: string[]): SQL {
  return sql`${column} = any(${sql.param(values)}::text[])`;
}

/**
 * Insert rows (keyed by the table's property names, all with the same keys) with one JSON parameter per chunk:
 * for a page of a thousand records, building a multi-row VALUES list costs far more CPU than Postgres spends
 * writing it.
 */
export async function insertRows(tx: Tx, table: PgTable, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const { names, json } = jsonRows(table, rows);
  const cols = sql.join(
    names.map((n) => sql.identifier(n)),
    sql`, `,
  );
  await tx.execute(sql`insert into ${table} (${cols}) select ${cols} from json_populate_recordset(null::${table}, ${json}::json)`);
}

/** Columns an update leaves as they are, even where the rows carry them: a record's identity and creation time. */
const NOT_UPDATED = new Set(['id', 'organization_id', 'integration_id', 'mode', 'x_id', 'created_at']);

/** Update rows by `id` (all rows with the same keys) in one statement, the same way as insertRows. */
async function updateRows(tx: Tx, table: PgTable, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const { names, json } = jsonRows(table, rows);
  const set = sql.join(
    names.filter((n) => !NOT_UPDATED.has(n)).map((n) => sql`${sql.identifier(n)} = v.${sql.identifier(n)}`),
    sql`, `,
  );
  await tx.execute(sql`update ${table} as t set ${set} from json_populate_recordset(null::${table}, ${json}::json) as v where t.id = v.id`);
}

/**
 * Rows as JSON text with column names as keys (Dates become ISO strings, jsonb values stay nested). Written as
 * text field by field: building an object per row under the column names costs more than the serialization.
 */
function jsonRows(table: PgTable, rows: Record<string, unknown>[]): { names: string[]; json: string } {
  const columns = getTableColumns(table) as Record<string, AnyPgColumn>;
  const keys = Object.keys(rows[0]!).filter((k) => columns[k] !== undefined);
  const names = keys.map((k) => columns[k]!.name);
  const prefixes = names.map((n, i) => (i === 0 ? '{' : ',') + JSON.stringify(n) + ':');
  let json = '[';
  for (let j = 0; j < rows.length; j++) {
    const r = rows[j]!;
    if (j > 0) json += ',';
    for (let i = 0; i < keys.length; i++) {
      const v = r[keys[i]!];
      json += prefixes[i]! + (v === null || v === undefined ? 'null' : JSON.stringify(v));
    }
    json += '}';
  }
  return { names, json: json + ']' };
}
