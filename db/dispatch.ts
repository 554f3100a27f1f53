/**
 * What a subscription's dispatcher (activities/dispatch.ts) reads and writes: whether and where it may send, the
 * queued deliveries it takes for their first attempt (in queue order) and the outcomes it records, its queue settled
 * idle, and its circuit breaker as shown to operators. The queue is filled by queueDeliveries
 * (db/webhooks.ts); later attempts and replays are db/delivery-attempts.ts's.
 */
import { and, asc, eq, isNotNull, lte, sql } from 'drizzle-orm';
import type { Db, Tx } from './client';
import { events, integrations, webhookAttempts, webhookDeliveries, webhookDispatchCursors, webhookSubscriptions } from './schema';
import type { DeliveryStatus } from '../domain/webhooks';
import { CANCELLED_CHANNEL, QUEUED_CHANNEL, WEBHOOK_PLANS } from './webhooks';

/** What a dispatcher needs to send a subscription's deliveries, and whether it may. */
export interface SendingState {
  url: string;
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: Date | null;
  standardWebhooks: boolean;
  mode: 'test' | 'live';
  /** The subscription's own bound on attempts in flight, when it has one. */
  maxInFlight: number | null;
  /** `active`, or why nothing may be sent: `paused` (disabled, or a plan without webhooks), `deleted`. */
  state: 'active' | 'paused' | 'deleted';
}

export async function sendingStateOf(tx: Tx, subscriptionId: string): Promise<SendingState | null> {
  const [row] = await tx
    .select({ sub: webhookSubscriptions, mode: integrations.mode, plan: integrations.plan, integrationDeleted: integrations.deletedAt })
    .from(webhookSubscriptions)
    .innerJoin(integrations, eq(integrations.id, webhookSubscriptions.integrationId))
    .where(eq(webhookSubscriptions.id, subscriptionId));
  if (!row) return null;
  const { sub } = row;
  const state = sub.deletedAt || row.integrationDeleted ? 'deleted' : sub.status !== 'active' || !WEBHOOK_PLANS.includes(row.plan) ? 'paused' : 'active';
  return {
    url: sub.url,
    secret: sub.secret,
    previousSecret: sub.previousSecret,
    previousExpiresAt: sub.previousSecretExpiresAt,
    standardWebhooks: sub.standardWebhooks,
    mode: row.mode,
    maxInFlight: sub.maxInFlight,
    state,
  };
}

/** A queued delivery taken for its first attempt. */
export interface ClaimedDelivery {
  id: string;
  seq: number;
  eventId: string;
  eventType: string;
  integrationId: string;
  /** The stored envelope; null when the event was never serialized (queued by a replay) or is gone. */
  body: string | null;
  /** When its event was recorded (its dead letter expires with the event's retention); null when the event is gone. */
  eventCreatedAt: Date | null;
}

/** Make sure a subscription's queue has its cursor (a batch does before it claims). */
export async function ensureCursor(tx: Tx, subscriptionId: string): Promise<void> {
  await tx.execute(sql`insert into ${webhookDispatchCursors} (subscription_id) values (${subscriptionId}) on conflict do nothing`);
}

/**
 * Take the next `limit` queued deliveries of a subscription for their first attempt, in queue order, moving its
 * cursor past them before anything is sent (one statement: the cursor's row lock orders concurrent claims). The
 * relay numbers a subscription's deliveries under its row lock and commits before the lock goes, so a delivery after
 * the cursor is never committed later than one further on. Call ensureCursor first.
 */
export async function claimQueued(tx: Tx, subscriptionId: string, limit: number): Promise<ClaimedDelivery[]> {
  const rows = await tx.execute<{
    id: string;
    seq: number;
    event_id: string;
    event_type: string;
    integration_id: string;
    body: string | null;
    event_created_at: string | null;
  }>(sql`
    with c as (select taken_seq from ${webhookDispatchCursors} where subscription_id = ${subscriptionId} for update),
    picked as (
      select d.id, d.seq, d.event_id, d.event_type, d.integration_id from ${webhookDeliveries} d
      where d.subscription_id = ${subscriptionId} and d.seq > (select taken_seq from c) and d.status = 'pending'
      order by d.seq limit ${limit}
    ),
    moved as (
      update ${webhookDispatchCursors} set taken_seq = (select max(seq) from picked)
      where subscription_id = ${subscriptionId} and exists (select 1 from picked)
    )
    select p.id, p.seq::float8 as seq, p.event_id, p.event_type, p.integration_id, e.body, e.created_at::text as event_created_at
    from picked p left join ${events} e on e.id = p.event_id
    order by p.seq`);
  return rows.map((r) => ({
    id: r.id,
    seq: Number(r.seq),
    eventId: r.event_id,
    eventType: r.event_type,
    integrationId: r.integration_id,
    body: r.body,
    eventCreatedAt: r.event_created_at === null ? null : new Date(r.event_created_at),
  }));
}

