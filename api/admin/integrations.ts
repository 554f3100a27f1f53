/**
 * Integrations: one connected source each, with its Temporal Schedule. The database row and the schedule change
 * together: when Temporal cannot be reached the row change is undone and the answer is a 503, so an integration is
 * never left half-made (the worker also reconciles schedules at start-up).
 */
import type { Client } from '@temporalio/client';
import { randomInt, randomUUID } from 'node:crypto';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { automationsOf } from '../../db/automations';
import { cancelRetriesOffPlan } from '../../db/webhooks';
import { createIntegration, deleteNewIntegration, disconnectIntegration, integrationsPage, updateIntegration, type IntegrationRow } from '../../db/tenants';
import { effectiveSyncInterval, PLAN_RULES, type Plan } from '../../domain/plans';
import { MAX_FULL_SYNC_INTERVAL_SECONDS } from '../../domain/contract';
import type { SandboxCredentials, SandboxDialect } from '../../sandbox/control';
import { dialectOf } from '../../source/connector';
import type { ApiDeps } from '../deps';
import { ApiError } from '../problem';
import { Integration, IntegrationCreate, IntegrationUpdate } from './integrations.schemas';
import { deleted, deleteRoute, listRoute, patchRoute, postRoute, retrieveRoute } from './routes';
import { json, linkTo, listOf, unavailableResponse, IntegrationId, OrganizationId } from './schemas';
import { listChildren, loadIntegration, loadOrganization, loadSyncControl, viaSandbox, viaTemporal, withinDeadline, withTemporal } from './support';

/** Leases a sandbox company gets when the create request does not say. */
const DEFAULT_SANDBOX_SIZE = 50;

/** An integration as the admin API shows it; `fullSyncDefault`: the service's full-run interval (SYNC_FULL_INTERVAL_SECONDS). */
function integrationView(row: IntegrationRow, fullSyncDefault: number) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    name: row.name,
    mode: row.mode,
    plan: row.plan,
    source: { type: row.sourceType, dialect: dialectOf(row.sourceConfig) },
    sync_interval_seconds: effectiveSyncInterval(row.plan, row.syncIntervalSeconds),
    // Without an override, a cadence slower than the default makes every run a full one: the interval is the cadence.
    full_sync_interval_seconds: row.fullSyncIntervalSeconds ?? Math.max(fullSyncDefault, effectiveSyncInterval(row.plan, row.syncIntervalSeconds)),
    created_at: row.createdAt.toISOString(),
  };
}

/** A 422 naming one field of the request. */
function invalid(pointer: string, detail: string): ApiError {
  return new ApiError('validation_error', `${pointer}: ${detail}`, { errors: [{ pointer, detail }] });
}

/**
 * What the request's source may be in its mode: a sandbox is for test mode only, and a live integration talks to
 * its source over HTTPS only (its api key travels in every request); test mode may use http://, as the sandbox does.
 */
function checkSource(mode: 'test' | 'live', source: { type: 'sandbox' } | { type: 'entrata' | 'buildium'; base_url: string }): void {
  if (source.type === 'sandbox' && mode === 'live') {
    throw invalid(
      '/source/type',
      'A sandbox source is only for test-mode integrations; a live integration connects to a real system (type entrata or buildium).',
    );
  }
  if (source.type !== 'sandbox' && mode === 'live' && new URL(source.base_url).protocol !== 'https:') {
    throw invalid(
      '/source/base_url',
      'A live integration connects to its source over https:// only (its credentials travel with every request); http:// is for test mode.',
    );
  }
}

/**
 * The full-run interval, when set, is no shorter than the integration's cadence (a full run is one of its runs) and
 * no longer than 30 days (the oldest a deletion may stay unseen); checked whichever of the two a request changed.
 */
