/**
 * Client-side control of writes: starting an Operation's workflow (the API after it committed the Operation, a
 * retried request, the sweeper) and the sweeper's schedule. Starting twice is a no-op: the workflow id is the
 * Operation id, a running one is reused and a finished one is never run again.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
// A CommonJS module: a default import works under Node's ESM loader (a named one does not) and bundlers alike.
import proto from '@temporalio/proto';
import type { OperationRow } from '../db/operations';
import { OPERATION_SWEEP_SCHEDULE_ID, SA_INTEGRATION_ID, SA_OPERATION_TYPE, SA_ORGANIZATION_ID, SA_STATUS, writeWorkflowIdOf } from '../domain/contract';
import type { WriteWorkflowInput } from '../domain/operations';
import type { RetrySchedule } from '../domain/retry';
import { sweepWrites, writeOperation } from '../workflows/operation';
import { ensureIntervalSchedule } from './schedules';

export interface WriteControlDeps {
  client: Client;
  /** The writes task queue (writeTaskQueueOf the sync queue). */
  taskQueue: string;
  /** How long Temporal may take to accept the start before it counts as unreachable. */
  timeoutMs?: number;
  /** The retry schedule (retrySchedulesOf(config).write), passed into every write workflow. */
  schedule: RetrySchedule;
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
    schedule: deps.schedule,
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
  await ensureIntervalSchedule(deps.client, {
    scheduleId: OPERATION_SWEEP_SCHEDULE_ID,
    workflowType: sweepWrites,
    args: [{}],
    taskQueue: deps.taskQueue,
    every: '1 minute',
    catchupWindow: '1 minute',
  });
}

/**
 * Write workflows closed within `withinMs` whose status search attribute still says queued or running: the workflow
 * keeps it current at every step and sets succeeded or failed before it ends, so one that ended that way was
 * stopped from outside (terminated, timed out) before it could. Asks Temporal's visibility (one list, paged), then
 * closeReasonOf tells why each one closed. Visibility lags the close by a moment; the next sweep sees what this one missed.
 */
export async function closedWritesStillOpen(
  client: Client,
  opts: { withinMs: number; limit: number; now?: Date },
): Promise<{ operationId: string; runId: string; status: string }[]> {
  const since = new Date((opts.now ?? new Date()).getTime() - opts.withinMs).toISOString();
  const query = `WorkflowType = '${writeOperation.name}' AND ExecutionStatus != 'Running' AND ${SA_STATUS.name} IN ('queued', 'running') AND CloseTime > '${since}'`;
  const out: { operationId: string; runId: string; status: string }[] = [];
  for await (const w of client.workflow.list({ query, pageSize: Math.min(opts.limit, 1000) })) {
    out.push({ operationId: w.workflowId, runId: w.runId, status: w.status.name });
    if (out.length >= opts.limit) break;
  }
  return out;
}

/** Why an execution closed, from its close event: an operator's termination reason, a time-out, a failure's message. */
export async function closeReasonOf(client: Client, workflowId: string, runId: string): Promise<string> {
  const { history } = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    historyEventFilterType: proto.temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
  });
  const e = history?.events?.[0];
  if (e?.workflowExecutionTerminatedEventAttributes) {
    const a = e.workflowExecutionTerminatedEventAttributes;
    return `terminated${a.identity ? ` by ${a.identity}` : ''}${a.reason ? `: ${a.reason}` : ' (no reason given)'}`;
  }
  if (e?.workflowExecutionTimedOutEventAttributes) return 'timed out';
  if (e?.workflowExecutionFailedEventAttributes) return `failed: ${e.workflowExecutionFailedEventAttributes.failure?.message ?? 'no message'}`;
  if (e?.workflowExecutionCanceledEventAttributes) return 'cancelled';
  if (e?.workflowExecutionCompletedEventAttributes) return 'completed';
  return 'closed';
}
