/** Webhook subscriptions, their deliveries, attempts and health. */
import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ownedBy, prefixedId, timestamps, ts } from './columns';

/** Webhook subscriptions of an integration (scale and enterprise plans): where its events go and how they are signed. */
export const webhookSubscriptions = pgTable(
  'webhook_subscriptions',
  {
    id: prefixedId(),
    ...ownedBy(),
    url: text('url').notNull(),
    /** Event types the subscription wants, or `["*"]` for all. */
    eventTypes: text('event_types').array().notNull(),
    description: text('description'),
    status: text('status', { enum: ['active', 'disabled'] }).notNull(),
    /** Signing secret (`whsec_…`), as shown once at creation; read only inside delivery activities. */
    secret: text('secret').notNull(),
    /** The secret before the last rotation, still signing (X-Service-Signature-Previous) until it expires. */
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** Deliveries the outbox relay has made for the subscription: each new one takes the next number (first-attempt order). */
    deliverySeq: bigint('delivery_seq', { mode: 'number' }).notNull().default(0),
    /**
     * Whether the subscription's dispatcher has nothing queued and waits to be woken: the relay signals it when it
     * queues a delivery while this is true (and sets it false in the same transaction), and only then.
     */
    dispatchIdle: boolean('dispatch_idle').notNull().default(true),
    /** Attempts in flight at once; null: the deployment's WEBHOOK_MAX_IN_FLIGHT. */
    maxInFlight: integer('max_in_flight'),
    /** The dispatcher's circuit breaker: open since (a run of failed first attempts), and when it next probes. Null: closed. */
    circuitOpenedAt: ts('circuit_opened_at'),
    circuitNextProbeAt: ts('circuit_next_probe_at'),
    /**
     * Sign deliveries the Standard Webhooks way too (`webhook-id`, `webhook-timestamp`, `webhook-signature`), besides
     * X-Service-Signature. On for subscriptions made since it exists; older ones opt in.
     */
    standardWebhooks: boolean('standard_webhooks').notNull().default(false),
    /** Why the subscription is disabled, when it is: by an operator, or by the service (its receiver failing or gone). */
    disabledAt: ts('disabled_at'),
    disabledBy: text('disabled_by', { enum: ['operator', 'failures', 'gone'] }),
    disabledReason: text('disabled_reason'),
    /**
     * When it was last enabled again after being disabled (disabled_at is kept then, for the relay): an event recorded
     * between the two, relayed late, is not queued, as one relayed on time would not have been.
     */
    enabledAt: ts('enabled_at'),
    ...timestamps(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('webhook_subscriptions_integration_idx').on(t.integrationId, t.createdAt)],
);

/** One delivery of one event to one subscription: its state, held by (and mirrored from) its Temporal workflow. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: prefixedId(),
    eventId: text('event_id').notNull(),
    subscriptionId: text('subscription_id').notNull(),
    ...ownedBy(),
    eventType: text('event_type').notNull(),
    status: text('status', { enum: ['pending', 'retrying', 'succeeded', 'dead_lettered', 'cancelled', 'expired'] }).notNull(),
    /**
     * Position in the subscription's queue: its dispatcher makes first attempts in this order. Null for deliveries
     * made before the queue existed, whose own workflow made their first attempt.
     */
    seq: bigint('seq', { mode: 'number' }),
    attempts: integer('attempts').notNull().default(0),
    /** When the first attempt's request went out. */
    firstSentAt: ts('first_sent_at'),
    /**
     * A first attempt that succeeded, as its dispatcher recorded it on the delivery alone (no `webhook_attempts` row:
     * one row and index entry less per delivery): how long it took, what the receiver answered and the first bytes
     * of its answer; it started at `first_sent_at`. Readers of attempts show it as attempt 1 (over a row numbered 1,
     * which only a lost-attempt record racing with this success can have made). Null when attempt 1 has a row of its
     * own (it failed, was given up as lost, or was recorded before these columns existed).
     */
    firstDurationMs: integer('first_duration_ms'),
    firstResponseStatus: integer('first_response_status'),
    firstResponseBody: text('first_response_body'),
    lastAttemptAt: ts('last_attempt_at'),
    nextAttemptAt: ts('next_attempt_at'),
    lastResponseStatus: integer('last_response_status'),
    lastError: text('last_error'),
    ...timestamps(),
  },
  // Four indexes with the primary key: an entry in each at every insert (in the open one only while pending), and in
  // all but the open one at every status change, which is never HOT (status is a key). A subscription's deliveries in
  // time order, of one state or of all (merged state by state: db/webhooks.ts listDeliveries), come from the one by
  // subscription, state and time; so does the retention's purge, subscription by subscription. The queues need no
  // index of their own: the open one serves them (seq comes from the relay under the subscription's row lock, so it
  // needs no unique index either).
  (t) => [
    uniqueIndex('webhook_deliveries_event_subscription_idx').on(t.eventId, t.subscriptionId),
    // With the id, the order of every list is the index's own (no sort, whatever the statistics say).
    index('webhook_deliveries_subscription_status_idx').on(t.subscriptionId, t.status, t.createdAt, t.id),
    // Deliveries not settled, by state and subscription: each queue in order (pending after its cursor: what its
    // dispatcher takes next; at or before it: first attempts made and not recorded, the lost ones after a crash),
    // and the metrics' and the console's health numbers (backlogs and dead letters, in all and per subscription).
    index('webhook_deliveries_open_idx')
      .on(t.status, t.subscriptionId, t.seq)
      .where(sql`${t.status} in ('pending', 'retrying', 'dead_lettered')`),
  ],
);

/**
 * A subscription's endpoint health, kept by the attempts as they are recorded (a row of its own, so the dispatchers'
 * writes never wait on the relay's lock of the subscription row): its last success and failure, and since when every
 * attempt has failed (null while the last recorded outcome after a success is a success).
 */
export const webhookSubscriptionHealth = pgTable('webhook_subscription_health', {
  subscriptionId: text('subscription_id').primaryKey(),
  lastSuccessAt: ts('last_success_at'),
  lastFailureAt: ts('last_failure_at'),
  failingSince: ts('failing_since'),
});

/**
 * How far a subscription's dispatcher has taken its queue: every delivery numbered up to `taken_seq` was taken for
 * its first attempt. One still `pending` there has no recorded outcome yet: after a crash the attempt counts as lost
 * and the delivery's own workflow retries it. A row of its own (not the subscription's), so that taking deliveries
 * never waits on the relay's lock of the subscription row, and one claim statement moves it however many it takes.
 */
export const webhookDispatchCursors = pgTable('webhook_dispatch_cursors', {
  subscriptionId: text('subscription_id').primaryKey(),
  takenSeq: bigint('taken_seq', { mode: 'number' }).notNull().default(0),
});

/**
 * Every attempt of a delivery: when, how long, what the receiver answered (or why there was no answer). All but a
 * first attempt that succeeded, which is kept on its delivery (`first_duration_ms` and the columns after it).
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    deliveryId: text('delivery_id').notNull(),
    number: integer('number').notNull(),
    startedAt: ts('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    responseStatus: integer('response_status'),
    error: text('error'),
    /** The first bytes of the response body. */
    responseBody: text('response_body'),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.number] })],
);
