/**
 * Webhook rows shared by the admin API, the outbox relay and the delivery activities: subscriptions, deliveries and
 * their attempts, and the one serialization of an event's envelope.
 */
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { PLAN_RULES, PLANS } from '../domain/plans';
import { isPlaintext, sealSigningSecret, type Keyring } from '../domain/secrets';
import { wantsEvent, type DeliveryStatus } from '../domain/webhooks';
import type { Tx } from './client';
import { newId } from './ids';
import { inOrder, type SortOrder } from './order';
import { events, integrations, webhookAttempts, webhookDeliveries, webhookSubscriptions } from './schema';
import { randomBase62 } from './tenants';

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;
export type EventRow = typeof events.$inferSelect;

/** Plans whose integrations may have subscriptions (and whose events are delivered). */
export const WEBHOOK_PLANS = PLANS.filter((p) => PLAN_RULES[p].webhooks);

export function newSigningSecret(): string {
  return `whsec_${randomBase62(32)}`;
}

/**
 * The envelope of an event as receivers get it, in a fixed field order. Called once per event (the relay, or a
 * replay of an event never relayed) and stored in events.body; every attempt sends the stored bytes.
 */
export function envelopeOf(row: Pick<EventRow, 'id' | 'type' | 'category' | 'createdAt' | 'organizationId' | 'integrationId' | 'data'>): string {
  return JSON.stringify({
    id: row.id,
    type: row.type,
    category: row.category,
    created_at: row.createdAt.toISOString(),
    organization_id: row.organizationId,
    integration_id: row.integrationId,
    data: row.data,
  });
}

/** The stored body of an event, serializing and storing it first if no one has yet. Null: the event is gone. */
export async function eventBody(tx: Tx, eventId: string): Promise<string | null> {
  const [row] = await tx.select().from(events).where(eq(events.id, eventId));
  if (!row) return null;
  if (row.body !== null) return row.body;
  const [stored] = await tx
    .update(events)
    .set({ body: sql`coalesce(${events.body}, ${envelopeOf(row)})` })
    .where(eq(events.id, eventId))
    .returning({ body: events.body });
  return stored?.body ?? null;
}

/** When each of these events was recorded (a delivery's dead letter expires with its event). */
export async function eventTimes(tx: Tx, eventIds: string[]): Promise<Map<string, Date>> {
  if (eventIds.length === 0) return new Map();
  const rows = await tx.select({ id: events.id, createdAt: events.createdAt }).from(events).where(inArray(events.id, eventIds));
  return new Map(rows.map((r) => [r.id, r.createdAt]));
}

export async function getSubscription(tx: Tx, id: string): Promise<SubscriptionRow | undefined> {
  const [row] = await tx
    .select()
    .from(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.id, id), isNull(webhookSubscriptions.deletedAt)));
  return row;
}

/**
 * Create a subscription with a new signing secret, stored sealed with the keyring. The returned `secret` is the
 * only time the plaintext exists outside the delivery activity.
 */
export async function createSubscription(
  tx: Tx,
  input: { organizationId: string; integrationId: string; url: string; eventTypes: string[]; description: string | null },
  secrets: Keyring,
): Promise<{ row: SubscriptionRow; secret: string }> {
  const id = newId('webhookSubscription');
  const secret = newSigningSecret();
  const [row] = await tx
    .insert(webhookSubscriptions)
    .values({ id, status: 'active', secret: sealSigningSecret(secrets, id, secret), ...input })
    .returning();
  return { row: row!, secret };
}

/**
 * Give a subscription a new signing secret; the one it replaces stays valid until `previousExpiresAt`. The new one
 * is sealed with the active key; the replaced one moves as it is stored (both columns share one place, so it still
 * opens), and is never decrypted here. Returns the new secret in plaintext (shown once) and the updated row.
 */
export async function rotateSigningSecret(
  tx: Tx,
  sub: SubscriptionRow,
  secrets: Keyring,
  previousExpiresAt: Date,
  now: Date,
): Promise<{ row: SubscriptionRow; secret: string }> {
  const secret = newSigningSecret();
  const [row] = await tx
    .update(webhookSubscriptions)
    .set({
      secret: sealSigningSecret(secrets, sub.id, secret),
      // A plaintext from before encryption is sealed on the way.
      previousSecret: isPlaintext(sub.secret) ? sealSigningSecret(secrets, sub.id, sub.secret) : sub.secret,
      previousSecretExpiresAt: previousExpiresAt,
      updatedAt: now,
    })
    .where(eq(webhookSubscriptions.id, sub.id))
    .returning();
  return { row: row!, secret };
}

export async function getDelivery(tx: Tx, id: string): Promise<DeliveryRow | undefined> {
  const [row] = await tx.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
  return row;
}

