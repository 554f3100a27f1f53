/**
 * Automations of an integration (docs/decisions.md Automations): scheduled CSV exports of one entity, filtered as its
 * list endpoint filters, each with its Temporal Schedule, and their runs. The row and the schedule change together:
 * when Temporal cannot be reached (or refuses the schedule) the row change is undone, so a 503 or a 422 always means
 * nothing changed; the worker also reconciles schedules at start-up. Destination header values may be credentials:
 * they are sealed at once and never shown again, only their names.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { OpenAPIHono, z } from '@hono/zod-openapi';
import { whileIntegrationLive } from '../../db/apply';
import type { Db } from '../../db/client';
import {
  automationsPage,
  deleteNewAutomation,
  getAutomation,
  getAutomationEver,
  getRun,
  insertAutomation,
  markAutomationDeleted,
  runsOf,
  updateAutomation,
  type AutomationRow,
  type AutomationRunRow,
} from '../../db/automations';
import { newId } from '../../db/ids';
import { getLiveIntegration, type IntegrationRow } from '../../db/tenants';
import { escapeFormulasOf, EXPORT_ENTITIES, PLURAL, RECORD_FIELDS, type AutomationSchedule } from '../../domain/automations';
import type { Entity } from '../../domain/cdm';
import { automationScheduleIdOf } from '../../domain/contract';
import { LIST_QUERIES, listParameters, unknownParameter } from '../../domain/filters';
import { sealAutomationHeaders } from '../../domain/secrets';
import type { AutomationControlDeps } from '../../control/automations';
import type { ApiDeps } from '../deps';
import { ApiError, type FieldError } from '../problem';
import { Automation, AutomationCreate, AutomationRun, AutomationUpdate } from './automations.schemas';
import { deleted, deleteRoute, listRoute, patchRoute, postRoute, retrieveRoute } from './routes';
import { IdParam, json, linkTo, listOf, unavailableResponse, IntegrationId } from './schemas';
import { checkOutboundUrl, found, listChildren, loadById, loadIntegration, viaTemporal, withinDeadline } from './support';

/** The Temporal side of automations, loaded on first use like sync control (reads never load the Temporal SDK). */
type AutomationControl = typeof import('../../control/automations');
const loadAutomationControl = (): Promise<AutomationControl> => import('../../control/automations');

/**
 * The destination as stored. An HTTP destination keeps the NAMES of its headers in the clear (`header_names`), so
 * replies can list them without opening the sealed values (`destinationHeaders`), which only the export activity does.
 */
type StoredDestination = (
  | { type: 'http'; url: string; method?: 'PUT' | 'POST'; header_names?: string[]; content_length?: boolean }
  | { type: 'directory'; path: string }
) & {
  /** The automation's `escape_formulas` (domain/automations.ts escapeFormulasOf: absent means true). */
  escape_formulas?: boolean;
};

type DestinationInput = z.infer<typeof AutomationCreate>['destination'];
type ScheduleInput = z.infer<typeof AutomationCreate>['schedule'];

