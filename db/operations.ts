/**
 * Operation rows (writes): accepting one under its idempotency key, the API's view of it, and the state changes the
 * write workflow makes. Every status write is guarded by the transitions of domain/operations.ts, so a late or
 * repeated activity never moves a terminal Operation.
 */
import { createHash } from 'node:crypto';
import { and, asc, eq, getTableColumns, gte, inArray, isNull, lt, Placeholder, sql } from 'drizzle-orm';
import { canonicalJson } from '../domain/content';
import type { Mode } from '../domain/plans';
import { operationStatesBefore, parseOperationType, type OperationStatus, type OperationType, type WritableEntity } from '../domain/operations';
import type { Db, Tx } from './client';
import { newId } from './ids';
import { orderedPage, type OrderedPage } from './order';
import { idempotencyKeys, operations } from './schema';
import { isoOf, isoOrNull, keyedColumns, type WireRow } from './wire';

export type OperationRow = typeof operations.$inferSelect;

/** How long an idempotency key is remembered, per organization and mode. */
/** A key used before this (the database's time) is free again: keys are kept 24 hours. */
const KEY_EXPIRED_BEFORE = sql`now() - interval '24 hours'`;

/** The idempotency key `key` of an organization and mode (the table's unique key). */
const keyIs = (k: { organizationId: string; mode: Mode; key: string }) =>
  and(eq(idempotencyKeys.organizationId, k.organizationId), eq(idempotencyKeys.mode, k.mode), eq(idempotencyKeys.key, k.key));

/** The Operation as the API shows it (docs/api.md Operation; docs/decisions.md names "the service" `resource`). */
export interface OperationJson {
  id: string;
  object: 'operation';
  type: OperationType;
  status: OperationStatus;
  source: { state: 'applied' | 'rejected' | null; applied_at: string | null };
  reconcile: { state: 'pending' | 'reconciled' | 'failed'; attempts: number; next_attempt_at: string | null; last_error: string | null };
  resource: { type: WritableEntity; id: string | null; x_id: string | null };
  result: { id: string } | null;
  idempotency_key: string | null;
  created_at: string;
}

/** An Operation without its stored request (which holds personal data): what every view of it reads. */
type OperationView = Omit<OperationRow, 'request'>;
/** The same as the driver hands it over to a poll (db/wire.ts): its times as Postgres's text. */
type WireOperationView = Omit<WireRow<typeof operations>, 'request'>;

/** The API's view of an Operation, from Drizzle's row or the driver's; it never needs the stored request. */
export function operationJson(row: OperationView | WireOperationView): OperationJson {
  const { entity } = parseOperationType(row.type);
  return {
    id: row.id,
    object: 'operation',
    type: row.type,
    status: row.status,
    source: { state: row.sourceState, applied_at: isoOrNull(row.appliedAt) },
    reconcile: {
      state: row.reconcileState,
      attempts: row.attempts,
      next_attempt_at: isoOrNull(row.nextAttemptAt),
      last_error: row.lastError,
    },
    resource: { type: entity, id: row.resourceId, x_id: row.resourceXId },
    result: row.status === 'succeeded' && row.resourceId ? { id: row.resourceId } : null,
    idempotency_key: row.idempotencyKey,
    created_at: isoOf(row.createdAt),
  };
}

/**
 * What an idempotency key is bound to: the method, the path and the canonical body (domain/content.ts). Stored with
 * the key, so its text for a given request must never change (test/unit/content.test.ts pins it).
 */
