/**
 * Webhook delivery activities of the per-delivery workflow: `attemptDelivery` makes exactly one attempt (the
 * workflow owns the retries as durable timers, so nothing is sent twice by accident) and records it; the signing
 * secret is read here and never enters workflow history or logs. The bookkeeping activities are idempotent and
 * retried until the database answers. First attempts are made by the subscription's dispatcher (dispatch.ts);
 * these are the retries that follow a failed one, and operators' replays. Retries are not held back for order, so
 * they can reorder (docs/api.md says so).
 */
import type { Db } from '../db/client';
import { deliveryStanding, deliveryStatusOf, deliveryToAttempt, moveDelivery, recordAttempt, recordedAttemptOf, reopenDelivery } from '../db/delivery-attempts';
import { purgeSkippedBefore } from '../db/sync-jobs';
import { noteOutcomes } from '../db/webhook-health';
import { DISABLED, eventBody, purgeBefore, whyStopped } from '../db/webhooks';
import { openSigningSecret, SecretError, type Keyring } from '../domain/secrets';
import {
  ATTEMPT_HEADER,
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  PREVIOUS_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signPayload,
  STANDARD_ID_HEADER,
  STANDARD_SIGNATURE_HEADER,
  STANDARD_TIMESTAMP_HEADER,
  standardSignature,
  standardSigningKey,
} from '../domain/signature';
import { DISABLE_AFTER_MS, RETENTION_MS, type DeliveryStatus } from '../domain/webhooks';
import type { InFlight } from './in-flight';
import type { Sender } from './webhook-http';
import { NO_METRICS, type WorkerMetrics } from '../observability/metrics';
import { inSpan, SpanKind } from '../observability/tracing';

export interface WebhookActivityDeps {
  db: Db;
  sender: Sender;
  /** Opens the stored signing secrets, just before signing. */
  secrets: Keyring;
  /** Attempts in flight per subscription in this process, shared with the dispatchers' first attempts. */
  inFlight: InFlight;
  /** The bound of each subscription's attempts in flight. */
  maxInFlight: number;
  clock?: () => Date;
  /** Logs an attempt's outcome (never the secret). */
  log?: (fields: Record<string, unknown>, msg: string) => void;
  /** Counts attempts (Prometheus); nothing when absent. */
  metrics?: WorkerMetrics;
  /** Endpoint health: disable a subscription whose every attempt has failed this long (WEBHOOK_DISABLE_AFTER_MS). */
  disableAfterMs?: number;
  /** Tells operators what they must know (a subscription the service disabled); the log at warn level. */
  notice?: (fields: Record<string, unknown>, msg: string) => void;
}

export interface AttemptInput {
  deliveryId: string;
  /** Attempt number on this delivery record, from 1 (replays continue the count). */
  attempt: number;
  /** Delay before the next scheduled attempt, for the record's next_attempt_at; null when the workflow has none. */
  nextDelayMs: number | null;
  /**
   * Where a failure of this attempt leaves the delivery, as the workflow decided it: `retrying`, or `dead_lettered`
   * when it was the last of the schedule. Absent only in attempts scheduled by the release before (see failedTo).
   */
  ifFailed?: FailedStatus;
  /**
   * An operator asked for this attempt (a replay): it is made even when the delivery already succeeded. A scheduled
   * retry of a delivery already recorded as succeeded sends nothing and reports the success.
   */
  replay: boolean;
}

/** The states a failed attempt leaves a delivery in. */
export type FailedStatus = Extract<DeliveryStatus, 'retrying' | 'dead_lettered'>;

/**
 * The state a failed attempt is recorded with: the workflow's decision. An attempt scheduled by the release before
 * (in flight across a deploy) carried it as a null next delay.
 */
const failedTo = (input: { nextDelayMs: number | null; ifFailed?: FailedStatus }): FailedStatus =>
  input.ifFailed ?? (input.nextDelayMs === null ? 'dead_lettered' : 'retrying');

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

/** The signing secrets of a subscription as stored (sealed), and when the previous one stops signing. */
export interface StoredSecrets {
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: Date | null;
  /** Also sign the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature). */
  standardWebhooks: boolean;
}

/**
 * The headers of one attempt: the body's signature under the current secret and, in a rotation window, the
 * previous one, and the event headers; for a subscription that signs the Standard Webhooks way, also its three
 * headers, with the attempt's time (a retry is signed afresh; the body bytes stay the same). Throws SecretError when
 * a secret does not open (its key is not configured).
 */
