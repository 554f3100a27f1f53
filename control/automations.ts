/**
 * Client-side control of automations, shared by the admin API and the worker: each automation's Temporal Schedule
 * (created, moved, paused, removed; reconciled at worker start-up) and starting a run at once. No Temporal call
 * happens inside a database transaction: rows are committed first.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type ScheduleOptions,
  type ScheduleSpec,
} from '@temporalio/client';
import type { Db } from '../db/client';
import { automationsWithDeleted, getAutomation, insertRun, moveRun, type AutomationRow, type AutomationRunRow } from '../db/automations';
import {
  AUTOMATION_SCHEDULE_PREFIX,
  SA_AUTOMATION_ID,
  SA_INTEGRATION_ID,
  SA_ORGANIZATION_ID,
  SA_STATUS,
  automationRunWorkflowIdOf,
  automationScheduleIdOf,
  automationTaskQueueOf,
} from '../domain/contract';
import type { AutomationSchedule } from '../domain/automations';
import type { RetrySchedule } from '../domain/retry';
import { retrySchedulesOf, type Config } from '../config';
import { automationTick, runAutomation } from '../workflows/automation';
import { pushUntilSettled, removeUnknownSchedules } from './schedules';

export interface AutomationControlDeps {
  client: Client;
  /** The automations task queue (automationTaskQueueOf the sync queue). */
  taskQueue: string;
  /** The retry schedule of every run (retrySchedulesOf(config).automation), passed into each. */
  schedule: RetrySchedule;
}

/** Automation control for a deployment: its automations task queue and its runs' retry schedule. */
export function automationControlOf(client: Client, config: Config): AutomationControlDeps {
  return { client, taskQueue: automationTaskQueueOf(config.TEMPORAL_TASK_QUEUE), schedule: retrySchedulesOf(config).automation };
}

/** Temporal's spec of an automation's schedule: an interval, or a cron expression in a time zone (UTC by default). */
export function scheduleSpecOf(schedule: AutomationSchedule): ScheduleSpec {
  if ('every' in schedule) return { intervals: [{ every: schedule.every * 1000 }] };
  return { cronExpressions: cronAsTemporalReadsIt(schedule.cron), timezone: schedule.timezone ?? 'UTC' };
}

/**
 * A five-field cron expression as cron means it, for Temporal. When both the day of the month and the day of the week
 * are restricted (neither starts with `*`), cron runs on a day that matches either (crontab(5)), where Temporal's
 * reading requires both: such an expression becomes two, one for each day field, whose union Temporal runs.
 */
export function cronAsTemporalReadsIt(cron: string): string[] {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5) return [cron];
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields as [string, string, string, string, string];
  const restricted = (f: string) => !f.startsWith('*') && f !== '?';
  if (!restricted(dayOfMonth) || !restricted(dayOfWeek)) return [cron];
  return [`${minute} ${hour} ${dayOfMonth} ${month} *`, `${minute} ${hour} * ${month} ${dayOfWeek}`];
}

const attributesOf = (a: AutomationRow) => [
  { key: SA_ORGANIZATION_ID, value: a.organizationId },
  { key: SA_INTEGRATION_ID, value: a.integrationId },
  { key: SA_AUTOMATION_ID, value: a.id },
];

function scheduleOptions(deps: AutomationControlDeps, a: AutomationRow) {
  return {
    scheduleId: automationScheduleIdOf(a.id),
    spec: scheduleSpecOf(a.schedule),
    action: {
      type: 'startWorkflow' as const,
      workflowType: automationTick,
      args: [{ automationId: a.id, schedule: deps.schedule }] as Parameters<typeof automationTick>,
      taskQueue: deps.taskQueue,
      // Temporal appends the scheduled time; the run itself is a child whose id is the run id.
      workflowId: `automation-tick-${a.id}`,
      typedSearchAttributes: attributesOf(a),
    },
    // A firing while the last run still goes is dropped, never queued.
    policies: { overlap: 'SKIP' as const, catchupWindow: '1 minute', pauseOnFailure: false },
    state: { paused: a.status === 'paused', note: a.status === 'paused' ? 'paused by an operator' : undefined },
    typedSearchAttributes: attributesOf(a),
  } satisfies ScheduleOptions;
}

