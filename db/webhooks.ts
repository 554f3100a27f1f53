/**
 * Webhook rows shared by the admin API, the outbox relay and the delivery activities: subscriptions, deliveries and
 * their attempts, the subscriptions' queues as the relay (and a replay) fills them, and the one serialization of an
 * event's envelope. What a dispatcher takes from its queue and records is in db/dispatch.ts.
 */
import { and, asc, eq, gt, inArray, isNotNull, isNull, or, sql, type SQL } from 'drizzle-orm';
import { PLAN_RULES, PLANS, type Plan } from '../domain/plans';
import { isPlaintext, sealSigningSecret, type Keyring } from '../domain/secrets';
import { newSigningSecret } from '../domain/signature';
import { DELIVERY_STATUSES, wantsEvent, type DeliveryStatus } from '../domain/webhooks';
import type { Db, Tx } from './client';
import { newId } from './ids';
import { liveById, livePage } from './live';
import { inOrder, type SortOrder } from './order';
import { events, integrations, webhookAttempts, webhookDeliveries, webhookDispatchCursors, webhookSubscriptions } from './schema';

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;
export type EventRow = typeof events.$inferSelect;

/** Plans whose integrations may have subscriptions (and whose events are delivered). */
export const WEBHOOK_PLANS = PLANS.filter((p) => PLAN_RULES[p].webhooks);

/**
 * The envelope of an event as receivers get it, in a fixed field order. Called once per event (the outbox relay when
 * it queues the event's deliveries; a replay, an attempt or the public feed that finds none stored) and stored in
 * events.body; every attempt sends the stored bytes.
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

/**
 * The stored bodies of these events, serializing and storing those that have none yet (two statements for any
 * number; where two writers race, the first body stored wins and both send it). An event that is gone is absent.
 */
export async function eventBodies(tx: Tx, eventIds: readonly string[]): Promise<Map<string, string>> {
  const bodies = new Map<string, string>();
  if (eventIds.length === 0) return bodies;
  const rows = await tx
    .select({
      id: events.id,
      type: events.type,
      category: events.category,
      createdAt: events.createdAt,
      organizationId: events.organizationId,
      integrationId: events.integrationId,
      data: events.data,
      body: events.body,
    })
    .from(events)
    // One array parameter, whatever the number of ids.
    .where(sql`${events.id} = any(${sql.param([...new Set(eventIds)])}::text[])`);
  const unserialized = rows.filter((r) => r.body === null);
  for (const r of rows) if (r.body !== null) bodies.set(r.id, r.body);
  if (unserialized.length === 0) return bodies;
  const made = new Map(unserialized.map((e) => [e.id, envelopeOf(e)]));
  // The bodies stored come back only where another writer's won (null: ours is stored).
  const stored = await tx.execute<{ id: string; theirs: string | null }>(sql`
    update ${events} set body = coalesce(${events.body}, v.body)
    from json_to_recordset(${JSON.stringify([...made].map(([id, body]) => ({ id, body })))}::json) as v(id text, body text)
    where ${events.id} = v.id
    returning ${events.id} as id, nullif(${events.body}, v.body) as theirs`);
  for (const r of stored) bodies.set(r.id, r.theirs ?? made.get(r.id)!);
  return bodies;
}

/** When each of these events was recorded (a delivery's dead letter expires with its event). */
export async function eventTimes(tx: Tx, eventIds: string[]): Promise<Map<string, Date>> {
  if (eventIds.length === 0) return new Map();
  const rows = await tx.select({ id: events.id, createdAt: events.createdAt }).from(events).where(inArray(events.id, eventIds));
  return new Map(rows.map((r) => [r.id, r.createdAt]));
}

export async function getSubscription(tx: Tx, id: string): Promise<SubscriptionRow | undefined> {
  return liveById(tx, webhookSubscriptions, id);
}

/** A subscription, a deleted one too: its delivery history stays readable until the retention removes it. */
export async function getSubscriptionEvenDeleted(tx: Tx, id: string): Promise<SubscriptionRow | undefined> {
  const [row] = await tx.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, id));
  return row;
}

