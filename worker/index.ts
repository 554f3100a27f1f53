/**
 * The only place where workflows, activities and their dependencies meet. Each role a worker process can run is a
 * module of roles/ (sync, webhooks, writes, automations, relay); WORKER_ROLES picks which a process runs, and
 * `runRoles` runs them together: one workflow bundle, one Temporal connection and one database pool for all, every
 * role's schedules reconciled in the background once they poll, and all stopped together on a signal.
 */
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import type { Config, WorkerRole } from '../config';
import type { Logger } from '../config/logger';
import type { Db } from '../db/client';
import { SEARCH_ATTRIBUTES } from '../domain/contract';
import type { WorkerMetrics } from '../observability/metrics';
import type { Tracing } from '../observability/tracing';
import { startAutomationsRole } from './roles/automations';
import { roleTaskQueueOf } from './roles/queues';
import { startRelayRole } from './roles/relay';
import type { RunningRole, StartRole } from './roles/role';
import { startSyncRole } from './roles/sync';
import { startWebhooksRole } from './roles/webhooks';
import { startWritesRole } from './roles/writes';
import { withWorkflowBundle } from './workflow-bundle';

const ROLES: Record<WorkerRole, StartRole> = {
  sync: startSyncRole,
  webhooks: startWebhooksRole,
  writes: startWritesRole,
  automations: startAutomationsRole,
  relay: startRelayRole,
};

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

/**
 * Start the roles of WORKER_ROLES and run them until SIGINT/SIGTERM (or until one fails, which stops the others and
 * rejects). After a signal, running activities get their role's grace period and then resume on another worker (a
 * sync from its last page; a delivery attempt is recorded as lost and retried).
 */
export async function runRoles(
  deps: { config: Config; db: Db; connection: NativeConnection; logger: Logger; metrics?: WorkerMetrics; tracing?: Tracing },
  /** Called once every role is created, before they run (worker/main.ts opens its metrics listener: a sign it is up). */
  started: () => Promise<void> = async () => {},
): Promise<void> {
  const { config, logger } = deps;
  const roles = config.WORKER_ROLES;
  const client = new Client({ connection: deps.connection, namespace: config.TEMPORAL_NAMESPACE });
  // Compiled, the bundle `npm run build` made (no webpack in a production worker); from source, bundled now.
  const running = await withWorkflowBundle(config, deps.tracing !== undefined, async (codePath, how) => {
    if (how === 'prebuilt') logger.info({ workflow_bundle: codePath }, 'using the prebuilt workflow bundle');
    else logger.info('bundled the workflows at start-up');
    const started = await Promise.allSettled(roles.map((role) => ROLES[role]({ ...deps, client, codePath })));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      // Release what the roles that did start hold, then fail with the first reason.
      await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.close() : undefined)));
      throw failed.reason;
    }
    return started.map((s) => (s as PromiseFulfilledResult<RunningRole>).value);
  });
  const taskQueues = Object.fromEntries(roles.map((role) => [role, roleTaskQueueOf(role, config.TEMPORAL_TASK_QUEUE) ?? null]));
  try {
    await started();
  } catch (err) {
    await Promise.all(running.map((r) => r.close()));
    throw err;
  }
  logger.info({ namespace: config.TEMPORAL_NAMESPACE, roles, task_queues: taskQueues }, 'worker started');
  // Temporal's workers stop on a signal by themselves (Worker.run() installs the handlers); the relay does not.
  const stopAll = () => {
    for (const r of running) r.shutdown();
  };
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);
  try {
    // Schedules are brought in line with the database after the workers poll, in the background: a deploy with
    // thousands of integrations is not a cold start, and every step is idempotent (another replica may do the same).
    // One role failing stops the others, which end as on a signal; then the failure is thrown.
    const runs = running.map((r) =>
      r.run().catch((err: unknown) => {
        stopAll();
        throw err;
      }),
    );
    if (config.WORKER_RECONCILE_SCHEDULES) {
      for (const r of running) r.reconcile?.().catch((err: unknown) => logger.error({ err }, 'could not reconcile the schedules'));
    }
    const failed = (await Promise.allSettled(runs)).find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    stopAll();
    process.off('SIGINT', stopAll);
    process.off('SIGTERM', stopAll);
    await Promise.all(running.map((r) => r.close()));
  }
}
