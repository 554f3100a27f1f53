/**
 * Sync activities: the side effects of a sync run, page by page. The database is the source of truth for where a
 * run stands (sync_jobs.progress, committed with each page), so a retried or restarted activity resumes after the
 * last committed page and never applies a page twice; heartbeats carry the same point for operators.
 *
 * Failure behaviour: a source failure worth retrying is thrown as is (Temporal retries with backoff); a permanent
 * one becomes a non-retryable ApplicationFailure of a type from SYNC_FAILURE (activities/sync-failures.ts). What a run
 * writes is in db/sync-runs.ts.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Db } from '../db/client';
import { databaseNow } from '../db/clock';
import type { ApplyResult } from '../db/apply';
import { runStartOf, unseenXIds } from '../db/seen';
import { abandonedJobsOf, getSyncJob, type RunState, type SyncJobRow } from '../db/sync-jobs';
import {
  claimRun,
  clearStepFailures,
  commitLookedUp,
  commitPage,
  failRun,
  finishRun,
  hasRows,
  markDeletionsConfirmed,
  noteStepAttempt,
  noteStepFailure,
  runApplyContext,
  runningJob,
  type EntityProgress,
  type RunWindow,
} from '../db/sync-runs';
import { refreshStatsIfStale } from '../db/table-stats';
import type { IntegrationRow } from '../db/tenants';
import type { Entity } from '../domain/cdm';
import {
  DEFAULT_DELTA_OVERLAP_SECONDS,
  DEFAULT_FULL_SYNC_INTERVAL_SECONDS,
  DEFAULT_SYNC_POLICY,
  type SyncKind,
  type SyncPolicy,
  type SyncTrigger,
} from '../domain/contract';
import type { SyncCompleteData } from '../domain/events';
import { openSourceConfig, SecretError, type Keyring } from '../domain/secrets';
import { createConnector } from '../source';
import type { ChangeWindow, SourceCapabilities, SourceSettings } from '../source/connector';
import type { HashedPage, PageReader } from './page-reader';
import { watchProgress } from './progress-watch';
import { notMovedFailure, notRunningFailure, sourceFailure, SYNC_FAILURE } from './sync-failures';
import { NO_METRICS, type WorkerMetrics } from '../observability/metrics';
import { inSpan, SpanKind } from '../observability/tracing';

export interface SyncActivityDeps {
  db: Db;
  /** Reads, maps and hashes source pages (with an integration's stored settings: secrets stay inside activities). */
  pages: PageReader;
  /** Opens the integration's stored source api key for the page reader (domain/secrets.ts). */
  secrets: Keyring;
  /** Where another run's workflow stands (a job whose workflow ended no longer blocks the integration). */
  runState: RunState;
  clock?: () => Date;
  /** Records per source page. */
  pageSize?: number;
  /** Heartbeat interval while a page is read or applied (the heartbeat timeout must be well above it). */
  heartbeatEveryMs?: number;
  /** An attempt whose resume point has not moved for this long fails instead of heartbeating on. Default 5 min. */
  stallMs?: number;
  /** What the sync workflow follows for retries and time-outs (from configuration). Default DEFAULT_SYNC_POLICY. */
  policy?: SyncPolicy;
  /** x_ids looked up in the source per request when confirming deletions. Default 500. */
  lookupBatch?: number;
  /** Counts runs and records (Prometheus); nothing when absent. */
  metrics?: WorkerMetrics;
  /** Seconds between full runs where the source reads deltas, for integrations that set none (SYNC_FULL_INTERVAL_SECONDS). */
  fullSyncIntervalSeconds?: number;
  /** How far before the last covered window's end a delta run reads from (SYNC_DELTA_OVERLAP_SECONDS). */
  deltaOverlapSeconds?: number;
  /** What the connector of the settings can do (tests); the connector's own answer otherwise. */
  capabilitiesOf?: (settings: SourceSettings) => SourceCapabilities;
}

