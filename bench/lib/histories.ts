/**
 * Where a workflow's time went, from its Temporal history: the wait for its first workflow task, the worker's
 * handling of it, the wait for its activity to be picked up, the activity itself, and the close. Medians over a
 * sample of workflows, so a bench can say which leg a slow run spent its time in.
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import proto from '@temporalio/proto';

const T = proto.temporal.api.enums.v1.EventType;

export interface Legs {
  /** Workflow started → first workflow task started (waiting on the task queue for a worker slot). */
  firstTaskWait: number;
  /** First workflow task started → completed (the worker running the workflow's first activation). */
  firstTask: number;
  /** Activity scheduled → started (waiting on the task queue for an activity slot). */
  activityWait: number;
  /** Activity started → completed. */
  activity: number;
  /** Activity completed → workflow closed (the last workflow task, queueing included). */
  close: number;
  /** Epoch ms of the workflow's start, its activity's start and end, and its close. */
  startedAt: number;
  activityStartedAt: number;
  activityEndedAt: number;
  closedAt: number;
}

/** The legs of a workflow that ran one activity (the first one, when it ran more). */
async function legsOf(client: Client, workflowId: string): Promise<Legs> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const at = (type: number, nth = 0) => {
    const e = (history.events ?? []).filter((ev) => ev.eventType === type)[nth];
    if (!e) throw new Error(`${workflowId}: no ${T[type]} event #${nth + 1}`);
    return tsToMs(e.eventTime);
  };
  const startedAt = at(T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  const closedAt = at(T.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  const activityStartedAt = at(T.EVENT_TYPE_ACTIVITY_TASK_STARTED);
  const activityEndedAt = at(T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
  return {
    firstTaskWait: at(T.EVENT_TYPE_WORKFLOW_TASK_STARTED) - startedAt,
    firstTask: at(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) - at(T.EVENT_TYPE_WORKFLOW_TASK_STARTED),
    activityWait: activityStartedAt - at(T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
    activity: activityEndedAt - activityStartedAt,
    close: closedAt - activityEndedAt,
    startedAt,
    activityStartedAt,
    activityEndedAt,
    closedAt,
  };
}

/** Legs of every workflow of `ids`, fetched a few at a time. */
export async function legsOfAll(client: Client, ids: string[], concurrency = 8): Promise<Map<string, Legs>> {
  const out = new Map<string, Legs>();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, ids.length) }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        out.set(id, await legsOf(client, id));
      }
    }),
  );
  return out;
}

/** An evenly spaced sample of at most `n` items (first and last included). */
export function sample<T>(items: T[], n: number): T[] {
  if (items.length <= n) return [...items];
  return Array.from({ length: n }, (_, i) => items[Math.round((i * (items.length - 1)) / (n - 1))]!);
}
