/**
 * What the outbox relay (worker/roles/relay.ts) reads, holds and writes: the notification of recorded events, its
 * lease row, the events it has yet to turn into deliveries, the one transaction that queues their deliveries and
 * marks them dispatched with their serialized bodies (db/webhooks.ts queueDeliveries, db/events.ts markDispatched),
 * and the integrations of the subscriptions it wakes.
 */
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Db } from './client';
import { markDispatched } from './events';
import { events, leaseLocks, webhookSubscriptions } from './schema';
import { envelopeOf, queueDeliveries, type QueueItem } from './webhooks';

/** Channel of the trigger in db/migrations (0005_webhooks.sql) that notifies when an event's transaction commits. */
const EVENTS_CHANNEL = 'events_recorded';

/**
 * Hear of recorded events (`onRecorded`, once per notification; the payload is empty). One LISTEN on the pool's
 * connection; rejects when it cannot be set up.
 */
export function listenForRecordedEvents(db: Db, onRecorded: () => void): Promise<{ unlisten(): Promise<void> }> {
  return db.$client.listen(EVENTS_CHANNEL, () => onRecorded());
}

/**
 * Take the lease `name` for `holder`, or renew it, for `leaseMs`; false while another holder's lease has not
 * expired. One statement: no lock is held across the relay's network calls.
 */
export async function takeLease(db: Db, name: string, holder: string, leaseMs: number): Promise<boolean> {
  const rows = await db.execute<{ holder: string }>(sql`
      insert into ${leaseLocks} (name, holder, expires_at) values (${name}, ${holder}, now() + ${`${leaseMs} milliseconds`}::interval)
      on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
        where ${leaseLocks.holder} = ${holder} or ${leaseLocks.expiresAt} < now()
      returning holder`);
  return rows.length > 0;
}

/** Give the lease up, if `holder` still holds it, so another process takes over at once. */
export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db.delete(leaseLocks).where(and(eq(leaseLocks.name, name), eq(leaseLocks.holder, holder)));
}

export interface UndispatchedEvent {
  id: string;
  organizationId: string;
  integrationId: string;
  type: string;
  category: string;
  createdAt: Date;
  /**
   * The payload, read only for an event that has no stored body yet and whose integration has an active subscription
   * (the relay serializes the body of an event it queues deliveries of); null otherwise.
   */
  data: Record<string, unknown> | null;
}

/**
 * How many bytes of payload (as stored, often compressed) one batch of the relay reads at most, the first event
 * always: what it serializes is held in memory and sent to Postgres as one parameter, so a batch of a thousand
 * near-1 MB events would be beyond what one string can hold, fail, and be taken again by every pass after it.
 */
const RELAY_BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Up to `limit` events not yet dispatched, in production order (of `organizationIds` only, when given), as many of
 * them as fit in `maxBytes` of stored payload (at least one), each with its payload when it may be delivered and has
 * no body yet (an event of an integration without subscriptions is not serialized: the public feed does that when it
 * first serves it).
 */
export async function undispatchedEvents(db: Db, opts: { limit: number; organizationIds?: string[]; maxBytes?: number }): Promise<UndispatchedEvent[]> {
  // The next `limit` first, then their running size: a window over every undispatched event would read the backlog.
  const next = db
    .select({ id: events.id, createdAt: events.createdAt, size: sql<number>`pg_column_size(${events.data})`.as('size') })
    .from(events)
    .where(and(isNull(events.dispatchedAt), opts.organizationIds ? inArray(events.organizationId, opts.organizationIds) : undefined))
    .orderBy(asc(events.createdAt), asc(events.id))
    .limit(opts.limit)
    .as('next');
  const sized = db
    .select({ id: next.id, before: sql<number>`sum(${next.size}) over (order by ${next.createdAt}, ${next.id}) - ${next.size}`.as('before') })
    .from(next)
    .as('sized');
  return db
    .select({
      id: events.id,
      organizationId: events.organizationId,
      integrationId: events.integrationId,
      type: events.type,
      category: events.category,
      createdAt: events.createdAt,
      data: sql<Record<string, unknown> | null>`case when ${events.body} is null and ${events.integrationId} in (
          select ${webhookSubscriptions.integrationId} from ${webhookSubscriptions}
          where ${webhookSubscriptions.status} = 'active' and ${webhookSubscriptions.deletedAt} is null
        ) then ${events.data} end`.mapWith(events.data),
    })
    .from(events)
    .innerJoin(sized, eq(sized.id, events.id))
    .where(sql`${sized.before} < ${opts.maxBytes ?? RELAY_BATCH_BYTES}`)
    .orderBy(asc(events.createdAt), asc(events.id));
}

/** The integration of each of these subscriptions (what waking a dispatcher needs). */
export async function integrationsOfSubscriptions(db: Db, subscriptionIds: string[]): Promise<{ id: string; integrationId: string }[]> {
  return db
    .select({ id: webhookSubscriptions.id, integrationId: webhookSubscriptions.integrationId })
    .from(webhookSubscriptions)
    .where(inArray(webhookSubscriptions.id, subscriptionIds));
}

/**
 * In one transaction: queue these deliveries (already filtered to the subscriptions that want each event), then
 * mark the batch's events dispatched, storing the body of each event queued (serialized here, before the
 * transaction: every attempt and replay sends those bytes). Returns the subscriptions whose dispatcher was idle, to
 * wake once this has committed (no network call inside the transaction).
 */
export async function queueAndMarkDispatched(db: Db, items: QueueItem[], batch: readonly UndispatchedEvent[]): Promise<string[]> {
  const queued = new Set(items.map((i) => i.event.id));
  const bodies = batch.map((e) => (e.data !== null && queued.has(e.id) ? envelopeOf({ ...e, data: e.data }) : null));
  return db.transaction(async (tx) => {
    // A pass that died after queuing but before committing queued nothing; a pair queued already is skipped.
    const idle = items.length > 0 ? (await queueDeliveries(tx, items)).idle : [];
    // Last, so that the positions' lock is held only for the commit: the events take their places in the public
    // feed (GET /v1/events) in the order their deliveries were queued.
    await markDispatched(
      tx,
      batch.map((e) => e.id),
      bodies,
    );
    return idle;
  });
}