export function requestHashOf(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(body)}`)
    .digest('hex');
}

export interface NewOperation {
  organizationId: string;
  integrationId: string;
  mode: Mode;
  type: OperationType;
  request: Record<string, unknown>;
  targetId?: string;
  targetXId?: string;
  idempotencyKey: string;
  requestHash: string;
}

export type AcceptResult =
  | { outcome: 'created'; operation: OperationRow }
  /** The key was used before with the same request: its Operation. */
  | { outcome: 'replayed'; operation: OperationRow }
  /** The key was used before with a different request. */
  | { outcome: 'conflict'; operationId: string };

/**
 * Store a write as a queued Operation under its idempotency key: one statement, so one round trip and no
 * transaction, on the path of every write. The key is claimed first (a key older than 24 hours is free again), and
 * the Operation is inserted only when the claim is this request's. A concurrent request with the same key waits on
 * the claim's row lock until the first commits, claims nothing, and then (a second statement, whose snapshot sees
 * the first's commit) finds the key and collapses onto its Operation or conflicts with it.
 */
export async function acceptOperation(db: Db, input: NewOperation, now = new Date()): Promise<AcceptResult> {
  const id = newId('operation');
  // A key's age is the database's time, like its expiry everywhere (heldIdempotencyKey, the purge): the API
  // processes' and the worker's clocks may differ, and a replay must never find its key expired early.
  const claim = db.$with('claim', { operationId: idempotencyKeys.operationId }).as(
    db
      .insert(idempotencyKeys)
      .values({
        organizationId: input.organizationId,
        mode: input.mode,
        key: input.idempotencyKey,
        requestHash: input.requestHash,
        operationId: id,
        createdAt: sql`now()`,
      })
      .onConflictDoUpdate({
        target: [idempotencyKeys.organizationId, idempotencyKeys.mode, idempotencyKeys.key],
        set: { requestHash: input.requestHash, operationId: id, createdAt: sql`now()` },
        setWhere: lt(idempotencyKeys.createdAt, KEY_EXPIRED_BEFORE),
      })
      .returning({ operationId: idempotencyKeys.operationId })
      .getSQL(),
  );
  const inserted = db.$with('inserted', getTableColumns(operations)).as(
    sql`insert into ${operations} (id, organization_id, integration_id, mode, type, status, request, target_id, target_x_id,
        reconcile_state, attempts, next_attempt_at, idempotency_key, created_at, updated_at)
      select ${id}, ${input.organizationId}, ${input.integrationId}, ${input.mode}, ${input.type}, 'queued', ${JSON.stringify(input.request)}::jsonb,
        ${input.targetId ?? null}, ${input.targetXId ?? null}, 'pending', 0, ${now.toISOString()}::timestamptz, ${input.idempotencyKey},
        ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
      from claim where claim.operation_id = ${id}
      returning *`,
  );
  const [operation] = await db.with(claim, inserted).select().from(inserted);
  if (operation) return { outcome: 'created', operation };

  const [known] = await db
    .select({ requestHash: idempotencyKeys.requestHash, operationId: idempotencyKeys.operationId, operation: operations })
    .from(idempotencyKeys)
    .leftJoin(operations, eq(operations.id, idempotencyKeys.operationId))
    .where(keyIs({ ...input, key: input.idempotencyKey }));
  if (!known) throw new Error('idempotency key vanished while being read');
  if (known.requestHash !== input.requestHash) return { outcome: 'conflict', operationId: known.operationId };
  if (!known.operation) throw new Error(`operation ${known.operationId} of an idempotency key does not exist`);
  return { outcome: 'replayed', operation: known.operation };
}

/**
 * What an organization and mode's idempotency key holds, when it was used within the last 24 hours: the hash of the
 * request it was used for and that request's Operation. A request under a held key replays that Operation (or
 * conflicts with it) whatever else is true now: before its body is validated or its record looked up.
 */
export async function heldIdempotencyKey(
  db: Db,
  input: { organizationId: string; mode: Mode; key: string },
): Promise<{ requestHash: string; operation: OperationRow } | undefined> {
  const [row] = await db
    .select({ requestHash: idempotencyKeys.requestHash, operation: operations })
    .from(idempotencyKeys)
    .innerJoin(operations, eq(operations.id, idempotencyKeys.operationId))
    .where(and(keyIs(input), gte(idempotencyKeys.createdAt, KEY_EXPIRED_BEFORE)));
  return row;
}

export async function getOperation(db: Db | Tx, id: string): Promise<OperationRow | undefined> {
  const [row] = await db.select().from(operations).where(eq(operations.id, id));
  return row;
}

/** What the API shows of an Operation: everything but the stored request (personal data it never needs). */
const { request: _request, ...viewColumns } = getTableColumns(operations);

/**
 * The SQL of a poll, built once: the visible columns, each under its key (db/wire.ts), of the Operation with this id,
 * organization and mode, in that order of parameters. Run as a prepared statement, its row goes to operationJson
 * as the driver hands it over: a poll comes often, several times a second per write.
 */
let visibleSql: string | undefined;
function visibleSqlOf(db: Db): string {
  if (visibleSql) return visibleSql;
  const { sql: text, params } = db
    .select(keyedColumns(viewColumns))
    .from(operations)
    .where(
      and(
        eq(operations.id, sql.placeholder('id')),
        eq(operations.organizationId, sql.placeholder('organizationId')),
        eq(operations.mode, sql.placeholder('mode')),
      ),
    )
    .toSQL();
  const names = params.map((p) => (p instanceof Placeholder ? p.name : p));
  if (names.join() !== 'id,organizationId,mode') throw new Error(`unexpected parameters of the poll's statement: ${names.join()}`);
  return (visibleSql = text);
}