/**
 * Give back deliveries taken but not sent (a batch that stopped early: the last ones it took, `firstSeq` to
 * `lastSeq`): they keep their place in the queue. Unless another claim has taken more since (then they count as
 * lost attempts, retried by their own workflows).
 */
export async function unclaim(tx: Tx, subscriptionId: string, taken: { firstSeq: number; lastSeq: number } | null): Promise<void> {
  if (taken === null) return;
  await tx
    .update(webhookDispatchCursors)
    .set({ takenSeq: taken.firstSeq - 1 })
    .where(and(eq(webhookDispatchCursors.subscriptionId, subscriptionId), eq(webhookDispatchCursors.takenSeq, taken.lastSeq)));
}

/**
 * First attempts taken by a batch that never recorded their outcome (its worker died, or Postgres went away): each
 * may or may not have been sent. Oldest first.
 */
export async function unrecordedFirstAttempts(tx: Tx, subscriptionId: string): Promise<Omit<ClaimedDelivery, 'body'>[]> {
  const rows = await tx
    .select({
      id: webhookDeliveries.id,
      seq: webhookDeliveries.seq,
      eventId: webhookDeliveries.eventId,
      eventType: webhookDeliveries.eventType,
      integrationId: webhookDeliveries.integrationId,
      eventCreatedAt: events.createdAt,
    })
    .from(webhookDeliveries)
    .innerJoin(webhookDispatchCursors, eq(webhookDispatchCursors.subscriptionId, webhookDeliveries.subscriptionId))
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(
      and(
        eq(webhookDeliveries.subscriptionId, subscriptionId),
        eq(webhookDeliveries.status, 'pending'),
        isNotNull(webhookDeliveries.seq),
        lte(webhookDeliveries.seq, webhookDispatchCursors.takenSeq),
      ),
    )
    .orderBy(asc(webhookDeliveries.seq));
  return rows.map((r) => ({ ...r, seq: r.seq ?? 0 }));
}

/** The outcome of one first attempt, as a batch records it. */
export interface FirstAttemptRecord {
  deliveryId: string;
  startedAt: Date;
  durationMs: number;
  responseStatus: number | null;
  error: string | null;
  responseBody: string | null;
  /** Where the delivery goes: `succeeded`, or on failure `retrying` (`nextAttemptAt` set) or `dead_lettered`. */
  to: Extract<DeliveryStatus, 'succeeded' | 'retrying' | 'dead_lettered'>;
  nextAttemptAt: Date | null;
  /** Nothing was sent (the event purged, the secret would not open): a failure that is not the receiver's. */
  unsent?: true;
}

/**
 * Record first attempts and move their deliveries, in one statement whatever their number. A success is recorded on
 * its delivery alone (`first_duration_ms` and the columns after it; no attempt row), a failure in an attempt row. An
 * attempt already recorded is kept; a delivery moves only out of `pending`, except that a success always stands (a
 * success that comes after its attempt was given up as lost leaves the lost attempt's row as attempt 1).
 */