/**
 * Create a subscription with a new signing secret, stored sealed with the keyring. The returned `secret` is the
 * only time the plaintext exists outside the delivery activity.
 */
export async function createSubscription(
  tx: Tx,
  input: {
    organizationId: string;
    integrationId: string;
    url: string;
    eventTypes: string[];
    description: string | null;
    maxInFlight?: number | null;
    /** Sign the Standard Webhooks way too; new subscriptions do unless told not to. */
    standardWebhooks?: boolean;
  },
  secrets: Keyring,
): Promise<{ row: SubscriptionRow; secret: string }> {
  const id = newId('webhookSubscription');
  const secret = newSigningSecret();
  const [row] = await tx
    .insert(webhookSubscriptions)
    .values({ id, status: 'active', secret: sealSigningSecret(secrets, id, secret), ...input, standardWebhooks: input.standardWebhooks ?? true })
    .returning();
  return { row: row!, secret };
}

/** An integration's subscriptions that are not deleted, one page (`limit + 1` rows: the extra says there is more). */
export async function listSubscriptions(tx: Tx, integrationId: string, page: { limit: number; offset: number; order: SortOrder }): Promise<SubscriptionRow[]> {
  return livePage(tx, webhookSubscriptions, webhookSubscriptions.integrationId, integrationId, { ...page, limit: page.limit + 1 });
}

/** Change a subscription's settings; returns it as it now is. */
async function updateSubscription(tx: Tx, id: string, changes: Partial<Omit<SubscriptionRow, 'id' | 'updatedAt'>>): Promise<SubscriptionRow | undefined> {
  const [row] = await tx
    .update(webhookSubscriptions)
    .set({ ...changes, updatedAt: new Date() })
    .where(eq(webhookSubscriptions.id, id))
    .returning();
  return row;
}

/** Delete a subscription: it gets nothing from now on, and its queue and its retries are cancelled with it. */
export async function deleteSubscription(db: Db, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.update(webhookSubscriptions).set({ deletedAt: new Date(), updatedAt: new Date() }).where(eq(webhookSubscriptions.id, id));
    await cancelQueue(tx, id, 'the subscription was deleted');
    await cancelRetries(tx, id, 'the subscription was deleted');
  });
}

/**
 * Change a subscription; disabling it also cancels its retries (cancelRetries), in the same transaction, so that no
 * delivery of a disabled subscription shows as being retried.
 */
export async function changeSubscription(
  db: Db,
  id: string,
  changes: Partial<Omit<SubscriptionRow, 'id' | 'updatedAt'>>,
): Promise<SubscriptionRow | undefined> {
  return db.transaction(async (tx) => {
    const [before] = await tx.select({ status: webhookSubscriptions.status }).from(webhookSubscriptions).where(eq(webhookSubscriptions.id, id)).for('update');
    const row = await updateSubscription(tx, id, changes);
    if (before?.status === 'active' && row?.status === 'disabled') await cancelRetries(tx, id, DISABLED);
    return row;
  });
}

/** Why a retried delivery of a disabled subscription ended (activities/webhooks.ts says it too, at an attempt). */
export const DISABLED = 'the subscription is disabled';

/**
 * End a disabled or deleted subscription's retries now: its deliveries being retried become `cancelled` (replayable),
 * with `reason`. Their workflows, asleep until the next attempt's time, hear of it at commit: the ids go out on
 * CANCELLED_CHANNEL (the webhook workers signal each workflow to look at its row, and it ends `cancelled` without
 * sending); a notification nobody heard only delays that to the attempt's time, when the workflow finds the row
 * cancelled all the same. An attempt of a cancelled delivery is made only when it is replayed.
 */
