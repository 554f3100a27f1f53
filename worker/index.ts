/**
 * The only place where workflows, activities and their dependencies meet. `createWorker` is what worker/main.ts
 * runs and what tests start on their own task queue; `prepareNamespace` is the start-up work (search attributes,
 * schedules).
 */
import { spawn } from 'node:child_process';
import { access, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import type { PageReader } from '../activities/page-reader';
import { createActivities } from '../activities/sync';
import { createAutomationActivities } from '../activities/automations';
import { createWriteActivities } from '../activities/operations';
import { closedWritesStillOpen, closeReasonOf, startWriteWorkflow } from '../control/operations';
import { createWebhookActivities } from '../activities/webhooks';
import { createDispatchActivities, type RetryRef } from '../activities/dispatch';
import { createInFlight } from '../activities/in-flight';
import { createQueuedListener } from '../activities/queued-listener';
import { createSender, type Resolver, type Sender } from '../activities/webhook-http';
import { deliveryControlOf, startRetry } from '../control/webhooks';
import { ensureSyncSchedule, removeSyncSchedule, runStateVia } from '../control/sync';
import { retrySchedulesOf, type Config } from '../config';
import type { Logger } from '../config/logger';
import type { Db } from '../db/client';
import { integrations } from '../db/schema';
import { inArray } from 'drizzle-orm';
import {
  DEFAULT_SYNC_POLICY,
  SCHEDULE_ID_PREFIX,
  SEARCH_ATTRIBUTES,
  scheduleIdOf,
  automationTaskQueueOf,
  dispatchTaskQueueOf,
  webhookTaskQueueOf,
  writeTaskQueueOf,
  type SyncPolicy,
} from '../domain/contract';
import { createKeyring } from '../domain/secrets';
import type { WorkerMetrics } from '../observability/metrics';
import type { Tracing } from '../observability/tracing';
import { telemetryOf } from './telemetry';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const BUNDLE_SCRIPT = fileURLToPath(new URL('./bundle.ts', import.meta.url));
/**
 * Compiled (`npm run build`), this module is part of dist/worker.mjs and the build wrote the workflow bundle beside
 * it; run from source (tsx, tests), it is worker/index.ts and the workflows are bundled when a worker starts.
 */
const COMPILED = !import.meta.url.endsWith('.ts');
const BUILT_BUNDLE = fileURLToPath(new URL('./workflows.js', import.meta.url));
const BUILT_TRACED_BUNDLE = fileURLToPath(new URL('./workflows-traced.js', import.meta.url));

/**
 * The prebuilt workflow bundle this process runs: WORKFLOW_BUNDLE_PATH, or compiled, dist/workflows.js (with tracing
 * on, dist/workflows-traced.js: the same with OpenTelemetry's workflow interceptors); undefined from source without
 * WORKFLOW_BUNDLE_PATH (the workflows are then bundled at start-up).
 */
export function prebuiltWorkflowBundle(config: Pick<Config, 'WORKFLOW_BUNDLE_PATH'>, traced = false): string | undefined {
  if (config.WORKFLOW_BUNDLE_PATH) return resolvePath(config.WORKFLOW_BUNDLE_PATH);
  if (!COMPILED) return undefined;
  return traced ? BUILT_TRACED_BUNDLE : BUILT_BUNDLE;
}

/**
 * Run `use` with the workflow bundle: the prebuilt one when there is one (no webpack in the process's life), else
 * one bundled now by bundleWorkflows. A prebuilt bundle that is missing fails here, naming the file.
 */
export async function withWorkflowBundle<T>(
  config: Pick<Config, 'WORKFLOW_BUNDLE_PATH'>,
  traced: boolean,
  use: (codePath: string, how: 'prebuilt' | 'bundled') => Promise<T>,
): Promise<T> {
  const prebuilt = prebuiltWorkflowBundle(config, traced);
  if (!prebuilt) return bundleWorkflows((codePath) => use(codePath, 'bundled'), traced);
  await access(prebuilt).catch(() => {
    throw new Error(`the workflow bundle ${prebuilt} does not exist: run \`npm run build\`, or set WORKFLOW_BUNDLE_PATH to one`);
  });
  return use(prebuilt, 'prebuilt');
}

/**
 * The workflow bundle, built by a child process (worker/bundle.ts, run through tsx): bundling in the worker itself
 * would leave webpack's memory (about 75 MB of RSS) in a process that runs for weeks. Source only: the compiled
 * worker has no bundle script and uses the bundle `npm run build` made.
 */
export async function bundleWorkflows<T>(use: (codePath: string) => Promise<T>, traced = false): Promise<T> {
  if (COMPILED) throw new Error('the compiled worker does not bundle workflows: it runs dist/workflows.js (npm run build) or WORKFLOW_BUNDLE_PATH');
  const dir = await mkdtemp(join(tmpdir(), 'propsync-workflows-'));
  const codePath = join(dir, 'workflows.js');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', BUNDLE_SCRIPT, codePath, ...(traced ? ['--traced'] : [])], { stdio: ['ignore', 'inherit', 'inherit'] });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bundling the workflows failed (exit ${code})`))));
    });
    return await use(codePath);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface WorkerDeps {
  config: Config;
  db: Db;
  connection: NativeConnection;
  /** Where sync pages are read (the caller closes it after the worker stops). */
  pages: PageReader;
  /** What the activities count (worker/main.ts: the process's Prometheus registry). */
  metrics?: WorkerMetrics;
  /** Where spans go (worker/main.ts, when OTEL_EXPORTER_OTLP_ENDPOINT is set). */
  tracing?: Tracing;
}

