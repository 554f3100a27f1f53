/**
 * The writes role: write Operations and their sweeper on the write task queue, with activity slots of their own so a
 * long sync activity never delays a write; at start-up, the sweeper's schedule.
 */
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createWriteActivities } from '../../activities/operations';
import { closedWritesStillOpen, closeReasonOf, ensureSweepSchedule, startWriteWorkflow } from '../../control/operations';
import { retrySchedulesOf } from '../../config';
import { writeTaskQueueOf } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import type { RoleContext, RunningRole, WorkerDeps } from './role';
import { createWorkflowWorker, workerRole } from './temporal-worker';

/**
 * The worker of writes (Operations) and of their sweeper, on their own task queue and with their own activity
 * slots, so a long sync activity never delays a write.
 */
export async function createWriteWorker(deps: WorkerDeps, bundle?: { codePath: string }): Promise<Worker> {
  const { config } = deps;
  const client = new Client({ connection: deps.connection, namespace: config.TEMPORAL_NAMESPACE });
  const taskQueue = writeTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
  const activities = createWriteActivities({
    db: deps.db,
    secrets: createKeyring(config.ENCRYPTION_KEYS),
    sourceTimeoutMs: config.WRITE_SOURCE_TIMEOUT_MS,
    metrics: deps.metrics,
    startWorkflow: async (op) => {
      await startWriteWorkflow({ client, taskQueue, schedule: retrySchedulesOf(config).write }, op);
    },
    workflows: {
      // A day back: the sweep runs every minute, and a Temporal that was away for hours is caught up on its return.
      closedStillOpen: () => closedWritesStillOpen(client, { withinMs: 24 * 3600_000, limit: 500 }),
      closeReasonOf: (operationId, runId) => closeReasonOf(client, operationId, runId),
    },
  });
  return createWorkflowWorker(deps, bundle, {
    taskQueue,
    activities,
    maxConcurrentActivityTaskExecutions: config.WRITE_MAX_ACTIVITIES,
    maxCachedWorkflows: 1000,
    shutdownGraceTime: '10 seconds',
  });
}

/** The role as a worker process runs it. */
export async function startWritesRole(ctx: RoleContext): Promise<RunningRole> {
  const worker = await createWriteWorker(ctx, { codePath: ctx.codePath });
  return workerRole(worker, { reconcile: () => ensureSweepSchedule({ client: ctx.client, taskQueue: writeTaskQueueOf(ctx.config.TEMPORAL_TASK_QUEUE) }) });
}
