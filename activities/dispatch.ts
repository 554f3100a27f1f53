/**
 * A subscription's dispatcher batch: first attempts of its queued deliveries, in queue order, with at most
 * `maxInFlight` requests open, each recorded; bookkeeping is batched (a claim statement per window's worth of
 * deliveries, two statements per few hundred outcomes), so a healthy receiver is limited by HTTP, not by us.
 *
 * A failed first attempt becomes its own delivery workflow (started before the failure is recorded, idempotently),
 * which makes attempts 2 to 7 on the schedule and holds the dead letter. A run of failures opens the circuit: the
 * batch stops taking deliveries, and the workflow probes later with one. First attempts a batch took but never
 * recorded (its worker died) are handed to their workflows as lost attempts by the next batch: at-least-once, never
 * a second send of an attempt recorded as succeeded.
 */
import type { Context } from '@temporalio/activity';
import type { Db } from '../db/client';
import {
  claimQueued,
  ensureCursor,
  recordFirstAttempts,
  sendingStateOf,
  settleIdle,
  setCircuit,
  unclaim,
  unrecordedFirstAttempts,
  type ClaimedDelivery,
  type FirstAttemptRecord,
  type SendingState,
} from '../db/dispatch';
import { cancelQueue, cancelRetriesIfStopped, eventBody, eventBodies } from '../db/webhooks';
import { noteOutcomes } from '../db/webhook-health';
import { openSigningSecret, SecretError, type Keyring } from '../domain/secrets';
import { ALL_EVENT_TYPES, categoryOf } from '../domain/events';
import { DISABLE_AFTER_MS, type BatchResult } from '../domain/webhooks';
import { heartbeating } from './attempt';
import type { InFlight } from './in-flight';
import type { QueuedListener } from './queued-listener';
import { attemptHeaders, unsealedError } from './webhooks';
import type { Sender } from './webhook-http';
import { NO_METRICS, type WorkerMetrics } from '../observability/metrics';
import { inLinkedRoot, inSpan, SpanKind, type Span } from '../observability/tracing';

/** A delivery whose first attempt failed, to hand to its own workflow. */
export interface RetryRef {
  id: string;
  subscriptionId: string;
  integrationId: string;
  eventType: string;
  /** When its event was recorded (its dead letter expires with the event's retention). */
  eventCreatedAt: Date;
}

export interface DispatchDeps {
  db: Db;
  sender: Sender;
  secrets: Keyring;
  inFlight: InFlight;
  queued: QueuedListener;
  /** Starts the delivery workflows of failed first attempts (idempotent: a started one is left as it is). */
  startRetries(refs: RetryRef[]): Promise<void>;
  clock?: () => Date;
  log?: (fields: Record<string, unknown>, msg: string) => void;
  /** How often a batch heartbeats (its heartbeat time-out must be well above it). */
  heartbeatEveryMs?: number;
  /** Counts attempts (Prometheus); nothing when absent. */
  metrics?: WorkerMetrics;
  /** Endpoint health: disable a subscription whose every attempt has failed this long (WEBHOOK_DISABLE_AFTER_MS). */
  disableAfterMs?: number;
  /** Tells operators what they must know (a subscription the service disabled); the log at warn level. */
  notice?: (fields: Record<string, unknown>, msg: string) => void;
}

export interface BatchInput {
  subscriptionId: string;
  /** Requests in flight at once, unless the subscription sets its own. */
  maxInFlight: number;
  /** Consecutive failures that stop the batch and open the circuit. */
  circuitFailures: number;
  /** Stop taking deliveries after this long. */
  batchMs: number;
  /** Wait this long for more before settling idle. */
  lingerMs: number;
  /** A probe: one delivery, then stop. */
  probe: boolean;
  /** Failed first attempts in a row before this batch (a run goes on across batches). */
  failureRun?: number;
  /**
   * Where a failed first attempt goes, as the dispatcher workflow decided it: retried after this delay, or
   * dead-lettered when null. Absent only in batches scheduled by the release before, which passed the schedule's list
   * form (`scheduleMs`: a retry after its second value, the dead letter when it has none).
   */
  firstRetryDelayMs?: number | null;
  scheduleMs?: readonly number[];
}

