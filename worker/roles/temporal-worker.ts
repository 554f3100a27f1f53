/**
 * What the roles whose work is a Temporal worker share: how that worker is created (the process's workflow bundle,
 * its telemetry, the role's own task queue, activities and slots) and how it runs as a role.
 */
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { telemetryOf } from '../telemetry';
import { bundleWorkflows } from '../workflow-bundle';
import type { RunningRole, WorkerDeps } from './role';

/** What a role decides of its worker: the rest is the same for every role. */
type RoleWorkerOptions = Pick<
  WorkerOptions,
  'taskQueue' | 'activities' | 'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxCachedWorkflows' | 'shutdownGraceTime'
>;

/**
 * A worker of workflows and their activities. `bundle`: the process's workflow bundle (worker/workflow-bundle.ts);
 * without one (a test's worker), the workflows are bundled now. Worker.create reads the bundle once; a bundle made
 * here is removed after.
 */
export function createWorkflowWorker(
  deps: Pick<WorkerDeps, 'config' | 'connection' | 'tracing'>,
  bundle: { codePath: string } | undefined,
  options: RoleWorkerOptions,
): Promise<Worker> {
  const create = (codePath: string) =>
    Worker.create({
      connection: deps.connection,
      namespace: deps.config.TEMPORAL_NAMESPACE,
      workflowBundle: { codePath },
      ...telemetryOf(deps.tracing),
      ...options,
    });
  return bundle ? create(bundle.codePath) : bundleWorkflows(create, deps.tracing !== undefined);
}

/** A role that is one worker: it runs until shutdown; what it holds besides and its schedules are its own. */
export function workerRole(worker: Worker, own: Pick<RunningRole, 'reconcile'> & Partial<Pick<RunningRole, 'close'>>): RunningRole {
  return {
    run: () => worker.run(),
    shutdown: () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    },
    close: own.close ?? (async () => {}),
    reconcile: own.reconcile,
  };
}
