/**
 * The one clock that every worker shares: the database's. Times that are compared across processes (when a sync
 * page was read against when a write-back stored a record, the window a delta run covers) are taken here, never
 * from a worker's own clock, which may be off by any amount.
 */
import { sql } from 'drizzle-orm';
import type { Tx } from './client';

/** The database's time: now() (inside a transaction, when the transaction began; outside, when this query ran). */
export async function databaseNow(db: Tx): Promise<Date> {
  const [row] = await db.execute<{ now: string | Date }>(sql`select now() as now`);
  return new Date(row!.now);
}
