/**
 * Writing cache rows with Postgres COPY, as the benches' floors and loaders do: the rows a sync writes for mapped
 * records (db/row-values.ts rowValuesOf, the content hash, the lease residents), as CSV in each table's column order,
 * sent with `COPY … FROM STDIN`. Shared by the sync floor (bench/lib/sync-floor.ts) and the export bench's loader
 * (bench/lib/export-data.ts).
 */
import { getTableColumns, getTableName } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { stringify } from 'csv-stringify/sync';
import type postgres from 'postgres';
import { TABLES } from '../../db/records';
import { rowValuesOf, type Refs } from '../../db/row-values';
import { leaseResidents } from '../../db/schema';
import type { Entity, InputOf, LeaseInput } from '../../domain/cdm';
import type { Mode } from '../../domain/plans';

/** Column order and name of a table. */
function copyShape(table: PgTable) {
  const columns = Object.entries(getTableColumns(table)).map(([key, col]) => ({ key, name: col.name, json: col.columnType === 'PgJsonb' }));
  return { name: getTableName(table), columns };
}
export type CopyShape = ReturnType<typeof copyShape>;

export const SHAPES = {
  property: copyShape(TABLES.property as unknown as PgTable),
  unit: copyShape(TABLES.unit as unknown as PgTable),
  resident: copyShape(TABLES.resident as unknown as PgTable),
  lease: copyShape(TABLES.lease as unknown as PgTable),
  lease_residents: copyShape(leaseResidents as unknown as PgTable),
};

/**
 * CSV as COPY reads it: strings always quoted (so '' stays an empty string), null and undefined unquoted and empty
 * (NULL), jsonb as JSON text, timestamps as ISO 8601, booleans as t/f.
 */
const CSV_OPTIONS = {
  quoted_string: true,
  cast: {
    boolean: (v: boolean) => (v ? 't' : 'f'),
    date: (v: Date) => v.toISOString(),
    object: (v: object) => JSON.stringify(v),
  },
};

/** Rows (keyed by the table's property names) as CSV in the table's column order. */
export function toCsv(shape: CopyShape, rows: Record<string, unknown>[]): string {
  return stringify(
    rows.map((r) => shape.columns.map((c) => (c.json && r[c.key] != null ? JSON.stringify(r[c.key]) : r[c.key]))),
    CSV_OPTIONS,
  );
}

/** One COPY ... FROM STDIN of CSV text (committed on its own). */
export async function copyCsv(sql: postgres.Sql, shape: CopyShape, csv: string): Promise<void> {
  if (csv.length === 0) return;
  const writable = await sql`copy ${sql(shape.name)} (${sql(shape.columns.map((c) => c.name))}) from stdin with (format csv)`.writable();
  await new Promise<void>((resolve, reject) => {
    writable.once('error', reject);
    writable.once('finish', resolve);
    writable.end(csv);
  });
}

/** A mapped source record, its content hash and the id it gets in the cache. */
export interface MappedRecord<E extends Entity> {
  input: InputOf[E];
  hash: string;
  id: string;
}

/**
 * The rows a first sync writes for these records (one per x_id; the caller dedupes), and for leases their
 * lease_residents rows. Each record's id goes into `refs` first: a renewal may name a lease of the same batch.
 * References are resolved from `refs` only (nothing is looked up).
 */
export function cacheRowsOf<E extends Entity>(
  entity: E,
  records: Iterable<MappedRecord<E>>,
  refs: Refs,
  integration: { id: string; organizationId: string; mode: Mode },
  now: Date,
): { rows: Record<string, unknown>[]; people: Record<string, unknown>[] } {
  const all = [...records];
  for (const r of all) refs[entity].set(r.input.x_id, r.id);
  const rows: Record<string, unknown>[] = [];
  const people: Record<string, unknown>[] = [];
  for (const { input, hash, id } of all) {
    const row = rowValuesOf(entity, input, refs);
    row.id = id;
    row.organizationId = integration.organizationId;
    row.integrationId = integration.id;
    row.mode = integration.mode;
    row.xId = input.x_id;
    row.customData = input.custom_data;
    row.contentHash = hash;
    row.createdAt = now;
    row.updatedAt = now;
    row.deletedAt = null;
    row.psSyncedAt = now;
    rows.push(row);
    if (entity === 'lease') {
      const seen = new Set<string>();
      for (const p of (input as LeaseInput).residents) {
        const residentId = refs.resident.get(p.x_id);
        if (!residentId || seen.has(residentId)) continue;
        seen.add(residentId);
        people.push({ leaseId: id, residentId, xId: p.x_id, role: p.role, position: seen.size - 1 });
      }
    }
  }
  return { rows, people };
}
