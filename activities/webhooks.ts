/**
 * Webhook delivery activities. `attemptDelivery` makes exactly one attempt (the workflow owns the retries as
 * durable timers, so nothing is sent twice by accident) and records it; the signing secret is read here and never
 * enters workflow history or logs. The bookkeeping activities are idempotent and retried until the database answers.
 *
 * First attempts of one subscription go out in production order: the relay numbers a subscription's deliveries
 * (`seq`), and a first attempt whose predecessor is under way waits until that one has handed its request to the
 * network (or finished its first attempt some other way). A predecessor that has not even begun (Temporal has not
 * handed its task to a worker yet, as under a burst) is waited for as well while few attempts wait, but only briefly
 * once half the worker's slots are waiting: holding every slot for it would stall every delivery behind it.
 * Retries and replays are not held back, so they can reorder.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Db, Tx } from '../db/client';
import { events, integrations, webhookAttempts, webhookDeliveries, webhookSubscriptions } from '../db/schema';
import { purgeSkippedBefore } from '../db/sync-jobs';
import { eventBody, purgeBefore } from '../db/webhooks';
import { openSigningSecret, SecretError, type Keyring } from '../domain/secrets';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, PREVIOUS_SIGNATURE_HEADER, SIGNATURE_HEADER, signPayload } from '../domain/signature';
import { RETENTION_MS, statesBefore, type DeliveryStatus } from '../domain/webhooks';
import type { Sender } from './webhook-http';

/** Channel on which a delivery announces that its first attempt went out (payload `<subscription id>:<seq>`). */
export const SENT_CHANNEL = 'webhook_first_sent';

export interface GateWait {
  /**
   * Longest wait for a predecessor that has not begun its first attempt, once `parkLimit` attempts of this process
   * are waiting already (below it, such a predecessor is waited for as long as a running one).
   */
  startWaitMs: number;
  /** Attempts of this process that may wait for a predecessor that has not begun (half its activity slots). */
  parkLimit: number;
  /** Longest wait for a predecessor whose first attempt is under way. */
  maxWaitMs: number;
}

/** Waits for the delivery before a given one to release its successor. */
export interface OrderGate {
  /** Resolves once delivery `seq` of the subscription has released, or when waiting longer is pointless (see GateWait). */
  waitFor(subscriptionId: string, seq: number, wait: GateWait): Promise<'released' | 'not_started' | 'timed_out'>;
  close(): Promise<void>;
}

export interface WebhookActivityDeps {
  db: Db;
  sender: Sender;
  gate: OrderGate;
  /** Opens the stored signing secrets, just before signing. */
  secrets: Keyring;
  clock?: () => Date;
  /** How long a first attempt waits for the one before it (a predecessor whose worker died must not block forever). */
  orderWait?: Partial<GateWait>;
  /** Logs an attempt's outcome (never the secret). */
  log?: (fields: Record<string, unknown>, msg: string) => void;
}

export interface AttemptInput {
  deliveryId: string;
  /** Attempt number on this delivery record, from 1 (replays continue the count). */
  attempt: number;
  /** Delay before the next scheduled attempt; null when this is the last one (a failure dead-letters). */
  nextDelayMs: number | null;
  /** Hold the attempt until the subscription's previous delivery went out (first attempts of relayed deliveries). */
  ordered: boolean;
}

export type AttemptOutcome =
  | { outcome: 'succeeded'; status: number }
  | { outcome: 'failed'; status: number | null; error: string }
  | { outcome: 'cancelled'; reason: string };

export interface PreparedDelivery {
  attempts: number;
  status: DeliveryStatus;
  /** Epoch ms after which a dead-lettered delivery expires (the event's retention). */
  expiresAtMs: number;
}

const RELEASED_SQL = sql`(first_sent_at is not null or attempts > 0 or status in ('succeeded','dead_lettered','cancelled','expired'))`;
type PredecessorState = 'released' | 'running' | 'not_started';

