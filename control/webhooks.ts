/**
 * Client-side control of webhook deliveries: waking a subscription's dispatcher (the outbox relay when it queues
 * deliveries, the admin API when a subscription is enabled or a replay queues events), starting the retry workflow of
 * a failed first attempt (the dispatcher's batches), replaying a delivery (a signal to its open workflow, or a new
 * run of it when it has ended), and the retention clean-up's schedule.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { retrySchedulesOf, type Config } from '../config';
import type { DeliveryRow } from '../db/webhooks';
import {
  dispatcherWorkflowIdOf,
  PURGE_SCHEDULE_ID,
  RECHECK_SIGNAL,
  REPLAY_SIGNAL,
  WAKE_SIGNAL,
  SA_DELIVERY_STATUS,
  SA_EVENT_TYPE,
  SA_INTEGRATION_ID,
  SA_SUBSCRIPTION_ID,
  deliveryWorkflowIdOf,
  webhookTaskQueueOf,
} from '../domain/contract';
import { delayAfter, type RetrySchedule } from '../domain/retry';
import { RETENTION_MS, type DeliveryStatus, type DeliveryWorkflowInput, type DispatchSettings } from '../domain/webhooks';
import { dispatchWebhooks } from '../workflows/dispatcher';
import { deliverWebhook, purgeRetention } from '../workflows/webhook';
import { ensureIntervalSchedule } from './schedules';

export interface DeliveryControlDeps {
  client: Client;
  /** The webhook task queue (webhookTaskQueueOf the sync queue). */
  taskQueue: string;
  /** The retry schedule (retrySchedulesOf(config).webhook), passed into every delivery and dispatcher workflow. */
  schedule: RetrySchedule;
  /** Test override of the retention, passed into every delivery workflow. */
  overrides?: Pick<DeliveryWorkflowInput, 'retentionMs'>;
  /** How dispatchers work (passed into each). */
  dispatch: DispatchSettings;
}

/** Delivery control for a deployment: its webhook task queue, its dispatchers' settings and its retry schedule. */
export function deliveryControlOf(client: Client, config: Config): DeliveryControlDeps {
  return {
    client,
    taskQueue: webhookTaskQueueOf(config.TEMPORAL_TASK_QUEUE),
    schedule: retrySchedulesOf(config).webhook,
    dispatch: {
      maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
      circuitFailures: config.WEBHOOK_CIRCUIT_FAILURES,
      probeScheduleMs: config.WEBHOOK_PROBE_SCHEDULE_MS,
      idleMs: config.WEBHOOK_DISPATCH_IDLE_MS,
      batchMs: config.WEBHOOK_BATCH_MS,
      lingerMs: config.WEBHOOK_LINGER_MS,
    },
  };
}

/**
 * Wake a subscription's dispatcher: a signal to the running one, or a new run when none is (signal-with-start under
 * the subscription's dispatcher id). Idempotent; a wake with nothing queued costs one batch that finds nothing.
 */
export async function wakeDispatcher(deps: DeliveryControlDeps, sub: { id: string; integrationId: string }): Promise<void> {
  await deps.client.workflow.signalWithStart(dispatchWebhooks, {
    taskQueue: deps.taskQueue,
    workflowId: dispatcherWorkflowIdOf(sub.id),
    args: [{ subscriptionId: sub.id, settings: deps.dispatch, retry: { schedule: deps.schedule, ...deps.overrides } }],
    signal: WAKE_SIGNAL,
    signalArgs: [],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [
      { key: SA_INTEGRATION_ID, value: sub.integrationId },
      { key: SA_SUBSCRIPTION_ID, value: sub.id },
    ],
  });
}

type DeliveryRef = Pick<DeliveryRow, 'id' | 'organizationId' | 'integrationId' | 'subscriptionId' | 'eventType' | 'attempts'> & {
  /** When the delivery's event was recorded: its dead letter expires with the event's retention. */
  eventCreatedAt: Date;
};

