/**
 * The worker process (`npm run worker`): connects to Postgres and Temporal, registers the search attributes, and runs
 * the roles WORKER_ROLES names (all by default; worker/index.ts runRoles): sync workflows on the sync task queue,
 * webhook dispatchers and deliveries, writes and automation runs each on their own, and the outbox relay that queues
 * a delivery per recorded event and subscription and wakes the subscriptions' dispatchers. Each role reconciles its
 * schedules in the background once it polls. Runs until SIGINT/SIGTERM.
 * Compiled (`node dist/worker.mjs`), it runs the workflow bundle `npm run build` made; from source, it bundles them first.
 */
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../config/logger';
import { temporalConnectionOptions } from '../config/temporal';
import { closeDb, createDb } from '../db/client';
import { registerSearchAttributes, runRoles } from './index';
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
/**
 * What the SDK warns of by design here: the webhook role's dispatch worker runs activities only (a subscription's
 * batches), and the SDK says so at every start. Logged at info, so that a warning at start-up means something.
 */
const EXPECTED_SDK_WARNINGS = ['No workflows registered, not polling for workflow tasks'];
// The SDK's own messages (activity failures, shutdown) go to the same log, at warnings and above.
Runtime.install({
  logger: new DefaultLogger('WARN', (entry) => {
    const level = entry.level === 'WARN' && EXPECTED_SDK_WARNINGS.includes(entry.message) ? 'info' : PINO_LEVEL[entry.level];
    logger[level]({ ...entry.meta, sdk: true }, entry.message);
  }),
  ...(sdkMetricsPort === undefined
    ? {}
    : {
        telemetryOptions: {
          metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkMetricsPort}`, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } },
        },
      }),
});
const { registry, metrics } = createWorkerMetrics({ processMetrics: config.WORKER_METRICS_PORT !== undefined });
const tracing = config.OTEL_EXPORTER_OTLP_ENDPOINT
  ? startTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: 'propsync-worker', sampler: config })
  : undefined;

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
  const db = createDb(config.DATABASE_URL, {
    max: config.DB_POOL_MAX,
    applicationName: 'propsync-worker',
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    idleInTransactionTimeoutMs: config.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
  });
  const connection = await connect(address);
  let metricsServer: MetricsServer | undefined;
  try {
    const added = await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
    if (added.length > 0) logger.info({ added }, 'registered search attributes');
    await runRoles({ config, db, connection, logger, metrics, tracing }, async () => {
      if (config.WORKER_METRICS_PORT === undefined) return;
      metricsServer = await serveMetrics({
        registry,
        host: config.METRICS_HOST,
        port: config.WORKER_METRICS_PORT,
        extraUrl: sdkMetricsPort === undefined ? undefined : `http://127.0.0.1:${sdkMetricsPort}/metrics`,
        onError: (err) => logger.error({ err }, 'metrics could not be collected'),
      });
      logger.info({ address: `http://${config.METRICS_HOST}:${metricsServer.port}/metrics` }, 'worker metrics listening');
    });
    logger.info('worker stopped');
  } finally {
    await metricsServer?.close();
    await connection.close();
    await closeDb(db);
    await tracing?.shutdown();
  }
}

main().catch((err) => {
  logger.fatal({ err }, 'worker failed');
  process.exit(1);
});