export function attemptHeaders(
  secrets: Keyring,
  subscriptionId: string,
  stored: StoredSecrets,
  body: string,
  d: { eventId: string; eventType: string; attempt: number },
  now: Date,
  /** Opens a stored secret (a batch passes one that remembers what it opened: a decryption per send is wasted). */
  open: (sealed: string) => string = (sealed) => openSigningSecret(secrets, subscriptionId, sealed),
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'propsync-webhooks/1',
    [SIGNATURE_HEADER]: signPayload(body, open(stored.secret)),
    [EVENT_ID_HEADER]: d.eventId,
    [EVENT_TYPE_HEADER]: d.eventType,
    [ATTEMPT_HEADER]: String(d.attempt),
  };
  const inWindow = stored.previousSecret !== null && stored.previousExpiresAt !== null && stored.previousExpiresAt.getTime() > now.getTime();
  if (inWindow) headers[PREVIOUS_SIGNATURE_HEADER] = signPayload(body, open(stored.previousSecret!));
  if (stored.standardWebhooks) {
    const timestamp = Math.floor(now.getTime() / 1000);
    const secrets = inWindow ? [stored.secret, stored.previousSecret!] : [stored.secret];
    headers[STANDARD_ID_HEADER] = d.eventId;
    headers[STANDARD_TIMESTAMP_HEADER] = String(timestamp);
    headers[STANDARD_SIGNATURE_HEADER] = secrets.map((s) => standardSignature(standardSigningKey(open(s)), d.eventId, timestamp, body)).join(' ');
  }
  return headers;
}

