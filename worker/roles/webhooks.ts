/**
 * The webhooks role: the subscriptions' dispatchers and the delivery workflows, with their retry and replay attempts,
 * on the webhook task queue, and the dispatchers' batches on the dispatch task queue; at start-up, the schedule of
 * the retention clean-up (purge), which runs on the webhook task queue. The outbox relay that feeds them is a role of
 * its own (relay.ts), so delivery can scale out without more relays standing by.
 */
import { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createDispatchActivities, type RetryRef } from '../../activities/dispatch';
import { createInFlight } from '../../activities/in-flight';
import { createQueuedListener } from '../../activities/queued-listener';
import { createSender, type Resolver, type Sender } from '../../activities/webhook-http';
import { createWebhookActivities } from '../../activities/webhooks';
import { deliveryControlOf, ensurePurgeSchedule, recheckDelivery, startRetry } from '../../control/webhooks';
import { listenForCancelled } from '../../db/dispatch';
import type { Logger } from '../../config/logger';
import { dispatchTaskQueueOf, webhookTaskQueueOf } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import { eachLimit } from '../each-limit';
import { telemetryOf } from '../telemetry';
import type { RoleContext, RunningRole, WorkerDeps } from './role';
import { createWorkflowWorker } from './temporal-worker';

export interface WebhookWorkerDeps extends WorkerDeps {
  /** DNS resolution for deliveries (tests hand in a resolver that maps names to loopback). */
  resolver?: Resolver;
  logger?: Logger;
}

export interface WebhookWorker {
  /** Dispatchers and delivery workflows, and the retry and replay attempts, on the webhook task queue. */
  worker: Worker;
  /** The dispatchers' batches, on the dispatch task queue with slots of their own. */
  dispatch: Worker;
  /** Runs both until shutdown (a signal, or shutdown()). */
  run(): Promise<void>;
  shutdown(): void;
  /** Closes what the activities hold (the LISTEN, the HTTP pools); call after the workers stopped. */
  close(): Promise<void>;
}

/** Handing failed first attempts to their workflows: this many starts in flight at once. */
const RETRY_START_LANES = 16;

/**
 * The workers of webhook delivery, on task queues of their own, so that a long sync never delays a webhook: the
 * dispatchers' batches on one (first attempts, with WEBHOOK_MAX_DISPATCHERS slots), the workflows and the retry
 * attempts on the other (WEBHOOK_MAX_ACTIVITIES slots): retries of a failing receiver never take a batch's slot.
 */
export async function createWebhookWorker(deps: WebhookWorkerDeps, bundle?: { codePath: string }): Promise<WebhookWorker> {
  const { config } = deps;
  const sender: Sender = createSender({ resolver: deps.resolver });
  const inFlight = createInFlight();
  const queued = createQueuedListener(deps.db);
  const logger = deps.logger;
  const log = logger ? (fields: Record<string, unknown>, msg: string) => logger.debug(fields, msg) : undefined;
  const secrets = createKeyring(config.ENCRYPTION_KEYS);
  const taskQueue = webhookTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
  const control = deliveryControlOf(new Client({ connection: deps.connection, namespace: config.TEMPORAL_NAMESPACE }), config);
  const health = {
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
    notice: logger ? (fields: Record<string, unknown>, msg: string) => logger.warn(fields, msg) : undefined,
  };
  const activities = createWebhookActivities({
    db: deps.db,
    sender,
    secrets,
    inFlight,
    maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
    log,
    metrics: deps.metrics,
    ...health,
  });
  const dispatchActivities = createDispatchActivities({
    ...health,
    db: deps.db,
    sender,
    secrets,
    inFlight,
    queued,
    log,
    metrics: deps.metrics,
    startRetries: (refs: RetryRef[]) => eachLimit(refs, RETRY_START_LANES, async (d) => void (await startRetry(control, d))),
  });
  // Cancelled deliveries' workflows are told at once, rather than finding out at their next attempt's time.
  const cancelled = listenForCancelled(deps.db, (ids) => {
    eachLimit(ids, RETRY_START_LANES, (id) => recheckDelivery(control, id)).catch((err: unknown) =>
      logger?.warn({ err, deliveries: ids.length }, 'cancelled deliveries not signalled: their workflows end at their next attempt instead'),
    );
  }).then((l) => {
    if (!l) logger?.warn({}, 'no LISTEN for cancelled deliveries: their workflows end at their next attempt rather than at once');
    return l;
  });
  const worker = await createWorkflowWorker(deps, bundle, {
    taskQueue,
    activities,
    maxConcurrentActivityTaskExecutions: config.WEBHOOK_MAX_ACTIVITIES,
    maxConcurrentWorkflowTaskExecutions: 40,
    // Dead letters sit open for weeks: keep the cache for the busy ones, evict the idle.
    maxCachedWorkflows: 2000,
    shutdownGraceTime: '15 seconds',
  });
  // Activities only: no workflow bundle.
  const dispatch = await Worker.create({
    connection: deps.connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: dispatchTaskQueueOf(taskQueue),
    activities: dispatchActivities,
    interceptors: telemetryOf(deps.tracing).interceptors,
    maxConcurrentActivityTaskExecutions: config.WEBHOOK_MAX_DISPATCHERS,
    // A batch hands back within its budget (WEBHOOK_BATCH_MS, 10 s) plus the 10 s of its last requests.
    shutdownGraceTime: '25 seconds',
  });
  return {
    worker,
    dispatch,
    async run() {
      await Promise.all([worker.run(), dispatch.run()]);
    },
    shutdown() {
      for (const w of [worker, dispatch]) if (w.getState() === 'RUNNING') w.shutdown();
    },
    async close() {
      sender.close();
      await queued.close();
      await (await cancelled)?.unlisten().catch(() => {});
    },
  };
}

/** The role as a worker process runs it. */
export async function startWebhooksRole(ctx: RoleContext): Promise<RunningRole> {
  const webhooks = await createWebhookWorker(ctx, { codePath: ctx.codePath });
  return {
    run: () => webhooks.run(),
    shutdown: () => webhooks.shutdown(),
    close: () => webhooks.close(),
    reconcile: () => ensurePurgeSchedule({ client: ctx.client, taskQueue: webhookTaskQueueOf(ctx.config.TEMPORAL_TASK_QUEUE) }),
  };
}
