/**
 * The worker process (`npm run worker`): connects to Postgres and Temporal, registers the search attributes,
 * reconciles every integration's sync schedule, and runs sync workflows and activities until SIGINT/SIGTERM,
 * after which running activities get a grace period and then resume on another worker from their last page.
 */
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../config/logger';
import { closeDb, createDb } from '../db/client';
import { createPageReader } from '../activities/page-reader';
import { createWorker, reconcileSchedules, registerSearchAttributes } from './index';

const config = loadConfigOrExit();
const logger = createLogger('worker', { level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};
// The SDK's own messages (activity failures, shutdown) go to the same log, at warnings and above.
Runtime.install({
  logger: new DefaultLogger('WARN', (entry) => logger[PINO_LEVEL[entry.level]]({ ...entry.meta, sdk: true }, entry.message)),
});

/** Temporal may still be starting (npm start, compose): retry for a while before giving up. */
async function connect(address: string): Promise<NativeConnection> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await NativeConnection.connect({ address });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      logger.warn({ address }, 'Temporal not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
}

async function main() {
  const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
  const db = createDb(config.DATABASE_URL, { max: config.DB_POOL_MAX, applicationName: 'propsync-worker' });
  const connection = await connect(address);
  const pages = createPageReader({ threads: config.WORKER_READ_THREADS });
  try {
    const added = await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
    if (added.length > 0) logger.info({ added }, 'registered search attributes');
    if (config.WORKER_RECONCILE_SCHEDULES) {
      const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
      const r = await reconcileSchedules({ db, client, taskQueue: config.TEMPORAL_TASK_QUEUE, logger });
      logger.info(r, 'sync schedules reconciled');
    }
    const worker = await createWorker({ config, db, connection, pages });
    logger.info({ address, namespace: config.TEMPORAL_NAMESPACE, task_queue: config.TEMPORAL_TASK_QUEUE }, 'worker started');
    // Worker.run() installs the SIGINT/SIGTERM handlers and returns once shutdown completes.
    await worker.run();
    logger.info('worker stopped');
  } finally {
    await pages.close();
    await connection.close();
    await closeDb(db);
  }
}

main().catch((err) => {
  logger.fatal({ err }, 'worker failed');
  process.exit(1);
});
