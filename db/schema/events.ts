/** The outbox of change events, and the positions of its feed. */
import { sql } from 'drizzle-orm';
import { bigint, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ownedBy, prefixedId, testOrLive, ts } from './columns';

/**
 * The outbox: every change event, written in the same transaction as the record change that caused it.
 * Delivery to subscriptions reads from here.
 */
export const events = pgTable(
  'events',
  {
    id: prefixedId(),
    ...ownedBy(),
    mode: testOrLive(),
    type: text('type').notNull(),
    category: text('category').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    /** The sync job or operation that produced the event, if any. */
    syncJobId: text('sync_job_id'),
    operationId: text('operation_id'),
    /** The automation run an AUTOMATION_* event reports. */
    automationRunId: text('automation_run_id'),
    /** The record the event is about (data_change events). */
    recordId: text('record_id'),
    /**
     * The envelope exactly as sent to receivers, serialized once by the outbox relay (or a replay) and never again,
     * so every attempt and every replay posts and signs the same bytes.
     */
    body: text('body'),
    /** Set by the outbox relay once a delivery workflow of every subscription that wants the event has started. */
    dispatchedAt: ts('dispatched_at'),
    /**
     * The event's place in production order (GET /v1/events), set by the outbox relay in the transaction that marks it
     * dispatched. Numbers are taken from the one `event_positions` row, whose lock is held to the commit, so a higher
     * number always commits after a lower one: a reader never sees a number while a lower one is still uncommitted.
     * Null until the relay has taken the event (the public feed does not show it yet).
     */
    position: bigint('position', { mode: 'number' }),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    index('events_integration_created_idx').on(t.integrationId, t.createdAt, t.id),
    // The public feed: an organization's events of one mode in production order.
    uniqueIndex('events_feed_idx')
      .on(t.organizationId, t.mode, t.position)
      .where(sql`${t.position} is not null`),
    index('events_undispatched_idx')
      .on(t.createdAt)
      .where(sql`${t.dispatchedAt} is null`),
    // A sync run's lifecycle event is recorded once, however often its activity is retried.
    uniqueIndex('events_sync_lifecycle_idx')
      .on(t.syncJobId, t.type)
      .where(sql`${t.category} = 'sync_lifecycle'`),
    // An automation run reports its end once (completed or failed), however often its last activity is retried.
    uniqueIndex('events_automation_run_idx')
      .on(t.automationRunId)
      .where(sql`${t.category} = 'automation'`),
  ],
);

/**
 * The last production-order position handed out (events.position): one row, `events`. The relay's transaction takes
 * the next block with an UPDATE, whose row lock it holds until it commits, so blocks commit in number order.
 */
export const eventPositions = pgTable('event_positions', {
  name: text('name').primaryKey(),
  last: bigint('last', { mode: 'number' }).notNull(),
});
