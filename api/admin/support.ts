/** What the admin routes share: id checks, row loaders that 404, and calls to Temporal and the sandbox PMS. */
import { isIP } from 'node:net';
import type { Client } from '@temporalio/client';
import type { Context, Env } from 'hono';
import type { Db } from '../../db/client';
import { pageOf, type Page } from '../../db/queries';
import { getLiveIntegration, getOrganization, type IntegrationRow, type OrganizationRow } from '../../db/tenants';
import { blockedRangeOf, isLoopbackName, neverReachedRangeOf } from '../../domain/addresses';
import { isId, isUuid, type IdKind } from '../../domain/ids';
import { openSourceConfig } from '../../domain/secrets';
import { createConnector, type SourceCapabilities } from '../../source';
import { SandboxControlError, sandboxControlClient, type SandboxControl } from '../../sandbox/control';
import type { ApiDeps } from '../deps';
import { ApiError } from '../problem';
import type { SyncControlDeps } from '../../control/sync';

/** The Temporal side of sync control, loaded on first admin use: read-only API work never loads the Temporal SDK. */
export type SyncControl = typeof import('../../control/sync');
export const loadSyncControl = (): Promise<SyncControl> => import('../../control/sync');

const notFound = (what: string, id: string) => new ApiError('not_found', `No ${what} ${id}.`);

/** The row a request names, when there is one; else 404 `No <what> <id>.` */
export function found<R>(row: R | undefined, what: string, id: string): R {
  if (!row) throw notFound(what, id);
  return row;
}

/** Malformed ids are 404 like unknown ones, so that a typo and a missing row read the same. */
export function uuidOr404(id: string, what: string): string {
  if (!isUuid(id)) throw notFound(what, id);
  return id.toLowerCase();
}

/** The row `read` finds for `id`, a prefixed id of `kind` (a malformed one is unknown): 404 otherwise, as found(). */
export async function loadById<R>(kind: IdKind, id: string, what: string, read: (id: string) => Promise<R | undefined>): Promise<R> {
  return found(isId(kind, id) ? await read(id) : undefined, what, id);
}

export async function loadOrganization(deps: ApiDeps, id: string): Promise<OrganizationRow> {
  return found(await getOrganization(deps.db, uuidOr404(id, 'organization')), 'organization', id);
}

/** A deleted integration is gone for the admin API too. */
export async function loadIntegration(deps: ApiDeps, id: string): Promise<IntegrationRow> {
  return found(await getLiveIntegration(deps.db, uuidOr404(id, 'integration')), 'integration', id);
}

/**
 * One page of a list: `read` is asked for one row more than the query's `limit` (the extra row only says there is
 * more), and each row of the page is shown by `view`.
 */
export async function listPage<Q extends { limit: number; offset: number }, R, V>(
  query: Q,
  read: (page: Q) => Promise<R[]>,
  view: (row: R) => V,
): Promise<Page<V>> {
  return pageOf(await read({ ...query, limit: query.limit + 1 }), query, view);
}

/**
 * The handler of a list of what belongs to the row at the path's id (an organization's API keys, an integration's
 * sync jobs): that row first (`load`: an unknown id is a 404, not an empty page), then a page of its rows (`read`, by
 * the row's id), each shown by `view`.
 */
export const listChildren =
  <P extends { id: string }, Q extends { limit: number; offset: number }, R, V>(
    deps: ApiDeps,
    load: (deps: ApiDeps, id: string) => Promise<P>,
    read: (db: Db, id: string, page: Q) => Promise<R[]>,
    view: (row: R) => V,
  ) =>
  async (c: Context<Env, string, { out: { param: { id: string }; query: Q } }>) => {
    const parent = await load(deps, c.req.valid('param').id);
    return c.json(await listPage(c.req.valid('query'), (page) => read(deps.db, parent.id, page), view), 200);
  };

/** listPage for rows shown with more of them (`more`: by row id, read for the rows of the page in one go). */
export async function listPageWith<Q extends { limit: number; offset: number }, R extends { id: string }, M, V>(
  query: Q,
  read: (page: Q) => Promise<R[]>,
  more: (ids: string[]) => Promise<Map<string, M>>,
  view: (row: R, more: M) => V,
): Promise<Page<V>> {
  const rows = await read({ ...query, limit: query.limit + 1 });
  const extra = await more(rows.slice(0, query.limit).map((r) => r.id));
  return pageOf(rows, query, (r) => view(r, extra.get(r.id)!));
}

/** A 422 naming one field of the request. */
export function invalidField(pointer: string, detail: string): ApiError {
  return new ApiError('validation_error', `${pointer}: ${detail}`, { errors: [{ pointer, detail }] });
}

/**
 * An address the service sends to on an operator's behalf (a webhook endpoint, an export destination): http(s)
 * without credentials in it; for a live integration HTTPS to a public host only (the SSRF guard of
 * domain/addresses.ts; the sender checks the address it actually connects to again). Test integrations may use
 * http://, loopback and private addresses, never link-local ones (cloud metadata) or IPv6 forms embedding IPv4.
 * Returns it normalized.
 */
