/**
 * A webhook worker process for the fault tests: the real delivery worker and outbox relay (the same code
 * worker/main.ts runs), with the relay scoped to the organizations named on the command line so that it leaves
 * other test files' events alone. Runs until it is killed.
 */
import { NativeConnection } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { loadConfigOrExit } from '../../config';
import { createLogger } from '../../config/logger';
import { deliveryControlOf } from '../../control/webhooks';
import { createDb } from '../../db/client';
import { createWebhookWorker } from '../../worker/roles/webhooks';
import { startRelay } from '../../worker/roles/relay';

const config = loadConfigOrExit();
const orgs = process.argv.slice(2);
const logger = createLogger('webhook-child', { level: config.LOG_LEVEL });
const db = createDb(config.DATABASE_URL, { max: 5, applicationName: 'propsync-webhook-child' });
const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS! });
const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
const webhooks = await createWebhookWorker({ config, db, connection, logger });
startRelay({ db, control: deliveryControlOf(client, config), logger, scope: () => orgs, pollMs: 200 });
console.error('webhook-child ready');
await webhooks.run();