function checkFullCadence(plan: Plan, override: number | null, full: number | null): void {
  if (full === null) return;
  const every = effectiveSyncInterval(plan, override);
  if (full < every) {
    throw invalid(
      'full_sync_interval_seconds',
      `${full} s is shorter than the integration's sync interval (${every} s); a full run is one of its scheduled runs, so set at least ${every} s (null = the default).`,
    );
  }
  if (full > MAX_FULL_SYNC_INTERVAL_SECONDS) {
    throw invalid(
      'full_sync_interval_seconds',
      `${full} s is longer than 30 days (${MAX_FULL_SYNC_INTERVAL_SECONDS} s), the longest a deletion may go unseen.`,
    );
  }
}

/** An override faster than the plan allows is refused, whichever of plan or interval the request changed. */
function checkCadence(plan: Plan, override: number | null): void {
  const fastest = PLAN_RULES[plan].fastestSyncIntervalSeconds;
  if (override !== null && override < fastest) {
    const detail = `${override} s is faster than the ${plan} plan allows; its fastest cadence is ${fastest} s (null = the plan default, ${PLAN_RULES[plan].defaultSyncIntervalSeconds} s).`;
    throw invalid('sync_interval_seconds', detail);
  }
}

/** A sandbox integration's settings: those of the dialect its company speaks, with the credentials it was given. */
function sandboxSettings(baseUrl: string, dialect: SandboxDialect, created: SandboxCredentials): IntegrationRow['sourceConfig'] {
  if (dialect === 'entrata') return { base_url: baseUrl, api_key: created.api_key };
  if (created.dialect !== 'buildium' || !created.client_id || !created.client_secret) {
    throw new ApiError(
      'service_unavailable',
      `The sandbox PMS at ${baseUrl} did not create a buildium company (it answered a ${created.dialect} one without a client id and secret): is it older than the buildium flavour?`,
    );
  }
  return { dialect: 'buildium', base_url: baseUrl, client_id: created.client_id, client_secret: created.client_secret };
}

const tags = ['Integrations'];

/** A DELETE that failed part-way: the integration is still there, but some of its schedules may be gone already. */
const PARTLY_REMOVED =
  'The integration and its automations are not deleted, but some of their schedules may already be removed (no runs start from those): retry the DELETE to finish.';

