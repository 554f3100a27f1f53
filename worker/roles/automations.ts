/**
 * The automations role: automation runs (CSV exports) on the automation task queue, with slots of their own; at
 * start-up, every automation's schedule brought in line with the database.
 */
import { mkdir } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { createAutomationActivities } from '../../activities/automations';
import type { Resolver } from '../../activities/webhook-http';
import { automationControlOf, reconcileAutomationSchedules } from '../../control/automations';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { automationTaskQueueOf } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import type { WorkerMetrics } from '../../observability/metrics';
import type { Tracing } from '../../observability/tracing';
import { telemetryOf } from '../telemetry';
import { bundleWorkflows } from '../workflow-bundle';
import type { RoleContext, RunningRole } from './role';

export interface AutomationWorkerDeps {
  config: Config;
  db: Db;
  connection: NativeConnection;
  /** DNS resolution for HTTP destinations (tests map names to loopback). */
  resolver?: Resolver;
  metrics?: WorkerMetrics;
  tracing?: Tracing;
}

/** The worker of automation runs (CSV exports), on their own task queue and slots. */
export async function createAutomationWorker(deps: AutomationWorkerDeps, bundle?: { codePath: string }): Promise<Worker> {
  const { config } = deps;
  const exportRoot = resolvePath(config.EXPORT_ROOT);
  await mkdir(exportRoot, { recursive: true });
  const activities = createAutomationActivities({
    db: deps.db,
    metrics: deps.metrics,
    exports: {
      databaseUrl: config.DATABASE_URL,
      secrets: createKeyring(config.ENCRYPTION_KEYS),
      exportRoot,
      timeoutMs: config.EXPORT_TIMEOUT_MS,
      resolver: deps.resolver,
    },
  });
  const create = (codePath: string) =>
    Worker.create({
      connection: deps.connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: automationTaskQueueOf(config.TEMPORAL_TASK_QUEUE),
      workflowBundle: { codePath },
      activities,
      ...telemetryOf(deps.tracing),
      maxConcurrentActivityTaskExecutions: config.AUTOMATION_MAX_ACTIVITIES,
      maxCachedWorkflows: 200,
      shutdownGraceTime: '10 seconds',
    });
  return bundle ? create(bundle.codePath) : bundleWorkflows(create, deps.tracing !== undefined);
}

/** The role as a worker process runs it. */
export async function startAutomationsRole(ctx: RoleContext): Promise<RunningRole> {
  const worker = await createAutomationWorker(ctx, { codePath: ctx.codePath });
  return {
    run: () => worker.run(),
    shutdown: () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    },
    close: async () => {},
    async reconcile() {
      const a = await reconcileAutomationSchedules({
        ...automationControlOf(ctx.client, ctx.config),
        db: ctx.db,
        log: (err, id) => ctx.logger.error({ err, automation_id: id }, 'could not reconcile the automation schedule'),
      });
      ctx.logger.info(a, 'automation schedules reconciled');
    },
  };
}