/** The order gate over LISTEN/NOTIFY, with a slow poll as the fallback for a lost notification. */
export function createOrderGate(db: Db, opts: { pollMs?: number } = {}): OrderGate {
  const pollMs = opts.pollMs ?? 1_000;
  const waiters = new Map<string, Set<() => void>>();
  let parked = 0;
  const listening = db.$client.listen(SENT_CHANNEL, (payload) => {
    for (const wake of waiters.get(payload) ?? []) wake();
  });
  async function stateOf(subscriptionId: string, seq: number): Promise<PredecessorState> {
    const rows = await db.execute<{ released: boolean; started: boolean }>(
      sql`select ${RELEASED_SQL} as released, first_started_at is not null as started from ${webhookDeliveries} where subscription_id = ${subscriptionId} and seq = ${seq}`,
    );
    // No such delivery (purged, or never made): nothing to wait for.
    if (rows.length === 0 || rows[0]!.released) return 'released';
    return rows[0]!.started ? 'running' : 'not_started';
  }
  return {
    async waitFor(subscriptionId, seq, wait) {
      const key = `${subscriptionId}:${seq}`;
      await listening;
      let wake: () => void = () => {};
      const set = waiters.get(key) ?? new Set();
      waiters.set(key, set);
      const began = Date.now();
      // Slots are plenty while few attempts wait: then even a predecessor not begun yet is worth waiting for.
      const patient = ++parked <= wait.parkLimit;
      try {
        for (;;) {
          const notified = new Promise<void>((resolve) => {
            wake = resolve;
            set.add(resolve);
          });
          const state = await stateOf(subscriptionId, seq);
          if (state === 'released') return 'released';
          const deadline = began + (state === 'running' || patient ? wait.maxWaitMs : wait.startWaitMs);
          const left = deadline - Date.now();
          if (left <= 0) return state === 'running' ? 'timed_out' : 'not_started';
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([notified, new Promise<void>((r) => (timer = setTimeout(r, Math.min(pollMs, left))))]);
          clearTimeout(timer);
          set.delete(wake);
        }
      } finally {
        parked--;
        set.delete(wake);
        if (set.size === 0) waiters.delete(key);
      }
    },
    async close() {
      const l = await listening.catch(() => null);
      await l?.unlisten().catch(() => {});
    },
  };
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { db, sender } = deps;
  const clock = deps.clock ?? (() => new Date());
  const orderWait: GateWait = { startWaitMs: 300, maxWaitMs: 15_000, parkLimit: 100, ...deps.orderWait };
  const log = deps.log ?? (() => {});

  /** Mark the first attempt as gone out and wake the subscription's next delivery. Idempotent. */
  async function releaseNext(deliveryId: string): Promise<void> {
    await db.execute(sql`
      with u as (
        update ${webhookDeliveries} set first_sent_at = coalesce(first_sent_at, now())
        where id = ${deliveryId} and first_sent_at is null returning subscription_id, seq
      )
      select pg_notify(${SENT_CHANNEL}, subscription_id || ':' || seq) from u where seq is not null`);
  }

  /** Move a delivery to `to`, only from a state the transition whitelist allows (a stale write changes nothing). */
  function moveTo(tx: Tx, deliveryId: string, to: DeliveryStatus, fields: PgUpdateSetSource<typeof webhookDeliveries> = {}) {
    return tx
      .update(webhookDeliveries)
      .set({ ...fields, status: to, updatedAt: clock() })
      .where(and(eq(webhookDeliveries.id, deliveryId), inArray(webhookDeliveries.status, statesBefore(to))));
  }

  /**
   * Record attempt `n` and move the delivery to its outcome in one statement. An attempt already recorded (a
   * retried bookkeeping call) is kept as it was.
   */
  async function record(
    input: { deliveryId: string; attempt: number; nextDelayMs: number | null },
    r: { startedAt: Date; durationMs: number; status: number | null; error: string | null; excerpt: string | null },
    to: DeliveryStatus,
  ): Promise<void> {
    const next = to === 'retrying' && input.nextDelayMs !== null ? new Date(r.startedAt.getTime() + r.durationMs + input.nextDelayMs) : null;
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
      await moveTo(tx, input.deliveryId, to, {
        attempts: sql`greatest(${webhookDeliveries.attempts}, ${input.attempt})`,
        lastAttemptAt: r.startedAt,
        nextAttemptAt: next,
        lastResponseStatus: r.status,
        lastError: r.error,
        firstSentAt: sql`coalesce(${webhookDeliveries.firstSentAt}, now())`,
      });
    });
  }

  /** An attempt that sent nothing, recorded as failed (or dead-lettered when it was the last). */
  async function failUnsent(input: AttemptInput, startedAt: Date, error: string): Promise<AttemptOutcome> {
    const to: DeliveryStatus = input.nextDelayMs === null ? 'dead_lettered' : 'retrying';
    await record(input, { startedAt, durationMs: 0, status: null, error, excerpt: null }, to);
    await releaseNext(input.deliveryId);
    log({ delivery_id: input.deliveryId, attempt: input.attempt, error, outcome: to }, 'webhook attempt');
    return { outcome: 'failed', status: null, error };
  }

  /** One attempt: POST the stored body, signed with the current (and, in a rotation window, the previous) secret. */
  async function attempt(input: AttemptInput): Promise<AttemptOutcome> {
    // A first attempt says it is under way, so that the next delivery of the subscription waits for it.
    const starting = input.ordered
      ? db.update(webhookDeliveries).set({ firstStartedAt: sql`coalesce(${webhookDeliveries.firstStartedAt}, now())` }).where(eq(webhookDeliveries.id, input.deliveryId))
      : undefined;
    const [[row]] = await Promise.all([
      db
      .select({
        delivery: webhookDeliveries,
        url: webhookSubscriptions.url,
        subStatus: webhookSubscriptions.status,
        subDeleted: webhookSubscriptions.deletedAt,
        secret: webhookSubscriptions.secret,
        previousSecret: webhookSubscriptions.previousSecret,
        previousExpiresAt: webhookSubscriptions.previousSecretExpiresAt,
        mode: integrations.mode,
        integrationDeleted: integrations.deletedAt,
        body: events.body,
      })
      .from(webhookDeliveries)
      .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
      .innerJoin(integrations, eq(integrations.id, webhookDeliveries.integrationId))
      .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
      .where(eq(webhookDeliveries.id, input.deliveryId)),
      starting,
    ]);
    const cancel = async (reason: string): Promise<AttemptOutcome> => {
      await moveTo(db, input.deliveryId, 'cancelled', { nextAttemptAt: null, lastError: reason });
      await releaseNext(input.deliveryId);
      return { outcome: 'cancelled', reason };
    };
    if (!row) return { outcome: 'cancelled', reason: 'the delivery no longer exists (purged after the retention)' };
    if (row.subDeleted || row.integrationDeleted) return cancel('the subscription was deleted');
    if (row.subStatus !== 'active') return cancel('the subscription is disabled');
    // Serialized by the relay; an event it had no subscription for yet (a range replay) is serialized now, once.
    const body = row.body ?? (await eventBody(db, row.delivery.eventId));
    if (body === null) return cancel('the event no longer exists (purged after the retention)');

    const d = row.delivery;
    if (input.ordered && d.seq !== null && d.seq > 1 && d.firstSentAt === null) {
      const waited = await deps.gate.waitFor(d.subscriptionId, d.seq - 1, orderWait);
      if (waited !== 'released') log({ delivery_id: d.id, seq: d.seq, waited }, 'the previous delivery has not gone out; sending without it');
    }

    const now = clock();
    const inWindow = row.previousSecret !== null && row.previousExpiresAt !== null && row.previousExpiresAt.getTime() > now.getTime();
    let signatures: { current: string; previous: string | null };
    try {
      signatures = {
        current: signPayload(body, openSigningSecret(deps.secrets, d.subscriptionId, row.secret)),
        previous: inWindow ? signPayload(body, openSigningSecret(deps.secrets, d.subscriptionId, row.previousSecret!)) : null,
      };
    } catch (err) {
      if (!(err instanceof SecretError)) throw err;
      // A key missing from ENCRYPTION_KEYS: nothing is sent; the attempt fails with the reason and is retried on the
      // schedule (an operator who adds the key back lets the next attempt through).
      return failUnsent(input, now, `not sent: the signing secret could not be decrypted (${err.message})`);
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'propsync-webhooks/1',
      [SIGNATURE_HEADER]: signatures.current,
      [EVENT_ID_HEADER]: d.eventId,
      [EVENT_TYPE_HEADER]: d.eventType,
      [ATTEMPT_HEADER]: String(input.attempt),
    };
    if (signatures.previous !== null) headers[PREVIOUS_SIGNATURE_HEADER] = signatures.previous;
    let releasing: Promise<void> | undefined;
    const result = await sender.send({
      url: row.url,
      body,
      headers,
      guard: row.mode === 'live',
      onSent: () => {
        if (d.firstSentAt === null) releasing = releaseNext(d.id).catch(() => {});
      },
    });
    await releasing;
    const to: DeliveryStatus = result.ok ? 'succeeded' : input.nextDelayMs === null ? 'dead_lettered' : 'retrying';
    await record(input, { startedAt: now, durationMs: result.durationMs, status: result.status, error: result.error, excerpt: result.excerpt }, to);
    log({ delivery_id: d.id, event_id: d.eventId, attempt: input.attempt, status: result.status, error: result.error, outcome: to }, 'webhook attempt');
    return result.ok ? { outcome: 'succeeded', status: result.status! } : { outcome: 'failed', status: result.status, error: result.error ?? 'failed' };
}

  return {
    /** Where the delivery stands before its workflow begins: attempts so far and when its dead letter expires. */
    async prepareDelivery(input: { deliveryId: string; retentionMs?: number }): Promise<PreparedDelivery | null> {
      const [row] = await db
        .select({ attempts: webhookDeliveries.attempts, status: webhookDeliveries.status, eventCreatedAt: events.createdAt, createdAt: webhookDeliveries.createdAt })
        .from(webhookDeliveries)
        .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
        .where(eq(webhookDeliveries.id, input.deliveryId));
      if (!row) return null;
      const born = (row.eventCreatedAt ?? row.createdAt).getTime();
      return { attempts: row.attempts, status: row.status, expiresAtMs: born + (input.retentionMs ?? RETENTION_MS) };
    },

    /** One attempt (see `attempt`). */
    attemptDelivery: attempt,

    /**
     * An attempt whose activity never reported back (its worker died, or it overran its time-out): recorded as a
     * failed attempt, unless the attempt itself managed to record its outcome first, in which case that outcome is
     * the answer (a recorded success must end the delivery).
     */
    async recordLostAttempt(input: { deliveryId: string; attempt: number; nextDelayMs: number | null; error: string }): Promise<AttemptOutcome['outcome']> {
      const [existing] = await db
        .select({ status: webhookAttempts.responseStatus })
        .from(webhookAttempts)
        .where(and(eq(webhookAttempts.deliveryId, input.deliveryId), eq(webhookAttempts.number, input.attempt)));
      const [row] = await db.select({ status: webhookDeliveries.status }).from(webhookDeliveries).where(eq(webhookDeliveries.id, input.deliveryId));
      if (!row) return 'cancelled';
      if (existing) return existing.status !== null && existing.status >= 200 && existing.status < 300 ? 'succeeded' : 'failed';
      const to: DeliveryStatus = input.nextDelayMs === null ? 'dead_lettered' : 'retrying';
      await record(input, { startedAt: clock(), durationMs: 0, status: null, error: input.error, excerpt: null }, to);
      await releaseNext(input.deliveryId);
      return 'failed';
    },

    /** Move a delivery to a state its workflow decided (expiry of a dead letter). */
    async markDelivery(input: { deliveryId: string; status: DeliveryStatus }): Promise<void> {
      await moveTo(db, input.deliveryId, input.status, { nextAttemptAt: null });
    },

    /**
     * Retention: remove events and deliveries older than 30 days (or `retentionMs`), and the quarantined-record
     * lists of sync runs as old.
     */
    async purgeExpired(input: { retentionMs?: number }): Promise<{ events: number; deliveries: number; skippedRecords: number }> {
      const before = new Date(clock().getTime() - (input.retentionMs ?? RETENTION_MS));
      const purged = await purgeBefore(db, before);
      return { ...purged, skippedRecords: await purgeSkippedBefore(db, before) };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