function automationView(row: AutomationRow): z.infer<typeof Automation> {
  const d = row.destination as StoredDestination;
  return {
    id: row.id,
    integration_id: row.integrationId,
    organization_id: row.organizationId,
    name: row.name,
    entity: PLURAL[row.entity],
    filters: row.filters,
    columns: row.columns,
    schedule: 'every' in row.schedule ? { every: row.schedule.every } : { cron: row.schedule.cron, timezone: row.schedule.timezone ?? 'UTC' },
    destination:
      d.type === 'http'
        ? { type: 'http', url: d.url, method: d.method ?? 'PUT', headers: d.header_names ?? [], content_length: d.content_length === true }
        : { type: 'directory', path: d.path },
    escape_formulas: escapeFormulasOf(d),
    status: row.status,
    schedule_id: automationScheduleIdOf(row.id),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function automationRunView(row: AutomationRunRow): z.infer<typeof AutomationRun> {
  return {
    id: row.id,
    automation_id: row.automationId,
    status: row.status,
    trigger: row.trigger,
    records_exported: row.recordsExported,
    file_name: row.fileName,
    attempts: row.attempts,
    next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
    error: row.error,
    started_at: row.startedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
  };
}

/** A JSON pointer to a member of the body (`/filters/order-by`). */
const pointer = (...path: (string | number)[]) => `/${path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

function invalid(errors: FieldError[]): ApiError {
  const detail =
    errors.length === 1
      ? `Invalid field \`${errors[0]!.pointer}\`: ${errors[0]!.detail}`
      : `${errors.length} invalid values: ${errors.map((e) => `\`${e.pointer}\``).join(', ')}.`;
  return new ApiError('validation_error', detail, { errors });
}

/** Paging does not apply to an export: it is every record that matches. */
const PAGING = new Set(['limit', 'offset']);

/**
 * The filters checked by the list endpoint's own schema, so a filter the list endpoint would refuse is refused here
 * at once, not in a failed run later. Unknown parameters are refused too: in an export a misspelt filter would
 * silently export everything. An automation exports its own integration's records: an `integration_id` filter that
 * names another would be overridden or empty the file, so it is refused too.
 */
function filterErrors(entity: Entity, filters: Record<string, string>, integrationId: string): FieldError[] {
  const schema = LIST_QUERIES[entity];
  const known = listParameters(entity).filter((k) => !PAGING.has(k));
  const errors: FieldError[] = [];
  const rest: Record<string, string> = {};
  for (const [name, value] of Object.entries(filters)) {
    const unknown = PAGING.has(name) ? `${name} does not apply: an export is every matching record.` : unknownParameter(entity, name, known);
    if (unknown) errors.push({ pointer: pointer('filters', name), detail: unknown });
    else rest[name] = value;
  }
  const parsed = schema.safeParse(rest);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) errors.push({ pointer: pointer('filters', ...(issue.path as (string | number)[])), detail: issue.message });
  } else {
    const named = (parsed.data as { integration_id?: string[] }).integration_id ?? [];
    if (named.some((id) => id.toLowerCase() !== integrationId)) {
      errors.push({
        pointer: pointer('filters', 'integration_id'),
        detail: `an automation exports the records of its own integration (${integrationId}) only: integration_id may name that one, or be left out.`,
      });
    }
  }
  return errors;
}

function columnErrors(entity: Entity, columns: string[] | null | undefined): FieldError[] {
  if (!columns) return [];
  const fields = RECORD_FIELDS[entity];
  const seen = new Set<string>();
  return columns.flatMap((c, i) => {
    let detail: string | undefined;
    if (!fields.includes(c)) detail = `not a field of a ${entity} record; one of ${fields.join(', ')}.`;
    else if (seen.has(c)) detail = 'named twice.';
    seen.add(c);
    return detail ? [{ pointer: pointer('columns', i), detail }] : [];
  });
}

/** scheme://host:port of a URL, or the text itself when it is not one (then it matches only itself). */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** The destination to store and its sealed headers; `keep` is what an HTTP destination had (PATCH without `headers`). */
function destinationOf(
  deps: ApiDeps,
  automationId: string,
  input: DestinationInput,
  integration: IntegrationRow,
  errors: FieldError[],
  keep?: { url: string; names: string[]; sealed: string | null },
): { destination: StoredDestination; sealed: string | null } {
  if (input.type === 'directory') {
    const missing = missingDirectory(deps.config.EXPORT_ROOT, input.path);
    if (missing) errors.push({ pointer: pointer('destination', 'path'), detail: missing });
    return { destination: { type: 'directory', path: input.path }, sealed: null };
  }
  let url = input.url;
  const before = errors.length;
  try {
    url = checkOutboundUrl(input.url, integration, pointer('destination', 'url'), { credentials: 'send credentials in `headers`, which are stored encrypted' });
  } catch (err) {
    if (!(err instanceof ApiError) || !err.opts.errors) throw err;
    errors.push(...err.opts.errors);
  }
  const method = input.method ?? 'PUT';
  const contentLength = input.content_length ?? false;
  if (input.headers === undefined && keep) {
    // Stored headers (often credentials) go only where they were meant to: to another origin, the request says again
    // which to send, as an HTTP client drops Authorization on a redirect to another host. (A URL refused already
    // says enough.)
    if (keep.names.length > 0 && errors.length === before && originOf(url) !== originOf(keep.url)) {
      errors.push({
        pointer: pointer('destination', 'headers'),
        detail: `the destination moves to another origin: send its \`headers\` again (\`{}\` for none); the stored ones (${keep.names.join(', ')}) are kept only for the same origin`,
      });
    }
    return { destination: { type: 'http', url, method, content_length: contentLength, header_names: keep.names }, sealed: keep.sealed };
  }
  const headers = input.headers ?? {};
  const names = Object.keys(headers);
  return {
    destination: { type: 'http', url, method, content_length: contentLength, header_names: names },
    sealed: names.length > 0 ? sealAutomationHeaders(deps.secrets, automationId, headers) : null,
  };
}

