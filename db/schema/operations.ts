/** Write Operations, and the idempotency keys of the API's writes. */
import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { ownedBy, prefixedId, testOrLive, ts } from './columns';

/**
 * Writes (docs/api.md Operation): one row per accepted write, whose Temporal workflow (id = the Operation id) gets the
 * change into the source and the cache. The row is what GET /v1/operations/{id} shows; the workflow keeps it current.
 */
export const operations = pgTable(
  'operations',
  {
    id: prefixedId(),
    ...ownedBy(),
    mode: testOrLive(),
    type: text('type', { enum: ['lease.create', 'lease.update', 'unit.create', 'unit.update', 'resident.create', 'resident.update'] }).notNull(),
    status: text('status', { enum: ['queued', 'running', 'succeeded', 'failed'] }).notNull(),
    /** What to write, in the connector's terms (references as x_ids). Read only inside activities. */
    request: jsonb('request').$type<Record<string, unknown>>().notNull(),
    /** An update's record: its CDM id and x_id (shown as `resource` once the write succeeded). */
    targetId: text('target_id'),
    targetXId: text('target_x_id'),
    sourceState: text('source_state', { enum: ['applied', 'rejected'] }),
    appliedAt: ts('applied_at'),
    reconcileState: text('reconcile_state', { enum: ['pending', 'reconciled', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at'),
    lastError: text('last_error'),
    resourceId: text('resource_id'),
    resourceXId: text('resource_x_id'),
    idempotencyKey: text('idempotency_key'),
    /** When the workflow was known to be started (by the API, a retried request or the sweeper). */
    workflowStartedAt: ts('workflow_started_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('operations_org_created_idx').on(t.organizationId, t.mode, t.createdAt),
    // What the sweeper looks for: accepted writes whose workflow may never have been started.
    index('operations_unstarted_idx')
      .on(t.createdAt)
      .where(sql`${t.workflowStartedAt} is null`),
    // The oldest Operation not yet finished (a metric and an alert): the head of this index.
    index('operations_open_idx')
      .on(t.createdAt)
      .where(sql`${t.status} in ('queued', 'running')`),
  ],
);

/**
 * Idempotency keys of writes, per organization and mode, remembered 24 hours: the request they were first used with
 * (method, path and canonical body, hashed) and the Operation it made. The primary key makes racing requests with
 * one key collapse onto one Operation.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    organizationId: uuid('organization_id').notNull(),
    mode: testOrLive(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    operationId: text('operation_id').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.mode, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);