/** Why nothing was sent when a secret does not open. */
export const unsealedError = (err: SecretError) => `not sent: the signing secret could not be decrypted (${err.message})`;

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { db, sender } = deps;
  const clock = deps.clock ?? (() => new Date());
  const log = deps.log ?? (() => {});
  const metrics = deps.metrics ?? NO_METRICS;

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
    await recordAttempt(db, input, r, to, next, clock());
  }

  /** An attempt that sent nothing, recorded as failed (or dead-lettered when the workflow said it was the last). */
  async function failUnsent(input: AttemptInput, startedAt: Date, error: string): Promise<AttemptOutcome> {
    const to = failedTo(input);
    await record(input, { startedAt, durationMs: 0, status: null, error, excerpt: null }, to);
    metrics.webhookAttempt('failed', input.attempt, null);
    log({ delivery_id: input.deliveryId, attempt: input.attempt, error, outcome: to }, 'webhook attempt');
    return { outcome: 'failed', status: null, error };
  }

  /** One attempt: POST the stored body, signed with the current (and, in a rotation window, the previous) secret. */
  async function attempt(input: AttemptInput): Promise<AttemptOutcome> {
    const row = await deliveryToAttempt(db, input.deliveryId);
    const cancel = async (reason: string): Promise<AttemptOutcome> => {
      await moveDelivery(db, input.deliveryId, 'cancelled', clock(), { nextAttemptAt: null, lastError: reason });
      return { outcome: 'cancelled', reason };
    };
    /** What ends this attempt unsent, as `r` (the delivery as last read) says; undefined when it may be sent. */
    const unsendable = (r: typeof row): Promise<AttemptOutcome> | AttemptOutcome | undefined => {
      if (!r) return { outcome: 'cancelled', reason: 'the delivery no longer exists (purged after the retention)' };
      const d = r.delivery;
      // Its first attempt's success was recorded after the attempt had been given up as lost: it is delivered.
      if (!input.replay && d.status === 'succeeded') return { outcome: 'succeeded', status: d.lastResponseStatus ?? 200 };
      // Its retries were cancelled while it waited (its subscription disabled or deleted): only a replay sends it now.
      if (!input.replay && d.status === 'cancelled') return { outcome: 'cancelled', reason: d.lastError ?? DISABLED };
      // A plan without webhooks stops them as a disable does: first attempts wait, retries end (replayable).
      const stopped = whyStopped({ deleted: r.subDeleted !== null || r.integrationDeleted !== null, status: r.subStatus, plan: r.plan });
      return stopped === null ? undefined : cancel(stopped);
    };
    const unsent = await unsendable(row);
    if (unsent || !row) return unsent!;
    const d = row.delivery;
    // Serialized by the relay; an event it had no subscription for yet (a range replay) is serialized now, once.
    const body = row.body ?? (await eventBody(db, d.eventId));
    if (body === null) return cancel('the event no longer exists (purged after the retention)');

    const release = await deps.inFlight.acquire(d.subscriptionId, row.maxInFlight ?? deps.maxInFlight);
    try {
      // The wait for a permit may be long: an earlier attempt, given up as lost while it waited, may have been sent
      // and recorded as succeeded meanwhile (a success is never sent again, a replay apart), or the subscription
      // disabled or deleted (its retries cancelled: nothing more is sent).
      const current = await deliveryToAttempt(db, input.deliveryId);
      const stopped = await unsendable(current);
      if (stopped) return stopped;
      // A replay of a delivery whose retries were cancelled (its subscription disabled, then enabled again) while its
      // workflow still waited: its schedule goes on from here, as a replay of a delivery being retried does.
      if (input.replay && current!.delivery.status === 'cancelled' && failedTo(input) === 'retrying') await reopenDelivery(db, input.deliveryId);
      const now = clock();
      let headers: Record<string, string>;
      try {
        headers = attemptHeaders(deps.secrets, d.subscriptionId, row, body, { eventId: d.eventId, eventType: d.eventType, attempt: input.attempt }, now);
      } catch (err) {
        if (!(err instanceof SecretError)) throw err;
        // A key missing from ENCRYPTION_KEYS: nothing is sent; the attempt fails with the reason and is retried on the
        // schedule (an operator who adds the key back lets the next attempt through).
        return await failUnsent(input, now, unsealedError(err));
      }
      const result = await inSpan(
        'webhook.attempt',
        { 'propsync.delivery_id': d.id, 'propsync.subscription_id': d.subscriptionId, 'propsync.event_type': d.eventType, 'propsync.attempt': input.attempt },
        async (span) => {
          const r = await sender.send({ url: row.url, body, headers, guard: row.mode === 'live' });
          span.setAttributes({ 'propsync.outcome': r.ok ? 'succeeded' : 'failed', ...(r.status === null ? {} : { 'http.response.status_code': r.status }) });
          return r;
        },
        SpanKind.CLIENT,
      );
      const to: DeliveryStatus = result.ok ? 'succeeded' : failedTo(input);
      await record(input, { startedAt: now, durationMs: result.durationMs, status: result.status, error: result.error, excerpt: result.excerpt }, to);
      // Counted once recorded: what follows is the endpoint's health, whose failure must not make the attempt look lost.
      metrics.webhookAttempt(result.ok ? 'succeeded' : 'failed', input.attempt, result.durationMs / 1000);
      try {
        const disabledBy = await noteOutcomes(db, d.subscriptionId, [{ at: now, ok: result.ok, status: result.status }], {
          disableAfterMs: deps.disableAfterMs ?? DISABLE_AFTER_MS,
          now: clock(),
        });
        if (disabledBy)
          (deps.notice ?? log)(
            { subscription_id: d.subscriptionId, delivery_id: d.id, disabled_by: disabledBy },
            'webhook subscription disabled by its endpoint health',
          );
      } catch (err) {
        // This attempt's own outcome stands; the next outcome noted brings the health up to date (a 410 missed here
        // disables the subscription at the next one).
        (deps.notice ?? log)({ err, subscription_id: d.subscriptionId, delivery_id: d.id }, 'endpoint health not updated after a webhook attempt');
      }
      log({ delivery_id: d.id, event_id: d.eventId, attempt: input.attempt, status: result.status, error: result.error, outcome: to }, 'webhook attempt');
      return result.ok ? { outcome: 'succeeded', status: result.status! } : { outcome: 'failed', status: result.status, error: result.error ?? 'failed' };
    } finally {
      release();
    }
  }

  return {
    /** Where the delivery stands before its workflow begins: attempts so far and when its dead letter expires. */
    async prepareDelivery(input: { deliveryId: string; retentionMs?: number }): Promise<PreparedDelivery | null> {
      const row = await deliveryStanding(db, input.deliveryId);
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
    async recordLostAttempt(input: {
      deliveryId: string;
      attempt: number;
      nextDelayMs: number | null;
      ifFailed?: FailedStatus;
      error: string;
    }): Promise<AttemptOutcome['outcome']> {
      const existing = await recordedAttemptOf(db, input.deliveryId, input.attempt);
      if ((await deliveryStatusOf(db, input.deliveryId)) === undefined) return 'cancelled';
      if (existing) return existing.status !== null && existing.status >= 200 && existing.status < 300 ? 'succeeded' : 'failed';
      await record(input, { startedAt: clock(), durationMs: 0, status: null, error: input.error, excerpt: null }, failedTo(input));
      return 'failed';
    },

    /** Move a delivery to a state its workflow decided (expiry of a dead letter). */
    async markDelivery(input: { deliveryId: string; status: DeliveryStatus }): Promise<void> {
      await moveDelivery(db, input.deliveryId, input.status, clock(), { nextAttemptAt: null });
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