/**
 * Why a directory destination cannot take files, as this process sees EXPORT_ROOT (null when it can): checked when
 * the automation is made, so a typo is a 422 now rather than a failed run later. The worker checks again at every run
 * (its EXPORT_ROOT is the one that counts when the two run on different machines).
 */
function missingDirectory(exportRoot: string, destination: string): string | null {
  const root = path.resolve(exportRoot);
  const target = path.resolve(root, destination);
  try {
    if (statSync(target).isDirectory()) return null;
    return `${target} is not a directory (EXPORT_ROOT is ${JSON.stringify(exportRoot)}, resolved to ${root})`;
  } catch {
    return `the directory does not exist: looked for ${target} (EXPORT_ROOT is ${JSON.stringify(exportRoot)}, resolved to ${root}); create it first`;
  }
}

function scheduleOf(input: ScheduleInput): AutomationSchedule {
  return input.every !== undefined ? { every: input.every } : { cron: input.cron!, timezone: input.timezone ?? 'UTC' };
}

/**
 * Create or update the automation's schedule. Temporal refusing the spec (a cron or time zone its parser rejects
 * though the request's checks let it pass) is a 422 at that field; anything else goes to viaTemporal (503).
 */
async function ensureSchedule(ctl: AutomationControlDeps, control: AutomationControl, row: AutomationRow, db: Db): Promise<void> {
  try {
    // Two changes made at once leave the schedule as the database says (the push reads the row again).
    await control.ensureAutomationSchedule(ctl, db, row);
  } catch (err) {
    // The client turns the server's "Invalid schedule spec" into a TypeError.
    if (err instanceof TypeError && 'cron' in row.schedule) {
      const at = /time ?zone/i.test(err.message) ? pointer('schedule', 'timezone') : pointer('schedule', 'cron');
      throw invalid([{ pointer: at, detail: `Temporal refused the schedule: ${err.message}` }]);
    }
    throw err;
  }
}

/** Runs `fn` with the automation control of this process; Temporal failing is a 503 after `undo`. */
function viaControl<T>(
  deps: ApiDeps,
  action: string,
  fn: (ctl: AutomationControlDeps, control: AutomationControl) => Promise<T>,
  undo?: () => Promise<unknown>,
): Promise<T> {
  return viaTemporal(
    deps,
    action,
    async (client) => {
      const control = await loadAutomationControl();
      return fn(control.automationControlOf(client, deps.config), control);
    },
    undo,
  );
}

/** `fn` with the automation control of this process when Temporal answers; a failure is ignored (an undo's last step). */
function tryControl(deps: ApiDeps, fn: (ctl: AutomationControlDeps, control: AutomationControl) => Promise<unknown>): Promise<void> {
  return deps
    .temporal()
    .then(async (client) => {
      const control = await loadAutomationControl();
      await withinDeadline(deps, client, () => fn(control.automationControlOf(client, deps.config), control));
    })
    .catch(() => {});
}

/** A live automation of a live integration; anything else is 404 like an unknown id. */
async function loadAutomation(deps: ApiDeps, id: string): Promise<AutomationRow> {
  const row = await loadById('automation', id, 'automation', (id) => getAutomation(deps.db, id));
  const integration = await getLiveIntegration(deps.db, row.integrationId);
  return found(integration && row, 'automation', id);
}

/** Any automation that ever was, deleted or not (with its integration): whose runs are listed. */
const loadAutomationEver = (deps: ApiDeps, id: string): Promise<AutomationRow> =>
  loadById('automation', id, 'automation', (id) => getAutomationEver(deps.db, id));

