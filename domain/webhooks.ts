/**
 * Webhook delivery rules (docs/api.md Events → Delivery, docs/decisions.md Webhook subscriptions): the retention, the delivery
 * states and their transitions, and which events a subscription wants. Pure: workflows import it.
 */
import { OPERATIONAL_EVENT_TYPES } from './events';
import type { RetrySchedule } from './retry';
import { statesLeadingTo } from './states';

/** Events and deliveries are kept this long; a dead-lettered delivery stays replayable until then. */
export const RETENTION_MS = 30 * 24 * 3600 * 1000;

/** The whole exchange of one attempt (connect, send, response head and the excerpt of the body). */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** How much of a receiver's response body an attempt keeps. */
export const RESPONSE_EXCERPT_BYTES = 1024;

/** A subscription whose every attempt has failed this long is disabled (WEBHOOK_DISABLE_AFTER_MS; 5 days). */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

/** Default rotation grace window. */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;

/**
 * States of a delivery:
 * - `pending`: created, first attempt not finished yet
 * - `retrying`: an attempt failed, another is scheduled (`next_attempt_at`)
 * - `succeeded`: a receiver answered 2xx
 * - `dead_lettered`: every scheduled attempt failed; held, replayable, until the retention ends
 * - `cancelled`: the subscription was disabled or deleted (or the event purged) before it was delivered
 * - `expired`: dead-lettered and never replayed within the retention
 */
export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'dead_lettered', 'cancelled', 'expired'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The whitelist of transitions. A replay moves any state but `pending`/`retrying` back through an attempt. */
const DELIVERY_TRANSITIONS: Record<DeliveryStatus, readonly DeliveryStatus[]> = {
  pending: ['retrying', 'succeeded', 'dead_lettered', 'cancelled'],
  retrying: ['retrying', 'succeeded', 'dead_lettered', 'cancelled'],
  dead_lettered: ['succeeded', 'dead_lettered', 'cancelled', 'expired'],
  succeeded: ['succeeded', 'dead_lettered', 'cancelled'],
  cancelled: ['succeeded', 'dead_lettered', 'cancelled'],
  expired: ['succeeded', 'dead_lettered', 'cancelled'],
};

/** The states a delivery may move to `to` from: the guard on every status write. */
export const statesBefore = (to: DeliveryStatus): DeliveryStatus[] => statesLeadingTo(DELIVERY_TRANSITIONS, to);

export const SUBSCRIPTION_STATUSES = ['active', 'disabled'] as const;

/** `["*"]` subscribes to every event type. */
export const ALL_EVENTS = '*';

/** Whether a subscription wants a type: named, or covered by `*` (which does not cover the operational notices). */
export function wantsEvent(eventTypes: readonly string[], type: string): boolean {
  return eventTypes.includes(type) || (eventTypes.includes(ALL_EVENTS) && !(OPERATIONAL_EVENT_TYPES as string[]).includes(type));
}

/** Input of the delivery workflow: ids only (the body and the secret stay in the database). */
export interface DeliveryWorkflowInput {
  deliveryId: string;
  /**
   * `retry`: the subscription's dispatcher made the first attempt and it failed: the schedule goes on from attempt
   * 2, then the dead letter. `deliver`: the whole schedule from attempt 1 (deliveries queued before dispatchers
   * existed). `replay`: one attempt now (an operator's replay of a delivery whose workflow had ended), then the
   * dead letter if it fails.
   */
  mode: 'retry' | 'deliver' | 'replay';
  /**
   * Attempts already made on the delivery record (a replay continues the count) and when its dead letter expires
   * (the event's retention), as the starter knows them; when absent the workflow asks the database first.
   */
  attemptsSoFar?: number;
  expiresAtMs?: number;
  /** The retry schedule (WEBHOOK_RETRY_SCHEDULE_MS); its last failure dead-letters the delivery. */
  schedule?: RetrySchedule;
  /** The list form runs started before `schedule` was passed carry (delays before each attempt, the first at once). */
  scheduleMs?: readonly number[];
  /** Override of the retention, for tests. */
  retentionMs?: number;
}

export interface DeliveryWorkflowResult {
  deliveryId: string;
  status: Extract<DeliveryStatus, 'succeeded'>;
  attempts: number;
}

/**
 * How a subscription's dispatcher works: the bound on its attempts in flight, its circuit breaker, and how long it
 * stays open without work. Set in configuration and passed to the dispatcher workflow (schedules are data).
 */
export interface DispatchSettings {
  /** First attempts (and, in one worker process, retries) of the subscription in flight at once. */
  maxInFlight: number;
  /** Consecutive failed first attempts that open the circuit: the dispatcher stops and probes with one delivery. */
  circuitFailures: number;
  /** Delays before each probe while the circuit is open; the last repeats. */
  probeScheduleMs: readonly number[];
  /** How long a dispatcher with nothing queued waits for more before its workflow completes. */
  idleMs: number;
  /** Longest one batch activity runs before handing back to the workflow (which may continue as new). */
  batchMs: number;
  /** How long a batch waits for more deliveries once its queue is empty, before it settles idle. */
  lingerMs: number;
}

export const DEFAULT_DISPATCH: DispatchSettings = {
  maxInFlight: 16,
  circuitFailures: 10,
  probeScheduleMs: [30_000, 60_000, 300_000],
  idleMs: 300_000,
  batchMs: 10_000,
  lingerMs: 1_000,
};

/** Input of a subscription's dispatcher workflow. */
export interface DispatcherInput {
  subscriptionId: string;
  settings: DispatchSettings;
  /**
   * The retry schedule of failed first attempts (its first delay, or none: the dead letter) and, in tests, the
   * retention of their retry workflows. Runs started before `schedule` was passed carry `scheduleMs`, or neither.
   */
  retry?: Pick<DeliveryWorkflowInput, 'schedule' | 'scheduleMs' | 'retentionMs'>;
  /** The circuit as a previous run left it (continue-as-new): null closed, else the index of the next probe's delay. */
  probeIndex?: number | null;
  /** Failed first attempts in a row as a previous run left them (continue-as-new), towards opening the circuit. */
  failureRun?: number;
}

/** Why a dispatcher run ended. */
export type DispatcherEnd = 'idle' | 'paused' | 'deleted';

/** What one batch of a dispatcher did. */
export interface BatchResult {
  /** First attempts made: succeeded, and failed (each handed to its own retry workflow). */
  succeeded: number;
  failed: number;
  /** Failed first attempts in a row at the end of the batch (counting on from the run it was given). */
  failureRun: number;
  /**
   * Why the batch stopped: `idle` nothing queued; `budget` it ran its time; `circuit` a run of failures reached the
   * threshold; `probe` the probe was made; `paused` the subscription is disabled (or its plan has no webhooks);
   * `deleted` the subscription or its integration is gone (its queue was cancelled).
   */
  stoppedBy: 'idle' | 'budget' | 'circuit' | 'probe' | 'paused' | 'deleted';
}
