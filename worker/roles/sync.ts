/**
 * The sync role: sync workflows and their activities on the sync task queue (TEMPORAL_TASK_QUEUE), and every
 * integration's sync schedule brought in line with the database at start-up.
 */
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createPageReader, type PageReader } from '../../activities/page-reader';
import { createSyncActivities } from '../../activities/sync';
import { removeUnknownSchedules } from '../../control/schedules';
import { ensureSyncSchedule, removeSyncSchedule, runStateVia } from '../../control/sync';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import type { Db } from '../../db/client';
import { integrationsWithDeleted } from '../../db/tenants';
import { DEFAULT_SYNC_POLICY, SCHEDULE_ID_PREFIX, scheduleIdOf, type SyncPolicy } from '../../domain/contract';
import { createKeyring } from '../../domain/secrets';
import { eachLimit } from '../each-limit';
import type { RoleContext, RunningRole, WorkerDeps } from './role';
import { createWorkflowWorker, workerRole } from './temporal-worker';

export interface SyncWorkerDeps extends WorkerDeps {
  /** Where sync pages are read (the caller closes it after the worker stops). */
  pages: PageReader;
}

export async function createSyncWorker(deps: SyncWorkerDeps, bundle?: { codePath: string }): Promise<Worker> {
  const { config } = deps;
  const client = new Client({ connection: deps.connection, namespace: config.TEMPORAL_NAMESPACE });
  const activities = createSyncActivities({
    db: deps.db,
    pages: deps.pages,
    secrets: createKeyring(config.ENCRYPTION_KEYS),
    runState: runStateVia(client),
    pageSize: config.SYNC_PAGE_SIZE,
    stallMs: config.SYNC_STALL_MS,
    policy: syncPolicyOf(config),
    fullSyncIntervalSeconds: config.SYNC_FULL_INTERVAL_SECONDS,
    deltaOverlapSeconds: config.SYNC_DELTA_OVERLAP_SECONDS,
    metrics: deps.metrics,
  });
  return createWorkflowWorker(deps, bundle, {
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    // Each sync activity holds at most two source pages in memory; this bounds the worker's footprint.
    maxConcurrentActivityTaskExecutions: config.WORKER_MAX_ACTIVITIES,
    maxCachedWorkflows: 200,
    // On shutdown, running activities get this long, then are cancelled and resume elsewhere from their last page.
    shutdownGraceTime: '10 seconds',
  });
}

/** The sync workflow's retry and time-out policy, from configuration. */
function syncPolicyOf(config: Config): SyncPolicy {
  return {
    retry: {
      initialIntervalMs: config.SYNC_RETRY_INITIAL_MS,
      backoffCoefficient: 2,
      maximumIntervalMs: config.SYNC_RETRY_MAX_INTERVAL_MS,
      maximumAttempts: config.SYNC_RETRY_MAX_ATTEMPTS,
    },
    entityTimeoutMs: config.SYNC_ENTITY_TIMEOUT_MS,
    heartbeatTimeoutMs: DEFAULT_SYNC_POLICY.heartbeatTimeoutMs,
    bookkeepingTimeoutMs: config.SYNC_BOOKKEEPING_TIMEOUT_MS,
  };
}

/** Schedule calls in flight at once while reconciling (each is one or two round trips to Temporal). */
const RECONCILE_CONCURRENCY = 8;

/**
 * Bring every integration's schedule in line with the database: create or update it for live integrations,
 * remove it for deleted ones. Idempotent, so every worker replica can run it at start-up.
 */
export async function reconcileSchedules(deps: {
  db: Db;
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** Only these organizations' integrations (a test sharing its database; one tenant by hand). Orphans are then left alone. */
  organizationIds?: string[];
}): Promise<{ ensured: number; removed: number }> {
  const rows = await integrationsWithDeleted(deps.db, deps.organizationIds);
  let ensured = 0;
  let removed = 0;
  await eachLimit(rows, RECONCILE_CONCURRENCY, async (row) => {
    try {
      if (row.deletedAt) {
        await removeSyncSchedule(deps, row.id);
        removed++;
      } else {
        await ensureSyncSchedule(deps, row, { runNow: false });
        ensured++;
      }
    } catch (err) {
      deps.logger.error({ err, integration_id: row.id }, 'could not reconcile the sync schedule');
    }
  });
  if (!deps.organizationIds)
    removed += await removeOrphanSchedules(
      deps,
      rows.filter((r) => !r.deletedAt).map((r) => r.id),
    );
  return { ensured, removed };
}

/**
 * Schedules of integrations this database does not know (e.g. Temporal state kept across a database reset) would
 * keep firing runs that fail: remove them, but only those that start work on our own task queue, so a deployment
 * sharing the namespace keeps its schedules.
 */
export async function removeOrphanSchedules(deps: { client: Client; taskQueue: string; logger: Logger }, liveIntegrationIds: string[]): Promise<number> {
  return removeUnknownSchedules(deps.client, {
    prefix: SCHEDULE_ID_PREFIX,
    known: new Set(liveIntegrationIds.map(scheduleIdOf)),
    taskQueue: deps.taskQueue,
    removed: (scheduleId) => deps.logger.info({ schedule_id: scheduleId }, 'removed the schedule of an unknown integration'),
    failed: (err, scheduleId) => deps.logger.error({ err, schedule_id: scheduleId }, 'could not remove an orphan schedule'),
  });
}

/** The role as a worker process runs it, with a page reader of its own (WORKER_READ_THREADS threads). */
export async function startSyncRole(ctx: RoleContext): Promise<RunningRole> {
  const { config, logger } = ctx;
  const pages = createPageReader({
    threads: config.WORKER_READ_THREADS,
    // Each sync page in flight fails with it too (its activity's failure says why); this says it once in the log.
    onThreadError: (err) => logger.error({ err }, 'a page-reading thread failed'),
  });
  const worker = await createSyncWorker({ ...ctx, pages }, { codePath: ctx.codePath }).catch(async (err: unknown) => {
    await pages.close();
    throw err;
  });
  return workerRole(worker, {
    close: () => pages.close(),
    async reconcile() {
      const r = await reconcileSchedules({ db: ctx.db, client: ctx.client, taskQueue: config.TEMPORAL_TASK_QUEUE, logger });
      logger.info(r, 'sync schedules reconciled');
    },
  });
}