/** Attempts of the given deliveries, oldest first, grouped by delivery id. */
export async function attemptsOf(tx: Tx, deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
  const out = new Map<string, AttemptRow[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return out;
  const rows = await tx
    .select()
    .from(webhookAttempts)
    .where(inArray(webhookAttempts.deliveryId, deliveryIds))
    .orderBy(asc(webhookAttempts.deliveryId), asc(webhookAttempts.number));
  for (const r of rows) out.get(r.deliveryId)!.push(r);
  return out;
}

/** A subscription's deliveries, newest first unless `order` says otherwise. */
export async function listDeliveries(
  tx: Tx,
  subscriptionId: string,
  filter: { status?: DeliveryStatus; eventType?: string; order?: SortOrder; limit: number; offset: number },
): Promise<DeliveryRow[]> {
  return tx
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.subscriptionId, subscriptionId),
        filter.status ? eq(webhookDeliveries.status, filter.status) : undefined,
        filter.eventType ? eq(webhookDeliveries.eventType, filter.eventType) : undefined,
      ),
    )
    .orderBy(...inOrder(filter.order ?? 'desc', webhookDeliveries.createdAt, webhookDeliveries.id))
    .limit(filter.limit)
    .offset(filter.offset);
}

/** Every dead-lettered delivery of a subscription (bulk replay). */
export async function deadLetteredOf(tx: Tx, subscriptionId: string): Promise<DeliveryRow[]> {
  return tx
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), eq(webhookDeliveries.status, 'dead_lettered')))
    .orderBy(asc(webhookDeliveries.createdAt), asc(webhookDeliveries.id));
}

/** Events of the subscription's integration in [since, until] that it wants, oldest first (replay by time range). */
export async function eventsInRange(tx: Tx, sub: SubscriptionRow, since: Date, until: Date, limit: number): Promise<Pick<EventRow, 'id' | 'type'>[]> {
  const rows = await tx
    .select({ id: events.id, type: events.type })
    .from(events)
    .where(
      and(
        eq(events.integrationId, sub.integrationId),
        sql`${events.createdAt} >= ${since.toISOString()}`,
        sql`${events.createdAt} <= ${until.toISOString()}`,
      ),
    )
    .orderBy(asc(events.createdAt), asc(events.id))
    .limit(limit);
  return rows.filter((r) => wantsEvent(sub.eventTypes, r.type));
}

/** The delivery of an event to a subscription, made when missing (a replay of an event it never got). */
export async function ensureDelivery(tx: Tx, sub: SubscriptionRow, event: Pick<EventRow, 'id' | 'type'>): Promise<{ row: DeliveryRow; created: boolean }> {
  const [made] = await tx
    .insert(webhookDeliveries)
    .values({
      id: newId('webhookDelivery'),
      eventId: event.id,
      subscriptionId: sub.id,
      organizationId: sub.organizationId,
      integrationId: sub.integrationId,
      eventType: event.type,
      status: 'pending',
    })
    .onConflictDoNothing()
    .returning();
  if (made) return { row: made, created: true };
  const [row] = await tx
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.eventId, event.id), eq(webhookDeliveries.subscriptionId, sub.id)));
  return { row: row!, created: false };
}

/** Subscriptions that receive events of these integrations now: active, not deleted, on a plan with webhooks. */
export async function activeSubscriptionsOf(tx: Tx, integrationIds: string[]): Promise<SubscriptionRow[]> {
  if (integrationIds.length === 0) return [];
  const rows = await tx
    .select({ sub: webhookSubscriptions })
    .from(webhookSubscriptions)
    .innerJoin(integrations, eq(integrations.id, webhookSubscriptions.integrationId))
    .where(
      and(
        inArray(webhookSubscriptions.integrationId, integrationIds),
        eq(webhookSubscriptions.status, 'active'),
        isNull(webhookSubscriptions.deletedAt),
        isNull(integrations.deletedAt),
        inArray(integrations.plan, WEBHOOK_PLANS),
      ),
    )
    .orderBy(asc(webhookSubscriptions.createdAt), asc(webhookSubscriptions.id));
  return rows.map((r) => r.sub);
}

/** Remove events and deliveries (with their attempts) created before `before`, in batches. */
export async function purgeBefore(tx: Tx, before: Date, batch = 5_000): Promise<{ events: number; deliveries: number }> {
  let deliveries = 0;
  for (;;) {
    const gone = await tx.execute<{ id: string }>(sql`
      with doomed as (
        select id from ${webhookDeliveries} where ${webhookDeliveries.createdAt} < ${before.toISOString()} limit ${batch}
      ), attempts as (
        delete from ${webhookAttempts} where ${webhookAttempts.deliveryId} in (select id from doomed)
      )
      delete from ${webhookDeliveries} where id in (select id from doomed) returning id`);
    deliveries += gone.length;
    if (gone.length < batch) break;
  }
  let removed = 0;
  for (;;) {
    const gone = await tx.execute<{ id: string }>(sql`
      delete from ${events} where id in (
        select id from ${events} where ${events.createdAt} < ${before.toISOString()} limit ${batch}
      ) returning id`);
    removed += gone.length;
    if (gone.length < batch) break;
  }
  return { events: removed, deliveries };
}