export async function cancelRetries(tx: Tx, subscriptionId: string, reason: string): Promise<void> {
  await tx.execute(sql`
    with cancelled as (
      update ${webhookDeliveries} set status = 'cancelled', last_error = ${reason}, next_attempt_at = null, updated_at = now()
      where subscription_id = ${subscriptionId} and status = 'retrying'
      returning id
    )
    select pg_notify(${CANCELLED_CHANNEL}, string_agg(id, ',')) from (
      select id, (row_number() over () - 1) / ${CANCELLED_PER_NOTICE} as chunk from cancelled
    ) c group by chunk`);
}

/**
 * After first attempts were recorded `retrying`: if their subscription was disabled or deleted, or its integration
 * moved to a plan without webhooks, while they were in flight (its retries cancelled before these were), cancel them
 * too. The subscription's row is read FOR SHARE, so a disable or delete still committing is waited for and seen (a plan
 * change cancels what was recorded before it, cancelRetriesOffPlan, and this sees it once committed).
 */
export async function cancelRetriesIfStopped(db: Db, subscriptionId: string): Promise<void> {
  await db.transaction(async (tx) => {
    const [sub] = await tx
      .select({ status: webhookSubscriptions.status, deletedAt: webhookSubscriptions.deletedAt, plan: integrations.plan })
      .from(webhookSubscriptions)
      .innerJoin(integrations, eq(integrations.id, webhookSubscriptions.integrationId))
      .where(eq(webhookSubscriptions.id, subscriptionId))
      // The subscription's row only: an integration's deletion locks its row, then its subscriptions'.
      .for('share', { of: webhookSubscriptions });
    const reason = sub ? whyStopped({ deleted: sub.deletedAt !== null, status: sub.status, plan: sub.plan }) : DELETED;
    if (reason) await cancelRetries(tx, subscriptionId, reason);
  });
}

/**
 * An integration moved to a plan without webhooks: its subscriptions' retries end `cancelled` now, as a disable's do
 * (their queues wait, as a disable's do, for the plan to allow webhooks again). Nothing is cancelled if the plan read
 * under the integration's row lock allows webhooks (another change moved it back meanwhile).
 */
export async function cancelRetriesOffPlan(db: Db, integrationId: string): Promise<void> {
  await db.transaction(async (tx) => {
    const [integ] = await tx.select({ plan: integrations.plan }).from(integrations).where(eq(integrations.id, integrationId)).for('share');
    if (!integ || WEBHOOK_PLANS.includes(integ.plan)) return;
    const subs = await tx
      .select({ id: webhookSubscriptions.id })
      .from(webhookSubscriptions)
      .where(and(eq(webhookSubscriptions.integrationId, integrationId), isNull(webhookSubscriptions.deletedAt)));
    for (const { id } of subs) await cancelRetries(tx, id, OFF_PLAN);
  });
}

const DELETED = 'the subscription was deleted';
/** Why a retried delivery of an integration on a plan without webhooks ended. */
const OFF_PLAN = 'the integration is on a plan without webhooks';

/**
 * Why nothing more may be sent to a subscription (deleted, with its integration or alone; disabled; its integration
 * on a plan without webhooks), or null when it may: the reason its retries end `cancelled` with.
 */
export function whyStopped(s: { deleted: boolean; status: string; plan: Plan }): string | null {
  if (s.deleted) return DELETED;
  if (s.status !== 'active') return DISABLED;
  return WEBHOOK_PLANS.includes(s.plan) ? null : OFF_PLAN;
}

/**
 * Channel on which cancelRetries names, at commit, the deliveries it cancelled (payload: up to CANCELLED_PER_NOTICE
 * delivery ids, comma-separated: a payload holds at most 8,000 bytes).
 */
export const CANCELLED_CHANNEL = 'webhook_cancelled';
const CANCELLED_PER_NOTICE = 200;

/**
 * Give a subscription a new signing secret; the one it replaces stays valid until `previousExpiresAt`. The new one
 * is sealed with the active key; the replaced one moves as it is stored (both columns share one place, so it still
 * opens), and is never decrypted here. The row is read again under its lock: of two rotations at once, the second
 * keeps the first's new secret as its previous one (a secret already shown stays valid for the grace window), and a
 * re-seal that committed meanwhile is kept. Returns the new secret in plaintext (shown once) and the updated row.
 */