/** An Operation as a key sees it (its organization and mode only), without its stored request. */
export async function getVisibleOperation(db: Db, id: string, organizationId: string, mode: Mode): Promise<WireOperationView | undefined> {
  const [row] = await db.$client.unsafe<WireOperationView[]>(visibleSqlOf(db), [id, organizationId, mode], { prepare: true });
  return row;
}

export async function markWorkflowStarted(db: Db, ids: string[], now = new Date()): Promise<void> {
  if (ids.length === 0) return;
  await db
    .update(operations)
    .set({ workflowStartedAt: now })
    .where(and(inArray(operations.id, ids), isNull(operations.workflowStartedAt)));
}

/** Queued Operations accepted before `before` whose workflow no one is known to have started (the sweeper's work). */
export type UnstartedOperation = Pick<OperationRow, 'id' | 'organizationId' | 'integrationId' | 'type' | 'status' | 'createdAt'>;
export async function unstartedOperations(db: Db, before: Date, limit: number): Promise<UnstartedOperation[]> {
  return db
    .select({
      id: operations.id,
      organizationId: operations.organizationId,
      integrationId: operations.integrationId,
      type: operations.type,
      status: operations.status,
      createdAt: operations.createdAt,
    })
    .from(operations)
    .where(and(isNull(operations.workflowStartedAt), lt(operations.createdAt, before)))
    .orderBy(asc(operations.createdAt))
    .limit(limit);
}

/** Which of these Operations are not finished (queued or running). */
export async function openOperationIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .select({ id: operations.id })
    .from(operations)
    .where(and(inArray(operations.id, ids), inArray(operations.status, ['queued', 'running'])));
  return new Set(rows.map((r) => r.id));
}

/** Forget idempotency keys older than 24 hours (the database's time). */
export async function purgeIdempotencyKeys(db: Db): Promise<number> {
  const rows = await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, KEY_EXPIRED_BEFORE)).returning({ key: idempotencyKeys.key });
  return rows.length;
}

/**
 * Move an Operation to `status`, with the given fields, if the transition is allowed. Returns the row as it is
 * now, or undefined when it was not moved (already terminal).
 */
export async function moveOperation(
  db: Db | Tx,
  id: string,
  status: OperationStatus,
  fields: Partial<
    Pick<OperationRow, 'sourceState' | 'appliedAt' | 'reconcileState' | 'attempts' | 'nextAttemptAt' | 'lastError' | 'resourceId' | 'resourceXId'>
  >,
  now = new Date(),
): Promise<OperationRow | undefined> {
  const [row] = await db
    .update(operations)
    .set({ ...fields, status, updatedAt: now, workflowStartedAt: sql`coalesce(${operations.workflowStartedAt}, ${now.toISOString()}::timestamptz)` })
    .where(and(eq(operations.id, id), inArray(operations.status, operationStatesBefore(status))))
    .returning();
  return row;
}

// The admin API's reads and writes.

/** An Operation of any organization and mode, without its stored request. */
export async function getOperationSummary(db: Db, id: string): Promise<Omit<OperationRow, 'request'> | undefined> {
  const [row] = await db.select(viewColumns).from(operations).where(eq(operations.id, id));
  return row;
}

/** An integration's Operations, optionally only those of some statuses and types, one page; without their requests. */
export async function operationsOfIntegration(
  db: Db,
  integration: { id: string; organizationId: string; mode: Mode },
  filter: { status?: OperationStatus[]; type?: OperationType[] },
  page: OrderedPage,
): Promise<Omit<OperationRow, 'request'>[]> {
  const query = db
    .select(viewColumns)
    .from(operations)
    .where(
      and(
        // The integration's organization and mode lead, so the (organization, mode, created_at) index serves the page.
        eq(operations.organizationId, integration.organizationId),
        eq(operations.mode, integration.mode),
        eq(operations.integrationId, integration.id),
        filter.status ? inArray(operations.status, filter.status) : undefined,
        filter.type ? inArray(operations.type, filter.type) : undefined,
      ),
    )
    .$dynamic();
  return orderedPage(query, page, operations);
}
