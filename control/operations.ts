/**
 * Client-side control of writes: starting an Operation's workflow (the API after it committed the Operation, a
 * retried request, the sweeper) and the sweeper's schedule. Starting twice is a no-op: the workflow id is the
 * Operation id, a running one is reused and a finished one is never run again.
 */
import { ScheduleAlreadyRunning, WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { OperationRow } from '../db/operations';
import { OPERATION_SWEEP_SCHEDULE_ID, SA_INTEGRATION_ID, SA_OPERATION_TYPE, SA_ORGANIZATION_ID, SA_STATUS, writeWorkflowIdOf } from '../domain/contract';
import type { WriteRetrySchedule, WriteWorkflowInput } from '../domain/operations';
import { sweepWrites, writeOperation } from '../workflows/operation';

export interface WriteControlDeps {
  client: Client;
  /** The writes task queue (writeTaskQueueOf the sync queue). */
  taskQueue: string;
  /** How long Temporal may take to accept the start before it counts as unreachable. */
  timeoutMs?: number;
  /** Test override of the retry schedule, passed into every write workflow. */
  schedule?: WriteRetrySchedule;
}

export type StartableOperation = Pick<OperationRow, 'id' | 'organizationId' | 'integrationId' | 'type' | 'createdAt'> & {
  targetId?: string | null;
};

/** Start an Operation's workflow; false when it had been started already. Throws when Temporal cannot be reached. */
export async function startWriteWorkflow(deps: WriteControlDeps, op: StartableOperation): Promise<boolean> {
  const input: WriteWorkflowInput = {
    operationId: op.id,
    type: op.type,
    acceptedAtMs: op.createdAt.getTime(),
    target: op.targetId ?? null,
    ...(deps.schedule ? { schedule: deps.schedule } : {}),
  };
  const start = () =>
    deps.client.workflow.start(writeOperation, {
      taskQueue: deps.taskQueue,
      workflowId: writeWorkflowIdOf(op.id),
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: SA_ORGANIZATION_ID, value: op.organizationId },
        { key: SA_INTEGRATION_ID, value: op.integrationId },
        { key: SA_OPERATION_TYPE, value: op.type },
        { key: SA_STATUS, value: 'queued' },
      ],
      // What an operator sees in the Temporal UI without opening the history (no personal data: ids only).
      memo: { type: op.type, target: op.targetId ?? null, organization_id: op.organizationId, integration_id: op.integrationId },
    });
  try {
    await (deps.timeoutMs ? deps.client.withDeadline(Date.now() + deps.timeoutMs, start) : start());
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/** The sweeper's schedule: every minute, on the writes task queue. Idempotent. */
export async function ensureSweepSchedule(deps: { client: Client; taskQueue: string }): Promise<void> {
  const action = {
    type: 'startWorkflow' as const,
    workflowType: sweepWrites,
    args: [{}] as [{ olderThanMs?: number }],
    taskQueue: deps.taskQueue,
    workflowId: OPERATION_SWEEP_SCHEDULE_ID,
  };
  try {
    await deps.client.schedule.create({
      scheduleId: OPERATION_SWEEP_SCHEDULE_ID,
      spec: { intervals: [{ every: '1 minute' }] },
      action,
      policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await deps.client.schedule.getHandle(OPERATION_SWEEP_SCHEDULE_ID).update((prev) => ({ ...prev, action }));
  }
}