export async function recordFirstAttempts(db: Db, records: FirstAttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  const json = JSON.stringify(
    records.map((r) => ({
      id: r.deliveryId,
      started_at: r.startedAt.toISOString(),
      duration_ms: r.durationMs,
      response_status: r.responseStatus,
      error: r.error,
      response_body: r.responseBody,
      status: r.to,
      next_attempt_at: r.nextAttemptAt?.toISOString() ?? null,
    })),
  );
  const columns = sql`v(id text, started_at timestamptz, duration_ms int, response_status int, error text, response_body text, status text, next_attempt_at timestamptz)`;
  // Attempt rows for the failures only (a batch records its successes apart: then there is no insert at all).
  const failures = records.some((r) => r.to !== 'succeeded')
    ? sql`, recorded as (
        insert into ${webhookAttempts} (delivery_id, number, started_at, duration_ms, response_status, error, response_body)
        select v.id, 1, v.started_at, v.duration_ms, v.response_status, v.error, v.response_body from v where v.status <> 'succeeded'
        on conflict do nothing
      )`
    : sql``;
  // One statement: the attempts are inserted and the deliveries moved in the same snapshot, from one parameter.
  await db.execute(sql`
    with v as (select * from json_to_recordset(${json}::json) as ${columns})${failures}
    update ${webhookDeliveries} d set
      status = v.status, attempts = greatest(d.attempts, 1), last_attempt_at = v.started_at, next_attempt_at = v.next_attempt_at,
      last_response_status = v.response_status, last_error = v.error, first_sent_at = coalesce(d.first_sent_at, v.started_at),
      first_duration_ms = case when v.status = 'succeeded' and d.status = 'pending' then v.duration_ms else d.first_duration_ms end,
      first_response_status = case when v.status = 'succeeded' and d.status = 'pending' then v.response_status else d.first_response_status end,
      first_response_body = case when v.status = 'succeeded' and d.status = 'pending' then v.response_body else d.first_response_body end,
      updated_at = now()
    from v
    where d.id = v.id and (d.status = 'pending' or (v.status = 'succeeded' and d.status <> 'succeeded'))`);
}

/**
 * The dispatcher has found its queue empty: mark it idle, so that the relay wakes it when it queues more, unless
 * something was queued meanwhile (then false: go on). The subscription's row lock orders this against
 * queueDeliveries, and the check after it sees what a queuing transaction committed.
 */
export async function settleIdle(db: Db, subscriptionId: string, opts: { force?: boolean } = {}): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select 1 from ${webhookSubscriptions} where id = ${subscriptionId} for update`);
    if (!opts.force) {
      const [row] = await tx.execute<{ queued: boolean }>(sql`
        select exists (select 1 from ${webhookDeliveries}
          where subscription_id = ${subscriptionId} and status = 'pending'
            and seq > coalesce((select taken_seq from ${webhookDispatchCursors} where subscription_id = ${subscriptionId}), 0)) as queued`);
      if (row!.queued) return false;
    }
    await tx.update(webhookSubscriptions).set({ dispatchIdle: true }).where(eq(webhookSubscriptions.id, subscriptionId));
    return true;
  });
}

/** Mirror the dispatcher's circuit breaker on the subscription (shown by the admin API and the console). */
export async function setCircuit(tx: Tx, subscriptionId: string, circuit: { openedAt: Date; nextProbeAt: Date } | null): Promise<void> {
  await tx
    .update(webhookSubscriptions)
    .set(
      circuit
        ? {
            circuitOpenedAt: sql`coalesce(${webhookSubscriptions.circuitOpenedAt}, ${circuit.openedAt.toISOString()}::timestamptz)`,
            circuitNextProbeAt: circuit.nextProbeAt,
          }
        : { circuitOpenedAt: null, circuitNextProbeAt: null },
    )
    .where(eq(webhookSubscriptions.id, subscriptionId));
}

/**
 * Hear of deliveries queued for a busy dispatcher (queueDeliveries notifies at commit): `onQueued` gets the
 * subscription's id. One LISTEN on the pool's connection for it; resolves to null when it cannot be set up.
 */
export function listenForQueued(db: Db, onQueued: (subscriptionId: string) => void): Promise<{ unlisten(): Promise<void> } | null> {
  return db.$client.listen(QUEUED_CHANNEL, onQueued).catch(() => null);
}

/**
 * Hear of deliveries being retried that were cancelled (cancelRetries notifies at commit): `onCancelled` gets their
 * ids. One LISTEN on the pool's connection; resolves to null when it cannot be set up.
 */
export function listenForCancelled(db: Db, onCancelled: (deliveryIds: string[]) => void): Promise<{ unlisten(): Promise<void> } | null> {
  return db.$client.listen(CANCELLED_CHANNEL, (payload) => onCancelled(payload.split(',').filter(Boolean))).catch(() => null);
}