export function checkOutboundUrl(raw: string, integration: Pick<IntegrationRow, 'mode'>, pointer: string, opts: { credentials: string }): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidField(pointer, 'Not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw invalidField(pointer, integration.mode === 'live' ? 'Use an https:// URL.' : 'Use an http:// or https:// URL.');
  if (url.username || url.password) throw invalidField(pointer, `Credentials in the URL are not allowed; ${opts.credentials}.`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (integration.mode === 'live') {
    if (url.protocol !== 'https:') throw invalidField(pointer, 'A live integration delivers to https:// URLs only.');
    if (isLoopbackName(host)) throw invalidField(pointer, `${host} is a loopback host; a live integration delivers to public hosts only.`);
    const range = isIP(host) !== 0 ? blockedRangeOf(host) : null;
    if (range) throw invalidField(pointer, `${host} is a special-purpose address (${range}); a live integration delivers to public hosts only.`);
  }
  const never = isIP(host) !== 0 ? neverReachedRangeOf(host) : null;
  if (never) {
    const why =
      never === 'link-local'
        ? 'a link-local address, where cloud metadata services answer'
        : never.startsWith('IPv4-compatible or unallocated')
          ? `an IPv6 address outside the global unicast range 2000::/3 (unallocated, or an IPv4-compatible form that may spell any IPv4 host)`
          : `an IPv6 address embedding an IPv4 one (${never}), which may spell any IPv4 host, cloud metadata included`;
    throw invalidField(pointer, `${host} is ${why}; no integration delivers there.`);
  }
  return url.toString();
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Runs `fn` with the sync control of this process. Temporal being unreachable (or refusing) is a 503 that says what
 * was not done; callers undo their own database changes first, so a 503 always means "nothing changed".
 */
export async function withTemporal<T>(
  deps: ApiDeps,
  action: string,
  fn: (ctl: SyncControlDeps, control: SyncControl) => Promise<T>,
  undo?: () => Promise<unknown>,
  left?: string,
): Promise<T> {
  return viaTemporal(
    deps,
    action,
    async (client) => fn({ db: deps.db, client, taskQueue: deps.config.TEMPORAL_TASK_QUEUE }, await loadSyncControl()),
    undo,
    left,
  );
}

/**
 * `fn`'s Temporal calls, each bound to end within TEMPORAL_REQUEST_TIMEOUT_MS from now (gRPC DEADLINE_EXCEEDED after
 * it): a server that accepts and never answers must not hold an admin request open. An inner call of this (one per
 * item of a bulk action) sets its own deadline.
 */
export function withinDeadline<T>(deps: ApiDeps, client: Client, fn: () => Promise<T>): Promise<T> {
  return client.withDeadline(Date.now() + deps.config.TEMPORAL_REQUEST_TIMEOUT_MS, fn);
}

/** withTemporal for any Temporal call: the client of this process, and a 503 that says nothing changed. */
export async function viaTemporal<T>(
  deps: ApiDeps,
  action: string,
  fn: (client: Client) => Promise<T>,
  undo?: () => Promise<unknown>,
  /** What the 503 says was left, when a failure part-way may have changed something. */
  left = 'Nothing was changed; retry later.',
): Promise<T> {
  try {
    const client = await deps.temporal();
    return await withinDeadline(deps, client, () => fn(client));
  } catch (err) {
    if (undo) await undo();
    if (err instanceof ApiError) throw err;
    deps.logger.warn({ err, action }, 'temporal call failed');
    throw new ApiError('service_unavailable', `Could not ${action}: Temporal is unreachable or refused the request (${messageOf(err)}). ${left}`);
  }
}

function sandboxOf(deps: ApiDeps): SandboxControl {
  return sandboxControlClient(deps.config.SANDBOX_URL, deps.config.SANDBOX_CONTROL_TOKEN);
}

/**
 * A sandbox PMS call. A company the sandbox no longer has (its data was reset) is a 409; a request it refuses is a
 * 422; anything else (unreachable, wrong control token, a fault of its own) is a 503 naming the sandbox.
 */
export async function viaSandbox<T>(deps: ApiDeps, action: string, fn: (sandbox: SandboxControl) => Promise<T>): Promise<T> {
  try {
    return await fn(sandboxOf(deps));
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (err instanceof SandboxControlError && err.status === 404) {
      throw new ApiError('conflict', `Could not ${action}: the sandbox PMS has no company for this integration (was the sandbox reset?).`);
    }
    if (err instanceof SandboxControlError && err.status === 422) {
      throw new ApiError('validation_error', `Could not ${action}: ${err.message}`, { errors: [{ pointer: '/', detail: err.message }] });
    }
    deps.logger.warn({ err, action }, 'sandbox call failed');
    throw new ApiError('service_unavailable', `Could not ${action}: the sandbox PMS at ${deps.config.SANDBOX_URL} failed (${messageOf(err)}).`);
  }
}

/**
 * What the integration's source can do, as its connector says (no request is made). The settings are opened only to
 * build the connector: nothing of them leaves this function.
 */
export function capabilitiesOf(deps: ApiDeps, row: IntegrationRow): SourceCapabilities {
  return createConnector(openSourceConfig(deps.secrets, row)).capabilities;
}

/** Sandbox controls exist only for integrations whose source is the sandbox PMS. */
export function requireSandbox(row: IntegrationRow): void {
  if (row.sourceType !== 'sandbox') {
    throw new ApiError('conflict', `Integration ${row.id} has an ${row.sourceType} source; sandbox controls apply only to sandbox integrations.`);
  }
}