export async function rotateSigningSecret(
  db: Db,
  subscriptionId: string,
  secrets: Keyring,
  previousExpiresAt: Date,
  now: Date,
): Promise<{ row: SubscriptionRow; secret: string }> {
  return db.transaction(async (tx) => {
    const [sub] = await tx.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, subscriptionId)).for('update');
    if (!sub) throw new Error(`webhook subscription ${subscriptionId} does not exist`);
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
  });
}

export async function getDelivery(tx: Tx, id: string): Promise<DeliveryRow | undefined> {
  const [row] = await tx.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
  return row;
}

/**
 * Attempts of the given deliveries, oldest first, grouped by delivery id: their rows, and a first attempt that
 * succeeded from its delivery's columns (which the dispatcher records there alone; it stands over a row numbered 1).
 */
export async function attemptsOf(tx: Tx, deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
  const out = new Map<string, AttemptRow[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return out;
  const ids = sql.param(deliveryIds);
  const rows = await tx.execute<{
    delivery_id: string;
    number: number;
    started_at: string;
    duration_ms: number;
    response_status: number | null;
    error: string | null;
    response_body: string | null;
  }>(sql`
    select a.delivery_id, a.number, a.started_at::text as started_at, a.duration_ms, a.response_status, a.error, a.response_body
    from ${webhookAttempts} a join ${webhookDeliveries} d on d.id = a.delivery_id
    where a.delivery_id = any(${ids}::text[]) and not (a.number = 1 and d.first_duration_ms is not null)
    union all
    select d.id, 1, d.first_sent_at::text, d.first_duration_ms, d.first_response_status, null, d.first_response_body
    from ${webhookDeliveries} d
    where d.id = any(${ids}::text[]) and d.first_duration_ms is not null
    order by 1, 2`);
  for (const r of rows) {
    out.get(r.delivery_id)!.push({
      deliveryId: r.delivery_id,
      number: r.number,
      startedAt: new Date(r.started_at),
      durationMs: r.duration_ms,
      responseStatus: r.response_status,
      error: r.error,
      responseBody: r.response_body,
    });
  }
  return out;
}

/**
 * `columns` of a subscription's deliveries (aliased `d`), the `first` of each of `states` in time order (`order`, ties
 * by id) that also match `where`, in one union: what the index by subscription, state and time gives without a sort,
 * state by state. The caller orders the union and takes its page. `subscription` is an id, or an SQL expression (a
 * lateral join's column).
 */
export function firstOfEachState(opts: {
  subscription: string | SQL;
  columns: SQL;
  states: readonly DeliveryStatus[];
  where: SQL;
  order: SortOrder;
  first: number;
}): SQL {
  const dir = opts.order === 'asc' ? sql`asc` : sql`desc`;
  const parts = opts.states.map(
    (state) => sql`(select ${opts.columns} from ${webhookDeliveries} d where d.subscription_id = ${opts.subscription} and d.status = ${state} ${opts.where}
      order by d.created_at ${dir}, d.id ${dir} limit ${opts.first})`,
  );
  return sql.join(parts, sql` union all `);
}

/** A subscription's deliveries, newest first unless `order` says otherwise. */
export async function listDeliveries(
  tx: Tx,
  subscriptionId: string,
  filter: { statuses?: readonly DeliveryStatus[]; eventTypes?: readonly string[]; order?: SortOrder; limit: number; offset: number },
): Promise<DeliveryRow[]> {
  const order = filter.order ?? 'desc';
  const dir = order === 'asc' ? sql`asc` : sql`desc`;
  const types = filter.eventTypes ?? [];
  const eventType =
    types.length > 0
      ? sql`and d.event_type in (${sql.join(
          types.map((t) => sql`${t}`),
          sql`, `,
        )})`
      : sql``;
  // One state: a range of the index. Every state: each state's first rows merged (there is no index by subscription
  // and time alone), then the page's rows.
  const each = firstOfEachState({
    subscription: subscriptionId,
    columns: sql`d.id, d.created_at`,
    states: filter.statuses && filter.statuses.length > 0 ? filter.statuses : DELIVERY_STATUSES,
    where: eventType,
    order,
    first: filter.limit + filter.offset,
  });
  const page = sql`select id from (${each}) d order by created_at ${dir}, id ${dir} limit ${filter.limit} offset ${filter.offset}`;
  return tx
    .select()
    .from(webhookDeliveries)
    .where(sql`${webhookDeliveries.id} in (${page})`)
    .orderBy(...inOrder(order, webhookDeliveries.createdAt, webhookDeliveries.id));
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
      and(eq(events.integrationId, sub.integrationId), sql`${events.createdAt} >= ${since.toISOString()}`, sql`${events.createdAt} <= ${until.toISOString()}`),
    )
    .orderBy(asc(events.createdAt), asc(events.id))
    .limit(limit);
  return rows.filter((r) => wantsEvent(sub.eventTypes, r.type));
}

