/**
 * The cache's record tables, one per entity, and their row types: what the serializers (db/serialize.ts), the write
 * path (db/apply.ts), a sync run's seen-tracking (db/seen.ts) and the read queries (db/queries.ts) share.
 */
import type { Column, Table } from 'drizzle-orm';
import type { Entity } from '../domain/cdm';
import { leases, properties, residents, units } from './schema';

export const TABLES = { property: properties, unit: units, resident: residents, lease: leases } as const;
/** Any entity table, typed by the columns all of them share (for queries over common columns only). */
export function tableOf(entity: Entity): typeof properties {
  return TABLES[entity] as unknown as typeof properties;
}
export type PropertyRow = typeof properties.$inferSelect;
export type UnitRow = typeof units.$inferSelect;
export type ResidentRow = typeof residents.$inferSelect;
export type LeaseRow = typeof leases.$inferSelect;
export interface RowOf {
  property: PropertyRow;
  unit: UnitRow;
  resident: ResidentRow;
  lease: LeaseRow;
}

type ColumnsOf<T extends Table> = T['_']['columns'];
/** What postgres.js hands over for a column, before Drizzle decodes it: a timestamp as Postgres's text, a bigint as a BigInt. */
type WireValue<C extends Column> = C['_']['columnType'] extends 'PgTimestamp' ? string : C['_']['columnType'] extends 'PgBigInt53' ? bigint : C['_']['data'];
/**
 * A row as the driver hands it over under Drizzle's keys (the reads select each column as its key, db/queries.ts):
 * every value as Drizzle would decode it but a timestamp (text) and a bigint (a BigInt). The serializers take it as
 * they take a row of RowOf.
 */
export type WireRow<T extends Table> = {
  [K in keyof ColumnsOf<T>]: WireValue<ColumnsOf<T>[K]> | (ColumnsOf<T>[K]['_']['notNull'] extends true ? never : null);
};
export interface WireRowOf {
  property: WireRow<typeof properties>;
  unit: WireRow<typeof units>;
  resident: WireRow<typeof residents>;
  lease: WireRow<typeof leases>;
}
