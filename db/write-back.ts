/**
 * What a write's workflow reads and stores (activities/operations.ts): the Operation with its integration, and a
 * write the source applied, read back and stored through the sync's own write path (db/apply.ts) with the
 * Operation's move to `succeeded`, in one transaction.
 */
import { eq } from 'drizzle-orm';
import { SYNC_ORDER, type Entity, type InputOf } from '../domain/cdm';
import { applyRecords, lockForWriteBack, type ApplyContext } from './apply';
import type { Db } from './client';
import { moveOperation, type OperationRow } from './operations';
import { integrations, operations } from './schema';
import type { IntegrationRow } from './tenants';

/** An Operation and its integration (null when the integration row is gone), in one round trip: on the path of every write. */
export async function operationWithIntegration(db: Db, operationId: string): Promise<{ op: OperationRow; integration: IntegrationRow | null } | undefined> {
  const [row] = await db
    .select({ op: operations, integration: integrations })
    .from(operations)
    .leftJoin(integrations, eq(integrations.id, operations.integrationId))
    .where(eq(operations.id, operationId));
  return row;
}

/** A write the source applied, as read back from it. */
export interface AppliedWrite {
  op: OperationRow;
  integration: IntegrationRow;
  /** The written record's entity and x_id. */
  entity: Entity;
  xId: string;
  /** What was read back, by entity: the written record, and what the source changed alongside it. */
  read: ReadonlyMap<Entity, InputOf[Entity][]>;
  /** When the read-back began, by the database's clock. */
  readAt: Date;
  /** The Operation's attempts so far, and when the source applied the write. */
  attempts: number;
  appliedAt: Date;
}

/**
 * The written record's read-back was left out: the cache holds a version of it stored after the read-back began (another
 * write-back of the same record, or a sync page, read later or at the same time). Nothing was stored; the caller reads
 * the source again, so that the Operation never turns succeeded over a version older than its write.
 */
export class StaleReadBackError extends Error {
  constructor(entity: Entity, xId: string) {
    super(`${entity} ${xId} was stored by another write or sync while it was being read back`);
    this.name = 'StaleReadBackError';
  }
}

/**
 * The written record's integration was deleted before its read-back could be stored: nothing was stored (a deleted
 * integration's records stay soft-deleted), and the Operation fails with the source holding the change.
 */
export class IntegrationDeletedError extends Error {
  constructor(integrationId: string) {
    super(`the integration ${integrationId} was deleted before the change could be stored`);
    this.name = 'IntegrationDeletedError';
  }
}

/**
 * Store a write-back and mark its Operation succeeded, in one transaction of five round trips: BEGIN, the locks, the
 * reads, the writes with the Operation's move, COMMIT. Returns the written record's CDM id, and whether this call
 * moved the Operation (false: it had ended already).
 */
export async function storeWriteBack(db: Db, w: AppliedWrite): Promise<{ resourceId: string; succeeded: boolean }> {
  const { op, integration, entity } = w;
  let succeeded = false;
  const resourceId = await db.transaction(async (tx) => {
    const { now, live } = await lockForWriteBack(
      tx,
      integration.id,
      [...w.read].flatMap(([e, records]) => records.map((r) => ({ entity: e, xId: r.x_id }))),
    );
    if (!live) throw new IntegrationDeletedError(integration.id);
    const ctx: ApplyContext = {
      integration: { id: integration.id, organizationId: integration.organizationId, mode: integration.mode },
      // During the integration's first sync no record events are recorded, as for the sync itself.
      emitEvents: integration.firstSyncCompletedAt !== null,
      operationId: op.id,
      now,
      readAt: w.readAt,
      recordsLocked: true,
    };
    let resourceId: string | undefined;
    const succeed = async (ids: ReadonlyMap<string, string>, stale: ReadonlySet<string>) => {
      if (stale.has(w.xId)) throw new StaleReadBackError(entity, w.xId);
      resourceId = ids.get(w.xId);
      if (!resourceId) throw new Error(`${entity} ${w.xId} was read back but not stored`);
      succeeded = !!(await moveOperation(
        tx,
        op.id,
        'succeeded',
        {
          attempts: w.attempts,
          sourceState: 'applied',
          appliedAt: w.appliedAt,
          reconcileState: 'reconciled',
          nextAttemptAt: null,
          lastError: null,
          resourceId,
          resourceXId: w.xId,
        },
        now,
      ));
    };
    // Referenced records first (a new lease's applicant before the lease), as a sync applies them; the Operation
    // turns succeeded with its own record's writes.
    for (const e of SYNC_ORDER) {
      const records = w.read.get(e);
      if (records) await applyRecords(tx, e === entity ? { ...ctx, alongside: succeed } : ctx, e, records);
    }
    if (!resourceId) throw new Error(`${entity} ${w.xId} was read back but not stored`);
    return resourceId;
  });
  return { resourceId, succeeded };
}