function inputOf(deps: DeliveryControlDeps, d: DeliveryRef, mode: DeliveryWorkflowInput['mode']): DeliveryWorkflowInput {
  const retention = deps.overrides?.retentionMs ?? RETENTION_MS;
  return { deliveryId: d.id, mode, attemptsSoFar: d.attempts, expiresAtMs: d.eventCreatedAt.getTime() + retention, schedule: deps.schedule, ...deps.overrides };
}

/** DeliveryStatus is set once a delivery leaves the happy path (a first attempt that succeeds never sets it). */
function searchAttributes(d: Pick<DeliveryRef, 'integrationId' | 'subscriptionId' | 'eventType'>, status?: DeliveryStatus) {
  return [
    { key: SA_INTEGRATION_ID, value: d.integrationId },
    { key: SA_SUBSCRIPTION_ID, value: d.subscriptionId },
    { key: SA_EVENT_TYPE, value: d.eventType },
    ...(status ? [{ key: SA_DELIVERY_STATUS, value: status }] : []),
  ];
}

/**
 * Start the workflow of a delivery whose first attempt (made by its subscription's dispatcher) failed: it goes on
 * with attempt 2 on the schedule. Starting it twice is a no-op (the id is the delivery id and a used id is
 * refused), so a batch can hand over again whatever it is not sure it handed over. False when already started.
 */
export async function startRetry(deps: DeliveryControlDeps, d: Omit<DeliveryRef, 'attempts' | 'organizationId'>): Promise<boolean> {
  const retention = deps.overrides?.retentionMs ?? RETENTION_MS;
  const input: DeliveryWorkflowInput = {
    deliveryId: d.id,
    mode: 'retry',
    attemptsSoFar: 1,
    expiresAtMs: d.eventCreatedAt.getTime() + retention,
    schedule: deps.schedule,
    ...deps.overrides,
  };
  try {
    await deps.client.workflow.start(deliverWebhook, {
      taskQueue: deps.taskQueue,
      workflowId: deliveryWorkflowIdOf(d.id),
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: searchAttributes(d, delayAfter(deps.schedule, 1) !== null ? 'retrying' : 'dead_lettered'),
    });
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/**
 * Replay a delivery: one more attempt now, with the same event id and bytes, signed with the current secrets. An
 * open workflow (retrying, or holding the dead letter) gets a signal; one that has ended is run again under the
 * same id, in replay mode.
 */
export async function replayDelivery(deps: DeliveryControlDeps, d: DeliveryRef & Pick<DeliveryRow, 'status'>): Promise<void> {
  const input = inputOf(deps, d, 'replay');
  await deps.client.workflow.signalWithStart(deliverWebhook, {
    taskQueue: deps.taskQueue,
    workflowId: deliveryWorkflowIdOf(d.id),
    args: [input],
    signal: REPLAY_SIGNAL,
    signalArgs: [],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: searchAttributes(d, d.status),
  });
}

/**
 * Ask a cancelled delivery's workflow, asleep until its next attempt, to look at its row now: it ends `cancelled`
 * without sending. One that has ended already (or never started) needs nothing.
 */
export async function recheckDelivery(deps: Pick<DeliveryControlDeps, 'client'>, deliveryId: string): Promise<void> {
  try {
    await deps.client.workflow.getHandle(deliveryWorkflowIdOf(deliveryId)).signal(RECHECK_SIGNAL);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}

/** The daily retention clean-up (events and deliveries older than 30 days). Idempotent. */
export async function ensurePurgeSchedule(deps: { client: Client; taskQueue: string }): Promise<void> {
  await ensureIntervalSchedule(deps.client, {
    scheduleId: PURGE_SCHEDULE_ID,
    workflowType: purgeRetention,
    args: [{}],
    taskQueue: deps.taskQueue,
    every: '1 day',
    catchupWindow: '1 hour',
  });
}