/** The deliveries a subscription has of these events. */
export async function deliveriesOfEvents(tx: Tx, subscriptionId: string, eventIds: string[]): Promise<DeliveryRow[]> {
  if (eventIds.length === 0) return [];
  return tx
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), inArray(webhookDeliveries.eventId, eventIds)));
}

/** A new delivery of an event to a subscription, waiting for its first attempt. */
function newDelivery(sub: QueueItem['sub'], event: QueueItem['event']) {
  return {
    id: newId('webhookDelivery'),
    eventId: event.id,
    subscriptionId: sub.id,
    organizationId: sub.organizationId,
    integrationId: sub.integrationId,
    eventType: event.type,
    status: 'pending' as const,
  };
}

/** The delivery of an event to a subscription, made when missing, outside any queue (seeding a console bench). */
export async function ensureDelivery(tx: Tx, sub: SubscriptionRow, event: Pick<EventRow, 'id' | 'type'>): Promise<{ row: DeliveryRow; created: boolean }> {
  const [made] = await tx.insert(webhookDeliveries).values(newDelivery(sub, event)).onConflictDoNothing().returning();
  if (made) return { row: made, created: true };
  const [row] = await tx
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.eventId, event.id), eq(webhookDeliveries.subscriptionId, sub.id)));
  return { row: row!, created: false };
}

/**
 * The subscriptions the relay fans events of these integrations out to: those active now, and those disabled after
 * `since` (the oldest event of its batch was recorded then), which were still active when some of the batch was
 * recorded: such an event waits in the disabled subscription's (paused) queue, as its other pending deliveries do.
 */
export function relaySubscriptionsOf(tx: Tx, integrationIds: string[], since: Date): Promise<SubscriptionRow[]> {
  return subscriptionsOf(tx, integrationIds, or(eq(webhookSubscriptions.status, 'active'), gt(webhookSubscriptions.disabledAt, since))!);
}

/** Subscriptions that receive events of these integrations now: active, not deleted, on a plan with webhooks. */
export function activeSubscriptionsOf(tx: Tx, integrationIds: string[]): Promise<SubscriptionRow[]> {
  return subscriptionsOf(tx, integrationIds, eq(webhookSubscriptions.status, 'active'));
}

/** The subscriptions of these integrations in `state`, not deleted, on a plan with webhooks, oldest first. */
async function subscriptionsOf(tx: Tx, integrationIds: string[], state: SQL): Promise<SubscriptionRow[]> {
  if (integrationIds.length === 0) return [];
  const rows = await tx
    .select({ sub: webhookSubscriptions })
    .from(webhookSubscriptions)
    .innerJoin(integrations, eq(integrations.id, webhookSubscriptions.integrationId))
    .where(
      and(
        inArray(webhookSubscriptions.integrationId, integrationIds),
        state,
        isNull(webhookSubscriptions.deletedAt),
        isNull(integrations.deletedAt),
        inArray(integrations.plan, WEBHOOK_PLANS),
      ),
    )
    .orderBy(asc(webhookSubscriptions.createdAt), asc(webhookSubscriptions.id));
  return rows.map((r) => r.sub);
}

