/**
 * The sandbox's state, in its own Postgres schema `sandbox` of the database it is given, so that it survives
 * restarts. Plain SQL: these tables are the simulated PMS's, not the service's, and stay out of db/schema.ts.
 *
 * One table holds the records of every company and entity as the wire JSON the API serves, plus the references
 * the change scripts need (property, unit, previous lease, customers) as columns.
 */
import type postgres from 'postgres';
import type { NativeEntity } from '../source/entrata/native';

export type Sql = postgres.Sql;

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
create table if not exists sandbox.records (
  company_id text not null references sandbox.companies(id) on delete cascade,
  entity text not null,
  id integer not null,
  property_id integer,
  unit_id integer,
  previous_id integer,
  customer_ids integer[],
  data json not null,
  primary key (company_id, entity, id)
);
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
`;

/** Create the schema and tables when missing. Safe when several sandboxes start against one database at once. */
export async function ensureSchema(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('propsync-sandbox-schema', 0))`;
    await tx.unsafe(DDL);
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
  seed: number;
  size: number;
  /** Changes to its records so far, and when it was created: together they identify one state of its data. */
  version: number;
  createdAt: number;
  faults: Fault[];
}

export type NextIds = Record<NativeEntity, number>;

/** The company an API key belongs to, with its active faults (one round trip per RPC request). */
export async function companyByKey(sql: Sql, apiKey: string): Promise<Company | undefined> {
  const [row] = await sql<{ id: string; seed: string; size: number; version: string; created_at: Date; faults: Fault[] | null }[]>`
    select c.id, c.seed, c.size, c.version, c.created_at,
      (select json_agg(json_build_object('kind', f.kind, 'remaining', f.remaining, 'delay_ms', f.delay_ms, 'methods', f.methods))
         from sandbox.faults f where f.company_id = c.id and (f.remaining is null or f.remaining > 0)) as faults
    from sandbox.companies c where c.api_key = ${apiKey}`;
  return row
    ? { id: row.id, seed: Number(row.seed), size: row.size, version: Number(row.version), createdAt: row.created_at.getTime(), faults: row.faults ?? [] }
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
 * Where each page of a listing ended, per company version: reading page n+1 right after page n (what every sync
 * does) continues after the last id instead of skipping n pages with OFFSET, so a page costs the same at any depth.
 */
export class PageCursors {
  private readonly entries = new Map<string, { version: number; total: number; lastIds: Map<number, number> }>();

  lookup(key: string, version: number) {
    const e = this.entries.get(key);
    return e && e.version === version ? e : undefined;
  }
  remember(key: string, version: number, total: number, page: number, lastId: number | undefined): void {
    let e = this.lookup(key, version);
    if (!e) {
      if (this.entries.size >= 2_000) this.entries.clear();
      e = { version, total, lastIds: new Map() };
      this.entries.set(key, e);
    }
    if (lastId !== undefined) e.lastIds.set(page, lastId);
  }
}

/**
 * One page of an entity's records (wire JSON text), in native id order, and the entity's total count: of the ids
 * asked for, if any, and of one property, if `propertyId` is given (a property itself: the one with that id).
 */
export async function readPage(
  sql: Sql,
  q: { company: Company; entity: NativeEntity; page: number; perPage: number; ids?: number[]; propertyId?: number },
  cursors?: PageCursors,
): Promise<{ items: string[]; total: number }> {
  const { company, entity, page, perPage, ids, propertyId } = q;
  const byIds = ids ? sql`and id = any(${ids}::int[])` : sql``;
  const byProperty = propertyId === undefined ? sql`` : entity === 'property' ? sql`and id = ${propertyId}` : sql`and property_id = ${propertyId}`;
  const filter = sql`${byIds} ${byProperty}`;
  // A company deleted and created again under its id starts over at version 0: its creation time tells them apart.
  // The filters are part of the key: a filtered listing's cursors never continue an unfiltered one, or the reverse.
  const key = `${company.id}|${company.createdAt}|${entity}|${perPage}|${ids?.join(',') ?? ''}|${propertyId ?? ''}`;
  const known = cursors?.lookup(key, company.version);
  const after = known?.lastIds.get(page - 1);
  // Without a cursor, page over ids alone first, so rows skipped by the offset are never read.
  const window =
    after !== undefined
      ? sql`select id from sandbox.records where company_id = ${company.id} and entity = ${entity} ${filter} and id > ${after}
            order by id limit ${perPage}`
      : sql`select id from sandbox.records where company_id = ${company.id} and entity = ${entity} ${filter}
            order by id limit ${perPage} offset ${(page - 1) * perPage}`;
  const [rows, total] = await Promise.all([
    sql<{ id: number; data: string }[]>`
      select r.id, r.data::text as data from sandbox.records r join (${window}) k on k.id = r.id
      where r.company_id = ${company.id} and r.entity = ${entity}
      order by r.id`,
    known
      ? Promise.resolve(known.total)
      : sql<{ n: number }[]>`select count(*)::int as n from sandbox.records where company_id = ${company.id} and entity = ${entity} ${filter}`.then(
          (r) => r[0]?.n ?? 0,
        ),
  ]);
  cursors?.remember(key, company.version, total, page, rows[rows.length - 1]?.id);
  return { items: rows.map((r) => r.data), total };
}

export interface RecordRow {
  entity: NativeEntity;
  id: number;
  property_id: number | null;
  unit_id: number | null;
  previous_id: number | null;
  customer_ids: number[] | null;
  data: Record<string, unknown>;
}

/** The reference columns of a record, taken from its wire JSON: the single place they are derived. */
export function refsOf(entity: NativeEntity, data: Record<string, unknown>) {
  const num = (v: unknown) => (typeof v === 'number' ? v : null);
  const customers = entity === 'lease' ? (data.customers as { customer: unknown } | undefined)?.customer : undefined;
  const list = customers === undefined ? null : (Array.isArray(customers) ? customers : [customers]) as { customerId: number }[];
  return {
    property_id: entity === 'property' ? null : num(data.propertyId),
    unit_id: entity === 'lease' ? num(data.unitId) : null,
    previous_id: entity === 'lease' ? num(data.previousLeaseId) : null,
    customer_ids: list ? list.map((c) => c.customerId) : null,
  };
}

/** Insert or replace records (the change scripts and write methods), in one statement per 1000. */
export async function putRecords(sql: Sql, companyId: string, records: { entity: NativeEntity; id: number; data: Record<string, unknown> }[]): Promise<void> {
  for (let i = 0; i < records.length; i += 1000) {
    const part = records.slice(i, i + 1000);
    const refs = part.map((r) => refsOf(r.entity, r.data));
    await sql`
      insert into sandbox.records (company_id, entity, id, property_id, unit_id, previous_id, customer_ids, data)
      select ${companyId}, t.entity, t.id, t.property_id, t.unit_id, t.previous_id, t.customer_ids::int[], t.data::json
      from unnest(${part.map((r) => r.entity)}::text[], ${part.map((r) => r.id)}::int[], ${refs.map((r) => r.property_id)}::int[],
                  ${refs.map((r) => r.unit_id)}::int[], ${refs.map((r) => r.previous_id)}::int[],
                  ${refs.map((r) => (r.customer_ids ? `{${r.customer_ids.join(',')}}` : null))}::text[],
                  ${part.map((r) => JSON.stringify(r.data))}::text[])
        as t(entity, id, property_id, unit_id, previous_id, customer_ids, data)
      on conflict (company_id, entity, id) do update set
        property_id = excluded.property_id, unit_id = excluded.unit_id, previous_id = excluded.previous_id,
        customer_ids = excluded.customer_ids, data = excluded.data`;
  }
}

export async function getRecords(sql: Sql, companyId: string, entity: NativeEntity, ids: number[]): Promise<RecordRow[]> {
  if (ids.length === 0) return [];
  return sql<RecordRow[]>`
    select entity, id, property_id, unit_id, previous_id, customer_ids, data from sandbox.records
    where company_id = ${companyId} and entity = ${entity} and id = any(${ids}::int[]) order by id`;
}

/** Lock a company for a change (serializes change scripts and writes of one company) and return its counters. */
export async function lockCompany(
  sql: Sql,
  companyId: string,
): Promise<{ seed: number; change_counter: number; next_ids: NextIds } | undefined> {
  const [row] = await sql<{ seed: string; change_counter: number; next_ids: NextIds }[]>`
    select seed, change_counter, next_ids from sandbox.companies where id = ${companyId} for update`;
  return row ? { seed: Number(row.seed), change_counter: row.change_counter, next_ids: row.next_ids } : undefined;
}

export async function saveCounters(sql: Sql, companyId: string, changeCounter: number, nextIds: NextIds): Promise<void> {
  await sql`
    update sandbox.companies set change_counter = ${changeCounter}, next_ids = ${sql.json(nextIds)}, version = version + 1
    where id = ${companyId}`;
}
