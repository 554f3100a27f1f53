/**
 * The outbox relay: turns recorded events into delivery workflows. It wakes on the `events_recorded` notification
 * (sent when an event's transaction commits) or a short poll, takes undispatched events in production order, makes
 * one delivery per event and subscription that wants it (numbered per subscription, so first attempts go out in
 * that order), starts their workflows, and only then marks the events dispatched. A relay, worker or Temporal that
 * dies in between loses nothing: the events are still undispatched, the deliveries already made are found again,
 * and starting a delivery's workflow twice is a no-op.
 *
 * One relay is active at a time: it holds a lease row renewed every pass (no lock is held across network calls);
 * another process takes over when the lease lapses.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import type { Logger } from '../config/logger';
import type { Db } from '../db/client';
import { newId } from '../db/ids';
import { events, leaseLocks, webhookDeliveries, webhookSubscriptions } from '../db/schema';
import { activeSubscriptionsOf, envelopeOf, type DeliveryRow, type SubscriptionRow } from '../db/webhooks';
import { startDelivery, type DeliveryControlDeps } from '../control/webhooks';
import { wantsEvent } from '../domain/webhooks';

export const EVENTS_CHANNEL = 'events_recorded';
const LEASE_NAME = 'outbox-relay';

export interface RelayOptions {
  db: Db;
  control: DeliveryControlDeps;
  logger: Logger;
  /** Events per pass. */
  batchSize?: number;
  /** Workflow starts in flight at once. */
  startConcurrency?: number;
  /** Poll interval when no notification arrives. */
  pollMs?: number;
  /** How long the lease lasts without renewal. */
  leaseMs?: number;
  /**
   * Relay only the events of these organizations, under a lease of its own (tests and benchmarks that share a
   * database with other relays). Unset in production: one relay for everything.
   */
  scope?: () => string[];
}

export interface Relay {
  stop(): Promise<void>;
}

