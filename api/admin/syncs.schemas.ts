/**
 * The admin API's schemas of sync jobs: the runs of an integration's sync, and the records a run set aside, beside
 * their routes (syncs.ts).
 */
import { z } from '@hono/zod-openapi';
import { ENTITIES } from '../../domain/cdm';
import { SYNC_KINDS } from '../../domain/contract';
import { DateTime, Uuid } from './schemas';

export const SyncJob = z
  .object({
    id: z.string().openapi({ example: 'syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    status: z.enum(['queued', 'running', 'succeeded', 'failed']),
    trigger: z.enum(['initial', 'schedule', 'manual']),
    kind: z.enum(SYNC_KINDS).nullable().openapi({
      description:
        '`full`: reads every record, and alone may soft-delete what the source no longer has. `delta`: reads the records the source says changed in [window_from, window_to] and deletes nothing. Null while the job is queued: the run decides when it starts.',
    }),
    window_from: DateTime.nullable().openapi({
      description: 'A delta run: the start of the window of changes it reads (the last covered window end less an overlap). Null for a full run.',
    }),
    window_to: DateTime.nullable().openapi({
      description: "When the run began (the database's clock): the end of what it covers, for either kind. Null while queued.",
    }),
    started_at: DateTime.nullable(),
    finished_at: DateTime.nullable(),
    records_seen: z.number().int(),
    records_new: z.number().int(),
    records_updated: z.number().int(),
    records_soft_deleted: z.number().int(),
    records_skipped: z.number().int().openapi({
      description:
        'Records the source served that the mapping could not read: left as they were in the cache (never soft-deleted) and listed under /sync_jobs/{id}/skipped_records. The run still succeeds.',
    }),
    error: z.string().nullable(),
    workflow_id: z.string().openapi({
      description:
        "The Temporal workflow that runs the job (the Temporal UI finds it by this id): `sync-<job id>` for an initial or manual run, the schedule's `sync-scheduled-<integration id>-<time>` for a scheduled one.",
    }),
    attempt: z.number().int().openapi({
      description:
        "The attempt of the run's current step (1 until a step fails; a step retried after a source outage is at 2, 3, …; back to 1 when it succeeds).",
    }),
    last_error: z.string().nullable().openapi({
      description:
        'Why the last failed attempt of the current step failed: set while the step is retried, kept when the run fails on it (beside `error`, which says why the run failed), null once the step succeeds or when no attempt failed.',
    }),
    next_attempt_at: DateTime.nullable().openapi({
      description: 'When the step is tried again, while the run waits between attempts; null while an attempt runs or none is due.',
    }),
    progress: z
      .record(z.enum(ENTITIES), z.object({ pages: z.number().int(), done: z.boolean() }))
      .openapi({ description: 'Per entity, in sync order: pages committed so far and whether the entity is complete.' }),
  })
  .openapi('SyncJob');

export const SyncRequest = z
  .strictObject({
    kind: z
      .enum(SYNC_KINDS)
      .optional()
      .openapi({ description: 'Ask for a full run, or a run of the changes only (sources that can list them); default: as the cadence decides.' }),
  })
  .openapi('SyncRequest');
export type SyncRequest = z.infer<typeof SyncRequest>;

export const SkippedRecord = z
  .object({
    entity: z.enum(ENTITIES),
    x_id: z.string().nullable().openapi({ description: "The record's id in the source; null when even that was unreadable." }),
    reason: z.string().openapi({ example: 'not a decimal amount: "TBD"' }),
    seen_at: DateTime,
  })
  .openapi('SkippedRecord');
