/**
 * What the Temporal Schedules of every kind share: a fixed-interval schedule of one workflow kept in line (the write
 * sweeper's, the retention clean-up's), a schedule pushed until it agrees with its row, and the removal of schedules
 * that belong to nothing this database holds.
 */
import { ScheduleAlreadyRunning, type Client, type ScheduleOptionsStartWorkflowAction, type Workflow } from '@temporalio/client';
import type { Duration } from '@temporalio/common';

/** Times a caller pushes a schedule again because its row moved meanwhile (another change being made at once). */
const MAX_SCHEDULE_PUSHES = 5;

/**
 * Push the schedule of `row`, then read the row again (`reread`: undefined once it is gone) and push again while what
 * the schedule follows (`followed`) is not what was just pushed. Two changes of one row made at once (two operators,
 * two API processes) each write the row, then push, and Temporal keeps the last push, which may be of the row written
 * first; this way every caller's last push is of a row no later write had replaced when it looked, and the schedule
 * ends as the database says, without a lock held across Temporal calls.
 */
export async function pushUntilSettled<R>(
  row: R,
  push: (row: R) => Promise<void>,
  reread: () => Promise<R | undefined>,
  followed: (row: R) => string | number,
  /** The row is gone when read again (deleted meanwhile): undo the push, whose schedule nothing would remove. */
  gone?: () => Promise<void>,
): Promise<void> {
  for (let pushes = 1; ; pushes++) {
    await push(row);
    const now = await reread();
    if (now === undefined) return gone?.();
    if (pushes >= MAX_SCHEDULE_PUSHES || followed(now) === followed(row)) return;
    row = now;
  }
}

/**
 * A schedule that starts `workflowType` every `every` on `taskQueue` (its workflow id is the schedule's id): created,
 * or its action brought in line. A run still going when the next is due skips it; a missed one is caught up within
 * `catchupWindow`. Idempotent.
 */
export async function ensureIntervalSchedule<I>(
  client: Client,
  s: { scheduleId: string; workflowType: (input: I) => Promise<unknown>; args: [I]; taskQueue: string; every: Duration; catchupWindow: Duration },
): Promise<void> {
  const action: ScheduleOptionsStartWorkflowAction<Workflow> = {
    type: 'startWorkflow',
    workflowType: s.workflowType,
    args: s.args,
    taskQueue: s.taskQueue,
    workflowId: s.scheduleId,
  };
  try {
    await client.schedule.create({
      scheduleId: s.scheduleId,
      spec: { intervals: [{ every: s.every }] },
      action,
      policies: { overlap: 'SKIP', catchupWindow: s.catchupWindow },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(s.scheduleId).update((prev) => ({ ...prev, action }));
  }
}

/**
 * Removes the schedules whose id starts with `prefix` but is not `known` (their integration or automation is not in
 * this database: Temporal state kept across a database reset would keep firing runs that fail), and only those that
 * start work on `taskQueue`, so a deployment sharing the namespace keeps its own. One that cannot be read or removed
 * is passed to `failed` and left. Returns how many were removed.
 */
export async function removeUnknownSchedules(
  client: Client,
  s: {
    prefix: string;
    known: ReadonlySet<string>;
    taskQueue: string;
    removed?: (scheduleId: string) => void;
    failed: (err: unknown, scheduleId: string) => void;
  },
): Promise<number> {
  let removed = 0;
  for await (const summary of client.schedule.list()) {
    if (!summary.scheduleId.startsWith(s.prefix) || s.known.has(summary.scheduleId)) continue;
    try {
      const handle = client.schedule.getHandle(summary.scheduleId);
      const described = await handle.describe();
      if (described.action.type !== 'startWorkflow' || described.action.taskQueue !== s.taskQueue) continue;
      await handle.delete();
      removed++;
      s.removed?.(summary.scheduleId);
    } catch (err) {
      s.failed(err, summary.scheduleId);
    }
  }
  return removed;
}
