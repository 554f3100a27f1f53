/**
 * The floor's worker process: `node --import tsx bench/lib/floor-worker.ts [webhooks|writes]` with TEMPORAL_ADDRESS
 * and TEMPORAL_TASK_QUEUE set. One worker on that task queue running bench/lib/floor-workflow.ts and its no-op
 * activity, with the task-queue settings of the webhook delivery worker (worker/roles/webhooks.ts createWebhookWorker; the
 * default) or of the write worker (createWriteWorker), and the SDK logging of worker/main.ts, so the only difference
 * from the real worker is the work itself.
 */
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfigOrExit } from '../../config';
import type { FloorActivities } from './floor-workflow';

const config = loadConfigOrExit();
if (!config.TEMPORAL_ADDRESS) {
  console.error('floor-worker: TEMPORAL_ADDRESS is required');
  process.exit(2);
}

/** The task-queue settings of the worker the floor stands for (keep in step with worker/roles/webhooks.ts and writes.ts). */
const SETTINGS = {
  /** createWebhookWorker's. */
  webhooks: {
    maxConcurrentActivityTaskExecutions: config.WEBHOOK_MAX_ACTIVITIES,
    maxConcurrentWorkflowTaskExecutions: 40,
    maxCachedWorkflows: 2000,
    shutdownGraceTime: '15 seconds',
  },
  /** createWriteWorker's. */
  writes: {
    maxConcurrentActivityTaskExecutions: config.WRITE_MAX_ACTIVITIES,
    maxCachedWorkflows: 1000,
    shutdownGraceTime: '10 seconds',
  },
} as const;
const like = process.argv[2] ?? 'webhooks';
if (like !== 'webhooks' && like !== 'writes') {
  console.error(`floor-worker: expected webhooks or writes, not ${like}`);
  process.exit(2);
}
const FLOOR_WORKER_OPTIONS = SETTINGS[like];

Runtime.install({ logger: new DefaultLogger('WARN', (entry) => console.error(`[floor-worker] ${entry.level} ${entry.message}`)) });

const activities: FloorActivities = {
  async noop() {},
};

const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
const worker = await Worker.create({
  connection,
  namespace: config.TEMPORAL_NAMESPACE,
  taskQueue: config.TEMPORAL_TASK_QUEUE,
  workflowsPath: fileURLToPath(new URL('./floor-workflow.ts', import.meta.url)),
  activities,
  ...FLOOR_WORKER_OPTIONS,
});
console.log(`floor worker started on ${config.TEMPORAL_TASK_QUEUE} with the ${like} worker's settings ${JSON.stringify(FLOOR_WORKER_OPTIONS)}`);
// Worker.run() installs the SIGINT/SIGTERM handlers and returns once shutdown completes.
await worker.run();
await connection.close();
