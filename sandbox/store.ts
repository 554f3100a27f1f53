/**
 * The sandbox's state, in its own Postgres schema `sandbox` of the database it is given, so that it survives
 * restarts. Plain SQL: these tables are the simulated PMS's, not the service's, and stay out of db/schema.ts.
 *
 * One table holds the records of every company and entity as the flavour-neutral model (sandbox/model.ts, JSON),
 * with the references the change scripts and filters need (property, unit, previous lease, customers) and the
 * record's last-update time (`updated_at`, the database clock's) as columns. A flavour encodes the model for its
 * wire when it serves a page; nothing here knows a wire.
 */
import type postgres from 'postgres';
import { refsOf, type AnyModel, type Entity, type ModelOf, type NextIds } from './model';

export type Sql = postgres.Sql;

/** The wire a company is served in (sandbox/entrata/, sandbox/buildium/). */
export type Dialect = 'entrata' | 'buildium';
export const DIALECTS: readonly Dialect[] = ['entrata', 'buildium'];

const DDL = `
create schema if not exists sandbox;
create table if not exists sandbox.companies (
  id text primary key,
  api_key text not null unique,
  seed bigint not null,
  size integer not null,
  change_counter integer not null default 0,
  next_ids jsonb not null,
  created_at timestamptz not null default now()
);
-- Bumped by every change to a company's records; page cursors are valid for one version.
alter table sandbox.companies add column if not exists version bigint not null default 0;
-- The flavour the company is served in, and its per-second request limit (the buildium flavour's).
alter table sandbox.companies add column if not exists dialect text not null default 'entrata';
alter table sandbox.companies add column if not exists rate_limit_per_second integer not null default 50;
create table if not exists sandbox.faults (
  company_id text not null references sandbox.companies(id) on delete cascade,
  kind text not null,
  remaining integer,
  delay_ms integer,
  created_at timestamptz not null default now(),
  primary key (company_id, kind)
);
-- Which requests a fault affects: all, reads only or writes only (one fault per kind, its scope replaced with it).
alter table sandbox.faults add column if not exists methods text not null default 'all';
-- The answers of creates sent with an Idempotency-Key (buildium flavour), kept 24 hours.
create table if not exists sandbox.idempotency_keys (
  company_id text not null references sandbox.companies(id) on delete cascade,
  key text not null,
  request_hash text not null,
  status integer not null,
  body text not null,
  created_at timestamptz not null default now(),
  primary key (company_id, key)
);
`;

const RECORDS_DDL = `
create table if not exists sandbox.records (
  company_id text not null references sandbox.companies(id) on delete cascade,
  entity text not null,
  id integer not null,
  property_id integer,
  unit_id integer,
  previous_id integer,
  customer_ids integer[],
  updated_at timestamptz not null,
  model json not null,
  primary key (company_id, entity, id)
);
-- The filters of a listing: last-update windows (delta reads) and a property's records, both in id order.
create index if not exists records_updated on sandbox.records (company_id, entity, updated_at);
create index if not exists records_property on sandbox.records (company_id, entity, property_id, id);
`;

/**
 * Create the schema and tables when missing. Safe when several sandboxes start against one database at once. A
 * database from before the record model (records stored as the Entrata wire, a `data` column) has its companies'
 * data generated again from their seed and size: what changes did since is lost, their keys are kept.
 */
