/**
 * The outbox relay: turns recorded events into queued deliveries. It wakes on the `events_recorded` notification
 * (sent when an event's transaction commits) or a short poll, takes undispatched events in production order, and
 * in one transaction queues one delivery per event and subscription that wants it (at the end of the
 * subscription's queue, so first attempts go out in that order) and marks the events dispatched, numbering them in
 * that same order for the public events feed (db/events.ts markDispatched). Only after the
 * commit does it wake the dispatchers that were idle (one signal each; a busy one hears of its new work by a
 * notification at commit). It never starts a workflow per delivery: the queue waits in the database.
 *
 * Every so often it also wakes dispatchers that have work queued but may not be running (a wake lost while
 * Temporal was away, a subscription just enabled, a dispatcher an operator terminated). A relay, worker or Temporal
 * that dies at any point loses nothing: the events stay undispatched until their deliveries are queued, and the
 * sweep wakes what a lost wake left waiting.
 *
 * The relay role runs it (WORKER_ROLES); any number of processes may. One relay is active at a time: it holds a lease row renewed every pass (no lock is held across network calls);
 * another process takes over when the lease lapses.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../config/logger';
import type { Db } from '../../db/client';
import {
  integrationsOfSubscriptions,
  listenForRecordedEvents,
  queueAndMarkDispatched,
  releaseLease,
  takeLease,
  undispatchedEvents,
  type UndispatchedEvent,
} from '../../db/relay';
import { relaySubscriptionsOf, subscriptionsToWake, type QueueItem, type SubscriptionRow } from '../../db/webhooks';
import { deliveryControlOf, wakeDispatcher, type DeliveryControlDeps } from '../../control/webhooks';
import { wantsEvent } from '../../domain/webhooks';
import { eachLimit } from '../each-limit';
import type { RoleContext, RunningRole } from './role';

const LEASE_NAME = 'outbox-relay';

export interface RelayOptions {
  db: Db;
  control: DeliveryControlDeps;
  logger: Logger;
  /** Events per pass. */
  batchSize?: number;
  /** How often it wakes dispatchers with work queued that may not be running, and how old their work must be. */
  sweepMs?: number;
  staleMs?: number;
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
  const batchSize = opts.batchSize ?? 1000;
  const sweepMs = opts.sweepMs ?? 15_000;
  const staleMs = opts.staleMs ?? 60_000;
  let sweptAt = 0;
  /** Subscriptions to wake (their dispatcher was idle when deliveries were queued), until a wake goes through. */
  const toWake = new Map<string, string>();
  const pollMs = opts.pollMs ?? 1_000;
  const leaseMs = opts.leaseMs ?? 15_000;
  const holder = randomUUID();
  const leaseName = opts.scope ? `${LEASE_NAME}:${opts.control.taskQueue}` : LEASE_NAME;
  let stopped = false;
  let wake: (() => void) | undefined;
  let pending = false;

  const listening = listenForRecordedEvents(db, () => {
    pending = true;
    wake?.();
  }).catch((err: unknown) => {
    logger.warn({ err }, 'outbox relay could not LISTEN; polling only');
    return null;
  });

  /** Take or renew the lease; false while another relay holds it. */
  function lease(): Promise<boolean> {
    return takeLease(db, leaseName, holder, leaseMs);
  }

  async function pass(): Promise<number> {
    if (!(await lease())) return 0;
    const scope = opts.scope?.();
    if (scope && scope.length === 0) return 0;
    // The payload (data) comes only with events that may be delivered and have no body yet: the relay serializes
    // the body of each event it queues, stored by the statement that marks it dispatched (one tuple version).
    const batch = await undispatchedEvents(db, { limit: batchSize, organizationIds: scope });
    if (batch.length === 0) return 0;

    const oldest = new Date(Math.min(...batch.map((e) => e.createdAt.getTime())));
    const subs = await relaySubscriptionsOf(db, [...new Set(batch.map((e) => e.integrationId))], oldest);
    // Queued and marked dispatched in one transaction (db/relay.ts queueAndMarkDispatched, which says why the marking
    // comes last); the dispatchers it found idle are woken only once it has committed.
    const idle = await queueAndMarkDispatched(db, wanted(batch, subs), batch);
    for (const id of idle) toWake.set(id, subs.find((s) => s.id === id)!.integrationId);
    return batch.length;
  }

  /**
   * The batch's deliveries: an event goes to the subscriptions that existed, were active and wanted its type when it
   * was recorded, also one disabled since (its delivery waits in the paused queue until the subscription is enabled).
   */
  function wanted(batch: UndispatchedEvent[], subs: SubscriptionRow[]): QueueItem[] {
    const items: QueueItem[] = [];
    for (const event of batch) {
      for (const sub of subs) {
        if (sub.integrationId !== event.integrationId || sub.createdAt > event.createdAt || !wantsEvent(sub.eventTypes, event.type)) continue;
        if (!activeWhenRecorded(sub, event.createdAt)) continue;
        items.push({ event, sub });
      }
    }
    return items;
  }

  /**
   * Whether the subscription was active when an event was recorded at `at`, from when it was last disabled and enabled
   * again: disabled now, it was if the event came before; active, it was unless the event came while it was
   * disabled. (The relay reaches events within moments, so the last toggle is all it needs to know.)
   */
  function activeWhenRecorded(sub: SubscriptionRow, at: Date): boolean {
    if (sub.status !== 'active') return sub.disabledAt !== null && at < sub.disabledAt;
    return !(sub.disabledAt && sub.enabledAt && sub.disabledAt <= at && at < sub.enabledAt);
  }

  /** Wake the dispatchers marked to wake; one that fails stays marked for the next pass. */
  async function wakeAll(): Promise<void> {
    const due = [...toWake];
    await eachLimit(due, 16, async ([id, integrationId]) => {
      await wakeDispatcher(opts.control, { id, integrationId });
      toWake.delete(id);
    });
  }

  /** Dispatchers with work queued that may not be running: marked busy in the database, then woken. */
  async function sweep(): Promise<void> {
    if (Date.now() - sweptAt < sweepMs) return;
    sweptAt = Date.now();
    const scope = opts.scope?.();
    if (scope && scope.length === 0) return;
    const ids = await subscriptionsToWake(db, { staleMs, organizationIds: scope });
    if (ids.length === 0) return;
    for (const r of await integrationsOfSubscriptions(db, ids)) toWake.set(r.id, r.integrationId);
  }

  const loop = (async () => {
    await listening;
    let backoff = 0;
    while (!stopped) {
      pending = false;
      try {
        const n = await pass();
        if (toWake.size > 0) await wakeAll();
        if (n === 0 && (await lease())) {
          await sweep();
          if (toWake.size > 0) await wakeAll();
        }
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
      await releaseLease(db, leaseName, holder).catch(() => {});
    },
  };
}

/** The role as a worker process runs it: the relay over every organization, until shutdown. */
export async function startRelayRole(ctx: RoleContext): Promise<RunningRole> {
  let stop!: () => void;
  const stopping = new Promise<void>((resolve) => (stop = resolve));
  return {
    async run() {
      const relay = startRelay({ db: ctx.db, control: deliveryControlOf(ctx.client, ctx.config), logger: ctx.logger });
      await stopping;
      await relay.stop();
    },
    shutdown: () => stop(),
    close: async () => {},
  };
}