/** Remove events and deliveries (with their attempt rows) created before `before`, in batches. */
export async function purgeBefore(tx: Tx, before: Date, batch = 5_000): Promise<{ events: number; deliveries: number }> {
  let deliveries = 0;
  for (;;) {
    // Subscription by subscription, state by state, through the index by subscription, state and time (there is
    // none on time alone): the subscriptions are walked in the index itself, one probe each, so a delivery whose
    // subscription row is gone is found too.
    const gone = await tx.execute<{ id: string }>(sql`
      with recursive subs(id) as (
        (select subscription_id from ${webhookDeliveries} order by subscription_id limit 1)
        union all
        select (select d.subscription_id from ${webhookDeliveries} d where d.subscription_id > subs.id order by d.subscription_id limit 1)
        from subs where subs.id is not null
      ), doomed as (
        select old.id from subs cross join lateral (
          select d.id from ${webhookDeliveries} d
          where d.subscription_id = subs.id and d.status = any(${sql.param([...DELIVERY_STATUSES])}::text[]) and d.created_at < ${before.toISOString()}
          limit ${batch}
        ) old
        limit ${batch}
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

/** Channel on which queuing a delivery for a busy dispatcher wakes its batch at once (payload: the subscription id). */
export const QUEUED_CHANNEL = 'webhook_queued';

/** One delivery to queue: an event for a subscription. */
export interface QueueItem {
  sub: Pick<SubscriptionRow, 'id' | 'organizationId' | 'integrationId'>;
  event: Pick<EventRow, 'id' | 'type'>;
}

/** What queuing made: the subscriptions whose dispatcher was idle (to wake), and the deliveries made. */
interface QueuedDeliveries {
  idle: string[];
  queued: Pick<DeliveryRow, 'id' | 'eventId' | 'subscriptionId'>[];
}

/**
 * Queue deliveries at the end of their subscriptions' queues, in the order given (production order), in the
 * caller's transaction. A pair that has a delivery already is skipped. Returns the subscriptions whose dispatcher
 * was idle (the caller wakes them once the transaction has committed: no network call inside it); a busy
 * dispatcher hears of its new work by a notification sent at commit.
 */
export async function queueDeliveries(tx: Tx, items: QueueItem[]): Promise<QueuedDeliveries> {
  const perSub = new Map<string, QueueItem[]>();
  for (const item of items) perSub.set(item.sub.id, [...(perSub.get(item.sub.id) ?? []), item]);
  const idle: string[] = [];
  const rows: (typeof webhookDeliveries.$inferInsert)[] = [];
  for (const [subId, subItems] of perSub) {
    // The row lock orders this against the dispatcher settling idle (db/dispatch.ts settleIdle), so a wake is never missed.
    const [numbered] = await tx.execute<{ seq: number; was_idle: boolean }>(sql`
      with old as (select id, dispatch_idle from ${webhookSubscriptions} where id = ${subId} for update)
      update ${webhookSubscriptions} s set delivery_seq = s.delivery_seq + ${subItems.length}, dispatch_idle = false
      from old where s.id = old.id
      returning s.delivery_seq::float8 as seq, old.dispatch_idle as was_idle`);
    if (!numbered) continue;
    if (numbered.was_idle) idle.push(subId);
    let seq = Number(numbered.seq) - subItems.length;
    for (const { sub, event } of subItems) rows.push({ ...newDelivery(sub, event), seq: ++seq });
  }
  // One statement over one JSON parameter: building a thousand-row VALUES list cost the relay more than the insert.
  const made =
    rows.length === 0
      ? []
      : await tx.execute<{ id: string; event_id: string; subscription_id: string }>(sql`
          insert into ${webhookDeliveries} (id, event_id, subscription_id, organization_id, integration_id, event_type, status, seq)
          select v.id, v."eventId", v."subscriptionId", v."organizationId", v."integrationId", v."eventType", 'pending', v.seq
          from json_to_recordset(${JSON.stringify(rows)}::json)
            as v(id text, "eventId" text, "subscriptionId" text, "organizationId" uuid, "integrationId" uuid, "eventType" text, seq bigint)
          on conflict do nothing
          returning id, event_id, subscription_id`);
  const queued: Pick<DeliveryRow, 'id' | 'eventId' | 'subscriptionId'>[] = made.map((r) => ({
    id: r.id,
    eventId: r.event_id,
    subscriptionId: r.subscription_id,
  }));
  const busy = [...perSub.keys()].filter((id) => !idle.includes(id));
  // One array parameter (sql.param): a bare array in a sql template is expanded into a row `($1, $2)`, which no cast makes an array.
  if (busy.length > 0) await tx.execute(sql`select pg_notify(${QUEUED_CHANNEL}, id) from unnest(${sql.param(busy)}::text[]) as id`);
  return { idle, queued };
}

/**
 * queueDeliveries in a transaction of its own (an operator's re-send): once this returns, the deliveries are
 * committed and the caller wakes the idle dispatchers it names.
 */
export async function queueAndCommitDeliveries(db: Db, items: QueueItem[]): Promise<QueuedDeliveries> {
  return db.transaction((tx) => queueDeliveries(tx, items));
}

/** Cancel a subscription's queue (it was deleted): its deliveries waiting for a first attempt end `cancelled`. */
export async function cancelQueue(tx: Tx, subscriptionId: string, reason: string): Promise<number> {
  const rows = await tx
    .update(webhookDeliveries)
    .set({ status: 'cancelled', lastError: reason, nextAttemptAt: null, updatedAt: new Date() })
    .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), eq(webhookDeliveries.status, 'pending'), isNotNull(webhookDeliveries.seq)))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}

/**
 * Active subscriptions with deliveries queued whose dispatcher may not be running: idle ones (a wake that never
 * arrived: Temporal was down, or the subscription was just enabled), any whose queue's head has waited longer
 * than `staleMs` untaken (its workflow was terminated), and any with a delivery taken that long ago whose first
 * attempt's outcome was never recorded (its batch died, and its dispatcher with it: the next batch settles it as a
 * lost attempt). Marks them busy; the caller wakes them (a wake of a running dispatcher changes nothing).
 */
export async function subscriptionsToWake(db: Db, opts: { staleMs: number; organizationIds?: string[] }): Promise<string[]> {
  const scope = opts.organizationIds ? sql`and s.organization_id = any(${sql.param(opts.organizationIds)}::uuid[])` : sql``;
  const rows = await db.execute<{ id: string }>(sql`
    with due as (
      select s.id from ${webhookSubscriptions} s
      join ${integrations} i on i.id = s.integration_id
      where s.status = 'active' and s.deleted_at is null and i.deleted_at is null and i.plan = any(${sql.param(WEBHOOK_PLANS)}::text[]) ${scope}
        and (
          exists (
            select 1 from ${webhookDeliveries} d
            where d.subscription_id = s.id and d.status = 'pending'
              and d.seq > coalesce((select c.taken_seq from ${webhookDispatchCursors} c where c.subscription_id = s.id), 0)
              and (s.dispatch_idle or d.created_at < now() - ${`${opts.staleMs} milliseconds`}::interval)
          )
          or exists (
            select 1 from ${webhookDeliveries} d
            where d.subscription_id = s.id and d.status = 'pending'
              and d.seq <= coalesce((select c.taken_seq from ${webhookDispatchCursors} c where c.subscription_id = s.id), 0)
              and d.created_at < now() - ${`${opts.staleMs} milliseconds`}::interval
          )
        )
    )
    update ${webhookSubscriptions} s set dispatch_idle = false from due where s.id = due.id returning s.id`);
  return rows.map((r) => r.id);
}
