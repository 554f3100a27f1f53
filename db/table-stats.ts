/** The planner's statistics of the cache's record tables, kept fresh while a first big sync fills them. */
import { getTableName, sql } from 'drizzle-orm';
import type { Entity } from '../domain/cdm';
import type { Db } from './client';
import { TABLES } from './records';
import { leaseResidents } from './schema';

/**
 * ANALYZE an entity's tables when their row count has outgrown the planner's statistics. A first big sync grows a
 * table from nothing far faster than autovacuum notices, and plans made for an empty table (sequential scans,
 * cached in prepared statements) would make every later page slower than the one before.
 */
export async function refreshStatsIfStale(db: Db, entity: Entity): Promise<void> {
  const tables = entity === 'lease' ? [getTableName(TABLES.lease), getTableName(leaseResidents)] : [getTableName(TABLES[entity])];
  for (const name of tables) {
    const [row] = await db.execute<{ planned: number; live: number }>(sql`
      select greatest(c.reltuples, 0)::float8 as planned, coalesce(s.n_live_tup, 0)::float8 as live
      from pg_class c left join pg_stat_user_tables s on s.relid = c.oid
      where c.oid = to_regclass(${name})`);
    // Only an optimisation: a role that may not ANALYZE still syncs correctly, just slower.
    if (row && row.live > 2 * Math.max(row.planned, 1_000)) await db.execute(sql`analyze ${sql.identifier(name)}`).catch(() => {});
  }
}
