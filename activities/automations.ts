/**
 * Automation activities: creating a scheduled run, one export attempt (never retried by Temporal: the workflow owns
 * the retries as durable timers, so every attempt is one the workflow chose to make), and the run's bookkeeping and
 * end, which records AUTOMATION_COMPLETED or AUTOMATION_FAILED in the outbox once.
 */
import { Context } from '@temporalio/activity';
import type { Db } from '../db/client';
import { endRun, getAutomation, getRun, insertRun, markRunStarted, moveRun, runOfFiring, type AutomationRow } from '../db/automations';
import { getIntegration } from '../db/tenants';
import type { ExportOutcome } from '../domain/automations';
import { clip, heartbeating, messageOf } from './attempt';
import { ExportError, exportAutomation, type ExportDeps } from './export';
import { NO_METRICS, type WorkerMetrics } from '../observability/metrics';

export interface AutomationActivityDeps {
  db: Db;
  /** What the export engine needs (cache, secrets, export root, time-out, DNS for the SSRF guard). */
  exports: ExportDeps;
  clock?: () => Date;
  /** Heartbeat interval of an export attempt (the workflow's heartbeat timeout must be well above it). */
  heartbeatEveryMs?: number;
  /** Counts ended runs (Prometheus); nothing when absent. */
  metrics?: WorkerMetrics;
}

export interface ExportAttemptInput {
  runId: string;
  /** 1-based number of this attempt. */
  attempt: number;
}

export function createAutomationActivities(deps: AutomationActivityDeps) {
  const { db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const heartbeatEveryMs = deps.heartbeatEveryMs ?? 5_000;

  return {
    /** A scheduled firing: a new run of the automation, or null when it is paused or gone (nothing to run). */
    async createScheduledRun(input: { automationId: string }): Promise<{ runId: string } | null> {
      // Retried until it answers: a try whose insert committed and whose answer was lost made the firing's run.
      const firingId = Context.current().info.workflowExecution?.workflowId;
      const made = firingId === undefined ? undefined : await runOfFiring(db, firingId);
      if (made) return { runId: made.id };
      const automation = await getAutomation(db, input.automationId);
      if (!automation || automation.status !== 'active') return null;
      const run = await insertRun(db, automation, 'schedule', clock(), firingId);
      return { runId: run.id };
    },

    /** One export attempt: stream the file from the cache to the destination, classified for the workflow. */
    async exportAttempt(input: ExportAttemptInput): Promise<ExportOutcome> {
      const run = await getRun(db, input.runId);
      if (!run) return { outcome: 'gone', reason: `run ${input.runId} does not exist` };
      if (run.status === 'succeeded' || run.status === 'failed') return { outcome: 'gone', reason: `run ${run.id} already ${run.status}` };
      const automation: AutomationRow | undefined = await getAutomation(db, run.automationId);
      if (!automation) return { outcome: 'permanent', error: 'the automation was deleted' };
      const integration = await getIntegration(db, automation.integrationId);
      if (!integration || integration.deletedAt) return { outcome: 'permanent', error: 'the integration was deleted' };
      await markRunStarted(db, run.id, clock());

      let exported = 0;
      return heartbeating(
        heartbeatEveryMs,
        async (ctx): Promise<ExportOutcome> => {
          try {
            const r = await exportAutomation(deps.exports, {
              automation,
              integration: { id: integration.id, organizationId: integration.organizationId, mode: integration.mode },
              fileName: run.fileName,
              signal: ctx?.cancellationSignal,
              onProgress: (n) => {
                exported = n;
              },
            });
            return { outcome: 'succeeded', recordsExported: r.records, fileName: run.fileName };
          } catch (err) {
            // Cancelled by Temporal (the workflow was cancelled, or the attempt timed out): not an outcome of the export.
            if (ctx?.cancellationSignal.aborted) throw err;
            if (err instanceof ExportError) return { outcome: err.permanent ? 'permanent' : 'transient', error: clip(err.message) };
            // A failure of ours (the database, a bug): worth another attempt on the schedule.
            return { outcome: 'transient', error: clip(messageOf(err)) };
          }
        },
        () => ({ records: exported }),
      );
    },

    /** An attempt failed transiently: the run is `running` until the next one. */
    async recordRunRetry(input: { runId: string; attempts: number; nextAttemptAtMs: number; error: string }): Promise<void> {
      await moveRun(
        db,
        input.runId,
        'running',
        { attempts: input.attempts, nextAttemptAt: new Date(input.nextAttemptAtMs), error: clip(input.error) },
        clock(),
      );
    },

    /** The run's end and its event (AUTOMATION_COMPLETED or AUTOMATION_FAILED), once. */
    async finishRun(input: { runId: string; status: 'succeeded' | 'failed'; attempts: number; recordsExported: number; error?: string }): Promise<void> {
      const now = clock();
      const run = await endRun(db, input.runId, { ...input, error: input.error === undefined ? undefined : clip(input.error) }, now);
      // Counted by the call that ended it: a run ended earlier keeps its own end time.
      if (run?.status === input.status && run.finishedAt?.getTime() === now.getTime()) (deps.metrics ?? NO_METRICS).automationRun(input.status);
    },
  };
}

export type AutomationActivities = ReturnType<typeof createAutomationActivities>;