export function registerIntegrations(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    postRoute({
      path: '/organizations/{id}/integrations',
      tags,
      summary: 'Connect a source',
      description:
        "A `sandbox` source provisions a company with generated data in the sandbox PMS (test mode only), speaking the `dialect` asked for (default `entrata`). A live integration's `base_url` must be https://. The source's secret (`api_key`, or `client_secret` of a `buildium` source) is stored encrypted and never shown again. The sync schedule is created at once and, unless `initial_sync` is false, the first sync starts (always a full run). Where the source can list what changed (`buildium`), scheduled runs read only the changes and a full run comes every `full_sync_interval_seconds`.",
      params: OrganizationId,
      body: IntegrationCreate,
      responses: { 201: json(Integration, 'The integration.', linkTo('GetIntegration', 'getIntegration', 'The integration created.')), ...unavailableResponse },
    }),
    async (c) => {
      const org = await loadOrganization(deps, c.req.valid('param').id);
      const input = c.req.valid('json');
      checkSource(input.mode, input.source);
      const override = input.sync_interval_seconds ?? null;
      checkCadence(input.plan, override);
      const fullOverride = input.full_sync_interval_seconds ?? null;
      checkFullCadence(input.plan, override, fullOverride);
      // Fail before provisioning anything when Temporal is down.
      await withTemporal(deps, 'create the integration', async () => {});

      const id = randomUUID();
      let sourceConfig: IntegrationRow['sourceConfig'];
      if (input.source.type === 'sandbox') {
        const size = input.source.size ?? DEFAULT_SANDBOX_SIZE;
        const seed = input.source.seed ?? randomInt(2_147_483_647);
        const dialect = input.source.dialect ?? 'entrata';
        const created = await viaSandbox(deps, 'provision the sandbox company', (s) => s.createCompany({ companyId: id, size, seed, dialect }));
        try {
          sourceConfig = { ...sandboxSettings(deps.config.SANDBOX_URL, dialect, created), size, seed };
        } catch (err) {
          await viaSandbox(deps, 'remove the sandbox company', (s) => s.deleteCompany(id)).catch(() => {});
          throw err;
        }
      } else if (input.source.type === 'buildium') {
        const { base_url, client_id, client_secret } = input.source;
        sourceConfig = { dialect: 'buildium', base_url: base_url.replace(/\/$/, ''), client_id, client_secret };
      } else {
        sourceConfig = { base_url: input.source.base_url.replace(/\/$/, ''), api_key: input.source.api_key };
      }
      const row = await createIntegration(
        deps.db,
        {
          id,
          organizationId: org.id,
          name: input.name ?? null,
          mode: input.mode,
          plan: input.plan,
          sourceType: input.source.type,
          sourceConfig,
          syncIntervalSeconds: override,
          fullSyncIntervalSeconds: fullOverride,
        },
        deps.secrets,
      );
      await withTemporal(
        deps,
        'schedule the integration',
        (ctl, control) => control.ensureSyncSchedule(ctl, row, { runNow: input.initial_sync !== false }),
        async () => {
          // Nothing refers to the row yet but a job the failed start may have left; the schedule may exist.
          await deleteNewIntegration(deps.db, id);
          await deps
            .temporal()
            .then(async (client) => {
              const control = await loadSyncControl();
              await withinDeadline(deps, client, () => control.removeSyncSchedule({ db: deps.db, client, taskQueue: deps.config.TEMPORAL_TASK_QUEUE }, id));
            })
            .catch(() => {});
          if (input.source.type === 'sandbox') await viaSandbox(deps, 'remove the sandbox company', (s) => s.deleteCompany(id)).catch(() => {});
        },
      );
      return c.json(integrationView(row, deps.config.SYNC_FULL_INTERVAL_SECONDS), 201);
    },
  );

  app.openapi(
    listRoute({
      path: '/organizations/{id}/integrations',
      tags,
      summary: "List an organization's integrations",
      params: OrganizationId,
      list: listOf(Integration, 'IntegrationList'),
      order: 'asc',
    }),
    listChildren(deps, loadOrganization, integrationsPage, (r) => integrationView(r, deps.config.SYNC_FULL_INTERVAL_SECONDS)),
  );

  app.openapi(
    retrieveRoute({
      path: '/integrations/{id}',
      operationId: 'getIntegration',
      tags,
      summary: 'Retrieve an integration',
      params: IntegrationId,
      ok: json(Integration, 'The integration.'),
    }),
    async (c) => c.json(integrationView(await loadIntegration(deps, c.req.valid('param').id), deps.config.SYNC_FULL_INTERVAL_SECONDS), 200),
  );

  app.openapi(
    patchRoute({
      path: '/integrations/{id}',
      tags,
      summary: 'Change plan, cadence or name',
      description:
        'The schedule moves at once. `sync_interval_seconds: null` returns to the plan default; an override faster than the plan allows is refused (422), including when a plan change makes an existing override too fast. `full_sync_interval_seconds: null` returns to the service default; one shorter than the sync interval (including after a change of cadence or plan) or longer than 30 days is refused (422). A move to a plan without webhooks (starter, growth) pauses the queues of its webhook subscriptions and cancels their deliveries being retried (replayable), as a disable does.',
      params: IntegrationId,
      body: IntegrationUpdate,
      responses: { 200: json(Integration, 'The integration.'), ...unavailableResponse },
    }),
    async (c) => {
      const before = await loadIntegration(deps, c.req.valid('param').id);
      const input = c.req.valid('json');
      const plan = input.plan ?? before.plan;
      const override = input.sync_interval_seconds === undefined ? before.syncIntervalSeconds : input.sync_interval_seconds;
      checkCadence(plan, override);
      const fullOverride = input.full_sync_interval_seconds === undefined ? before.fullSyncIntervalSeconds : input.full_sync_interval_seconds;
      checkFullCadence(plan, override, fullOverride);
      // Only what the body names is written: a name-only change made beside another request's cadence change leaves
      // that cadence as it stored it.
      const row = await updateIntegration(deps.db, before.id, {
        ...(input.plan !== undefined ? { plan } : {}),
        ...(input.sync_interval_seconds !== undefined ? { syncIntervalSeconds: override } : {}),
        ...(input.full_sync_interval_seconds !== undefined ? { fullSyncIntervalSeconds: fullOverride } : {}),
        ...(input.name !== undefined ? { name: input.name } : {}),
      });
      // Deleted since it was read: a 404, as a request after the deletion gets (and no schedule pushed for it).
      if (!row) await loadIntegration(deps, before.id);
      // Pushed whenever the body names the cadence, even to the value this request read: another request may have
      // moved the schedule since (the push reads the row again until the schedule agrees with it).
      if (input.plan !== undefined || input.sync_interval_seconds !== undefined) {
        await withTemporal(
          deps,
          'move the sync schedule',
          (ctl, control) => control.ensureSyncSchedule(ctl, row!, { runNow: false }),
          () =>
            updateIntegration(deps.db, before.id, {
              plan: before.plan,
              syncIntervalSeconds: before.syncIntervalSeconds,
              fullSyncIntervalSeconds: before.fullSyncIntervalSeconds,
              name: before.name,
            }),
        );
        // On a plan without webhooks: its subscriptions' retries end now, once the change has stood (not rolled back
        // above); what the plan is now is read again under the integration's lock.
        if (input.plan !== undefined && !PLAN_RULES[plan].webhooks) await cancelRetriesOffPlan(deps.db, before.id);
      }
      return c.json(integrationView(row!, deps.config.SYNC_FULL_INTERVAL_SECONDS), 200);
    },
  );

  app.openapi(
    deleteRoute({
      path: '/integrations/{id}',
      tags,
      summary: 'Disconnect a source',
      description:
        'Removes the sync schedule and the schedules of its automations, and marks the integration, its automations and its webhook subscriptions deleted (their queues and their deliveries being retried end `cancelled` at once; delivery history stays readable); later reads of them are 404. Its records are never physically deleted: they are soft-deleted (no events, since its subscriptions go with it), so the public API hides them unless `include_deleted=true`.',
      params: IntegrationId,
      responses: { ...deleted, ...unavailableResponse },
    }),
    async (c) => {
      const row = await loadIntegration(deps, c.req.valid('param').id);
      // Schedules first: if Temporal is down nothing has changed yet (removing a schedule twice is harmless, so a
      // retry after a failure part-way finishes the job).
      const owned = (await automationsOf(deps.db, row.id)).map((a) => a.id);
      /** The integration's sync schedule and those of `automationIds`, in one call to Temporal. */
      const removeSchedules = (automationIds: Iterable<string>) => async (client: Client) => {
        const [sync, automations] = [await loadSyncControl(), await import('../../control/automations')];
        const ctl = automations.automationControlOf(client, deps.config);
        for (const id of automationIds) await automations.removeAutomationSchedule(ctl, id);
        await sync.removeSyncSchedule({ db: deps.db, client, taskQueue: deps.config.TEMPORAL_TASK_QUEUE }, row.id);
      };
      await viaTemporal(deps, 'remove the schedules', removeSchedules(owned), undefined, PARTLY_REMOVED);
      const { automationIds } = await disconnectIntegration(deps.db, row, new Date());
      // Once more now that it is deleted: a change of cadence or automation that read the row before, and pushed its
      // schedule after the removal above, may have found it live again. (A push after this finds it deleted and removes
      // its own schedule; should Temporal fail now, a starting worker removes schedules of deleted integrations.)
      await viaTemporal(deps, 'remove the schedules again', removeSchedules(new Set([...owned, ...automationIds]))).catch((err: unknown) =>
        deps.logger.warn({ err, integration_id: row.id }, 'schedules left for the worker to remove'),
      );
      if (row.sourceType === 'sandbox') {
        await viaSandbox(deps, 'remove the sandbox company', (s) => s.deleteCompany(row.id)).catch((err) =>
          deps.logger.warn({ err, integration_id: row.id }, 'sandbox company left behind'),
        );
      }
      return c.body(null, 204);
    },
  );
}
