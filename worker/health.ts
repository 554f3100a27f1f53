/**
 * The worker's health check (`node dist/worker-health.mjs`, the worker's healthcheck in docker-compose.yml): healthy
 * when Temporal has seen a worker of this host poll, lately, the task queue of every role WORKER_ROLES names (a
 * process running only the relay, which polls nothing, is healthy when Temporal answers). A worker polls as
 * `<pid>@<hostname>` and, in a container, the health check shares the worker's hostname. Exit 0 when healthy, 1 with one line saying
 * why when not. It reads the same configuration as the worker (address, namespace, task queue, TLS or API key).
 */
import { hostname } from 'node:os';
import { Connection } from '@temporalio/client';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import { loadConfigOrExit } from '../config';
import { temporalConnectionOptions } from '../config/temporal';
import { roleTaskQueueOf } from './roles/queues';

/** An idle worker renews its long poll about every minute; a poll older than this means it stopped polling. */
const STALE_MS = 3 * 60_000;

const config = loadConfigOrExit();
const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

function fail(reason: string): never {
  console.error(`unhealthy: ${reason}`);
  process.exit(1);
}

const connection = await Connection.connect({ ...temporalConnectionOptions(config), connectTimeout: 5_000 }).catch((err: unknown) =>
  fail(`Temporal unreachable (${err instanceof Error ? err.message : String(err)})`),
);
try {
  const queues = config.WORKER_ROLES.map((role) => roleTaskQueueOf(role, config.TEMPORAL_TASK_QUEUE)).filter((q) => q !== undefined);
  const suffix = `@${hostname()}`;
  for (const queue of queues) {
    const { pollers } = await connection.workflowService.describeTaskQueue({
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const lastPoll = Math.max(0, ...pollers.filter((p) => p.identity?.endsWith(suffix)).map((p) => Number(p.lastAccessTime?.seconds?.toString() ?? 0) * 1000));
    if (lastPoll === 0) fail(`no worker of ${hostname()} polls task queue ${queue}`);
    if (Date.now() - lastPoll > STALE_MS)
      fail(`the last poll of task queue ${queue} from ${hostname()} is ${Math.round((Date.now() - lastPoll) / 1000)} s old`);
  }
  console.log(queues.length > 0 ? `healthy: polling ${queues.join(', ')}` : 'healthy: Temporal answers (the relay polls no task queue)');
} finally {
  await connection.close();
}
