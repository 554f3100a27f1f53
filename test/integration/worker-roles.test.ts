/**
 * WORKER_ROLES as docker-compose.yml's worker-webhooks service runs it: a worker process (worker/main.ts) started
 * with only webhook delivery and the outbox relay, on a database of this file's own (its relay is unscoped, as in
 * production, so it must see no other file's events). It delivers a recorded event to a subscriber, and polls none
 * of the other roles' task queues: no sync, write or automation runs there.
 */
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import { afterAll, beforeAll, expect, it, inject } from 'vitest';
import type { Db } from '../../db/client';
import { automationTaskQueueOf, dispatchTaskQueueOf, webhookTaskQueueOf, writeTaskQueueOf } from '../../domain/contract';
import { Processes, WORKER_COMMAND, workerEnv } from '../support/faults';
import { onOwnDatabase } from '../support/services';
import { until } from '../support/until';
import { recordEvents, residentUpdates, startReceiver, storeSubscription, webhookIntegration, type Receiver } from '../support/webhooks';

const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;
const procs = new Processes();
const taskQueue = `test-${randomUUID()}`;
let dbUrl = '';
let db: Db;
let connection: Connection;
let receiver: Receiver;

onOwnDatabase('roles', (own) => ({ url: dbUrl, db } = own));
beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
  receiver = await startReceiver();
});

afterAll(async () => {
  await procs.killAll();
  await receiver?.close();
  await connection?.close();
});

/** The identities of the workers that polled `queue` for tasks of `type` lately. */
async function pollers(queue: string, type: 'workflow' | 'activity'): Promise<string[]> {
  const { pollers } = await connection.workflowService.describeTaskQueue({
    namespace: 'default',
    taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: type === 'workflow' ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  return pollers.map((p) => p.identity ?? '');
}

it('a worker started with WORKER_ROLES=webhooks,relay delivers webhooks, polls no sync, write or automation queue, and warns of nothing', async () => {
  const integration = await webhookIntegration(db, null);
  await storeSubscription(db, integration, receiver.url, { eventTypes: ['RESIDENT_UPDATED'] });
  const { child: worker, output } = procs.spawnLogged(
    WORKER_COMMAND[0],
    [...WORKER_COMMAND[1]],
    workerEnv({ DATABASE_URL: dbUrl, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: taskQueue, WORKER_ROLES: 'webhooks,relay' }),
  );
  const [eventId] = await recordEvents(db, integration, residentUpdates(1));
  // Bundling at start-up takes a while from source.
  await until(
    'the event to be delivered',
    () => {
      if (!procs.running.has(worker)) throw new Error(`the worker exited: ${procs.stderr.get(worker)}`);
      return receiver.received.find((r) => r.body.id === eventId);
    },
    120_000,
  );

  // The delivery came through the webhook and dispatch queues, polled by this process since before it was made; the
  // other roles' workers would have polled their queues from the same moment.
  const pid = `${worker.pid}@`;
  const ours = (identities: string[]) => identities.filter((i) => i.startsWith(pid));
  expect(ours(await pollers(webhookTaskQueueOf(taskQueue), 'workflow'))).not.toEqual([]);
  expect(ours(await pollers(dispatchTaskQueueOf(webhookTaskQueueOf(taskQueue)), 'activity'))).not.toEqual([]);
  for (const queue of [taskQueue, writeTaskQueueOf(taskQueue), automationTaskQueueOf(taskQueue)]) {
    expect(await pollers(queue, 'workflow'), queue).toEqual([]);
    expect(await pollers(queue, 'activity'), queue).toEqual([]);
  }
  // A healthy start warns of nothing (LOG_LEVEL=warn: every line written is a warning or worse), the SDK's note that
  // the activities-only dispatch worker polls no workflow tasks included.
  const warnings = output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((entry) => entry.level >= 40);
  expect(warnings.map((w) => w.msg)).toEqual([]);
}, 180_000);
