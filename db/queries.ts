/**
 * Reads of the cache as the public API serves them: list (filters, order, offset pages) and retrieve, always scoped
 * to the key's organization AND mode, which lead every index of the entity tables. Rows are serialized by
 * db/serialize.ts, the one serializer. An export's COPY (db/exports.ts) reads through listWhere and orderColumn.
 *
 * The hot path: queries are written with Drizzle, but every value goes in as a placeholder (lists as one array, so a
 * list's length does not change the SQL), which makes the SQL text depend only on the query's shape. The text is
 * built once per shape and then run as a prepared statement. Building the query per request cost more CPU than the
 * rest of a request together. Each column is selected under the key of Drizzle's row (`"x_id" as "xId"`), so the
 * driver's rows go to the serializer as they come (db/wire.ts): decoding them again into Drizzle's rows first cost
 * about a fifth of a list's CPU.
 */
import { and, asc, desc, eq, gte, ilike, isNull, lte, Placeholder, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Entity, LeaseResident, PropertySummary, RecordOf } from '../domain/cdm';
import type { OrderBy } from '../domain/filters';
import type { Mode } from '../domain/plans';
import type { Db } from './client';
import { tableOf, TABLES, type WireRowOf } from './records';
import { leases, properties, residents, units } from './schema';
import { leaseRecord, propertySummary, serializeOne } from './serialize';
import { columnsOf, keyedColumns } from './wire';

/** Whose records a query may see: an API key's organization and mode (an export's: its integration's). */
export interface Principal {
  organizationId: string;
  mode: Mode;
}

export interface CommonListQuery {
  limit: number;
  offset: number;
  include_deleted?: boolean;
  updated_after?: Date;
  created_after?: Date;
  created_before?: Date;
  x_id?: string[];
  integration_id?: string[];
  'order-by'?: OrderBy;
}

interface PropertyFilters {
  status?: string[];
  type?: string[];
  name?: string;
}
interface UnitFilters {
  property_id?: string[];
  status?: string[];
}
interface ResidentFilters {
  property_id?: string[];
  email?: string;
  status?: string[];
}
interface LeaseFilters {
  property_id?: string[];
  unit_id?: string[];
  resident_id?: string[];
  status?: string[];
  type?: string[];
  start_date_gte?: string;
  start_date_lte?: string;
  end_date_gte?: string;
  end_date_lte?: string;
}
export interface FiltersOf {
  property: PropertyFilters;
  unit: UnitFilters;
  resident: ResidentFilters;
  lease: LeaseFilters;
}

export interface Page<T> {
  meta: { limit: number; offset: number; hasMore: boolean };
  results: T[];
}

/** A page of a list read with one row more than `limit` (the extra row only says there is more), each row shown by `view`. */
export function pageOf<R, V>(rows: R[], q: { limit: number; offset: number }, view: (row: R) => V): Page<V> {
  return { meta: { limit: q.limit, offset: q.offset, hasMore: rows.length > q.limit }, results: rows.slice(0, q.limit).map(view) };
}

/** The values of one request; the query only sees placeholders named after them. */
export class Bindings {
  readonly values = new Map<string, unknown>();
  bind(name: string, value: unknown): Placeholder {
    this.values.set(name, value);
    return sql.placeholder(name);
  }
}

/** Exact match; a list matches any. An empty list (`status=`) filters nothing, like an absent parameter. */
function any(b: Bindings, name: string, col: PgColumn, values: string[] | undefined, type: 'text' | 'uuid' = 'text'): SQL | undefined {
  if (!values || values.length === 0) return undefined;
  return sql`${col} = any(${b.bind(name, values)}::${sql.raw(type)}[])`;
}

/** `%`, `_` and the escape character itself match literally (backslash is Postgres's default LIKE escape). */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (ch) => `\\${ch}`);

/** Each entity's own list filters, in the order they are written into the query. */
const ENTITY_FILTERS: { [E in Entity]: (b: Bindings, f: FiltersOf[E]) => (SQL | undefined)[] } = {
  property: (b, f) => [
    any(b, 'status', properties.status, f.status),
    any(b, 'type', properties.type, f.type),
    f.name ? ilike(properties.name, b.bind('name', `%${escapeLike(f.name)}%`) as never) : undefined,
  ],
  unit: (b, f) => [any(b, 'property_id', units.propertyId, f.property_id), any(b, 'status', units.status, f.status)],
  resident: (b, f) => [
    any(b, 'property_id', residents.propertyId, f.property_id),
    any(b, 'status', residents.status, f.status),
    // Empty means no filter, as for every other parameter (`status=`, `name=`).
    f.email ? sql`lower(${residents.email}) = lower(${b.bind('email', f.email)})` : undefined,
  ],
  lease: (b, f) => [
    any(b, 'property_id', leases.propertyId, f.property_id),
    any(b, 'unit_id', leases.unitId, f.unit_id),
    any(b, 'status', leases.status, f.status),
    any(b, 'type', leases.type, f.type),
    f.resident_id?.length
      ? sql`${leases.id} in (select lease_id from lease_residents where resident_id = any(${b.bind('resident_id', f.resident_id)}::text[]))`
      : undefined,
    f.start_date_gte ? gte(leases.startDate, b.bind('start_date_gte', f.start_date_gte)) : undefined,
    f.start_date_lte ? lte(leases.startDate, b.bind('start_date_lte', f.start_date_lte)) : undefined,
    f.end_date_gte ? gte(leases.endDate, b.bind('end_date_gte', f.end_date_gte)) : undefined,
    f.end_date_lte ? lte(leases.endDate, b.bind('end_date_lte', f.end_date_lte)) : undefined,
  ],
};

