/**
 * The bookkeeping of webhook retries and replays (activities/webhooks.ts): what an attempt needs to be made, the
 * attempt recorded with the delivery's move in one transaction, and state moves that only follow the transition
 * whitelist (domain/webhooks.ts statesBefore), so a stale write changes nothing. First attempts are the dispatcher's
 * (db/dispatch.ts recordFirstAttempts).
 */
import { and, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { statesBefore, type DeliveryStatus } from '../domain/webhooks';
import type { Db, Tx } from './client';
import { events, integrations, webhookAttempts, webhookDeliveries, webhookSubscriptions } from './schema';

/** Move a delivery to `to`, only from a state the transition whitelist allows (a stale write changes nothing). */
export function moveDelivery(tx: Tx, deliveryId: string, to: DeliveryStatus, now: Date, fields: PgUpdateSetSource<typeof webhookDeliveries> = {}) {
  return tx
    .update(webhookDeliveries)
    .set({ ...fields, status: to, updatedAt: now })
    .where(and(eq(webhookDeliveries.id, deliveryId), inArray(webhookDeliveries.status, statesBefore(to))));
}

/**
 * Reopen a cancelled delivery for its retry schedule (a replay while its workflow still waits): `retrying` again, so
 * that the attempt's outcome is recorded (a cancelled delivery may not move to `retrying` otherwise, so that an
 * attempt in flight when it was cancelled cannot undo the cancellation).
 */
export async function reopenDelivery(db: Db, deliveryId: string): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: 'retrying', updatedAt: new Date() })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'cancelled')));
}

interface AttemptRecord {
  startedAt: Date;
  durationMs: number;
  status: number | null;
  error: string | null;
  excerpt: string | null;
}

/**
 * Record attempt `attempt` and move the delivery to `to` in one transaction, with its next attempt due at `next`.
 * An attempt already recorded (a retried bookkeeping call) is kept as it was.
 */
export async function recordAttempt(
  db: Db,
  input: { deliveryId: string; attempt: number },
  r: AttemptRecord,
  to: DeliveryStatus,
  next: Date | null,
  now: Date,
): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .insert(webhookAttempts)
      .values({
        deliveryId: input.deliveryId,
        number: input.attempt,
        startedAt: r.startedAt,
        durationMs: r.durationMs,
        responseStatus: r.status,
        error: r.error,
        responseBody: r.excerpt,
      })
      .onConflictDoNothing();
    await moveDelivery(tx, input.deliveryId, to, now, {
      attempts: sql`greatest(${webhookDeliveries.attempts}, ${input.attempt})`,
      lastAttemptAt: r.startedAt,
      nextAttemptAt: next,
      lastResponseStatus: r.status,
      lastError: r.error,
      firstSentAt: sql`coalesce(${webhookDeliveries.firstSentAt}, now())`,
    });
  });
}

/** A delivery with what an attempt of it needs: its subscription's address, state and secrets, its mode, its body. */
export async function deliveryToAttempt(db: Db, deliveryId: string) {
  const [row] = await db
    .select({
      delivery: webhookDeliveries,
      url: webhookSubscriptions.url,
      subStatus: webhookSubscriptions.status,
      maxInFlight: webhookSubscriptions.maxInFlight,
      subDeleted: webhookSubscriptions.deletedAt,
      secret: webhookSubscriptions.secret,
      previousSecret: webhookSubscriptions.previousSecret,
      previousExpiresAt: webhookSubscriptions.previousSecretExpiresAt,
      standardWebhooks: webhookSubscriptions.standardWebhooks,
      mode: integrations.mode,
      plan: integrations.plan,
      integrationDeleted: integrations.deletedAt,
      body: events.body,
    })
    .from(webhookDeliveries)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
    .innerJoin(integrations, eq(integrations.id, webhookDeliveries.integrationId))
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(eq(webhookDeliveries.id, deliveryId));
  return row;
}

/** Where a delivery stands (attempts so far, state) and when it and its event were made. */
export async function deliveryStanding(db: Db, deliveryId: string) {
  const [row] = await db
    .select({
      attempts: webhookDeliveries.attempts,
      status: webhookDeliveries.status,
      eventCreatedAt: events.createdAt,
      createdAt: webhookDeliveries.createdAt,
    })
    .from(webhookDeliveries)
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(eq(webhookDeliveries.id, deliveryId));
  return row;
}

/**
 * The response status recorded for attempt `attempt` of a delivery (null: none came), or undefined if it was not
 * recorded. A first attempt that succeeded is recorded on the delivery itself (db/dispatch.ts recordFirstAttempts).
 */
export async function recordedAttemptOf(db: Db, deliveryId: string, attempt: number): Promise<{ status: number | null } | undefined> {
  if (attempt === 1) {
    const [first] = await db
      .select({ status: webhookDeliveries.firstResponseStatus })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.id, deliveryId), isNotNull(webhookDeliveries.firstDurationMs)));
    if (first) return first;
  }
  const [existing] = await db
    .select({ status: webhookAttempts.responseStatus })
    .from(webhookAttempts)
    .where(and(eq(webhookAttempts.deliveryId, deliveryId), eq(webhookAttempts.number, attempt)));
  return existing;
}

/** A delivery's state, or undefined once it is gone (purged). */
export async function deliveryStatusOf(db: Db, deliveryId: string): Promise<DeliveryStatus | undefined> {
  const [row] = await db.select({ status: webhookDeliveries.status }).from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
  return row?.status;
}