export function startRelay(opts: RelayOptions): Relay {
  const { db, logger } = opts;
  const batchSize = opts.batchSize ?? 500;
  const concurrency = opts.startConcurrency ?? 64;
  const pollMs = opts.pollMs ?? 1_000;
  const leaseMs = opts.leaseMs ?? 15_000;
  const holder = randomUUID();
  const leaseName = opts.scope ? `${LEASE_NAME}:${opts.control.taskQueue}` : LEASE_NAME;
  let stopped = false;
  let wake: (() => void) | undefined;
  let pending = false;

  const listening = db.$client
    .listen(EVENTS_CHANNEL, () => {
      pending = true;
      wake?.();
    })
    .catch((err: unknown) => {
      logger.warn({ err }, 'outbox relay could not LISTEN; polling only');
      return null;
    });

  /** Take or renew the lease; false while another relay holds it. */
  async function lease(): Promise<boolean> {
    const rows = await db.execute<{ holder: string }>(sql`
      insert into ${leaseLocks} (name, holder, expires_at) values (${leaseName}, ${holder}, now() + ${`${leaseMs} milliseconds`}::interval)
      on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
        where ${leaseLocks.holder} = ${holder} or ${leaseLocks.expiresAt} < now()
      returning holder`);
    return rows.length > 0;
  }

  async function pass(): Promise<number> {
    if (!(await lease())) return 0;
    const scope = opts.scope?.();
    if (scope && scope.length === 0) return 0;
    // The payload (data) is not read here: most events go to no subscription, and the rest are serialized below.
    const batch = await db
      .select({
        id: events.id,
        organizationId: events.organizationId,
        integrationId: events.integrationId,
        type: events.type,
        createdAt: events.createdAt,
        serialized: sql<boolean>`${events.body} is not null`,
      })
      .from(events)
      .where(and(isNull(events.dispatchedAt), scope ? inArray(events.organizationId, scope) : undefined))
      .orderBy(asc(events.createdAt), asc(events.id))
      .limit(batchSize);
    if (batch.length === 0) return 0;

    const subs = await activeSubscriptionsOf(db, [...new Set(batch.map((e) => e.integrationId))]);
    if (subs.length > 0) await dispatch(batch, subs);
    await db
      .update(events)
      .set({ dispatchedAt: new Date() })
      .where(inArray(events.id, batch.map((e) => e.id)));
    return batch.length;
  }

  type Batch = { id: string; organizationId: string; integrationId: string; type: string; createdAt: Date; serialized: boolean }[];

  /** Make the batch's deliveries and start their workflows; returns once every start is acknowledged. */
  async function dispatch(batch: Batch, subs: SubscriptionRow[]): Promise<void> {
    // Deliveries made by an earlier pass that died before marking its events.
    const existing = await db
      .select({ eventId: webhookDeliveries.eventId, subscriptionId: webhookDeliveries.subscriptionId })
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.eventId, batch.map((e) => e.id)));
    const made = new Set(existing.map((d) => `${d.eventId}:${d.subscriptionId}`));

    // An event goes to the subscriptions that existed, and wanted its type, when it was recorded.
    const wanted: { event: (typeof batch)[number]; sub: (typeof subs)[number] }[] = [];
    for (const event of batch) {
      for (const sub of subs) {
        if (sub.integrationId !== event.integrationId || sub.createdAt > event.createdAt || !wantsEvent(sub.eventTypes, event.type)) continue;
        if (!made.has(`${event.id}:${sub.id}`)) wanted.push({ event, sub });
      }
    }

    await db.transaction(async (tx) => {
      // Only events that go somewhere are serialized now; a later replay serializes the others on demand.
      const going = new Set(wanted.map((w) => w.event.id));
      const ids = batch.filter((e) => !e.serialized && going.has(e.id)).map((e) => e.id);
      if (ids.length > 0) {
        const unserialized = await tx.select().from(events).where(inArray(events.id, ids));
        await tx.execute(sql`
          update ${events} set body = v.body
          from json_to_recordset(${JSON.stringify(unserialized.map((e) => ({ id: e.id, body: envelopeOf(e) })))}::json) as v(id text, body text)
          where ${events.id} = v.id and ${events.body} is null`);
      }
      if (wanted.length === 0) return;
      // Number each subscription's new deliveries in production order.
      const perSub = new Map<string, number>();
      for (const w of wanted) perSub.set(w.sub.id, (perSub.get(w.sub.id) ?? 0) + 1);
      const base = new Map<string, number>();
      for (const [subId, n] of perSub) {
        const [row] = await tx
          .update(webhookSubscriptions)
          .set({ deliverySeq: sql`${webhookSubscriptions.deliverySeq} + ${n}` })
          .where(eq(webhookSubscriptions.id, subId))
          .returning({ seq: webhookSubscriptions.deliverySeq });
        base.set(subId, row!.seq - n);
      }
      const rows = wanted.map((w) => {
        const seq = base.get(w.sub.id)! + 1;
        base.set(w.sub.id, seq);
        return {
          id: newId('webhookDelivery'),
          eventId: w.event.id,
          subscriptionId: w.sub.id,
          organizationId: w.event.organizationId,
          integrationId: w.event.integrationId,
          eventType: w.event.type,
          status: 'pending' as const,
          seq,
        };
      });
      for (let i = 0; i < rows.length; i += 1000) await tx.insert(webhookDeliveries).values(rows.slice(i, i + 1000)).onConflictDoNothing();
    });

    // Start every delivery of the batch still waiting for its first attempt (a start already made is a no-op).
    const deliveries = await db
      .select()
      .from(webhookDeliveries)
      .where(and(inArray(webhookDeliveries.eventId, batch.map((e) => e.id)), eq(webhookDeliveries.status, 'pending'), isNotNull(webhookDeliveries.seq)))
      .orderBy(asc(webhookDeliveries.seq));
    const recorded = new Map(batch.map((e) => [e.id, e.createdAt]));
    await startAll(deliveries.map((d) => ({ ...d, eventCreatedAt: recorded.get(d.eventId)! })));
  }

  async function startAll(deliveries: (DeliveryRow & { eventCreatedAt: Date })[]): Promise<void> {
    let next = 0;
    const lanes = Array.from({ length: Math.min(concurrency, deliveries.length) }, async () => {
      while (next < deliveries.length) {
        const d = deliveries[next++]!;
        await startDelivery(opts.control, d);
      }
    });
    await Promise.all(lanes);
  }

  const loop = (async () => {
    await listening;
    let backoff = 0;
    while (!stopped) {
      pending = false;
      try {
        const n = await pass();
        backoff = 0;
        if (n > 0) continue;
      } catch (err) {
        backoff = Math.min(backoff ? backoff * 2 : 500, 15_000);
        logger.warn({ err }, 'outbox relay pass failed; retrying');
      }
      if (stopped) break;
      if (pending && backoff === 0) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoff || pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  })();

  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      const l = await listening;
      await l?.unlisten().catch(() => {});
      // Let another relay take over at once.
      await db.delete(leaseLocks).where(and(eq(leaseLocks.name, leaseName), eq(leaseLocks.holder, holder))).catch(() => {});
    },
  };
}
