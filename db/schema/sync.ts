/** Sync runs: their jobs, the x_ids a run has seen, and the records it set aside. */
import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ownedBy, prefixedId, ts } from './columns';

export const syncJobs = pgTable(
  'sync_jobs',
  {
    id: prefixedId(),
    ...ownedBy(),
    status: text('status', { enum: ['queued', 'running', 'succeeded', 'failed'] }).notNull(),
    trigger: text('trigger', { enum: ['initial', 'schedule', 'manual'] }).notNull(),
    /** Id of the Temporal workflow that runs (or ran) this job. */
    workflowId: text('workflow_id'),
    /** Whether this is the integration's first complete sync (no per-record events; FIRST_SYNC_COMPLETE). */
    initial: boolean('initial').notNull().default(false),
    /**
     * `full` reads every record and alone may soft-delete; `delta` reads the records the source says changed in
     * [windowFrom, windowTo] and deletes nothing.
     */
    kind: text('kind', { enum: ['full', 'delta'] })
      .notNull()
      .default('full'),
    windowFrom: ts('window_from'),
    /** Database time when the run began: the end of what it covers (a full run's too). */
    windowTo: ts('window_to'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    recordsSeen: integer('records_seen').notNull().default(0),
    recordsNew: integer('records_new').notNull().default(0),
    recordsUpdated: integer('records_updated').notNull().default(0),
    recordsSoftDeleted: integer('records_soft_deleted').notNull().default(0),
    /** Records the source served that the mapping could not read: left as they were in the cache (sync_skipped_records). */
    recordsSkipped: integer('records_skipped').notNull().default(0),
    /**
     * Resume point per entity so a retried activity carries on from the last committed page. `tracked: false`: the
     * integration had no row of the entity when the run began, so the run records no seen x_ids and soft-deletes none.
     * `confirmed`: the source confirmed that what the run did not see of the entity is gone (soft-deletes may go ahead).
     * A delta run's `total`: how many records its window held by the source's count at the last page read, and
     * `restarts`: how often it began the window again because that count fell (activities/sync.ts), and `missed`: the
     * count fell once more after the last restart, so a record may have moved onto a page already read. `pageSize`:
     * the size the entity's pages were read at, kept by a resumed attempt (a page number is an offset only with it).
     */
    progress: jsonb('progress')
      .$type<
        Record<
          string,
          { page: number; done: boolean; tracked?: boolean; confirmed?: boolean; total?: number; restarts?: number; missed?: boolean; pageSize?: number }
        >
      >()
      .notNull()
      .default({}),
    error: text('error'),
    /**
     * While an entity step is retried (a source outage): the attempt under way or next (1 when none failed), the
     * failure of the last attempt, and when the next attempt starts (null while one runs). Set by the step itself,
     * so the admin API, the CLI, the console and the metrics show a retrying run as such, not as a plain `running`.
     */
    attempt: integer('attempt').notNull().default(1),
    lastError: text('last_error'),
    nextAttemptAt: ts('next_attempt_at'),
    /**
     * The step (`<activity>:<entity>`) the retry state above is about: steps run side by side (unit and resident), and
     * one that succeeds clears the state only if it is its own.
     */
    retryingStep: text('retrying_step'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('sync_jobs_integration_idx').on(t.integrationId, t.createdAt),
    // The metrics' and the console's health numbers: runs retrying now.
    index('sync_jobs_retrying_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'running' and ${t.attempt} > 1`),
  ],
);

/**
 * x_ids a sync run saw, one row per applied page of an entity: what a complete run did not see is soft-deleted.
 * A row per page rather than per record: writing a thousand index entries on every page cost the sync more than
 * the page's lookup. An x_id may appear in several rows (a source repeating a record across pages). Emptied when
 * the run ends.
 */
export const syncSeen = pgTable(
  'sync_seen_pages',
  {
    syncJobId: text('sync_job_id').notNull(),
    entity: text('entity').notNull(),
    xIds: text('x_ids').array().notNull(),
  },
  (t) => [index('sync_seen_pages_job_idx').on(t.syncJobId, t.entity)],
);

/**
 * Records a sync run quarantined: served by the source but unreadable by the mapping. The run skips them (their
 * cached version stays as it was, never soft-deleted) and carries on; an operator reads this list to fix the source.
 */
export const syncSkippedRecords = pgTable(
  'sync_skipped_records',
  {
    syncJobId: text('sync_job_id').notNull(),
    entity: text('entity', { enum: ['property', 'unit', 'resident', 'lease'] }).notNull(),
    /** The record's native id; null when even that was unreadable. */
    xId: text('x_id'),
    reason: text('reason').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  // NULLS DISTINCT (the default): records without a readable id are each listed. By time: the health facts read the
  // newest listings (db/health.ts), the retention purge the oldest.
  (t) => [uniqueIndex('sync_skipped_records_key').on(t.syncJobId, t.entity, t.xId), index('sync_skipped_records_created_idx').on(t.createdAt)],
);
