/**
 * The cache's record tables, one per entity, and their row types: what the serializers (db/serialize.ts), the write
 * path (db/apply.ts), a sync run's seen-tracking (db/seen.ts) and the read queries (db/queries.ts) share.
 */
import type { Entity } from '../domain/cdm';
import { leases, properties, residents, units } from './schema';
import type { WireRow } from './wire';

export const TABLES = { property: properties, unit: units, resident: residents, lease: leases } as const;
/** Any entity table, typed by the columns all of them share (for queries over common columns only). */
export function tableOf(entity: Entity): typeof properties {
  return TABLES[entity] as unknown as typeof properties;
}
type PropertyRow = typeof properties.$inferSelect;
type UnitRow = typeof units.$inferSelect;
type ResidentRow = typeof residents.$inferSelect;
export type LeaseRow = typeof leases.$inferSelect;
export interface RowOf {
  property: PropertyRow;
  unit: UnitRow;
  resident: ResidentRow;
  lease: LeaseRow;
}

/** A row of each entity as the reads select it (db/wire.ts): what the serializers take besides a row of RowOf. */
export interface WireRowOf {
  property: WireRow<typeof properties>;
  unit: WireRow<typeof units>;
  resident: WireRow<typeof residents>;
  lease: WireRow<typeof leases>;
}