/**
 * Create or update an automation's schedule (its spec, and paused or not, in one update). Idempotent. The row is read
 * again after each push, and pushed until the schedule agrees with it (pushUntilSettled): a change made since `a` was
 * read wins, two changes made at once end as the database says, and a deleted automation's schedule is removed
 * rather than left behind.
 */
export async function ensureAutomationSchedule(deps: AutomationControlDeps, db: Db, a: AutomationRow): Promise<void> {
  await pushUntilSettled(
    a,
    (row) => pushAutomationSchedule(deps, row),
    () => getAutomation(db, a.id),
    followed,
    () => removeAutomationSchedule(deps, a.id),
  );
}

/** What an automation's schedule follows. */
const followed = (a: AutomationRow) => JSON.stringify([a.schedule, a.status]);

async function pushAutomationSchedule(deps: AutomationControlDeps, a: AutomationRow): Promise<void> {
  const options = scheduleOptions(deps, a);
  try {
    await deps.client.schedule.create(options);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await deps.client.schedule
      .getHandle(options.scheduleId)
      .update((prev) => ({ ...prev, spec: options.spec, action: options.action, policies: options.policies, state: { ...prev.state, ...options.state } }));
  }
}

/** Remove an automation's schedule (automation deleted). */
export async function removeAutomationSchedule(deps: AutomationControlDeps, automationId: string): Promise<void> {
  try {
    await deps.client.schedule.getHandle(automationScheduleIdOf(automationId)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/** A run at once: its row (queued), then its workflow (id = run id). A start that fails fails the run. */
export async function startAutomationRun(deps: AutomationControlDeps & { db: Db }, a: AutomationRow): Promise<AutomationRunRow> {
  const run = await insertRun(deps.db, a, 'manual');
  try {
    await deps.client.workflow.start(runAutomation, {
      taskQueue: deps.taskQueue,
      workflowId: automationRunWorkflowIdOf(run.id),
      args: [{ runId: run.id, schedule: deps.schedule }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [...attributesOf(a), { key: SA_STATUS, value: 'queued' }],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
      await moveRun(deps.db, run.id, 'failed', { error: `The run could not be started: ${(err as Error).message}`, finishedAt: new Date() });
      throw err;
    }
  }
  return run;
}

/**
 * Bring every automation's schedule in line with the database (the worker's start-up): ensure live ones, remove
 * schedules of automations this database does not hold. Returns counts.
 */
export async function reconcileAutomationSchedules(
  deps: AutomationControlDeps & {
    db: Db;
    log?: (err: unknown, id: string) => void;
    /** Only these organizations' automations (a test sharing its database); schedules of unknown ids are then left alone. */
    organizationIds?: string[];
  },
): Promise<{ ensured: number; removed: number }> {
  const rows = await automationsWithDeleted(deps.db, deps.organizationIds);
  let ensured = 0;
  let removed = 0;
  for (const a of rows) {
    try {
      if (a.deletedAt) {
        await removeAutomationSchedule(deps, a.id);
        removed++;
      } else {
        await ensureAutomationSchedule(deps, deps.db, a);
        ensured++;
      }
    } catch (err) {
      deps.log?.(err, a.id);
    }
  }
  if (deps.organizationIds) return { ensured, removed };
  // Schedules of automations this database does not hold at all (Temporal state kept across a database reset).
  removed += await removeUnknownSchedules(deps.client, {
    prefix: AUTOMATION_SCHEDULE_PREFIX,
    known: new Set(rows.map((a) => automationScheduleIdOf(a.id))),
    taskQueue: deps.taskQueue,
    failed: (err, scheduleId) => deps.log?.(err, scheduleId),
  });
  return { ensured, removed };
}
