/** The direction of a list ordered by creation time, as the admin lists take it (`order=asc|desc`). */
import { asc, desc, type AnyColumn, type SQL } from 'drizzle-orm';
import type { PgSelect } from 'drizzle-orm/pg-core';

export const SORT_ORDERS = ['asc', 'desc'] as const;
export type SortOrder = (typeof SORT_ORDERS)[number];

/**
 * ORDER BY terms for `columns` (the creation time, then the id) all in one direction: the id breaks ties the same way,
 * so offset pages neither repeat nor skip rows created in the same millisecond.
 */
export function inOrder(order: SortOrder, ...columns: AnyColumn[]): SQL[] {
  const dir = order === 'asc' ? asc : desc;
  return columns.map((c) => dir(c));
}

/** A page of a list ordered by creation time: `limit` rows (a caller wanting to know whether more follow asks one more) from `offset`. */
export interface OrderedPage {
  limit: number;
  offset: number;
  order: SortOrder;
}

/** `query` (made $dynamic) cut to `page`, in the order of its table's creation time then id (inOrder). */
export function orderedPage<Q extends PgSelect>(query: Q, page: OrderedPage, table: { createdAt: AnyColumn; id: AnyColumn }): Q {
  return query
    .orderBy(...inOrder(page.order, table.createdAt, table.id))
    .limit(page.limit)
    .offset(page.offset);
}
