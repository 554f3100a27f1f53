/**
 * What a sync run saw: the x_ids of its pages (recorded with each page's lookup in db/apply.ts, or here for records
 * it set aside), the live records it did not see, and their soft-deletion once the run is complete.
 */
import { and, asc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { Entity } from '../domain/cdm';
import type { EventType } from '../domain/events';
import type { Db, Tx } from './client';
import { eventRow, insertRows, lockEntity, updatedPayload, type ApplyContext } from './apply';
import { tableOf } from './records';
import { iso } from './serialize';
import { events, syncSeen } from './schema';

/** When a run began: its claim, in the database's time (its row's creation for a run claimed before that was kept). */
export const runStartOf = (job: { startedAt: Date | null; createdAt: Date }): Date => job.startedAt ?? job.createdAt;

/**
 * A row of `table` the run may find gone: stored before the run began (`startedAt`; absent: any row) and whose x_id
 * the run has not recorded as seen (an anti join over sync_seen_pages). A row stored since was read from the source
 * after the run began (a write-back's read-back): the run cannot know it is gone, and the next full run decides.
 */
function unseenBy(table: ReturnType<typeof tableOf>, run: { syncJobId: string; startedAt?: Date | undefined }, entity: Entity): SQL {
  const before = run.startedAt ? sql`(${table.psSyncedAt} is null or ${table.psSyncedAt} < ${run.startedAt.toISOString()}::timestamptz) and ` : sql``;
  return sql`${before}not exists (select 1 from (select unnest(s.x_ids) as x_id from ${syncSeen} s where s.sync_job_id = ${run.syncJobId} and s.entity = ${entity}) seen where seen.x_id = ${table.xId})`;
}

/**
 * Soft-delete the records of an integration that a complete sync run did not see (and that were stored before it
 * began), recording `*_UPDATED` events with `deleted_at`. Only called after every page of the run was applied; a
 * failed run never soft-deletes.
 */
export async function softDeleteUnseen(
  tx: Tx,
  ctx: ApplyContext & { syncJobId: string; startedAt?: Date },
  entity: Entity,
): Promise<{ softDeleted: number; eventIds: string[] }> {
  const now = ctx.now ?? new Date();
  const table = tableOf(entity);
  await lockEntity(tx, ctx.integration.id, entity);
  // sync_seen_pages fills and empties with every run, so its statistics are usually stale (empty): the planner would
  // then pick a nested-loop anti join, quadratic in the size of the run. A hash or merge anti join stays linear.
  const [setting] = await tx.execute<{ prev: string }>(sql`select current_setting('enable_nestloop') as prev, set_config('enable_nestloop', 'off', true)`);
  const gone = await tx
    .update(table)
    .set({ deletedAt: now, updatedAt: now })
    .where(and(eq(table.integrationId, ctx.integration.id), isNull(table.deletedAt), unseenBy(table, ctx, entity)))
    .returning({ id: table.id, xId: table.xId });
  await tx.execute(sql`select set_config('enable_nestloop', ${setting?.prev ?? 'on'}, true)`);
  const eventIds: string[] = [];
  if (ctx.emitEvents && gone.length > 0) {
    const type = (entity === 'lease' ? 'LEASE_UPDATED' : `${entity.toUpperCase()}_UPDATED`) as EventType;
    const rows = gone.map((g) =>
      eventRow(ctx, { type, recordId: g.id, data: updatedPayload({ id: g.id, x_id: g.xId, deleted_at: iso(now), updated_at: iso(now) }, ['deleted_at']) }, now),
    );
    await insertRows(tx, events, rows);
    eventIds.push(...rows.map((r) => r.id));
  }
  return { softDeleted: gone.length, eventIds };
}

/**
 * Record x_ids as seen by a run without applying anything (records the run quarantined: their cached version
 * stays, and must not be soft-deleted for being unreadable).
 */
export async function markSeen(tx: Tx, syncJobId: string, entity: Entity, xIds: string[]): Promise<void> {
  if (xIds.length > 0) await tx.insert(syncSeen).values({ syncJobId, entity, xIds });
}

/**
 * Live cached x_ids of an entity that a run has not seen (yet), in x_id order after `after`: the candidates for
 * soft-deletion, which the run confirms with the source before it soft-deletes any.
 */
export async function unseenXIds(
  db: Db,
  q: { integrationId: string; syncJobId: string; startedAt: Date; entity: Entity; after: string | null; limit: number },
): Promise<string[]> {
  const table = tableOf(q.entity);
  return db.transaction(async (tx) => {
    // The same anti join as softDeleteUnseen, for the same reason (stale statistics of sync_seen_pages).
    await tx.execute(sql`select set_config('enable_nestloop', 'off', true)`);
    const rows = await tx
      .select({ xId: table.xId })
      .from(table)
      .where(
        and(
          eq(table.integrationId, q.integrationId),
          isNull(table.deletedAt),
          q.after === null ? undefined : sql`${table.xId} > ${q.after}`,
          unseenBy(table, q, q.entity),
        ),
      )
      .orderBy(asc(table.xId))
      .limit(q.limit);
    return rows.map((r) => r.xId);
  });
}

/** Forget what a sync run saw (called when the run ends, whatever its outcome). */
export async function clearSeen(tx: Tx, syncJobId: string): Promise<void> {
  await tx.delete(syncSeen).where(eq(syncSeen.syncJobId, syncJobId));
}
