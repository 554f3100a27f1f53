/**
 * The worker process (`npm run worker`): connects to Postgres and Temporal, registers the search attributes,
 * reconciles every integration's sync schedule, every automation's, the retention clean-up's and the write sweeper's, and runs its workers until
 * SIGINT/SIGTERM: sync workflows on the sync task queue, webhook dispatchers and deliveries, writes and automation runs each on their own; plus the
 * outbox relay that queues a delivery per recorded event and subscription and wakes the subscriptions' dispatchers. After a signal, running activities get a grace period
 * and then resume on another worker (a sync from its last page; a delivery attempt is recorded as lost and retried).
 * Compiled (`node dist/worker.mjs`), it runs the workflow bundle `npm run build` made; from source, it bundles them first.
 */
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../config/logger';
import { temporalConnectionOptions } from '../config/temporal';
import { closeDb, createDb } from '../db/client';
import { createPageReader } from '../activities/page-reader';
import { automationControlOf, reconcileAutomationSchedules } from '../control/automations';
import { ensureSweepSchedule } from '../control/operations';
import { deliveryControlOf, ensurePurgeSchedule } from '../control/webhooks';
import { automationTaskQueueOf, webhookTaskQueueOf, writeTaskQueueOf } from '../domain/contract';
import {
  createAutomationWorker,
  createWebhookWorker,
  createWorker,
  createWriteWorker,
  reconcileSchedules,
  registerSearchAttributes,
  withWorkflowBundle,
} from './index';
import { startRelay, type Relay } from './relay';
import { createWorkerMetrics } from '../observability/metrics';
import { freeLoopbackPort, serveMetrics, type MetricsServer } from '../observability/server';
import { startTracing } from '../observability/tracing';

const config = loadConfigOrExit({ serving: true });
const logger = createLogger('worker', { level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};
/**
 * With WORKER_METRICS_PORT, the SDK's native runtime exports its `temporal_*` metrics (task slots, poll and
 * schedule-to-start latencies) in the Prometheus format on a loopback port of its own; the worker's /metrics serves
 * them after its own, so Prometheus scrapes one endpoint. Counters end in _total and durations are in seconds.
 */
const sdkMetricsPort = config.WORKER_METRICS_PORT === undefined ? undefined : await freeLoopbackPort();
// The SDK's own messages (activity failures, shutdown) go to the same log, at warnings and above.
Runtime.install({
  logger: new DefaultLogger('WARN', (entry) => logger[PINO_LEVEL[entry.level]]({ ...entry.meta, sdk: true }, entry.message)),
  ...(sdkMetricsPort === undefined
    ? {}
    : {
        telemetryOptions: {
          metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkMetricsPort}`, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } },
        },
      }),
});
const { registry, metrics } = createWorkerMetrics();
const tracing = config.OTEL_EXPORTER_OTLP_ENDPOINT ? startTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: 'propsync-worker' }) : undefined;

/** The SDK's exposition text, or nothing when it cannot be read (the worker's own metrics are served anyway). */
async function sdkMetrics(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${sdkMetricsPort}/metrics`, { signal: AbortSignal.timeout(2_000) });
  return res.ok ? res.text() : '';
}

/** Temporal may still be starting (npm start, compose): retry for a while before giving up. */
async function connect(address: string): Promise<NativeConnection> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await NativeConnection.connect({ ...temporalConnectionOptions(config), address });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      logger.warn({ address }, 'Temporal not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
}

async function main() {
  const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
  const db = createDb(config.DATABASE_URL, { max: config.DB_POOL_MAX, applicationName: 'propsync-worker', statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS, idleInTransactionTimeoutMs: config.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS });
  const connection = await connect(address);
  const pages = createPageReader({
    threads: config.WORKER_READ_THREADS,
    // Each sync page in flight fails with it too (its activity's failure says why); this says it once in the log.
    onThreadError: (err) => logger.error({ err }, 'a page-reading thread failed'),
  });
  try {
    const added = await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
    if (added.length > 0) logger.info({ added }, 'registered search attributes');
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    const webhookQueue = webhookTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
    const writeQueue = writeTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
    const automationQueue = automationTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
    /**
     * Schedules are brought in line with the database after the workers poll, in the background: a deploy with
     * thousands of integrations is not a cold start, and every step is idempotent (another replica may do the same).
     */
    const reconcile = async () => {
      await ensurePurgeSchedule({ client, taskQueue: webhookQueue });
      await ensureSweepSchedule({ client, taskQueue: writeQueue });
      const r = await reconcileSchedules({ db, client, taskQueue: config.TEMPORAL_TASK_QUEUE, logger });
      logger.info(r, 'sync schedules reconciled');
      const a = await reconcileAutomationSchedules({
        ...automationControlOf(client, config),
        db,
        log: (err, id) => logger.error({ err, automation_id: id }, 'could not reconcile the automation schedule'),
      });
      logger.info(a, 'automation schedules reconciled');
    };
    // Compiled, the bundle `npm run build` made (no webpack in a production worker); from source, bundled now.
    const [worker, webhooks, writes, exports] = await withWorkflowBundle(config, tracing !== undefined, async (codePath, how) => {
      if (how === 'prebuilt') logger.info({ workflow_bundle: codePath }, 'using the prebuilt workflow bundle');
      else logger.info('bundled the workflows at start-up');
      return Promise.all([
        createWorker({ config, db, connection, pages, metrics, tracing }, { codePath }),
        createWebhookWorker({ config, db, connection, logger, metrics, tracing }, { codePath }),
        createWriteWorker({ config, db, connection, metrics, tracing }, { codePath }),
        createAutomationWorker({ config, db, connection, metrics, tracing }, { codePath }),
      ]);
    });
    let metricsServer: MetricsServer | undefined;
    if (config.WORKER_METRICS_PORT !== undefined) {
      metricsServer = await serveMetrics({
        registry,
        host: config.METRICS_HOST,
        port: config.WORKER_METRICS_PORT,
        extra: sdkMetrics,
        onError: (err) => logger.error({ err }, 'metrics could not be collected'),
      });
      logger.info({ address: `http://${config.METRICS_HOST}:${metricsServer.port}/metrics` }, 'worker metrics listening');
    }
    let relay: Relay | undefined;
    if (config.WEBHOOK_RELAY) relay = startRelay({ db, control: deliveryControlOf(client, config), logger });
    logger.info({ address, namespace: config.TEMPORAL_NAMESPACE, task_queue: config.TEMPORAL_TASK_QUEUE, webhook_task_queue: webhookQueue, write_task_queue: writeQueue, automation_task_queue: automationQueue }, 'worker started');
    try {
      // Worker.run() installs the SIGINT/SIGTERM handlers and returns once shutdown completes; a signal stops them all.
      const running = Promise.all([worker.run(), webhooks.run(), writes.run(), exports.run()]);
      if (config.WORKER_RECONCILE_SCHEDULES) reconcile().catch((err: unknown) => logger.error({ err }, 'could not reconcile the schedules'));
      await running;
    } finally {
      await relay?.stop();
      await webhooks.close();
      await metricsServer?.close();
    }
    logger.info('worker stopped');
  } finally {
    await pages.close();
    await connection.close();
    await closeDb(db);
    await tracing?.shutdown();
  }
}

main().catch((err) => {
  logger.fatal({ err }, 'worker failed');
  process.exit(1);
});