const tags = ['Automations'];
const AutomationId = IdParam('atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'Automation id (`atm_` + ULID).');
const RunId = IdParam('aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'Automation run id (`aru_` + ULID).');

export function registerAutomations(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    postRoute({
      path: '/integrations/{id}/automations',
      tags,
      summary: 'Create an automation',
      description:
        "A scheduled CSV export of one entity to an HTTP(S) endpoint or a directory under the export root. `filters` are the entity's list endpoint query parameters, checked now by the same rules (422 at `/filters/<name>`). Destination header values are stored encrypted and never shown again. The Temporal Schedule is made at once; if Temporal is unreachable nothing is created (503).",
      params: IntegrationId,
      body: AutomationCreate,
      responses: { 201: json(Automation, 'The automation.', linkTo('GetAutomation', 'getAutomation', 'The automation created.')), ...unavailableResponse },
    }),
    async (c) => {
      const integration = await loadIntegration(deps, c.req.valid('param').id);
      const input = c.req.valid('json');
      const entity = EXPORT_ENTITIES[input.entity]!;
      const filters = input.filters ?? {};
      const id = newId('automation');
      const errors = [...filterErrors(entity, filters, integration.id), ...columnErrors(entity, input.columns)];
      const { destination, sealed } = destinationOf(deps, id, input.destination, integration, errors);
      if (errors.length > 0) throw invalid(errors);
      destination.escape_formulas = input.escape_formulas ?? true;

      // Made under the integration's lock: a deletion under way either takes it along or finds it not made (404).
      const made = await whileIntegrationLive(deps.db, integration.id, (tx) =>
        insertAutomation(tx, {
          id,
          organizationId: integration.organizationId,
          integrationId: integration.id,
          name: input.name,
          entity,
          filters,
          columns: input.columns ?? null,
          schedule: scheduleOf(input.schedule),
          destination,
          destinationHeaders: sealed,
          status: 'active',
        }),
      );
      const row = found(made, 'integration', integration.id);
      await viaControl(
        deps,
        'schedule the automation',
        (ctl, control) => ensureSchedule(ctl, control, row, deps.db),
        async () => {
          // Nothing refers to the row yet; the schedule may exist if Temporal made it but the answer was lost.
          await deleteNewAutomation(deps.db, id);
          await tryControl(deps, (ctl, control) => control.removeAutomationSchedule(ctl, id));
        },
      );
      return c.json(automationView(row), 201);
    },
  );

  app.openapi(
    listRoute({
      path: '/integrations/{id}/automations',
      tags,
      summary: "List an integration's automations",
      params: IntegrationId,
      list: listOf(Automation, 'AutomationList'),
      order: 'asc',
      note: '; header names only',
    }),
    listChildren(deps, loadIntegration, automationsPage, automationView),
  );

  app.openapi(
    retrieveRoute({
      path: '/automations/{id}',
      operationId: 'getAutomation',
      tags,
      summary: 'Retrieve an automation',
      params: AutomationId,
      ok: json(Automation, 'The automation, header names only.'),
    }),
    async (c) => c.json(automationView(await loadAutomation(deps, c.req.valid('param').id)), 200),
  );

  app.openapi(
    patchRoute({
      path: '/automations/{id}',
      tags,
      summary: 'Change, pause or resume an automation',
      description:
        '`status: "paused"` pauses its Temporal Schedule (a manual run still starts), `"active"` resumes it; a new `schedule` moves it at once. Temporal unreachable: 503 and nothing changed. Each member given replaces the stored one; `filters` and `columns` are checked against the entity as at creation.',
      params: AutomationId,
      body: AutomationUpdate,
      responses: { 200: json(Automation, 'The automation.'), ...unavailableResponse },
    }),
    async (c) => {
      const before = await loadAutomation(deps, c.req.valid('param').id);
      const integration = await loadIntegration(deps, before.integrationId);
      const input = c.req.valid('json');
      const errors = [
        ...(input.filters !== undefined ? filterErrors(before.entity, input.filters, integration.id) : []),
        ...columnErrors(before.entity, input.columns),
      ];
      const old = before.destination as StoredDestination;
      const keep = old.type === 'http' ? { url: old.url, names: old.header_names ?? [], sealed: before.destinationHeaders } : undefined;
      const dest = input.destination !== undefined ? destinationOf(deps, before.id, input.destination, integration, errors, keep) : undefined;
      if (errors.length > 0) throw invalid(errors);
      // The option lives with the destination: a new destination keeps it unless the request changes it too.
      const destination: StoredDestination | undefined =
        dest || input.escape_formulas !== undefined
          ? { ...(dest?.destination ?? old), escape_formulas: input.escape_formulas ?? escapeFormulasOf(old) }
          : undefined;

      const row = await updateAutomation(deps.db, before.id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.filters !== undefined ? { filters: input.filters } : {}),
        ...(input.columns !== undefined ? { columns: input.columns } : {}),
        ...(input.schedule !== undefined ? { schedule: scheduleOf(input.schedule) } : {}),
        ...(destination ? { destination } : {}),
        ...(dest ? { destinationHeaders: dest.sealed } : {}),
        ...(input.status !== undefined ? { status: input.status } : {}),
        updatedAt: new Date(),
      });
      // Deleted since it was read: a 404, as a request after the deletion gets.
      if (!row) await loadAutomation(deps, before.id);
      // Pushed whenever the body names the schedule or the status, even the status this request read: another request
      // may have moved the schedule since (the push reads the row again until the schedule agrees with it).
      if (input.schedule !== undefined || input.status !== undefined) {
        await viaControl(
          deps,
          'update the automation schedule',
          (ctl, control) => ensureSchedule(ctl, control, row!, deps.db),
          async () => {
            const { id: _id, createdAt: _created, ...was } = before;
            await updateAutomation(deps.db, before.id, was);
            // The schedule may have been half-moved (spec changed, pause not); put it back as it was, if Temporal lets us.
            await tryControl(deps, (ctl, control) => control.ensureAutomationSchedule(ctl, deps.db, before));
          },
        );
      }
      return c.json(automationView(row!), 200);
    },
  );

  app.openapi(
    deleteRoute({
      path: '/automations/{id}',
      tags,
      summary: 'Delete an automation',
      description: 'Removes its Temporal Schedule, then the automation; later reads of it are 404. Its runs stay readable at `/automation_runs/{id}`.',
      params: AutomationId,
      responses: { ...deleted, ...unavailableResponse },
    }),
    async (c) => {
      const row = await loadAutomation(deps, c.req.valid('param').id);
      // Schedule first: if Temporal is down nothing has changed yet.
      await viaControl(deps, 'remove the automation schedule', (ctl, control) => control.removeAutomationSchedule(ctl, row.id));
      await markAutomationDeleted(deps.db, row.id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    postRoute({
      path: '/automations/{id}/runs',
      tags,
      summary: 'Run an automation now',
      description:
        'Starts a run at once (also of a paused automation) → the run, `queued`; its workflow id is the run id. Follow it at `/automation_runs/{id}`. Temporal unreachable: 503; if the run was already recorded when starting its workflow failed, it is marked `failed` and the reply names it.',
      params: AutomationId,
      responses: { 202: json(AutomationRun, 'The run.', linkTo('GetAutomationRun', 'getAutomationRun', 'Follow the run.')), ...unavailableResponse },
    }),
    async (c) => {
      const automation = await loadAutomation(deps, c.req.valid('param').id);
      // Reach Temporal before recording anything: an unreachable server leaves no run behind.
      const client = await viaTemporal(deps, 'start the run', (client) => Promise.resolve(client));
      const control = await loadAutomationControl();
      const since = new Date();
      try {
        const run = await withinDeadline(deps, client, () =>
          control.startAutomationRun({ ...control.automationControlOf(client, deps.config), db: deps.db }, automation),
        );
        return c.json(automationRunView(run), 202);
      } catch (err) {
        deps.logger.warn({ err, automation_id: automation.id }, 'automation run could not be started');
        const [failed] = (await runsOf(deps.db, automation.id, { limit: 5, offset: 0 })).filter(
          (r) => r.trigger === 'manual' && r.status === 'failed' && r.createdAt.getTime() >= since.getTime() - 1_000,
        );
        const what = failed ? `Run ${failed.id} was recorded and marked failed` : 'No run was started';
        throw new ApiError(
          'service_unavailable',
          `Could not start the run: Temporal is unreachable or refused the request (${err instanceof Error ? err.message : String(err)}). ${what}; retry later.`,
          failed ? { extra: { run_id: failed.id } } : {},
        );
      }
    },
  );

  app.openapi(
    listRoute({
      path: '/automations/{id}/runs',
      tags,
      summary: "List an automation's runs",
      description: 'Also of a deleted automation: its runs stay readable.',
      params: AutomationId,
      list: listOf(AutomationRun, 'AutomationRunList'),
      order: 'desc',
    }),
    listChildren(deps, loadAutomationEver, runsOf, automationRunView),
  );

  app.openapi(
    retrieveRoute({
      path: '/automation_runs/{id}',
      operationId: 'getAutomationRun',
      tags,
      summary: 'Retrieve an automation run',
      description: 'Poll until `status` is `succeeded` or `failed`. A run stays readable after its automation is deleted.',
      params: RunId,
      ok: json(AutomationRun, 'The run.'),
    }),
    async (c) => {
      const row = await loadById('automationRun', c.req.valid('param').id, 'automation run', (id) => getRun(deps.db, id));
      return c.json(automationRunView(row), 200);
    },
  );
}
