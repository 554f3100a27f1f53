/**
 * The writes role: write Operations and their sweeper on the write task queue, with activity slots of their own so a
 * long sync activity never delays a write; at start-up, the sweeper's schedule.
 */
import { Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { createWriteActivities } from '../../activities/operations';
import { closedWritesStillOpen, closeReasonOf, ensureSweepSchedule, startWriteWorkflow } from '../../control/operations';
import { retrySchedulesOf, type Config } from '../../config';
import type { Db } from '../../db/client';
import { writeTaskQueueOf } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import type { WorkerMetrics } from '../../observability/metrics';
import type { Tracing } from '../../observability/tracing';
import { telemetryOf } from '../telemetry';
import { bundleWorkflows } from '../workflow-bundle';
import type { RoleContext, RunningRole } from './role';

export interface WriteWorkerDeps {
  config: Config;
  db: Db;
  connection: NativeConnection;
  metrics?: WorkerMetrics;
  tracing?: Tracing;
}

/**
 * The worker of writes (Operations) and of their sweeper, on their own task queue and with their own activity
 * slots, so a long sync activity never delays a write.
 */
export async function createWriteWorker(deps: WriteWorkerDeps, bundle?: { codePath: string }): Promise<Worker> {
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
  const create = (codePath: string) =>
    Worker.create({
      connection: deps.connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue,
      workflowBundle: { codePath },
      activities,
      ...telemetryOf(deps.tracing),
      maxConcurrentActivityTaskExecutions: config.WRITE_MAX_ACTIVITIES,
      maxCachedWorkflows: 1000,
      shutdownGraceTime: '10 seconds',
    });
  return bundle ? create(bundle.codePath) : bundleWorkflows(create, deps.tracing !== undefined);
}

/** The role as a worker process runs it. */
export async function startWritesRole(ctx: RoleContext): Promise<RunningRole> {
  const worker = await createWriteWorker(ctx, { codePath: ctx.codePath });
  return {
    run: () => worker.run(),
    shutdown: () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    },
    close: async () => {},
    reconcile: () => ensureSweepSchedule({ client: ctx.client, taskQueue: writeTaskQueueOf(ctx.config.TEMPORAL_TASK_QUEUE) }),
  };
}
