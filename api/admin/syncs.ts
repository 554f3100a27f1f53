/** Manual sync runs and the sync job history an operator follows (the CLI's `sync run --wait` polls here). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { getSyncJob, skippedRecordsOf, skippedRecordView, syncJobsPage, syncJobView, type SyncJobRow } from '../../db/sync-jobs';
import { SYNC_ORDER, type Entity } from '../../domain/cdm';
import { syncWorkflowIdOf } from '../../domain/contract';
import type { ApiDeps } from '../deps';
import { SkippedRecord, SyncJob, SyncRequest } from './syncs.schemas';
import { listRoute, retrieveRoute } from './routes';
import { errorResponses, IdParam, json, linkTo, listOf, ListQuery, unavailableResponse, IntegrationId } from './schemas';
import { capabilitiesOf, invalidField, listChildren, loadById, loadIntegration, withTemporal } from './support';
import { dialectOf } from '../../source/connector';

/** The job as syncJobView shows it, plus where each entity stands, so the CLI can draw a real progress bar. */
function adminSyncJobView(row: SyncJobRow) {
  return {
    ...syncJobView(row),
    // Stored once the run claims the job (a scheduled run's id is the schedule's); before that, the one it starts under.
    workflow_id: row.workflowId ?? syncWorkflowIdOf(row.id),
    attempt: row.attempt,
    last_error: row.lastError,
    next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
    progress: Object.fromEntries(SYNC_ORDER.map((e) => [e, { pages: row.progress[e]?.page ?? 0, done: row.progress[e]?.done ?? false }])) as Record<
      Entity,
      { pages: number; done: boolean }
    >,
  };
}

const tags = ['Sync jobs'];
const SyncJobId = IdParam('syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'Sync job id (`syj_` + ULID).');

const loadSyncJob = (deps: ApiDeps, id: string): Promise<SyncJobRow> => loadById('syncJob', id, 'sync job', (id) => getSyncJob(deps.db, id));

/**
 * A bare POST is a run like a scheduled one, also when it says its (empty) body is JSON, as a client that always sends
 * `Content-Type: application/json` does: an empty body reads as no body, not as malformed JSON.
 */
const emptyBodyIsNone: MiddlewareHandler = async (c, next) => {
  const length = c.req.header('content-length');
  // The request's text, as Hono keeps it for the JSON validator: an empty body is the empty request, `{}`.
  if (length === '0' || (length === undefined && c.req.header('transfer-encoding') === undefined))
    c.req.bodyCache.text = Promise.resolve('{}') as unknown as string; // (the cache holds promises; its type says otherwise)
  await next();
};

export function registerSyncs(app: OpenAPIHono, deps: ApiDeps): void {
  // Written out, not built (./routes): its body is optional, a bare POST being a run like a scheduled one.
  app.openapi(
    createRoute({
      method: 'post',
      path: '/integrations/{id}/syncs',
      tags,
      summary: 'Start a sync now',
      description:
        'Returns the new job, queued. While a run of the integration is queued or running, no second one starts: that job is returned instead. `kind: full` makes the run read every record (and find deletions) whatever the full-run cadence says; `kind: delta` asks for a run of the changes only, which is refused (422) for a source that cannot list them, and becomes full while the integration has no successful run (but not when a full run is due by the cadence: the next run without `kind` is that one). Without `kind` the run decides, as a scheduled one does.',
      middleware: [emptyBodyIsNone] as const,
      request: {
        params: IntegrationId,
        body: { content: { 'application/json': { schema: SyncRequest } }, required: false },
      },
      responses: { 202: json(SyncJob, 'The job.', linkTo('GetSyncJob', 'getSyncJob', 'Follow the run.')), ...errorResponses, ...unavailableResponse },
    }),
    async (c) => {
      const integration = await loadIntegration(deps, c.req.valid('param').id);
      const { kind } = (c.req.valid('json') as SyncRequest | undefined) ?? {};
      if (kind === 'delta' && !capabilitiesOf(deps, integration).delta) {
        throw invalidField(
          'kind',
          `${/^[aeiou]/i.test(dialectOf(integration.sourceConfig)) ? 'An' : 'A'} ${dialectOf(integration.sourceConfig)} source cannot list what changed: every run of this integration reads everything (kind full).`,
        );
      }
      const job = await withTemporal(
        deps,
        'start the sync',
        (ctl, control) => control.triggerSync(ctl, integration, { kind }),
        undefined,
        // A job recorded before its workflow failed to start stays in the history, failed with the reason.
        'No run started (a job recorded for it is marked failed); retry later.',
      );
      return c.json(adminSyncJobView(job), 202);
    },
  );

  app.openapi(
    listRoute({
      path: '/integrations/{id}/sync_jobs',
      tags,
      summary: "List an integration's sync jobs",
      params: IntegrationId,
      list: listOf(SyncJob, 'SyncJobList'),
      order: 'desc',
    }),
    listChildren(deps, loadIntegration, syncJobsPage, adminSyncJobView),
  );

  app.openapi(
    listRoute({
      path: '/sync_jobs/{id}/skipped_records',
      tags,
      summary: "List a sync job's quarantined records",
      description:
        'Records the source served that the mapping could not read, with the reason. The run skipped them and left their cached version as it was; fix them in the source and the next run picks them up.',
      params: SyncJobId,
      query: ListQuery,
      list: listOf(SkippedRecord, 'SkippedRecordList'),
      what: 'In entity and x_id order.',
    }),
    listChildren(deps, loadSyncJob, skippedRecordsOf, skippedRecordView),
  );

  app.openapi(
    retrieveRoute({
      path: '/sync_jobs/{id}',
      operationId: 'getSyncJob',
      tags,
      summary: 'Retrieve a sync job',
      description: 'Counts move while the job runs.',
      params: SyncJobId,
      ok: json(SyncJob, 'The job.'),
    }),
    async (c) => c.json(adminSyncJobView(await loadSyncJob(deps, c.req.valid('param').id)), 200),
  );
}
