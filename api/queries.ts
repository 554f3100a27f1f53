/**
 * Reads of the public API: list (filters, order, offset pages) and retrieve, always scoped to the key's organization
 * AND mode, which lead every index of the entity tables. Rows are serialized by db/records.ts, the one serializer.
 */
import { and, asc, desc, eq, gte, ilike, inArray, isNull, lte, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client';
import { tableOf, TABLES, toRecords, propertySummary, type PropertyRow, type RowOf } from '../db/records';
import { leaseResidents } from '../db/schema';
import type { Entity, PropertySummary, RecordOf } from '../domain/cdm';
import type { Principal } from './middleware/env';
import type { OrderBy } from './schemas';

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

export interface PropertyFilters {
  status?: string[];
  type?: string[];
  name?: string;
}
export interface UnitFilters {
  property_id?: string[];
  status?: string[];
}
export interface ResidentFilters {
  property_id?: string[];
  email?: string;
  status?: string[];
}
export interface LeaseFilters {
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

/** An empty list (`status=`) filters nothing, like an absent parameter. */
const any = (col: Parameters<typeof inArray>[0], values: string[] | undefined): SQL | undefined =>
  values && values.length > 0 ? (values.length === 1 ? eq(col, values[0]) : inArray(col, values)) : undefined;

/** `%`, `_` and the escape character itself match literally (backslash is Postgres's default LIKE escape). */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (ch) => `\\${ch}`);

function entityFilters<E extends Entity>(entity: E, q: FiltersOf[E]): (SQL | undefined)[] {
  switch (entity) {
    case 'property': {
      const f = q as PropertyFilters;
      const t = TABLES.property;
      return [any(t.status, f.status), any(t.type, f.type), f.name ? ilike(t.name, `%${escapeLike(f.name)}%`) : undefined];
    }
    case 'unit': {
      const f = q as UnitFilters;
      const t = TABLES.unit;
      return [any(t.propertyId, f.property_id), any(t.status, f.status)];
    }
    case 'resident': {
      const f = q as ResidentFilters;
      const t = TABLES.resident;
      return [
        any(t.propertyId, f.property_id),
        any(t.status, f.status),
        f.email !== undefined ? sql`lower(${t.email}) = lower(${f.email})` : undefined,
      ];
    }
    default: {
      const f = q as LeaseFilters;
      const t = TABLES.lease;
      const residentIds = f.resident_id?.length ? f.resident_id : undefined;
      return [
        any(t.propertyId, f.property_id),
        any(t.unitId, f.unit_id),
        any(t.status, f.status),
        any(t.type, f.type),
        residentIds
          ? sql`${t.id} in (select ${leaseResidents.leaseId} from ${leaseResidents} where ${any(leaseResidents.residentId, residentIds)})`
          : undefined,
        f.start_date_gte ? gte(t.startDate, f.start_date_gte) : undefined,
        f.start_date_lte ? lte(t.startDate, f.start_date_lte) : undefined,
        f.end_date_gte ? gte(t.endDate, f.end_date_gte) : undefined,
        f.end_date_lte ? lte(t.endDate, f.end_date_lte) : undefined,
      ];
    }
  }
}

/** Columns `order-by` may name, per entity (DECISIONS.md Reads). */
function orderColumn(entity: Entity, field: string) {
  const t = TABLES[entity] as unknown as Record<string, Parameters<typeof asc>[0]>;
  const key = field.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());
  const col = t[key];
  if (!col) throw new Error(`no column ${field} on ${entity}`);
  return col;
}

export async function listRecords<E extends Entity>(
  db: Db,
  entity: E,
  principal: Principal,
  q: CommonListQuery & FiltersOf[E],
): Promise<Page<E extends 'property' ? PropertySummary : RecordOf[E]>> {
  const t = tableOf(entity);
  const where = and(
    eq(t.organizationId, principal.organizationId),
    eq(t.mode, principal.mode),
    q.include_deleted ? undefined : isNull(t.deletedAt),
    q.updated_after ? gte(t.updatedAt, q.updated_after) : undefined,
    q.created_after ? gte(t.createdAt, q.created_after) : undefined,
    q.created_before ? lte(t.createdAt, q.created_before) : undefined,
    any(t.xId, q.x_id),
    any(t.integrationId, q.integration_id),
    ...entityFilters(entity, q),
  );
  const order = q['order-by'] ?? { field: 'created_at', dir: 'asc' };
  const dir = order.dir === 'asc' ? asc : desc;
  // One row past the page tells whether there is a next one, without a count.
  const rows = (await db
    .select()
    .from(t)
    .where(where)
    .orderBy(dir(orderColumn(entity, order.field)), dir(t.id))
    .limit(q.limit + 1)
    .offset(q.offset)) as RowOf[E][];
  const hasMore = rows.length > q.limit;
  const page = hasMore ? rows.slice(0, q.limit) : rows;
  const results =
    entity === 'property' ? (page as PropertyRow[]).map(propertySummary) : await toRecords(db, entity, page);
  return { meta: { limit: q.limit, offset: q.offset, hasMore }, results: results as never };
}

export async function retrieveRecord<E extends Entity>(
  db: Db,
  entity: E,
  principal: Principal,
  id: string,
  includeDeleted: boolean,
): Promise<RecordOf[E] | undefined> {
  const t = tableOf(entity);
  const rows = (await db
    .select()
    .from(t)
    .where(
      and(
        eq(t.id, id),
        eq(t.organizationId, principal.organizationId),
        eq(t.mode, principal.mode),
        includeDeleted ? undefined : isNull(t.deletedAt),
      ),
    )
    .limit(1)) as RowOf[E][];
  if (rows.length === 0) return undefined;
  const [record] = await toRecords(db, entity, rows);
  return record;
}