export async function createWorker(deps: WorkerDeps, bundle?: { codePath: string }): Promise<Worker> {
  const { config } = deps;
  const client = new Client({ connection: deps.connection, namespace: config.TEMPORAL_NAMESPACE });
  const activities = createActivities({
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
  const create = (codePath: string) =>
    Worker.create({
      connection: deps.connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowBundle: { codePath },
      activities,
      ...telemetryOf(deps.tracing),
      // Each sync activity holds at most two source pages in memory; this bounds the worker's footprint.
      maxConcurrentActivityTaskExecutions: config.WORKER_MAX_ACTIVITIES,
      maxCachedWorkflows: 200,
      // On shutdown, running activities get this long, then are cancelled and resume elsewhere from their last page.
      shutdownGraceTime: '10 seconds',
    });
  // Worker.create reads the bundle once; the file is removed after.
  return bundle ? create(bundle.codePath) : bundleWorkflows(create, deps.tracing !== undefined);
}

/** The sync workflow's retry and time-out policy, from configuration. */
export function syncPolicyOf(config: Config): SyncPolicy {
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

export interface WebhookWorkerDeps {
  config: Config;
  db: Db;
  connection: NativeConnection;
  /** DNS resolution for deliveries (tests hand in a resolver that maps names to loopback). */
  resolver?: Resolver;
  logger?: Logger;
  metrics?: WorkerMetrics;
  tracing?: Tracing;
}

export interface WebhookWorker {
  /** Dispatchers and delivery workflows, and the retry and replay attempts, on the webhook task queue. */
  worker: Worker;
  /** The dispatchers' batches, on the dispatch task queue with slots of their own. */
  dispatch: Worker;
  /** Runs both until shutdown (a signal, or shutdown()). */
  run(): Promise<void>;
  shutdown(): void;
  /** Closes what the activities hold (the LISTEN, the HTTP pools); call after the workers stopped. */
  close(): Promise<void>;
}

/** Handing failed first attempts to their workflows: this many starts in flight at once. */
const RETRY_START_LANES = 16;

/**
 * The workers of webhook delivery, on task queues of their own, so that a long sync never delays a webhook: the
 * dispatchers' batches on one (first attempts, with WEBHOOK_MAX_DISPATCHERS slots), the workflows and the retry
 * attempts on the other (WEBHOOK_MAX_ACTIVITIES slots): retries of a failing receiver never take a batch's slot.
 */
export async function createWebhookWorker(deps: WebhookWorkerDeps, bundle?: { codePath: string }): Promise<WebhookWorker> {
  const { config } = deps;
  const sender: Sender = createSender({ resolver: deps.resolver });
  const inFlight = createInFlight();
  const queued = createQueuedListener(deps.db);
  const logger = deps.logger;
  const log = logger ? (fields: Record<string, unknown>, msg: string) => logger.debug(fields, msg) : undefined;
  const secrets = createKeyring(config.ENCRYPTION_KEYS);
  const taskQueue = webhookTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
  const control = deliveryControlOf(new Client({ connection: deps.connection, namespace: config.TEMPORAL_NAMESPACE }), config);
  const health = { disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS, notice: logger ? (fields: Record<string, unknown>, msg: string) => logger.warn(fields, msg) : undefined };
  const activities = createWebhookActivities({ db: deps.db, sender, secrets, inFlight, maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT, log, metrics: deps.metrics, ...health });
  const dispatchActivities = createDispatchActivities({
    ...health,
    db: deps.db,
    sender,
    secrets,
    inFlight,
    queued,
    log,
    metrics: deps.metrics,
    startRetries: (refs: RetryRef[]) => eachLimit(refs, RETRY_START_LANES, async (d) => void (await startRetry(control, d))),
  });
  const create = (codePath: string) =>
    Worker.create({
      connection: deps.connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue,
      workflowBundle: { codePath },
      activities,
      ...telemetryOf(deps.tracing),
      maxConcurrentActivityTaskExecutions: config.WEBHOOK_MAX_ACTIVITIES,
      maxConcurrentWorkflowTaskExecutions: 40,
      // Dead letters sit open for weeks: keep the cache for the busy ones, evict the idle.
      maxCachedWorkflows: 2000,
      shutdownGraceTime: '15 seconds',
    });
  const worker = bundle ? await create(bundle.codePath) : await bundleWorkflows(create, deps.tracing !== undefined);
  // Activities only: no workflow bundle.
  const dispatch = await Worker.create({
    connection: deps.connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: dispatchTaskQueueOf(taskQueue),
    activities: dispatchActivities,
    interceptors: telemetryOf(deps.tracing).interceptors,
    maxConcurrentActivityTaskExecutions: config.WEBHOOK_MAX_DISPATCHERS,
    // A batch hands back within its budget (WEBHOOK_BATCH_MS, 10 s) plus the 10 s of its last requests.
    shutdownGraceTime: '25 seconds',
  });
  return {
    worker,
    dispatch,
    async run() {
      await Promise.all([worker.run(), dispatch.run()]);
    },
    shutdown() {
      for (const w of [worker, dispatch]) if (w.getState() === 'RUNNING') w.shutdown();
    },
    async close() {
      sender.close();
      await queued.close();
    },
  };
}

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
    exports: { databaseUrl: config.DATABASE_URL, secrets: createKeyring(config.ENCRYPTION_KEYS), exportRoot, timeoutMs: config.EXPORT_TIMEOUT_MS, resolver: deps.resolver },
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

/** Register the search attributes the sync workflows set, where the namespace lacks them. */
export async function registerSearchAttributes(connection: NativeConnection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = new Set(Object.keys(customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTES.filter((sa) => !existing.has(sa.name));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((sa) => [sa.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  return missing.map((sa) => sa.name);
}

/** Schedule calls in flight at once while reconciling (each is one or two round trips to Temporal). */
const RECONCILE_CONCURRENCY = 8;

/** Run `fn` over `items`, at most `limit` at a time. */
async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

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
  const rows = await deps.db
    .select()
    .from(integrations)
    .where(deps.organizationIds ? inArray(integrations.organizationId, deps.organizationIds) : undefined);
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
  if (!deps.organizationIds) removed += await removeOrphanSchedules(deps, rows.filter((r) => !r.deletedAt).map((r) => r.id));
  return { ensured, removed };
}

/**
 * Schedules of integrations this database does not know (e.g. Temporal state kept across a database reset) would
 * keep firing runs that fail: remove them, but only those that start work on our own task queue, so a deployment
 * sharing the namespace keeps its schedules.
 */
export async function removeOrphanSchedules(
  deps: { client: Client; taskQueue: string; logger: Logger },
  liveIntegrationIds: string[],
): Promise<number> {
  const known = new Set(liveIntegrationIds.map(scheduleIdOf));
  let removed = 0;
  for await (const summary of deps.client.schedule.list()) {
    if (!summary.scheduleId.startsWith(SCHEDULE_ID_PREFIX) || known.has(summary.scheduleId)) continue;
    try {
      const handle = deps.client.schedule.getHandle(summary.scheduleId);
      const described = await handle.describe();
      if (described.action.type !== 'startWorkflow' || described.action.taskQueue !== deps.taskQueue) continue;
      await handle.delete();
      removed++;
      deps.logger.info({ schedule_id: summary.scheduleId }, 'removed the schedule of an unknown integration');
    } catch (err) {
      deps.logger.error({ err, schedule_id: summary.scheduleId }, 'could not remove an orphan schedule');
    }
  }
  return removed;
}
