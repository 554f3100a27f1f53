/** Entry point of the sandbox PMS (`npm run sandbox`): listens on SANDBOX_PORT against DATABASE_URL. */
import { loadConfigOrExit } from '../config';
import { createLogger } from '../config/logger';
import { startSandbox } from './server';

const cfg = loadConfigOrExit();
const logger = createLogger('sandbox', { level: cfg.LOG_LEVEL, pretty: cfg.LOG_PRETTY });
const sandbox = await startSandbox({
  databaseUrl: cfg.DATABASE_URL,
  port: cfg.SANDBOX_PORT,
  host: cfg.HOST,
  controlToken: cfg.SANDBOX_CONTROL_TOKEN,
  slowMs: cfg.SANDBOX_SLOW_MS,
  logger,
});
logger.info({ url: sandbox.url }, 'sandbox PMS listening');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'sandbox PMS stopping');
    void sandbox.close().then(() => process.exit(0));
  });
}