export async function ensureSchema(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('propsync-sandbox-schema', 0))`;
    await tx.unsafe(DDL);
    const [old] = await tx`
      select 1 from information_schema.columns where table_schema = 'sandbox' and table_name = 'records' and column_name = 'data'`;
    if (old) await tx`drop table sandbox.records`;
    await tx.unsafe(RECORDS_DDL);
    if (old) {
      const { insertGenerated } = await import('./generator');
      const companies = await tx<{ id: string; seed: string; size: number }[]>`select id, seed, size from sandbox.companies order by id`;
      for (const c of companies) {
        const nextIds = await insertGenerated(tx as unknown as Sql, c.id, Number(c.seed), c.size);
        await tx`update sandbox.companies set next_ids = ${tx.json(nextIds)}, change_counter = 0, version = version + 1 where id = ${c.id}`;
      }
    }
  });
}

export type FaultKind = 'unavailable' | 'rate_limited' | 'slow' | 'reject_writes';
export const FAULT_KINDS: readonly FaultKind[] = ['unavailable', 'rate_limited', 'slow', 'reject_writes'];

/** Which requests a fault affects: every request, the read methods only, or the write methods only. */
export type FaultScope = 'all' | 'reads' | 'writes';
export const FAULT_SCOPES: readonly FaultScope[] = ['all', 'reads', 'writes'];

export interface Fault {
  kind: FaultKind;
  remaining: number | null;
  delay_ms: number | null;
  methods: FaultScope;
}

export interface Company {
  id: string;
  dialect: Dialect;
  seed: number;
  size: number;
  /** Requests per second a client may make (the buildium flavour enforces it). */
  rateLimit: number;
  /** Changes to its records so far, and when it was created: together they identify one state of its data. */
  version: number;
  createdAt: number;
  faults: Fault[];
}

/**
 * The company of a flavour whose credentials these are, with its active faults (one round trip per request):
 * the entrata flavour's API key, or the buildium flavour's client id (the company id) and secret (its key). A key
 * of one flavour opens nothing in the other.
 */
export async function companyByCredentials(sql: Sql, dialect: Dialect, secret: string, clientId?: string): Promise<Company | undefined> {
  const [row] = await sql<
    { id: string; dialect: Dialect; seed: string; size: number; rate_limit_per_second: number; version: string; created_at: Date; faults: Fault[] | null }[]
  >`
    select c.id, c.dialect, c.seed, c.size, c.rate_limit_per_second, c.version, c.created_at,
      (select json_agg(json_build_object('kind', f.kind, 'remaining', f.remaining, 'delay_ms', f.delay_ms, 'methods', f.methods))
         from sandbox.faults f where f.company_id = c.id and (f.remaining is null or f.remaining > 0)) as faults
    from sandbox.companies c
    where c.api_key = ${secret} and c.dialect = ${dialect} ${clientId === undefined ? sql`` : sql`and c.id = ${clientId}`}`;
  return row
    ? {
        id: row.id,
        dialect: row.dialect,
        seed: Number(row.seed),
        size: row.size,
        rateLimit: row.rate_limit_per_second,
        version: Number(row.version),
        createdAt: row.created_at.getTime(),
        faults: row.faults ?? [],
      }
    : undefined;
}

/**
 * Count one request against a fault. False when a counted fault was used up meanwhile by a concurrent request,
 * so a fault with `count` affects exactly that many requests.
 */
export async function consumeFault(sql: Sql, companyId: string, fault: Fault): Promise<boolean> {
  if (fault.remaining === null) return true;
  const rows = await sql`
    update sandbox.faults set remaining = remaining - 1
    where company_id = ${companyId} and kind = ${fault.kind} and remaining > 0
    returning remaining`;
  return rows.length > 0;
}

export async function setFault(sql: Sql, companyId: string, fault: Fault): Promise<void> {
  await sql`
    insert into sandbox.faults (company_id, kind, remaining, delay_ms, methods)
    values (${companyId}, ${fault.kind}, ${fault.remaining}, ${fault.delay_ms}, ${fault.methods})
    on conflict (company_id, kind) do update set
      remaining = excluded.remaining, delay_ms = excluded.delay_ms, methods = excluded.methods, created_at = now()`;
}

export async function clearFaults(sql: Sql, companyId: string): Promise<void> {
  await sql`delete from sandbox.faults where company_id = ${companyId}`;
}

/**
 * Where each page of a listing ended, per company version: reading the page at offset n+k right after the one at n
 * (what every sync does) continues after the last id instead of skipping n records with OFFSET, so a page costs the
 * same at any depth.
 */
export class PageCursors {
  private readonly entries = new Map<string, { version: number; total: number; lastIds: Map<number, number> }>();

  lookup(key: string, version: number) {
    const e = this.entries.get(key);
    return e && e.version === version ? e : undefined;
  }
  remember(key: string, version: number, total: number, endOffset: number, lastId: number | undefined): void {
    let e = this.lookup(key, version);
    if (!e) {
      if (this.entries.size >= 2_000) this.entries.clear();
      e = { version, total, lastIds: new Map() };
      this.entries.set(key, e);
    }
    if (lastId !== undefined) e.lastIds.set(endOffset, lastId);
  }
}

/** What a listing asks for: records of these ids, at these properties, last updated in this window (ms, inclusive). */
export interface ListFilter {
  ids?: number[];
  propertyIds?: number[];
  updatedFrom?: number;
  updatedTo?: number;
}

/** One stored record as a page serves it: the model still as JSON text, parsed by the page at once. */
export interface PageRow {
  id: number;
  /** Last update, epoch ms (may carry a fraction: the database clock has microseconds). */
  updated: number;
  /** A lease's unit's number, when asked for (`withUnitNumber`); null when the unit is gone. */
  unit_number?: string | null;
}

/**
 * One page of an entity's records in id order, and how many records match in all. `propertyIds` keeps the records
 * at those properties (for properties: those properties).
 */
export async function readPage<E extends Entity>(
  sql: Sql,
  q: { company: Company; entity: E; offset: number; limit: number; filter: ListFilter; withUnitNumber?: boolean },
  cursors?: PageCursors,
): Promise<{ rows: (PageRow & { model: ModelOf[E] })[]; total: number }> {
  const { company, entity, offset, limit, filter } = q;
  const { ids, propertyIds, updatedFrom, updatedTo } = filter;
  const clauses = [
    ids ? sql`and id = any(${ids}::int[])` : sql``,
    propertyIds === undefined ? sql`` : entity === 'property' ? sql`and id = any(${propertyIds}::int[])` : sql`and property_id = any(${propertyIds}::int[])`,
    updatedFrom === undefined ? sql`` : sql`and updated_at >= ${new Date(updatedFrom)}`,
    // Inclusive of the whole last second: the wire's times have whole seconds, the clock has microseconds.
    updatedTo === undefined ? sql`` : sql`and updated_at < ${new Date(updatedTo + 1000)}`,
  ];
  const where = sql`company_id = ${company.id} and entity = ${entity} ${clauses[0]!} ${clauses[1]!} ${clauses[2]!} ${clauses[3]!}`;
  // A company deleted and created again under its id starts over at version 0: its creation time tells them apart.
  // The filters are part of the key: a filtered listing's cursors never continue an unfiltered one, or the reverse.
  const key = `${company.id}|${company.createdAt}|${entity}|${limit}|${ids?.join(',') ?? ''}|${propertyIds?.join(',') ?? ''}|${updatedFrom ?? ''}|${updatedTo ?? ''}`;
  const known = cursors?.lookup(key, company.version);
  const after = known?.lastIds.get(offset);
  // Without a cursor, page over ids alone first, so rows skipped by the offset are never read.
  const window =
    after !== undefined
      ? sql`select id from sandbox.records where ${where} and id > ${after} order by id limit ${limit}`
      : sql`select id from sandbox.records where ${where} order by id limit ${limit} offset ${offset}`;
  const unitNumber = q.withUnitNumber
    ? sql`, (select u.model->>'unitNumber' from sandbox.records u
           where u.company_id = r.company_id and u.entity = 'unit' and u.id = r.unit_id) as unit_number`
    : sql``;
  const [rows, total] = await Promise.all([
    sql<(PageRow & { model: string })[]>`
      select r.id, (extract(epoch from r.updated_at) * 1000)::float8 as updated, r.model::text as model ${unitNumber}
      from sandbox.records r join (${window}) k on k.id = r.id
      where r.company_id = ${company.id} and r.entity = ${entity}
      order by r.id`,
    known ? Promise.resolve(known.total) : sql<{ n: number }[]>`select count(*)::int as n from sandbox.records where ${where}`.then((r) => r[0]?.n ?? 0),
  ]);
  cursors?.remember(key, company.version, total, offset + rows.length, rows[rows.length - 1]?.id);
  // One parse for the page instead of one per record.
  const models = JSON.parse(`[${rows.map((r) => r.model).join(',')}]`) as ModelOf[E][];
  return { rows: rows.map((r, i) => ({ id: r.id, updated: r.updated, unit_number: r.unit_number, model: models[i]! })), total };
}

/** A stored record with its reference columns. */
export interface RecordRow<E extends Entity = Entity> {
  entity: E;
  id: number;
  property_id: number | null;
  unit_id: number | null;
  previous_id: number | null;
  customer_ids: number[] | null;
  /** Last update, epoch ms. */
  updated: number;
  model: ModelOf[E];
}

/**
 * Insert or replace records (the change scripts and writes), in one statement per 1000, each last updated `at`
 * (epoch ms of the database clock, taken by the caller's transaction: see lockCompany).
 */
export async function putRecords(sql: Sql, companyId: string, at: number, records: { entity: Entity; id: number; model: AnyModel }[]): Promise<void> {
  for (let i = 0; i < records.length; i += 1000) {
    const part = records.slice(i, i + 1000);
    const refs = part.map((r) => refsOf(r.entity, r.model));
    await sql`
      insert into sandbox.records (company_id, entity, id, property_id, unit_id, previous_id, customer_ids, updated_at, model)
      select ${companyId}, t.entity, t.id, t.property_id, t.unit_id, t.previous_id, t.customer_ids::int[], ${new Date(at)}, t.model::json
      from unnest(${part.map((r) => r.entity)}::text[], ${part.map((r) => r.id)}::int[], ${refs.map((r) => r.property_id)}::int[],
                  ${refs.map((r) => r.unit_id)}::int[], ${refs.map((r) => r.previous_id)}::int[],
                  ${refs.map((r) => (r.customer_ids ? `{${r.customer_ids.join(',')}}` : null))}::text[],
                  ${part.map((r) => JSON.stringify(r.model))}::text[])
        as t(entity, id, property_id, unit_id, previous_id, customer_ids, model)
      on conflict (company_id, entity, id) do update set
        property_id = excluded.property_id, unit_id = excluded.unit_id, previous_id = excluded.previous_id,
        customer_ids = excluded.customer_ids, updated_at = excluded.updated_at, model = excluded.model`;
  }
}

export async function getRecords<E extends Entity>(sql: Sql, companyId: string, entity: E, ids: number[]): Promise<RecordRow<E>[]> {
  if (ids.length === 0) return [];
  return sql<RecordRow<E>[]>`
    select entity, id, property_id, unit_id, previous_id, customer_ids, (extract(epoch from updated_at) * 1000)::float8 as updated, model
    from sandbox.records
    where company_id = ${companyId} and entity = ${entity} and id = any(${ids}::int[]) order by id`;
}

/**
 * Lock a company for a change (serializes change scripts and writes of one company) and return its counters, and
 * the database clock's time now: the last-update time of everything the change writes.
 */
export async function lockCompany(sql: Sql, companyId: string): Promise<{ seed: number; change_counter: number; next_ids: NextIds; now: number } | undefined> {
  const [row] = await sql<{ seed: string; change_counter: number; next_ids: NextIds; now: number }[]>`
    select seed, change_counter, next_ids, (extract(epoch from clock_timestamp()) * 1000)::float8 as now
    from sandbox.companies where id = ${companyId} for update`;
  return row ? { seed: Number(row.seed), change_counter: row.change_counter, next_ids: row.next_ids, now: row.now } : undefined;
}

export async function saveCounters(sql: Sql, companyId: string, changeCounter: number, nextIds: NextIds): Promise<void> {
  await sql`
    update sandbox.companies set change_counter = ${changeCounter}, next_ids = ${sql.json(nextIds)}, version = version + 1
    where id = ${companyId}`;
}

/** The answer stored for an idempotency key within its 24 hours, if any. */
export async function idempotentAnswer(sql: Sql, companyId: string, key: string): Promise<{ request_hash: string; status: number; body: string } | undefined> {
  const [row] = await sql<{ request_hash: string; status: number; body: string }[]>`
    select request_hash, status, body from sandbox.idempotency_keys
    where company_id = ${companyId} and key = ${key} and created_at > now() - interval '24 hours'`;
  return row;
}

/** Keep the answer of a create made with an idempotency key (replacing one older than 24 hours). */
export async function saveIdempotentAnswer(sql: Sql, companyId: string, key: string, requestHash: string, status: number, body: string): Promise<void> {
  await sql`
    insert into sandbox.idempotency_keys (company_id, key, request_hash, status, body) values (${companyId}, ${key}, ${requestHash}, ${status}, ${body})
    on conflict (company_id, key) do update set request_hash = excluded.request_hash, status = excluded.status, body = excluded.body, created_at = now()`;
}