export interface StartSyncJobInput {
  integrationId: string;
  trigger: SyncTrigger;
  syncJobId?: string;
  /** A manual trigger's request (SyncWorkflowInput.kind). */
  kind?: SyncKind;
}
export type StartSyncJobResult =
  | { skipped: false; syncJobId: string; organizationId: string; initial: boolean; kind: SyncKind }
  | { skipped: true; syncJobId: string | null; reason: string };

/** What checking the unseen records of an entity against the source found. */
export interface ConfirmResult {
  /** Live cached records the run's pages did not contain. */
  checked: number;
  /** Of those, records the source still has (paging skipped them): applied, so not soft-deleted. */
  present: number;
  /** Records the source confirmed gone: the run's end soft-deletes them. */
  gone: number;
}

export function createSyncActivities(deps: SyncActivityDeps) {
  const { db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const pageSize = deps.pageSize ?? 1000;
  const heartbeatEveryMs = deps.heartbeatEveryMs ?? 5_000;
  const stallMs = deps.stallMs ?? 300_000;
  const lookupBatch = deps.lookupBatch ?? 500;
  const metrics = deps.metrics ?? NO_METRICS;
  const policy = deps.policy ?? DEFAULT_SYNC_POLICY;
  const fullSyncIntervalSeconds = deps.fullSyncIntervalSeconds ?? DEFAULT_FULL_SYNC_INTERVAL_SECONDS;
  const deltaOverlapSeconds = deps.deltaOverlapSeconds ?? DEFAULT_DELTA_OVERLAP_SECONDS;
  const capabilitiesOf = deps.capabilitiesOf ?? ((settings: SourceSettings) => createConnector(settings).capabilities);

  /**
   * The run's retry state on its job row, so a run retrying a failing source shows its attempt, the last failure and
   * when the next attempt starts. An attempt after the first says so when it begins; a failed one records its error
   * and, when Temporal will try again, when (the policy's backoff, or the source's Retry-After).
   */
  async function attemptBegins(syncJobId: string, stepName: string): Promise<void> {
    const attempt = Context.current().info.attempt;
    if (attempt > 1) await noteStepAttempt(db, syncJobId, stepName, attempt);
  }
  async function attemptFailed(syncJobId: string, stepName: string, err: unknown): Promise<void> {
    if (err instanceof CancelledFailure) return;
    const attempt = Context.current().info.attempt;
    const retryable = !(err instanceof ApplicationFailure && err.nonRetryable) && attempt < policy.retry.maximumAttempts;
    const delayMs =
      err instanceof ApplicationFailure && typeof err.nextRetryDelay === 'number'
        ? err.nextRetryDelay
        : Math.min(policy.retry.maximumIntervalMs, policy.retry.initialIntervalMs * policy.retry.backoffCoefficient ** (attempt - 1));
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
    await noteStepFailure(db, syncJobId, stepName, {
      attempt: retryable ? attempt + 1 : attempt,
      lastError: message,
      nextAttemptAt: retryable ? new Date(clock().getTime() + delayMs) : null,
    }).catch(() => {}); // only a display: the failure itself is what Temporal retries
  }
  /** What a committed page (or look-up batch) applied, counted. */
  function countRecords(entity: Entity, r: { created: number; updated: number; skipped: number }): void {
    metrics.syncRecords(entity, 'created', r.created);
    metrics.syncRecords(entity, 'updated', r.updated);
    metrics.syncRecords(entity, 'skipped', r.skipped);
  }
  /**
   * One attempt of an entity step (`stepName`: the activity and its entity), with the step's retry state kept on the
   * job row.
   */
  async function step<T>(syncJobId: string, stepName: string, attempt: () => Promise<T>): Promise<T> {
    await attemptBegins(syncJobId, stepName);
    try {
      const done = await attempt();
      await clearStepFailures(db, syncJobId, stepName);
      return done;
    } catch (err) {
      await attemptFailed(syncJobId, stepName, err);
      throw err;
    }
  }

  /** The integration's source settings with the api key opened; a key that cannot be opened ends the run. */
  const sourceSettingsOf = (integration: IntegrationRow) => {
    try {
      return openSourceConfig(deps.secrets, integration);
    } catch (err) {
      if (err instanceof SecretError)
        throw ApplicationFailure.nonRetryable(`the source credentials cannot be read: ${err.message}`, SYNC_FAILURE.secretUnavailable);
      throw err;
    }
  };

  async function loadRunning(syncJobId: string): Promise<{ job: SyncJobRow; integration: IntegrationRow }> {
    const found = await runningJob(db, syncJobId);
    if (!found.running) throw notRunningFailure(syncJobId, found.why);
    return found;
  }

  /**
   * How a run reads an entity's pages: every record (a full run), or the records changed in the job's window (a
   * delta run). Same paging, resume points and page transactions either way.
   */
  function readerOf(job: SyncJobRow, settings: SourceSettings, entity: Entity, pageSize: number): (page: number) => Promise<HashedPage<Entity>> {
    if (job.kind !== 'delta') return (page) => deps.pages.read(settings, entity, page, pageSize);
    if (!job.windowFrom || !job.windowTo) throw ApplicationFailure.nonRetryable(`delta run ${job.id} has no window`, SYNC_FAILURE.incomplete);
    const window: ChangeWindow = { from: job.windowFrom, to: job.windowTo };
    return (page) => deps.pages.readChanged(settings, entity, window, page, pageSize);
  }

  /** One attempt of syncEntity (below). */
  async function syncEntityAttempt(input: { syncJobId: string; entity: Entity }): Promise<{ pages: number; records: number }> {
    const { entity, syncJobId } = input;
    const ctx = Context.current();
    const { job, integration } = await loadRunning(syncJobId);
    let point: EntityProgress = job.progress[entity] ?? { page: 0, done: false };
    if (point.done) return { pages: point.page, records: 0 };
    // Nothing of the entity cached yet (a first sync, or a new kind of record): nothing to soft-delete, so the run
    // need not record what it saw; nor does a delta run, which soft-deletes nothing. The choice is stored with the
    // resume point by the first page's commit; an attempt that lost that race adopts the stored choice with the
    // stored point.
    if (point.page === 0) point = { ...point, tracked: job.kind === 'delta' ? false : await hasRows(db, entity, integration.id) };
    // The page size goes with the resume point: page n is records (n-1)·size+1 on, so an attempt resumed after the
    // setting changed (a worker restarted with another SYNC_PAGE_SIZE) reads on at the size the pages before were read.
    point = { ...point, pageSize: point.pageSize ?? pageSize };
    const apply = runApplyContext(integration, job);
    const settings = sourceSettingsOf(integration);
    const readPage = readerOf(job, settings, entity, point.pageSize!);
    let records = 0;

    /**
     * A page being read, and when its reading began by the database's clock (the clock write-backs store by): what
     * the cache got from the source later is newer. The time is asked for before the read starts.
     */
    const read = (page: number): { page: Promise<HashedPage<Entity>>; at: Promise<Date> } => {
      const at = databaseNow(db);
      const p = at
        .then(() =>
          inSpan(
            'sync.page',
            { 'propsync.sync_job_id': syncJobId, 'propsync.entity': entity, 'propsync.page': page, 'propsync.sync_kind': job.kind },
            () => readPage(page),
            SpanKind.CLIENT,
          ),
        )
        .catch(sourceFailure(`${entity} page ${page}`));
      // Attach handlers at once: a prefetched page may be discarded and must not become an unhandled rejection.
      p.catch(() => {});
      at.catch(() => {});
      return { page: p, at };
    };

    const watch = watchProgress(ctx, { stallMs, heartbeatEveryMs, details: () => point });
    try {
      let next = read(point.page + 1);
      for (let n = 0; ; n++) {
        if (n % STATS_CHECK_EVERY_PAGES === 0) await watch.guard(refreshStatsIfStale(db, entity));
        const page = await watch.guard(next.page);
        const readAt = await next.at;
        const target = nextPoint(point, page, job.kind === 'delta');
        if (!target.done) next = read(target.page + 1);
        // The resume point moves only from where this attempt found it, and only while the job runs; otherwise the
        // page's writes roll back.
        const commit = await watch.guard(
          commitPage(db, {
            syncJobId,
            entity,
            ctx: { ...apply, trackSeen: point.tracked !== false, readAt },
            records: page.records,
            skipped: page.skipped,
            from: point.page,
            target,
          }),
        );
        if (commit.moved) {
          point = target;
          watch.moved();
          records += countOf(commit.committed);
          countRecords(entity, commit.committed);
        } else {
          if (commit.why.reason !== 'superseded') throw notMovedFailure(syncJobId, commit.why);
          // Another attempt (one Temporal gave up on that kept running) committed this page: carry on from
          // wherever the job now stands.
          const fresh = await getSyncJob(db, syncJobId);
          point = fresh?.progress[entity] ?? point;
          watch.moved();
          if (!point.done) next = read(point.page + 1);
        }
        ctx.heartbeat(point);
        if (point.done) return { pages: point.page, records };
        if (ctx.cancellationSignal.aborted) throw new CancelledFailure('sync activity cancelled');
      }
    } finally {
      watch.stop();
    }
  }

  /** One attempt of confirmDeletions (below). */
  async function confirmDeletionsAttempt(input: { syncJobId: string; entity: Entity }): Promise<ConfirmResult> {
    const { entity, syncJobId } = input;
    const ctx = Context.current();
    const { job, integration } = await loadRunning(syncJobId);
    const result: ConfirmResult = { checked: 0, present: 0, gone: 0 };
    const point = job.progress[entity];
    if (!point?.done) throw ApplicationFailure.nonRetryable(`${entity} was not fully read`, SYNC_FAILURE.incomplete);
    if (point.tracked === false || point.confirmed) return result;
    const apply = runApplyContext(integration, job);
    const settings = sourceSettingsOf(integration);
    let after: string | null = null;
    const watch = watchProgress(ctx, { stallMs, heartbeatEveryMs, details: () => ({ entity, after, ...result }) });
    try {
      for (;;) {
        const unseen: string[] = await watch.guard(
          unseenXIds(db, { integrationId: integration.id, syncJobId, startedAt: runStartOf(job), entity, after, limit: lookupBatch }),
        );
        if (unseen.length === 0) break;
        const asked = new Set(unseen);
        const readAt = await watch.guard(databaseNow(db));
        const found = await watch.guard(deps.pages.lookup(settings, entity, unseen).catch(sourceFailure(`looking up ${unseen.length} ${entity} records`)));
        const records = found.records.filter((r) => asked.has(r.x_id));
        const unreadable = found.skipped.filter((r) => r.x_id !== null && asked.has(r.x_id));
        await watch.guard(
          commitLookedUp(db, { syncJobId, entity, ctx: { ...apply, trackSeen: true, readAt }, records, skipped: unreadable }).then((commit) => {
            if (!commit.moved) throw notMovedFailure(syncJobId, commit.why);
            countRecords(entity, commit.committed);
          }),
        );
        const present = new Set([...records.map((r) => r.x_id), ...unreadable.map((r) => r.x_id!)]).size;
        result.checked += unseen.length;
        result.present += present;
        result.gone += unseen.length - present;
        after = unseen[unseen.length - 1]!;
        watch.moved();
        ctx.heartbeat({ entity, after, ...result });
        if (ctx.cancellationSignal.aborted) throw new CancelledFailure('sync activity cancelled');
      }
      await markDeletionsConfirmed(db, syncJobId, entity);
      return result;
    } finally {
      watch.stop();
    }
  }

  /**
   * What the run starting now reads, and the window it covers; its end is `windowTo`, the database's time as the run
   * is claimed (db/sync-runs.ts claimRun), whatever the kind. Full: the integration's first run, a source that cannot
   * list changes, no run succeeded yet, the last full run began a full-run interval ago or longer (unless a manual
   * trigger asked for a delta), or a manual trigger asked for it. Delta otherwise, from where the last successful
   * run's window ended less the overlap.
   */
  function runOf(integration: IntegrationRow, requested: SyncKind | undefined, windowTo: Date): RunWindow {
    const full = { kind: 'full' as SyncKind, windowFrom: null, windowTo };
    if (integration.firstSyncCompletedAt === null || integration.syncedThrough === null || requested === 'full') return full;
    if (!capabilitiesOf(sourceSettingsOf(integration)).delta) return full;
    const everyMs = (integration.fullSyncIntervalSeconds ?? fullSyncIntervalSeconds) * 1000;
    // A delta asked for is one, even when a full run is due (the next run without `kind` is that full run).
    if (requested !== 'delta' && (integration.lastFullSyncAt === null || windowTo.getTime() - integration.lastFullSyncAt.getTime() >= everyMs)) return full;
    return { kind: 'delta' as SyncKind, windowFrom: new Date(integration.syncedThrough.getTime() - deltaOverlapSeconds * 1000), windowTo };
  }

  return {
    /**
     * Claim the run: mark the API-created job running, or (scheduled runs) create the job, unless another run of
     * the integration is going, in which case the run is skipped. Idempotent across retries of the same workflow.
     */
    async startSyncJob(input: StartSyncJobInput): Promise<StartSyncJobResult> {
      const workflowId = Context.current().info.workflowExecution?.workflowId;
      if (!workflowId) throw ApplicationFailure.nonRetryable('startSyncJob runs inside a sync workflow only', SYNC_FAILURE.jobNotFound);
      // Which runs are abandoned is asked of Temporal before the lock is taken: no network call under it.
      const abandoned = input.syncJobId ? new Set<string>() : await abandonedJobsOf(db, input.integrationId, deps.runState);
      const claim = await claimRun(
        db,
        { integrationId: input.integrationId, syncJobId: input.syncJobId, workflowId, trigger: input.trigger, abandoned },
        (integration, windowTo) => runOf(integration, input.kind, windowTo),
      );
      if (claim.outcome === 'not-running') {
        // Only the job the API queued (input.syncJobId) can be found not running.
        const { why } = claim;
        throw why.reason === 'ended'
          ? ApplicationFailure.nonRetryable(`sync job ${input.syncJobId} is already ${why.status}`, SYNC_FAILURE.jobNotRunning)
          : notRunningFailure(input.syncJobId!, why);
      }
      if (claim.outcome === 'running') {
        const { job } = claim;
        return { skipped: false, syncJobId: job.id, organizationId: job.organizationId, initial: job.initial, kind: job.kind };
      }
      metrics.syncRun('skipped', { trigger: input.trigger, kind: input.kind });
      const { active } = claim;
      return active
        ? { skipped: true, syncJobId: active.id, reason: `run ${active.id} is ${active.status}` }
        : { skipped: true, syncJobId: null, reason: 'integration deleted' };
    },

    /**
     * Read every page of one entity from the source and apply it, each page in one transaction with the job's
     * resume point and counters. A page is read while the previous one is applied.
     */
    async syncEntity(input: { syncJobId: string; entity: Entity }): Promise<{ pages: number; records: number }> {
      return step(input.syncJobId, `syncEntity:${input.entity}`, () => syncEntityAttempt(input));
    },

    /**
     * Before the run soft-deletes anything of an entity: look every live cached record the run's pages did not
     * contain up in the source by id. Page-number paging skips records when the source deletes or inserts during
     * the run; what the source still has is applied now (and so is not soft-deleted), what it does not have is
     * confirmed gone. Idempotent: a retry looks up only what is still unseen.
     */
    async confirmDeletions(input: { syncJobId: string; entity: Entity }): Promise<ConfirmResult> {
      return step(input.syncJobId, `confirmDeletions:${input.entity}`, () => confirmDeletionsAttempt(input));
    },

    /** The retry and time-out policy of this worker's sync runs (run as a local activity: no I/O). */
    async syncPolicy(): Promise<SyncPolicy> {
      return deps.policy ?? DEFAULT_SYNC_POLICY;
    },

    /**
     * End a run whose every entity was fully read: soft-delete what it did not see, record SYNC_COMPLETE (or
     * FIRST_SYNC_COMPLETE) after every event of the run, mark the job succeeded and forget what it saw, all in one
     * transaction. A retry after a commit returns the stored outcome.
     */
    async finishSyncJob(input: { syncJobId: string }): Promise<SyncCompleteData> {
      const end = await finishRun(db, input.syncJobId);
      if (end.outcome === 'not-running') throw notRunningFailure(input.syncJobId, end.why);
      if (end.outcome === 'not-read') throw ApplicationFailure.nonRetryable(`entities not fully read: ${end.entities.join(', ')}`, SYNC_FAILURE.incomplete);
      if (end.outcome === 'not-confirmed') {
        throw ApplicationFailure.nonRetryable(`deletions not confirmed with the source: ${end.entities.join(', ')}`, SYNC_FAILURE.incomplete);
      }
      // What this call ended, counted once its transaction committed (a retry after a commit counts nothing).
      if (end.ended) {
        for (const [entity, n] of end.ended.deleted) metrics.syncRecords(entity, 'deleted', n);
        metrics.syncRun('succeeded', end.ended.job, durationOf(end.ended.job));
      }
      return end.data;
    },

    /** Mark a run failed with its error (nothing is soft-deleted) and forget what it saw. Idempotent. */
    async failSyncJob(input: { syncJobId: string; error: string }): Promise<void> {
      const failed = await failRun(db, input.syncJobId, input.error, clock());
      if (failed) metrics.syncRun('failed', failed, durationOf(failed));
    },
  };
}

export type SyncActivities = ReturnType<typeof createSyncActivities>;

const STATS_CHECK_EVERY_PAGES = 10;

/** How often a delta run reads an entity's window again from its first page before it carries on regardless. */
export const DELTA_WINDOW_RESTARTS = 3;

/**
 * Where an entity's reading stands once `page` is stored. A delta run pages by offset through the records changed in
 * its window, and a record changed again while the run reads leaves the window (its time is now past the end): the
 * records after it move up a place, and one may move onto a page already read, missed by this run and by the next
 * (its change is older than the next window). The source's count of the window says so: when it falls between two
 * pages, the run reads the window again from its first page, up to DELTA_WINDOW_RESTARTS times (what it reads twice is
 * unchanged the second time: no event, no write). When it falls again after that, the run carries on and the entity
 * is `missed`: the run does not move the integration's synced-through mark (db/sync-runs.ts), so the next delta run
 * reads this window again. A source without a count, and a full run, page on.
 */
export function nextPoint(point: EntityProgress, page: { hasMore: boolean; total?: number }, delta: boolean): EntityProgress {
  const restarts = point.restarts ?? 0;
  const fell = delta && page.total !== undefined && point.total !== undefined && page.total < point.total;
  const kept = {
    tracked: point.tracked,
    ...(point.pageSize !== undefined ? { pageSize: point.pageSize } : {}),
    ...(delta && page.total !== undefined ? { total: page.total } : {}),
    ...(restarts > 0 ? { restarts } : {}),
    ...(point.missed || (fell && restarts >= DELTA_WINDOW_RESTARTS) ? { missed: true } : {}),
  };
  if (fell && restarts < DELTA_WINDOW_RESTARTS) return { ...kept, page: 0, done: false, restarts: restarts + 1 };
  return { ...kept, page: point.page + 1, done: !page.hasMore };
}

function countOf(r: ApplyResult): number {
  return r.created + r.updated + r.unchanged;
}

/** Seconds from a run's claim (or creation) to its end. */
function durationOf(job: SyncJobRow): number {
  return Math.max(0, ((job.finishedAt ?? new Date()).getTime() - (job.startedAt ?? job.createdAt).getTime()) / 1000);
}
