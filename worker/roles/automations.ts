/**
 * The automations role: automation runs (CSV exports) on the automation task queue, with slots of their own; at
 * start-up, every automation's schedule brought in line with the database.
 */
import { mkdir } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { Worker } from '@temporalio/worker';
import { createAutomationActivities } from '../../activities/automations';
import { sweepSpoolFolders } from '../../activities/export';
import type { Resolver } from '../../activities/webhook-http';
import { automationControlOf, reconcileAutomationSchedules } from '../../control/automations';
import { automationTaskQueueOf } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import type { RoleContext, RunningRole, WorkerDeps } from './role';
import { createWorkflowWorker, workerRole } from './temporal-worker';

export interface AutomationWorkerDeps extends WorkerDeps {
  /** DNS resolution for HTTP destinations (tests map names to loopback). */
  resolver?: Resolver;
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
  return createWorkflowWorker(deps, bundle, {
    taskQueue: automationTaskQueueOf(config.TEMPORAL_TASK_QUEUE),
    activities,
    maxConcurrentActivityTaskExecutions: config.AUTOMATION_MAX_ACTIVITIES,
    maxCachedWorkflows: 200,
    shutdownGraceTime: '10 seconds',
  });
}

/** The role as a worker process runs it. */
export async function startAutomationsRole(ctx: RoleContext): Promise<RunningRole> {
  // What exports of a worker that died mid-attempt left in the temporary directory (content_length spools).
  const swept = await sweepSpoolFolders(ctx.config.EXPORT_TIMEOUT_MS + 60_000);
  if (swept > 0) ctx.logger.warn({ folders: swept }, 'removed the temporary files of exports a stopped worker left behind');
  const worker = await createAutomationWorker(ctx, { codePath: ctx.codePath });
  return workerRole(worker, {
    async reconcile() {
      const a = await reconcileAutomationSchedules({
        ...automationControlOf(ctx.client, ctx.config),
        db: ctx.db,
        log: (err, id) => ctx.logger.error({ err, automation_id: id }, 'could not reconcile the automation schedule'),
      });
      ctx.logger.info(a, 'automation schedules reconciled');
    },
  });
}
