/**
 * The floor's worker process: `node --import tsx bench/lib/floor-worker.ts` with TEMPORAL_ADDRESS and
 * TEMPORAL_TASK_QUEUE set. One worker on that task queue running bench/lib/floor-workflow.ts and its no-op activity,
 * with the task-queue settings of the webhook delivery worker (worker/index.ts createWebhookWorker) and the SDK
 * logging of worker/main.ts, so the only difference from the delivery worker is the work itself.
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

/** The delivery worker's task-queue settings (keep in step with createWebhookWorker). */
const FLOOR_WORKER_OPTIONS = {
  maxConcurrentActivityTaskExecutions: config.WEBHOOK_MAX_ACTIVITIES,
  maxConcurrentWorkflowTaskExecutions: 40,
  maxCachedWorkflows: 2000,
  shutdownGraceTime: '15 seconds',
} as const;

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
console.log(`floor worker started on ${config.TEMPORAL_TASK_QUEUE} with ${JSON.stringify(FLOOR_WORKER_OPTIONS)}`);
// Worker.run() installs the SIGINT/SIGTERM handlers and returns once shutdown completes.
await worker.run();
await connection.close();