/** Deliveries a claim takes at the least (more with a wider window), and takes again when half of them are left. */
const CLAIM_AT_LEAST = 256;
/** Outcomes buffered before they are written. */
const FLUSH_AT = 256;
const FLUSH_EVERY_MS = 100;
const LOST = 'attempt lost: the batch that made it stopped before recording its outcome';
/** The events that end a sync run (SYNC_COMPLETE and FIRST_SYNC_COMPLETE): sent alone, after what came before. */
const SYNC_LIFECYCLE: ReadonlySet<string> = new Set(ALL_EVENT_TYPES.filter((t) => categoryOf(t) === 'sync_lifecycle'));

export function createDispatchActivities(deps: DispatchDeps) {
  const { db, sender } = deps;
  const clock = deps.clock ?? (() => new Date());
  const log = deps.log ?? (() => {});
  const metrics = deps.metrics ?? NO_METRICS;

  const refOf = (subscriptionId: string, d: Pick<ClaimedDelivery, 'id' | 'integrationId' | 'eventType' | 'eventCreatedAt'>): RetryRef => ({
    id: d.id,
    subscriptionId,
    integrationId: d.integrationId,
    eventType: d.eventType,
    eventCreatedAt: d.eventCreatedAt ?? clock(),
  });

  /** Failure → where the delivery goes next and when. */
  function failed(input: BatchInput, startedAt: Date, durationMs: number): Pick<FirstAttemptRecord, 'to' | 'nextAttemptAt'> {
    const next = input.firstRetryDelayMs !== undefined ? input.firstRetryDelayMs : (input.scheduleMs?.[1] ?? null);
    return next === null ? { to: 'dead_lettered', nextAttemptAt: null } : { to: 'retrying', nextAttemptAt: new Date(startedAt.getTime() + durationMs + next) };
  }

  /** Hand failed first attempts to their workflows, then record them; record successes at once. */
  async function write(records: FirstAttemptRecord[], retries: RetryRef[]): Promise<void> {
    const ok = records.filter((r) => r.to === 'succeeded');
    await recordFirstAttempts(db, ok);
    if (retries.length === 0) return;
    await deps.startRetries(retries);
    await recordFirstAttempts(
      db,
      records.filter((r) => r.to !== 'succeeded'),
    );
    // Sent before the subscription was disabled or deleted, recorded after its retries were cancelled.
    await cancelRetriesIfStopped(db, retries[0]!.subscriptionId);
  }

  async function dispatchBatch(input: BatchInput): Promise<BatchResult> {
    const { subscriptionId: subId } = input;
    const result: BatchResult = { succeeded: 0, failed: 0, failureRun: 0, stoppedBy: 'idle' };
    const batch = async (ctx: Context | undefined, batchSpan: Span): Promise<BatchResult> => {
      const began = Date.now();
      await ensureCursor(db, subId);
      // First attempts an earlier batch took and never recorded: lost attempts, retried by their own workflows.
      const lost = await unrecordedFirstAttempts(db, subId);
      if (lost.length > 0) {
        const now = clock();
        await write(
          lost.map((d) => ({
            deliveryId: d.id,
            startedAt: now,
            durationMs: 0,
            responseStatus: null,
            error: LOST,
            responseBody: null,
            ...failed(input, now, 0),
          })),
          lost.map((d) => refOf(subId, d)),
        );
        log({ subscription_id: subId, lost: lost.length }, 'first attempts lost with an earlier batch handed to their retries');
      }

      let state: SendingState | null = null;
      let stop: BatchResult['stoppedBy'] | null = null;
      let failureRun = input.failureRun ?? 0;
      let sent = 0;
      let lingered = false;
      const queue: ClaimedDelivery[] = [];
      const open = new Set<Promise<void>>();
      let records: FirstAttemptRecord[] = [];
      let retries: RetryRef[] = [];
      let writing: Promise<void> = Promise.resolve();
      let writeError: unknown = null;
      /**
       * Endpoint health, after the outcomes are recorded: a receiver that answered 410 Gone, or whose every attempt
       * has failed for WEBHOOK_DISABLE_AFTER_MS, disables the subscription, and the batch stops as for a disable.
       */
      const note = async (r: FirstAttemptRecord[]) => {
        // What was never sent says nothing of the receiver.
        const outcomes = r.filter((x) => !x.unsent).map((x) => ({ at: x.startedAt, ok: x.to === 'succeeded', status: x.responseStatus }));
        const by = await noteOutcomes(db, subId, outcomes, { disableAfterMs: deps.disableAfterMs ?? DISABLE_AFTER_MS, now: clock() });
        if (by === null) return;
        stop ??= 'paused';
        (deps.notice ?? log)({ subscription_id: subId, disabled_by: by }, 'webhook subscription disabled by its endpoint health');
      };
      const flush = () => {
        if (records.length === 0) return;
        const [r, q] = [records, retries];
        records = [];
        retries = [];
        writing = writing
          .then(() => write(r, q))
          .then(() => note(r))
          .catch((err: unknown) => {
            writeError ??= err;
            stop ??= 'budget';
          });
      };
      const timer = setInterval(flush, FLUSH_EVERY_MS);

      let refreshedAt = 0;
      const refresh = async (): Promise<boolean> => {
        refreshedAt = Date.now();
        state = await sendingStateOf(db, subId);
        if (!state || state.state === 'deleted') stop = 'deleted';
        else if (state.state === 'paused') stop = 'paused';
        return stop === null;
      };

      /** Secrets opened in this batch, by their sealed form (a rotation brings a new sealed form, opened once). */
      const opened = new Map<string, string>();
      const openSecret = (sealed: string) => {
        let plain = opened.get(sealed);
        if (plain === undefined) opened.set(sealed, (plain = openSigningSecret(deps.secrets, subId, sealed)));
        return plain;
      };

      /** Resolves once the previous request has been handed to the network: requests go out one after another, in order. */
      let handedOver: Promise<void> = Promise.resolve();
      /** Resolves once the last sync-lifecycle request sent has been answered (see the loop). */
      let fence: Promise<void> = Promise.resolve();

      async function sendOne(d: ClaimedDelivery, to: SendingState, onSent: () => void): Promise<void> {
        const startedAt = clock();
        let requested = false;
        const body = d.body ?? (await eventBody(db, d.eventId));
        let outcome: { status: number | null; error: string | null; excerpt: string | null; durationMs: number; ok: boolean };
        if (body === null) {
          onSent();
          outcome = { ok: false, status: null, error: 'not sent: the event no longer exists (purged after the retention)', excerpt: null, durationMs: 0 };
        } else {
          let headers: Record<string, string> | null = null;
          try {
            headers = attemptHeaders(deps.secrets, subId, to, body, { eventId: d.eventId, eventType: d.eventType, attempt: 1 }, startedAt, openSecret);
          } catch (err) {
            onSent();
            if (!(err instanceof SecretError)) throw err;
            outcome = { ok: false, status: null, error: unsealedError(err), excerpt: null, durationMs: 0 };
          }
          if (headers) {
            requested = true;
            outcome = await inSpan(
              'webhook.attempt',
              { 'propsync.delivery_id': d.id, 'propsync.subscription_id': subId, 'propsync.event_type': d.eventType, 'propsync.attempt': 1 },
              async (span) => {
                const r = await sender.send({ url: to.url, body, headers, guard: to.mode === 'live', onSent });
                span.setAttributes({
                  'propsync.outcome': r.ok ? 'succeeded' : 'failed',
                  ...(r.status === null ? {} : { 'http.response.status_code': r.status }),
                });
                return r;
              },
              SpanKind.CLIENT,
            );
          }
        }
        const { ok, status, error, excerpt, durationMs } = outcome!;
        sent++;
        metrics.webhookAttempt(ok ? 'succeeded' : 'failed', 1, requested ? durationMs / 1000 : null);
        if (ok) {
          result.succeeded++;
          failureRun = 0;
          records.push({
            deliveryId: d.id,
            startedAt,
            durationMs,
            responseStatus: status,
            error: null,
            responseBody: excerpt,
            to: 'succeeded',
            nextAttemptAt: null,
          });
        } else {
          result.failed++;
          // A run of failures opens the circuit on the receiver: one that was never sent is not its failure.
          if (requested) failureRun++;
          records.push({
            deliveryId: d.id,
            startedAt,
            durationMs,
            responseStatus: status,
            error,
            responseBody: excerpt,
            ...failed(input, startedAt, durationMs),
            ...(requested ? {} : { unsent: true as const }),
          });
          retries.push(refOf(subId, d));
          if (failureRun >= input.circuitFailures) stop ??= 'circuit';
          // Gone: nothing more is sent; the flush disables the subscription.
          if (status === 410) {
            stop ??= 'paused';
            flush();
          }
        }
        if (records.length >= FLUSH_AT) flush();
      }

      try {
        if (!(await refresh())) {
          if (stop === 'deleted') await cancelQueue(db, subId, 'the subscription was deleted');
          await settleIdle(db, subId, { force: true });
          result.stoppedBy = stop!;
          result.failureRun = failureRun;
          return result;
        }
        const bound = () => state!.maxInFlight ?? input.maxInFlight;
        /**
         * Take the next deliveries in the background while the ones taken go out, so sending never waits for a
         * claim's round trip (the subscription's state is re-read first when it is a second old: a disable or a
         * deletion shows within a second). Resolves to how many were taken. The state is read again once they are
         * taken, so a delivery is signed and addressed with a state at least as new as its event: a rotation or a URL
         * change made before an event was recorded is what its first attempt uses.
         */
        let claiming: Promise<number> | null = null;
        const claimMore = (): Promise<number> => {
          if (claiming) return claiming;
          if (stop !== null) return Promise.resolve(0);
          claiming = (async () => {
            if (Date.now() - refreshedAt >= 1_000 && !(await refresh())) return 0;
            // Far enough ahead that a claim's round trips (some 20 to 100 ms under a burst on a busy database) never
            // leave the window idle.
            const claimed = await claimQueued(db, subId, input.probe ? 1 : Math.max(CLAIM_AT_LEAST, 16 * bound()));
            try {
              // The relay stores the body of every event it queues; events no one has serialized yet (deliveries a
              // range replay queued for events no subscription had) are stored here, in the background of the sends,
              // so every attempt sends the stored bytes.
              const missing = claimed.filter((d) => d.body === null).map((d) => d.eventId);
              const [bodies] = await Promise.all([
                missing.length > 0 ? eventBodies(db, missing) : undefined,
                // Read after the claim: newer than every event taken (a state that says stop leaves them queued).
                claimed.length > 0 ? refresh() : undefined,
              ]);
              if (bodies) for (const d of claimed) d.body ??= bodies.get(d.eventId) ?? null;
            } catch (err) {
              // Taken but not to be sent: nothing more goes out (stop, at once), and the batch's ending gives them
              // back to the queue in their places (unclaim) rather than leaving them behind the cursor, unsent.
              writeError ??= err;
              stop ??= 'budget';
              queue.push(...claimed);
              throw err;
            }
            queue.push(...claimed);
            return claimed.length;
          })()
            .catch((err: unknown) => {
              // The batch ends and fails with it; what was taken before stays recorded or is handed over next time.
              writeError ??= err;
              stop ??= 'budget';
              return 0;
            })
            .finally(() => {
              claiming = null;
            });
          return claiming;
        };
        // A failure of the database in the loop (a state read, the idle check) ends the batch as a failure of a send
        // does: what was taken and not sent goes back to the queue, and what is in flight is answered and recorded.
        try {
          for (;;) {
            if (stop === null && ctx?.cancellationSignal.aborted) stop = 'budget';
            if (stop === null && Date.now() - began >= input.batchMs) stop = 'budget';
            if (stop === null && input.probe && sent + open.size >= 1) stop = 'probe';
            if (stop !== null) break;
            // Running low: take more while these go out (a probe takes its one delivery only).
            if (!input.probe && queue.length < Math.max(CLAIM_AT_LEAST / 2, 8 * bound())) void claimMore();
            if (queue.length === 0) {
              if ((await claimMore()) > 0 || queue.length > 0) {
                lingered = false;
                continue;
              }
              if (stop !== null) break;
              if (open.size > 0) {
                // A request finishing frees a permit; new deliveries queued meanwhile fill it as soon as they commit.
                await Promise.race([...open, deps.queued.wait(subId, input.lingerMs)]);
              } else if (!lingered) {
                // Flush first: the writes must not wait on the linger.
                flush();
                lingered = true;
                await deps.queued.wait(subId, input.lingerMs);
              } else {
                flush();
                await writing;
                if (await settleIdle(db, subId)) stop = 'idle';
                lingered = false;
              }
              continue;
            }
            if (Date.now() - refreshedAt >= 1_000 && !claiming) await refresh();
            if (stop !== null) break;
            const release = await deps.inFlight.acquire(subId, bound());
            // A failure run may have opened the circuit while this waited for a permit.
            if (stop !== null) {
              release();
              break;
            }
            // A sync run's end (its category's events) waits until every request before it has been answered, and the
            // requests after it wait for its own answer: with up to maxInFlight requests open, a run's last data
            // events could otherwise reach the receiver after the event that says the run is complete.
            const ending = SYNC_LIFECYCLE.has(queue[0]!.eventType);
            await fence;
            if (ending && open.size > 0) await Promise.all(open);
            if (stop !== null) {
              release();
              break;
            }
            const d = queue.shift()!;
            await handedOver;
            let wentOut: () => void = () => {};
            handedOver = new Promise<void>((resolve) => (wentOut = resolve));
            const p: Promise<void> = sendOne(d, state!, wentOut)
              .catch((err: unknown) => {
                writeError ??= err;
                stop ??= 'budget';
              })
              .finally(() => {
                wentOut();
                release();
                open.delete(p);
              });
            open.add(p);
            if (ending) fence = p;
          }
        } catch (err) {
          writeError ??= err;
          stop ??= 'budget';
        }
        // A claim still under way lands in the queue, and whatever is left there keeps its place.
        await (claiming as Promise<number> | null);
        await unclaim(db, subId, queue.length === 0 ? null : { firstSeq: queue[0]!.seq, lastSeq: queue[queue.length - 1]!.seq });
        await Promise.all(open);
        clearInterval(timer);
        flush();
        await writing;
        if (writeError) throw writeError;
        // (`stop` is set by the sends' callbacks too: read it as the whole union.)
        let ended = (stop as BatchResult['stoppedBy'] | null) ?? 'budget';
        if (ended === 'deleted') await cancelQueue(db, subId, 'the subscription was deleted');
        if (ended === 'paused' || ended === 'deleted') await settleIdle(db, subId, { force: true });
        // A run of failures that reached the threshold opens the circuit, whatever else ended the batch first.
        result.failureRun = failureRun;
        if ((ended === 'budget' || ended === 'idle') && failureRun >= input.circuitFailures) ended = 'circuit';
        result.stoppedBy = ended;
        log({ subscription_id: subId, ...result }, 'webhook batch');
        batchSpan.setAttributes({ 'propsync.succeeded': result.succeeded, 'propsync.failed': result.failed, 'propsync.stopped_by': ended });
        return result;
      } finally {
        clearInterval(timer);
      }
    };
    // Each batch is a trace of its own, linked to its activity's span: a dispatcher lives as long as its subscription,
    // and every batch it ran would otherwise be part of one trace that never ends.
    return heartbeating(deps.heartbeatEveryMs ?? 5_000, (ctx) =>
      inLinkedRoot('webhook.dispatch', { 'propsync.subscription_id': subId }, (span) => batch(ctx, span)),
    );
  }

  return {
    /** One batch of a subscription's first attempts (see above). */
    dispatchBatch,
    /** Mirror the circuit on the subscription row. */
    async markCircuit(input: { subscriptionId: string; openedAtMs: number; nextProbeAtMs: number } | { subscriptionId: string; closed: true }): Promise<void> {
      await setCircuit(
        db,
        input.subscriptionId,
        'closed' in input ? null : { openedAt: new Date(input.openedAtMs), nextProbeAt: new Date(input.nextProbeAtMs) },
      );
    },
  };
}

export type DispatchActivities = ReturnType<typeof createDispatchActivities>;
