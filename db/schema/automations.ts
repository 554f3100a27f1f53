/** Automations (scheduled CSV exports) and their runs. */
import { index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ownedBy, prefixedId, timestamps, ts } from './columns';

/**
 * Automations (docs/decisions.md Automations): a scheduled CSV export of one entity of an integration, with the filters
 * of that entity's list endpoint, to an HTTP endpoint or a directory. Its Temporal Schedule is `automation-<id>`.
 */
export const automations = pgTable(
  'automations',
  {
    id: prefixedId(),
    ...ownedBy(),
    name: text('name').notNull(),
    entity: text('entity', { enum: ['property', 'unit', 'resident', 'lease'] }).notNull(),
    /** The list endpoint's query parameters, as sent (validated by the same schemas when saved and when run). */
    filters: jsonb('filters').$type<Record<string, string>>().notNull().default({}),
    /** Fields to export, in order; null: every field of the entity. */
    columns: text('columns').array(),
    schedule: jsonb('schedule').$type<{ every: number } | { cron: string; timezone?: string }>().notNull(),
    /**
     * Where the file goes; an HTTP destination's headers are sealed apart (they may hold credentials), and its
     * `content_length` (absent: false) sends the file with its length, spooled first (activities/export.ts). Also how
     * the file is written for whoever opens it there: `escape_formulas` (absent: true; domain/automations.ts).
     */
    destination: jsonb('destination')
      .$type<
        ({ type: 'http'; url: string; method?: 'PUT' | 'POST'; content_length?: boolean } | { type: 'directory'; path: string }) & {
          escape_formulas?: boolean;
        }
      >()
      .notNull(),
    destinationHeaders: text('destination_headers'),
    status: text('status', { enum: ['active', 'paused'] }).notNull(),
    ...timestamps(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('automations_integration_idx').on(t.integrationId, t.createdAt)],
);

/** One run of an automation: its Temporal workflow's id is the run id. */
export const automationRuns = pgTable(
  'automation_runs',
  {
    id: prefixedId(),
    automationId: text('automation_id').notNull(),
    ...ownedBy(),
    trigger: text('trigger', { enum: ['schedule', 'manual'] }).notNull(),
    status: text('status', { enum: ['queued', 'running', 'succeeded', 'failed'] }).notNull(),
    fileName: text('file_name').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at'),
    recordsExported: integer('records_exported'),
    error: text('error'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    /** The schedule's firing that made a scheduled run (its workflow id): one run a firing, however often it asks. */
    firingId: text('firing_id'),
    ...timestamps(),
  },
  (t) => [index('automation_runs_automation_idx').on(t.automationId, t.createdAt), uniqueIndex('automation_runs_firing_idx').on(t.firingId)],
);
