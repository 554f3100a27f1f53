/** The API process: configuration, database pool, lazy Temporal client, the app on HOST:PORT, graceful shutdown. */
import type { AddressInfo } from 'node:net';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../config/logger';
import { closeDb, createDb } from '../db/client';
import { createKeyring } from '../domain/secrets';
import { serveMetrics, type MetricsServer } from '../observability/server';
import { startTracing } from '../observability/tracing';
import { createApp } from './app';
import { serveApi } from './server';
import { lazyTemporalClient } from './temporal';

const config = loadConfigOrExit({ serving: true });
const logger = createLogger('api', { level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
const tracing = config.OTEL_EXPORTER_OTLP_ENDPOINT
  ? startTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: 'propsync-api', sampler: config })
  : undefined;
const db = createDb(config.DATABASE_URL, {
  max: config.DB_POOL_MAX,
  applicationName: 'propsync-api',
  statementTimeoutMs: config.API_STATEMENT_TIMEOUT_MS || config.DB_STATEMENT_TIMEOUT_MS,
  idleInTransactionTimeoutMs: config.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
});
const temporal = lazyTemporalClient(config, { tracing: tracing !== undefined });
const app = createApp({ config, db, temporal, logger, secrets: createKeyring(config.ENCRYPTION_KEYS) });

const server = serveApi({ fetch: app.fetch, reads: app.reads, hostname: config.HOST, port: config.PORT, bases: config }, (info: AddressInfo) => {
  logger.info({ address: `http://${info.address}:${info.port}`, docs: `${config.PUBLIC_BASE_URL}/docs` }, 'API listening');
});
server.on('error', (err) => {
  logger.fatal({ err }, 'API could not listen');
  process.exit(1);
});
let metricsServer: MetricsServer | undefined;
if (config.METRICS_PORT !== undefined) {
  serveMetrics({
    registry: app.metrics.registry,
    host: config.METRICS_HOST,
    port: config.METRICS_PORT,
    onError: (err) => logger.error({ err }, 'metrics could not be collected'),
  }).then(
    (m) => {
      metricsServer = m;
      logger.info({ address: `http://${config.METRICS_HOST}:${m.port}/metrics` }, 'API metrics listening');
    },
    (err: unknown) => {
      logger.fatal({ err }, 'API metrics could not listen');
      process.exit(1);
    },
  );
}

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'API shutting down');
  // In-flight requests finish; a second signal or 10 s without finishing ends the process anyway.
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  // Held polls (Prefer: wait) answer with their Operation's state now rather than hold the shutdown up.
  await app.releaseHeldPolls();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await metricsServer?.close();
  await app.close();
  await temporal.close();
  await closeDb(db);
  await tracing?.shutdown();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