function entityFilters<E extends Entity>(b: Bindings, entity: E, q: FiltersOf[E]): (SQL | undefined)[] {
  return (ENTITY_FILTERS[entity] as (b: Bindings, f: FiltersOf[E]) => (SQL | undefined)[])(b, q);
}

/** Columns `order-by` may name, per entity (docs/decisions.md Reads). */
export function orderColumn(entity: Entity, field: string): PgColumn {
  const t = TABLES[entity] as unknown as Record<string, PgColumn>;
  const col = t[field.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase())];
  if (!col) throw new Error(`no column ${field} on ${entity}`);
  return col;
}

const scope = (b: Bindings, entity: Entity, principal: Principal) => {
  const t = tableOf(entity);
  return [eq(t.organizationId, b.bind('organization_id', principal.organizationId)), eq(t.mode, b.bind('mode', principal.mode))];
};

/** The filters of a list, without its page: what an export streams. */
export type ListFilters<E extends Entity> = Omit<CommonListQuery, 'limit' | 'offset'> & FiltersOf[E];

export const DEFAULT_ORDER: OrderBy = { field: 'created_at', dir: 'asc' };

/** Which rows a list (or an export) sees: the principal's, live unless `include_deleted`, and its filters. */
export function listWhere<E extends Entity>(b: Bindings, entity: E, principal: Principal, q: ListFilters<E>): SQL | undefined {
  const t = tableOf(entity);
  const ts = (d: Date) => d.toISOString();
  return and(
    ...scope(b, entity, principal),
    q.include_deleted ? undefined : isNull(t.deletedAt),
    q.updated_after ? gte(t.updatedAt, b.bind('updated_after', ts(q.updated_after))) : undefined,
    q.created_after ? gte(t.createdAt, b.bind('created_after', ts(q.created_after))) : undefined,
    q.created_before ? lte(t.createdAt, b.bind('created_before', ts(q.created_before))) : undefined,
    any(b, 'x_id', t.xId, q.x_id),
    any(b, 'integration_id', t.integrationId, q.integration_id, 'uuid'),
    ...entityFilters(b, entity, q),
  );
}

/** The list query with its values bound; bench/explain.ts EXPLAINs exactly this. */
export function listQuery<E extends Entity>(db: Db, entity: E, principal: Principal, q: CommonListQuery & FiltersOf[E], b = new Bindings()) {
  const t = tableOf(entity);
  const where = listWhere(b, entity, principal, q);
  const order = q['order-by'] ?? DEFAULT_ORDER;
  const dir = order.dir === 'asc' ? asc : desc;
  // One row past the page tells whether there is a next one, without a count.
  const query = db
    .select(keyedColumns(columnsOf(TABLES[entity])))
    .from(t)
    .where(where)
    .orderBy(dir(orderColumn(entity, order.field)), dir(t.id))
    .limit(b.bind('limit', q.limit + 1) as never)
    .offset(b.bind('offset', q.offset) as never);
  return { query, bindings: b, shape: `list:${entity}:${order.field}:${order.dir}:${q.include_deleted ? 'all' : 'live'}:${[...b.values.keys()].join(',')}` };
}

function retrieveQuery(db: Db, entity: Entity, principal: Principal, id: string, includeDeleted: boolean, b = new Bindings()) {
  const t = tableOf(entity);
  const query = db
    .select(keyedColumns(columnsOf(TABLES[entity])))
    .from(t)
    .where(and(eq(t.id, b.bind('id', id)), ...scope(b, entity, principal), includeDeleted ? undefined : isNull(t.deletedAt)));
  return { query, bindings: b };
}

// -------------------------------------------------------------------------------------------------------------
// Compiled execution
// -------------------------------------------------------------------------------------------------------------

