/** Reads of rows that are deleted softly (a `deleted_at` set): the live ones only, one by id or a page of a parent's. */
import { and, eq, isNull } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Tx } from './client';
import { orderedPage, type OrderedPage } from './order';

/** A table with a prefixed id, a creation time and a soft delete. */
type SoftDeleted = PgTable & { id: PgColumn; createdAt: PgColumn; deletedAt: PgColumn };

/** The row of `table` with this id, unless it is deleted. */
export async function liveById<T extends SoftDeleted>(tx: Tx, table: T, id: string): Promise<T['$inferSelect'] | undefined> {
  const [row] = await tx
    .select()
    .from(table as SoftDeleted)
    .where(and(eq(table.id, id), isNull(table.deletedAt)));
  return row as T['$inferSelect'] | undefined;
}

/** The rows of `table` whose `parent` column is `parentId` and that are not deleted, one page. */
export async function livePage<T extends SoftDeleted>(tx: Tx, table: T, parent: PgColumn, parentId: string, page: OrderedPage): Promise<T['$inferSelect'][]> {
  const query = tx
    .select()
    .from(table as SoftDeleted)
    .where(and(eq(parent, parentId), isNull(table.deletedAt)))
    .$dynamic();
  return (await orderedPage(query, page, table)) as T['$inferSelect'][];
}