interface Compiled {
  text: string;
  /** Per parameter: the placeholder name to fill, or a constant Drizzle put there itself. */
  params: ({ name: string } | { value: unknown })[];
}
const MAX_SHAPES = 1_000;
const compiled = new Map<string, Compiled>();

function compile(shape: string, build: () => { toSQL(): { sql: string; params: unknown[] } }): Compiled {
  let c = compiled.get(shape);
  if (!c) {
    const { sql: text, params } = build().toSQL();
    c = { text, params: params.map((p) => (p instanceof Placeholder ? { name: p.name as string } : { value: p })) };
    if (compiled.size >= MAX_SHAPES) compiled.delete(compiled.keys().next().value!);
    compiled.set(shape, c);
  }
  return c;
}

/** The SQL text and parameter values of a built query, as sent to Postgres. */
export function sqlOf(built: { query: { toSQL(): { sql: string; params: unknown[] } }; bindings: Bindings; shape: string }) {
  return fill(
    compile(built.shape, () => built.query),
    built.bindings.values,
  );
}

function fill(c: Compiled, values: Map<string, unknown>) {
  return { text: c.text, params: c.params.map((p) => ('name' in p ? values.get(p.name) : p.value)) };
}

/** The rows of a list or retrieve statement, as the driver hands them over (each column under its key: db/wire.ts). */
function run<E extends Entity>(db: Db, statement: { text: string; params: unknown[] }): Promise<WireRowOf[E][]> {
  return db.$client.unsafe<WireRowOf[E][]>(statement.text, statement.params as never[], { prepare: true });
}

/**
 * The nested `residents` of each lease, in source order, by one prepared statement. One lease (a retrieve) is asked
 * for by `=`: with `= any($1)` Postgres never settles on the statement's generic plan (it estimates an array of
 * unknown length as matching more rows than any one lease has) and plans it again on every execution, which
 * doubled its CPU (about 35 µs against 17 in the backend).
 */
async function leaseResidentsOf(db: Db, leaseIds: string[]): Promise<Map<string, LeaseResident[]>> {
  const out = new Map<string, LeaseResident[]>();
  if (leaseIds.length === 0) return out;
  type Link = { lease_id: string; resident_id: string; x_id: string; role: string };
  const rows =
    leaseIds.length === 1
      ? await db.$client<Link[]>`
          select lease_id, resident_id, x_id, role from lease_residents where lease_id = ${leaseIds[0]!} order by position`
      : await db.$client<Link[]>`
          select lease_id, resident_id, x_id, role from lease_residents
          where lease_id = any(${leaseIds}::text[]) order by lease_id, position`;
  for (const r of rows) {
    const list = out.get(r.lease_id);
    const person = { resident_id: r.resident_id, x_id: r.x_id, role: r.role };
    if (list) list.push(person);
    else out.set(r.lease_id, [person]);
  }
  return out;
}

async function serialize<E extends Entity>(db: Db, entity: E, rows: WireRowOf[E][]): Promise<RecordOf[E][]> {
  if (entity !== 'lease') return rows.map((r) => serializeOne(entity, r));
  const leaseRows = rows as WireRowOf['lease'][];
  const people = await leaseResidentsOf(
    db,
    leaseRows.map((r) => r.id),
  );
  return leaseRows.map((r) => leaseRecord(r, people.get(r.id) ?? [])) as RecordOf[E][];
}

export async function listRecords<E extends Entity>(
  db: Db,
  entity: E,
  principal: Principal,
  q: CommonListQuery & FiltersOf[E],
): Promise<Page<E extends 'property' ? PropertySummary : RecordOf[E]>> {
  const rows = await run<E>(db, sqlOf(listQuery(db, entity, principal, q)));
  const hasMore = rows.length > q.limit;
  const page = hasMore ? rows.slice(0, q.limit) : rows;
  const results = entity === 'property' ? (page as WireRowOf['property'][]).map(propertySummary) : await serialize(db, entity, page);
  return { meta: { limit: q.limit, offset: q.offset, hasMore }, results: results as never };
}

export async function retrieveRecord<E extends Entity>(
  db: Db,
  entity: E,
  principal: Principal,
  id: string,
  includeDeleted: boolean,
): Promise<RecordOf[E] | undefined> {
  // A retrieve's shape is fixed, so once compiled its values are bound without building the query at all.
  const shape = `retrieve:${entity}:${includeDeleted ? 'all' : 'live'}`;
  const values = new Map<string, unknown>([
    ['id', id],
    ['organization_id', principal.organizationId],
    ['mode', principal.mode],
  ]);
  const c = compile(shape, () => retrieveQuery(db, entity, principal, id, includeDeleted).query);
  const rows = await run<E>(db, fill(c, values));
  if (rows.length === 0) return undefined;
  const [record] = await serialize(db, entity, rows.slice(0, 1));
  return record;
}
