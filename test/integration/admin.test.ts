/**
 * The admin API over real HTTP (createApp on port 0), real Postgres and the real Temporal dev server: every route's
 * success and error cases, schedules as Temporal sees them, and what an operator's key can do on the public API.
 */
import { Client, ScheduleNotFoundError } from '@temporalio/client';
import { and, eq, isNull } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { applyRecords } from '../../db/apply';
import { integrations, organizations, properties, syncJobs } from '../../db/schema';
import { automationScheduleIdOf, scheduleIdOf } from '../../domain/contract';
import { startApi, type TestServer } from '../support/api-server';
import { TcpProxy } from '../support/faults';
import { propertyInput } from '../support/fixtures';
import { onApi, onServices } from '../support/services';

let db: Db;
let config: Config;
let api: TestServer;
let temporal: Client;
let TOKEN: string;

onServices({ pool: 4, api: true, temporal: true }, (s) => {
  ({ db, config, api, temporal } = s);
  TOKEN = config.ADMIN_TOKEN;
});

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

async function call(method: string, path: string, body?: unknown, opts: { token?: string | null; raw?: string; base?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? TOKEN : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let payload: string | undefined;
  if (opts.raw !== undefined) payload = opts.raw;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${opts.base ?? api.url}${path}`, { method, headers, body: payload });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

const admin = (method: string, path: string, body?: unknown, opts?: Parameters<typeof call>[3]) => call(method, `/admin/v1${path}`, body, opts);

function expectProblem(r: Reply, status: number, slug: string) {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body).toMatchObject({
    type: `${config.DOCS_BASE_URL}/errors/${slug}`,
    status,
    detail: expect.any(String),
    request_id: r.headers.get('x-request-id'),
  });
}
/** Each call (`METHOD /path`, under /admin/v1) is answered 404 not_found. */
async function expectNotFound(...calls: string[]): Promise<void> {
  for (const call of calls) {
    const [method, path] = call.split(' ') as [string, string];
    expectProblem(await admin(method, path), 404, 'not_found');
  }
}
const pointers = (r: Reply) => (r.body.errors as { pointer: string }[]).map((e) => e.pointer).sort();

async function newOrg(name = 'Acme'): Promise<string> {
  const r = await admin('POST', '/organizations', { name });
  expect(r.status).toBe(201);
  return r.body.id;
}

/** A well-formed id that no organization or integration has. */
const UNKNOWN = '6b1d1f4e-0000-4000-8000-000000000000';

const entrata = { type: 'entrata', base_url: 'https://pms.example.com/api', api_key: 'super-secret-pms-key' };
async function newIntegration(orgId: string, extra: Record<string, unknown> = {}): Promise<any> {
  const r = await admin('POST', `/organizations/${orgId}/integrations`, { mode: 'live', plan: 'scale', source: entrata, initial_sync: false, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

/** An integration (as newIntegration makes one) of an organization of its own. */
const integrationOfNewOrg = async () => newIntegration(await newOrg());

async function scheduleEverySeconds(integrationId: string): Promise<number> {
  const d = await temporal.schedule.getHandle(scheduleIdOf(integrationId)).describe();
  return d.spec.intervals![0]!.every / 1000;
}

describe('authentication', () => {
  it('refuses a missing, malformed or wrong token, and public API keys, with 401 problem+json', async () => {
    const orgId = await newOrg();
    const key = (await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'test' })).body.key;
    for (const token of [null, 'wrong-token-wrong-token', key]) {
      const r = await admin('GET', `/organizations/${orgId}`, undefined, { token });
      expectProblem(r, 401, 'unauthorized');
      expect(r.body.instance).toBe(`/admin/v1/organizations/${orgId}`);
    }
    const basic = await fetch(`${api.url}/admin/v1/organizations/${orgId}`, { headers: { authorization: `Basic ${TOKEN}` } });
    expect(basic.status).toBe(401);
    // Also on paths that do not exist, so the admin surface is not mapped without the token.
    expectProblem(await admin('GET', '/nothing-here', undefined, { token: null }), 401, 'unauthorized');
    expectProblem(await admin('GET', '/nothing-here'), 404, 'not_found');
    const put = await admin('PUT', '/organizations', { name: 'x' });
    expectProblem(put, 405, 'method_not_allowed');
    expect(put.headers.get('allow')).toBe('GET, HEAD, POST');
  });
});

describe('organizations', () => {
  it('creates, retrieves and updates the rate limit override', async () => {
    const created = await admin('POST', '/organizations', { name: 'Harbor Homes' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Harbor Homes',
      rate_limit_per_minute: null,
      rate_limit_burst: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(created.headers.get('x-request-id')).toMatch(/^req_/);
    const id = created.body.id;
    expect((await admin('GET', `/organizations/${id}`)).body).toEqual(created.body);

    const patched = await admin('PATCH', `/organizations/${id}`, { rate_limit_per_minute: 50, rate_limit_burst: 7 });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ rate_limit_per_minute: 50, rate_limit_burst: 7, name: 'Harbor Homes' });
    expect((await admin('GET', `/organizations/${id}`)).body.rate_limit_per_minute).toBe(50);
    const cleared = await admin('PATCH', `/organizations/${id}`, { rate_limit_per_minute: null });
    expect(cleared.body).toMatchObject({ rate_limit_per_minute: null, rate_limit_burst: 7 });
  });

  it('answers 422 with pointers for rule violations, 400 for bad JSON, 404 for unknown or malformed ids, and changes nothing', async () => {
    const id = await newOrg('Before');
    let r = await admin('POST', '/organizations', {});
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['name']);
    r = await admin('POST', '/organizations', { name: '' });
    expect(pointers(r)).toEqual(['name']);
    r = await admin('POST', '/organizations', { name: 'x', plan: 'gold' });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['plan']);
    expectProblem(await admin('POST', '/organizations', undefined, { raw: '{"name": ' }), 400, 'bad_request');
    r = await admin('POST', '/organizations', undefined, { raw: '"just a string"' });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['/']);

    r = await admin('PATCH', `/organizations/${id}`, { rate_limit_per_minute: 0, name: 'After' });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['rate_limit_per_minute']);
    r = await admin('PATCH', `/organizations/${id}`, { rate_limit_per_minute: 'lots' });
    expect(pointers(r)).toEqual(['rate_limit_per_minute']);
    expect((await admin('GET', `/organizations/${id}`)).body).toMatchObject({ name: 'Before', rate_limit_per_minute: null });

    expectProblem(await admin('GET', `/organizations/${UNKNOWN}`), 404, 'not_found');
    expectProblem(await admin('GET', '/organizations/not-a-uuid'), 404, 'not_found');
    expectProblem(await admin('PATCH', `/organizations/${UNKNOWN}`, { name: 'x' }), 404, 'not_found');
  });

  it('refuses a NUL character in any JSON string with a 422 at its pointer, never a 500, and changes nothing', async () => {
    const id = await newOrg('Clean');
    let r = await admin('POST', '/organizations', { name: 'Bad\u0000Name' });
    expectProblem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: 'name', detail: expect.stringContaining('NUL') }]);
    r = await admin('PATCH', `/organizations/${id}`, { name: '\u0000' });
    expect(pointers(r)).toEqual(['name']);
    expect((await admin('GET', `/organizations/${id}`)).body.name).toBe('Clean');
    r = await admin('POST', `/organizations/${id}/integrations`, {
      mode: 'live',
      plan: 'scale',
      source: { ...entrata, api_key: 'k\u0000' },
      initial_sync: false,
    });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['/source/api_key']);
    expect(await db.select().from(integrations).where(eq(integrations.organizationId, id))).toEqual([]);
    // An unpaired surrogate: valid JSON, but text would store U+FFFD in its place and a json column refuses it.
    r = await admin('PATCH', `/organizations/${id}`, { name: 'x\ud800' });
    expectProblem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: 'name', detail: expect.stringContaining('unpaired UTF-16 surrogate') }]);
    expect((await admin('GET', `/organizations/${id}`)).body.name).toBe('Clean');
  });

  it('says how to send the body when it is not JSON (415)', async () => {
    const res = await fetch(`${api.url}/admin/v1/organizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: JSON.stringify({ name: 'Plain' }),
    });
    const r: Reply = { status: res.status, body: await res.json(), headers: res.headers };
    expectProblem(r, 415, 'unsupported_media_type');
    expect(r.body.detail).toContain('Content-Type: application/json');
  });

  it('refuses a body over 64 KiB with 413 before parsing it, and changes nothing', async () => {
    const name = `Huge ${'x'.repeat(100_000)}`;
    const r = await admin('POST', '/organizations', { name });
    expectProblem(r, 413, 'payload_too_large');
    expect(r.body.title).toBe('Payload Too Large');
    // The token is still checked first: without it, a 401 whatever the size.
    expectProblem(await admin('POST', '/organizations', { name }, { token: null }), 401, 'unauthorized');
    expect(await db.select().from(organizations).where(eq(organizations.name, name))).toEqual([]);
  });
});

describe('integrations', () => {
  it('creates one with its schedule at the plan cadence, never echoing the source credentials', async () => {
    const orgId = await newOrg();
    const r = await admin('POST', `/organizations/${orgId}/integrations`, {
      name: 'Main PMS',
      mode: 'live',
      plan: 'scale',
      source: entrata,
      initial_sync: false,
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      organization_id: orgId,
      name: 'Main PMS',
      mode: 'live',
      plan: 'scale',
      source: { type: 'entrata', dialect: 'entrata' },
      sync_interval_seconds: 3600,
      full_sync_interval_seconds: 86_400,
      created_at: expect.any(String),
    });
    expect(JSON.stringify(r.body)).not.toContain('super-secret');
    expect(await scheduleEverySeconds(r.body.id)).toBe(3600);
    // initial_sync false: nothing ran yet.
    expect((await admin('GET', `/integrations/${r.body.id}/sync_jobs`)).body.results).toEqual([]);

    const got = await admin('GET', `/integrations/${r.body.id}`);
    expect(got.body).toEqual(r.body);
    const list = await admin('GET', `/organizations/${orgId}/integrations`);
    expect(list.body).toEqual({ meta: { limit: 25, offset: 0, hasMore: false }, results: [r.body] });
  });

  it('starts the first sync at once unless initial_sync is false, and honours an override', async () => {
    const orgId = await newOrg();
    const i = await newIntegration(orgId, { plan: 'enterprise', sync_interval_seconds: 600, initial_sync: undefined });
    expect(i.sync_interval_seconds).toBe(600);
    expect(await scheduleEverySeconds(i.id)).toBe(600);
    const jobs = await admin('GET', `/integrations/${i.id}/sync_jobs`);
    expect(jobs.body.results).toHaveLength(1);
    expect(jobs.body.results[0]).toMatchObject({ id: expect.stringMatching(/^syj_/), integration_id: i.id, trigger: 'initial' });
  });

  it('refuses bad requests with pointers and leaves nothing behind', async () => {
    const orgId = await newOrg();
    const post = (body: unknown) => admin('POST', `/organizations/${orgId}/integrations`, body);
    let r = await post({ mode: 'live', plan: 'scale', source: { type: 'sandbox' } });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['/source/type']);
    r = await post({ mode: 'live', plan: 'growth', source: entrata, sync_interval_seconds: 600 });
    expect(pointers(r)).toEqual(['sync_interval_seconds']);
    expect(r.body.errors[0].detail).toContain('3600');
    r = await post({ source: entrata });
    expect(pointers(r)).toEqual(['mode', 'plan']);
    r = await post({ mode: 'test', plan: 'scale', source: { type: 'ftp' } });
    expect(pointers(r)).toEqual(['/source/type']);
    r = await post({ mode: 'test', plan: 'scale', source: { type: 'entrata', api_key: 'k' } });
    expect(pointers(r)).toEqual(['/source/base_url']);
    r = await post({ mode: 'test', plan: 'scale', source: { type: 'sandbox', size: 0 } });
    expect(pointers(r)).toEqual(['/source/size']);
    expectProblem(await admin('POST', `/organizations/${orgId}/integrations`, undefined, { raw: '{' }), 400, 'bad_request');
    expect((await admin('GET', `/organizations/${orgId}/integrations`)).body.results).toEqual([]);
    expectProblem(await admin('POST', `/organizations/${UNKNOWN}/integrations`, { mode: 'live', plan: 'scale', source: entrata }), 404, 'not_found');
    await expectNotFound('GET /integrations/nope', 'GET /organizations/nope/integrations');
  });

  it('refuses a plain-http base_url for a live integration (test mode may use it) and stores the api key encrypted', async () => {
    const orgId = await newOrg();
    const http = { ...entrata, base_url: 'http://pms.example.com/api' };
    const r = await admin('POST', `/organizations/${orgId}/integrations`, { mode: 'live', plan: 'scale', source: http, initial_sync: false });
    expectProblem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: '/source/base_url', detail: expect.stringContaining('https://') }]);
    expect(JSON.stringify(r.body)).not.toContain('super-secret');
    // Nothing was made.
    expect((await admin('GET', `/organizations/${orgId}/integrations`)).body.results).toEqual([]);
    expect(await db.select().from(integrations).where(eq(integrations.organizationId, orgId))).toEqual([]);

    const test = await admin('POST', `/organizations/${orgId}/integrations`, { mode: 'test', plan: 'scale', source: http, initial_sync: false });
    expect(test.status, JSON.stringify(test.body)).toBe(201);
    const live = await newIntegration(orgId);
    for (const id of [test.body.id, live.id]) {
      const [row] = await db.select().from(integrations).where(eq(integrations.id, id));
      expect((row!.sourceConfig as { api_key: string }).api_key).toMatch(/^enc:v1:dev:/);
      expect(JSON.stringify(row!.sourceConfig)).not.toContain('super-secret');
    }
  });

  it('moves the schedule when the plan or the override changes, and refuses cadences faster than the plan', async () => {
    const orgId = await newOrg();
    const i = await newIntegration(orgId, { plan: 'enterprise' });
    expect(await scheduleEverySeconds(i.id)).toBe(900);

    let r = await admin('PATCH', `/integrations/${i.id}`, { plan: 'scale' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ plan: 'scale', sync_interval_seconds: 3600 });
    expect(await scheduleEverySeconds(i.id)).toBe(3600);

    r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1800 });
    expect(r.body.sync_interval_seconds).toBe(1800);
    expect(await scheduleEverySeconds(i.id)).toBe(1800);

    r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1799 });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['sync_interval_seconds']);
    // A downgrade that would leave the override too fast is refused too, with the same pointer.
    r = await admin('PATCH', `/integrations/${i.id}`, { plan: 'growth' });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['sync_interval_seconds']);
    expect((await admin('GET', `/integrations/${i.id}`)).body).toMatchObject({ plan: 'scale', sync_interval_seconds: 1800 });
    expect(await scheduleEverySeconds(i.id)).toBe(1800);

    r = await admin('PATCH', `/integrations/${i.id}`, { plan: 'growth', sync_interval_seconds: null });
    expect(r.body).toMatchObject({ plan: 'growth', sync_interval_seconds: 3600 });
    expect(await scheduleEverySeconds(i.id)).toBe(3600);

    expect(pointers(await admin('PATCH', `/integrations/${i.id}`, { plan: 'platinum' }))).toEqual(['plan']);
    expect(pointers(await admin('PATCH', `/integrations/${i.id}`, { mode: 'test' }))).toEqual(['mode']);
    expectProblem(await admin('PATCH', `/integrations/${UNKNOWN}`, { plan: 'scale' }), 404, 'not_found');
  });

  it('connects a buildium source (client id and secret, the secret stored sealed and never shown), https only when live', async () => {
    const orgId = await newOrg();
    const buildium = { type: 'buildium', base_url: 'https://api.pms.example.com/', client_id: 'client-7', client_secret: 'super-secret-pair' };
    let r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'live',
      plan: 'scale',
      source: { ...buildium, base_url: 'http://api.pms.example.com' },
      initial_sync: false,
    });
    expectProblem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: '/source/base_url', detail: expect.stringContaining('https://') }]);
    r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'live',
      plan: 'scale',
      source: { ...buildium, client_secret: undefined },
      initial_sync: false,
    });
    expect(pointers(r)).toEqual(['/source/client_secret']);
    r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'live',
      plan: 'scale',
      source: { ...buildium, api_key: 'k' },
      initial_sync: false,
    });
    expect(pointers(r)).toEqual(['/source/api_key']);
    expect(await db.select().from(integrations).where(eq(integrations.organizationId, orgId))).toEqual([]);

    r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'live',
      plan: 'scale',
      source: buildium,
      initial_sync: false,
      full_sync_interval_seconds: 7_200,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ source: { type: 'buildium', dialect: 'buildium' }, sync_interval_seconds: 3600, full_sync_interval_seconds: 7_200 });
    expect(JSON.stringify(r.body)).not.toContain('super-secret');
    expect(JSON.stringify((await admin('GET', `/integrations/${r.body.id}`)).body)).not.toContain('client-7');
    const [row] = await db.select().from(integrations).where(eq(integrations.id, r.body.id));
    expect(row!.sourceConfig).toEqual({
      dialect: 'buildium',
      base_url: 'https://api.pms.example.com',
      client_id: 'client-7',
      client_secret: expect.stringMatching(/^enc:v1:dev:/),
    });
    expect(JSON.stringify(row!.sourceConfig)).not.toContain('super-secret');
  });

  it('two changes of the cadence made at once leave the schedule at the cadence the database keeps', async () => {
    const i = await newIntegration(await newOrg(), { plan: 'enterprise' });
    for (let round = 0; round < 8; round++) {
      await Promise.all([
        admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1200 }),
        admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1800 }),
      ]);
      const kept = (await admin('GET', `/integrations/${i.id}`)).body.sync_interval_seconds;
      expect(await scheduleEverySeconds(i.id), `round ${round}`).toBe(kept);
    }
  });

  it('a change to the cadence the database already holds still pushes it (another request may have moved the schedule since it read)', async () => {
    const i = await newIntegration(await newOrg(), { plan: 'enterprise' });
    await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1200 });
    // What a racing request's push leaves behind when this one's write lands after it: the schedule at another cadence.
    await temporal.schedule.getHandle(scheduleIdOf(i.id)).update((s) => ({ ...s, spec: { intervals: [{ every: 1_800_000 }] } }));
    expect(await scheduleEverySeconds(i.id)).toBe(1800);
    const r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1200 });
    expect(r.body.sync_interval_seconds).toBe(1200);
    expect(await scheduleEverySeconds(i.id)).toBe(1200);
    // A name-only change writes the name alone: it neither pushes nor rewrites the cadence from what it read.
    expect((await admin('PATCH', `/integrations/${i.id}`, { name: 'renamed' })).body).toMatchObject({ name: 'renamed', sync_interval_seconds: 1200 });
  });

  it('takes a full-run interval between the sync interval and 30 days (null: the default), checked whichever field moves', async () => {
    const orgId = await newOrg();
    const post = (body: Record<string, unknown>) =>
      admin('POST', `/organizations/${orgId}/integrations`, { mode: 'live', plan: 'scale', source: entrata, initial_sync: false, ...body });
    let r = await post({ full_sync_interval_seconds: 1800 });
    expectProblem(r, 422, 'validation_error');
    expect(r.body.errors).toEqual([{ pointer: 'full_sync_interval_seconds', detail: expect.stringContaining('3600') }]);
    r = await post({ full_sync_interval_seconds: 30 * 86_400 + 1 });
    expect(pointers(r)).toEqual(['full_sync_interval_seconds']);
    r = await post({ full_sync_interval_seconds: 'daily' });
    expect(pointers(r)).toEqual(['full_sync_interval_seconds']);
    expect(await db.select().from(integrations).where(eq(integrations.organizationId, orgId))).toEqual([]);

    const i = (await post({ sync_interval_seconds: 1800, full_sync_interval_seconds: 1800 })).body;
    expect(i).toMatchObject({ sync_interval_seconds: 1800, full_sync_interval_seconds: 1800 });
    // Slowing the cadence past the full-run interval is refused, the full-run interval named.
    r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 3600 });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['full_sync_interval_seconds']);
    r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 3600, full_sync_interval_seconds: 30 * 86_400 });
    expect(r.body).toMatchObject({ sync_interval_seconds: 3600, full_sync_interval_seconds: 30 * 86_400 });
    r = await admin('PATCH', `/integrations/${i.id}`, { full_sync_interval_seconds: null });
    expect(r.body).toMatchObject({ full_sync_interval_seconds: 86_400 });
    // Runs a week apart, no override: each run is a full one, and the interval says so (never less than the cadence).
    r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 7 * 86_400 });
    expect(r.body).toMatchObject({ sync_interval_seconds: 7 * 86_400, full_sync_interval_seconds: 7 * 86_400 });
    r = await admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 3600 });
    const [row] = await db.select().from(integrations).where(eq(integrations.id, i.id));
    expect(row!.fullSyncIntervalSeconds).toBeNull();
  });

  it('deletes: schedule removed, later reads 404, records soft-deleted but kept', async () => {
    const orgId = await newOrg();
    const i = await newIntegration(orgId);
    const row = (await db.select().from(integrations).where(eq(integrations.id, i.id)))[0]!;
    await db.transaction((tx) => applyRecords(tx, { integration: row, emitEvents: false }, 'property', [propertyInput('P1'), propertyInput('P2')]));

    const r = await admin('DELETE', `/integrations/${i.id}`);
    expect(r.status).toBe(204);
    await expectNotFound(`GET /integrations/${i.id}`, `DELETE /integrations/${i.id}`, `POST /integrations/${i.id}/syncs`);
    expect((await admin('GET', `/organizations/${orgId}/integrations`)).body.results).toEqual([]);
    await expect(temporal.schedule.getHandle(scheduleIdOf(i.id)).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    const props = await db.select().from(properties).where(eq(properties.integrationId, i.id));
    expect(props).toHaveLength(2);
    expect(props.every((p) => p.deletedAt !== null)).toBe(true);
  });

  it('a change of cadence racing the deletion leaves no schedule behind, and answers 404 when the row is gone', async () => {
    const orgId = await newOrg();
    for (let round = 0; round < 8; round++) {
      const i = await newIntegration(orgId);
      // The change starts a moment after the deletion, so that each reads the integration live.
      const [del, patch] = await Promise.all([
        admin('DELETE', `/integrations/${i.id}`),
        new Promise((r) => setTimeout(r, round)).then(() => admin('PATCH', `/integrations/${i.id}`, { sync_interval_seconds: 1800 + round })),
      ]);
      expect(del.status, `round ${round}`).toBe(204);
      expect([200, 404], `round ${round}: ${JSON.stringify(patch.body)}`).toContain(patch.status);
      await expect(temporal.schedule.getHandle(scheduleIdOf(i.id)).describe(), `round ${round}`).rejects.toBeInstanceOf(ScheduleNotFoundError);
      const [row] = await db.select().from(integrations).where(eq(integrations.id, i.id));
      expect(row!.deletedAt, `round ${round}`).not.toBeNull();
    }
  });

  it('a subscription or automation made while its integration is being deleted is deleted with it, or not made (404)', async () => {
    const orgId = await newOrg();
    for (let round = 0; round < 8; round++) {
      const i = await newIntegration(orgId);
      const [del, sub, auto] = await Promise.all([
        admin('DELETE', `/integrations/${i.id}`),
        new Promise((r) => setTimeout(r, round)).then(() =>
          admin('POST', `/integrations/${i.id}/webhook_subscriptions`, { url: 'https://hooks.example.com/in', event_types: ['*'] }),
        ),
        new Promise((r) => setTimeout(r, round)).then(() =>
          admin('POST', `/integrations/${i.id}/automations`, {
            name: 'Nightly',
            entity: 'leases',
            schedule: { every: 3600 },
            destination: { type: 'http', url: 'https://files.example.com/in' },
          }),
        ),
      ]);
      expect(del.status, `round ${round}`).toBe(204);
      expect([201, 404], `round ${round}: ${JSON.stringify(sub.body)}`).toContain(sub.status);
      expect([201, 404], `round ${round}: ${JSON.stringify(auto.body)}`).toContain(auto.status);
      if (sub.status === 201) expect((await admin('GET', `/webhook_subscriptions/${sub.body.id}`)).status, `round ${round}`).toBe(404);
      if (auto.status === 201) {
        expect((await admin('GET', `/automations/${auto.body.id}`)).status, `round ${round}`).toBe(404);
        await expect(temporal.schedule.getHandle(automationScheduleIdOf(auto.body.id)).describe(), `round ${round}`).rejects.toBeInstanceOf(
          ScheduleNotFoundError,
        );
      }
    }
  });
});

describe('when Temporal is unreachable', () => {
  const down = onApi(() => startApi(db, { ...config, TEMPORAL_ADDRESS: '127.0.0.1:1' }));

  it('answers 503 and changes nothing', async () => {
    const orgId = await newOrg();
    const existing = await newIntegration(orgId);
    const r = await admin('POST', `/organizations/${orgId}/integrations`, { mode: 'live', plan: 'scale', source: entrata }, { base: down.url });
    expectProblem(r, 503, 'internal_error');
    expect(r.body.detail).toContain('Temporal');
    const rows = await db
      .select()
      .from(integrations)
      .where(and(eq(integrations.organizationId, orgId), isNull(integrations.deletedAt)));
    expect(rows.map((x) => x.id)).toEqual([existing.id]);

    expectProblem(await admin('PATCH', `/integrations/${existing.id}`, { plan: 'enterprise' }, { base: down.url }), 503, 'internal_error');
    expect((await admin('GET', `/integrations/${existing.id}`)).body.plan).toBe('scale');
    const deleting = await admin('DELETE', `/integrations/${existing.id}`, undefined, { base: down.url });
    expectProblem(deleting, 503, 'internal_error');
    // Schedules are removed one by one: a failure part-way says so, and how to finish.
    expect(deleting.body.detail).toContain('retry the DELETE to finish');
    expect((await admin('GET', `/integrations/${existing.id}`)).status).toBe(200);
    const syncing = await admin('POST', `/integrations/${existing.id}/syncs`, undefined, { base: down.url });
    expectProblem(syncing, 503, 'internal_error');
    expect(syncing.body.detail).toContain('No run started');
    expect(await db.select().from(syncJobs).where(eq(syncJobs.integrationId, existing.id))).toEqual([]);
  });
});

describe('when Temporal accepts connections and does not answer', () => {
  let proxy: TcpProxy;
  const held = onApi(async () => {
    const [host, port] = config.TEMPORAL_ADDRESS!.split(':');
    proxy = new TcpProxy({ host: host!, port: Number(port) });
    await proxy.start();
    return startApi(db, { ...config, TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}`, TEMPORAL_REQUEST_TIMEOUT_MS: 1_500 });
  });

  it('answers 503 within TEMPORAL_REQUEST_TIMEOUT_MS and changes nothing', async () => {
    const orgId = await newOrg();
    const existing = await newIntegration(orgId);
    // Connected and answering first: the request that follows finds a connection already open.
    expect((await admin('PATCH', `/integrations/${existing.id}`, { plan: 'enterprise' }, { base: held.url })).status).toBe(200);
    proxy.hold();
    try {
      for (const [method, path, body] of [
        ['PATCH', `/integrations/${existing.id}`, { plan: 'growth' }],
        ['POST', `/integrations/${existing.id}/syncs`, undefined],
      ] as const) {
        const started = Date.now();
        const r = await admin(method, path, body, { base: held.url });
        expect(Date.now() - started, `${method} ${path}`).toBeLessThan(8_000);
        expectProblem(r, 503, 'internal_error');
        expect(r.body.detail).toContain('Temporal');
      }
      expect((await admin('GET', `/integrations/${existing.id}`)).body.plan).toBe('enterprise');
    } finally {
      proxy.release();
      await proxy.cut();
    }
  }, 30_000);
});

describe('api keys', () => {
  it('shows the key once; lists without secrets; the key reads the public API until revoked', async () => {
    const orgId = await newOrg();
    const created = await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'test' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      key: expect.stringMatching(/^sk_test_[A-Za-z0-9]{32,}$/),
      mode: 'test',
      scopes: ['read', 'write'],
      created_at: expect.any(String),
    });
    const key: string = created.body.key;
    const readOnly = await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'live', scopes: ['read', 'read'] });
    expect(readOnly.body.scopes).toEqual(['read']);

    const list = await admin('GET', `/organizations/${orgId}/api_keys`);
    expect(list.body.results).toHaveLength(2);
    expect(list.body.results[0]).toEqual({
      id: created.body.id,
      organization_id: orgId,
      mode: 'test',
      scopes: ['read', 'write'],
      key_prefix: key.slice(0, 12),
      created_at: created.body.created_at,
      revoked_at: null,
      last_used_at: null,
    });
    expect(JSON.stringify(list.body)).not.toContain(key);

    expect((await call('GET', '/v1/properties', undefined, { token: key })).status).toBe(200);
    const revoked = await admin('POST', `/api_keys/${created.body.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.body.id, revoked_at: expect.any(String) });
    expect(revoked.body.key).toBeUndefined();
    const again = await admin('POST', `/api_keys/${created.body.id}/revoke`);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    expectProblem(await call('GET', '/v1/properties', undefined, { token: key }), 401, 'unauthorized');
  });

  it('refuses bad requests', async () => {
    const orgId = await newOrg();
    let r = await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'prod' });
    expect(pointers(r)).toEqual(['mode']);
    r = await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'test', scopes: ['admin'] });
    expect(pointers(r)).toEqual(['/scopes/0']);
    r = await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'test', scopes: [] });
    expect(pointers(r)).toEqual(['scopes']);
    expect((await admin('GET', `/organizations/${orgId}/api_keys`)).body.results).toEqual([]);
    await expectNotFound(`POST /api_keys/${UNKNOWN}/revoke`, 'POST /api_keys/xyz/revoke', `GET /organizations/${UNKNOWN}/api_keys`);
  });
});

describe('sync jobs', () => {
  it('triggers a manual run (one at a time), retrieves and lists jobs most recent first', async () => {
    const i = await integrationOfNewOrg();
    const r = await admin('POST', `/integrations/${i.id}/syncs`);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: expect.stringMatching(/^syj_[0-9A-Z]{26}$/), integration_id: i.id, status: 'queued', trigger: 'manual' });
    // No worker polls this file's task queue, so the job stays queued and a second trigger returns it (also to a
    // client that labels its empty body JSON).
    expect((await admin('POST', `/integrations/${i.id}/syncs`)).body.id).toBe(r.body.id);
    const labelled = await admin('POST', `/integrations/${i.id}/syncs`, undefined, { raw: '' });
    expect(labelled.status).toBe(202);
    expect(labelled.body.id).toBe(r.body.id);
    // A source that cannot list what changed cannot have a delta run; an unknown kind is no kind.
    let refused = await admin('POST', `/integrations/${i.id}/syncs`, { kind: 'delta' });
    expectProblem(refused, 422, 'validation_error');
    expect(refused.body.errors).toEqual([{ pointer: 'kind', detail: expect.stringContaining('entrata') }]);
    refused = await admin('POST', `/integrations/${i.id}/syncs`, { kind: 'partial' });
    expect(pointers(refused)).toEqual(['kind']);
    expect((await admin('POST', `/integrations/${i.id}/syncs`, { kind: 'full' })).body.id).toBe(r.body.id);
    const got = await admin('GET', `/sync_jobs/${r.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: r.body.id,
      integration_id: i.id,
      status: 'queued',
      trigger: 'manual',
      kind: null,
      window_from: null,
      window_to: null,
      started_at: null,
      finished_at: null,
      records_seen: 0,
      records_new: 0,
      records_updated: 0,
      records_soft_deleted: 0,
      records_skipped: 0,
      error: null,
      workflow_id: `sync-${r.body.id}`,
      attempt: 1,
      last_error: null,
      next_attempt_at: null,
      progress: {
        property: { pages: 0, done: false },
        unit: { pages: 0, done: false },
        resident: { pages: 0, done: false },
        lease: { pages: 0, done: false },
      },
    });
    // An older finished job, to see the order and paging.
    const older = 'syj_01H00000000000000000000000';
    await db.insert(syncJobs).values({
      id: older,
      organizationId: i.organization_id,
      integrationId: i.id,
      status: 'succeeded',
      trigger: 'schedule',
      createdAt: new Date(Date.now() - 60_000),
    });
    const page = await admin('GET', `/integrations/${i.id}/sync_jobs?limit=1`);
    expect(page.body.meta).toEqual({ limit: 1, offset: 0, hasMore: true });
    expect(page.body.results.map((j: any) => j.id)).toEqual([r.body.id]);
    const next = await admin('GET', `/integrations/${i.id}/sync_jobs?limit=1&offset=1`);
    expect(next.body.results.map((j: any) => j.id)).toEqual([older]);
    expect(next.body.meta.hasMore).toBe(false);
  });

  it('answers 400, 422 and 404 for bad parameters and ids', async () => {
    const i = await integrationOfNewOrg();
    expectProblem(await admin('GET', `/integrations/${i.id}/sync_jobs?limit=abc`), 400, 'bad_request');
    let r = await admin('GET', `/integrations/${i.id}/sync_jobs?limit=0`);
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['limit']);
    r = await admin('GET', `/integrations/${i.id}/sync_jobs?limit=101`);
    expect(pointers(r)).toEqual(['limit']);
    await expectNotFound('GET /sync_jobs/syj_01H00000000000000000000099', 'GET /sync_jobs/job-1', `POST /integrations/${UNKNOWN}/syncs`);
  });
});

describe('sandbox controls', () => {
  it('are refused (409) for an integration that is not a sandbox one, and validated', async () => {
    const i = await integrationOfNewOrg();
    expectProblem(await admin('POST', `/integrations/${i.id}/sandbox/changes`, { update: 3 }), 409, 'conflict');
    expectProblem(await admin('POST', `/integrations/${i.id}/sandbox/faults`, { kind: 'unavailable' }), 409, 'conflict');
    expectProblem(await admin('DELETE', `/integrations/${i.id}/sandbox/faults`), 409, 'conflict');
    let r = await admin('POST', `/integrations/${i.id}/sandbox/faults`, { kind: 'meteor' });
    expect(pointers(r)).toEqual(['kind']);
    r = await admin('POST', `/integrations/${i.id}/sandbox/changes`, { update: { lease: -1 }, nonsense: 1 });
    expect(pointers(r)).toEqual(['/update/lease', 'nonsense']);
    expectProblem(await admin('POST', `/integrations/${UNKNOWN}/sandbox/faults`, { kind: 'slow' }), 404, 'not_found');
  });
});

describe('openapi document', () => {
  it('is served publicly at /admin/v1/openapi.json and describes every route', async () => {
    const r = await call('GET', '/admin/v1/openapi.json', undefined, { token: null });
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe('3.1.0');
    expect(Object.keys(r.body.paths).sort()).toEqual(
      [
        '/api_keys/{id}/revoke',
        '/integrations/{id}',
        '/integrations/{id}/sandbox/changes',
        '/integrations/{id}/sandbox/faults',
        '/integrations/{id}/sync_jobs',
        '/integrations/{id}/syncs',
        '/organizations',
        '/organizations/{id}',
        '/organizations/{id}/api_keys',
        '/organizations/{id}/integrations',
        '/sync_jobs/{id}',
        '/sync_jobs/{id}/skipped_records',
        '/operations/{id}',
        '/integrations/{id}/operations',
        '/integrations/{id}/webhook_subscriptions',
        '/webhook_subscriptions/{id}',
        '/webhook_subscriptions/{id}/rotate_secret',
        '/webhook_subscriptions/{id}/deliveries',
        '/webhook_subscriptions/{id}/replay',
        '/webhook_deliveries/{id}',
        '/webhook_deliveries/{id}/replay',
        '/integrations/{id}/automations',
        '/automations/{id}',
        '/automations/{id}/runs',
        '/automation_runs/{id}',
        '/integrations/{id}/events',
        '/events/{id}',
        '/events/{id}/resend',
        '/health',
      ].sort(),
    );
    // And the public document does not leak the admin routes.
    const pub = await call('GET', '/v1/openapi.json', undefined, { token: null });
    expect(Object.keys(pub.body.paths ?? {}).some((p) => p.includes('admin') || p.includes('organizations'))).toBe(false);
  });

  it('says what every answer has: x-request-id, Retry-After on 429, 500 anywhere, 415 with a body, no 413 on a GET', async () => {
    const doc = (await call('GET', '/admin/v1/openapi.json', undefined, { token: null })).body;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const where = `${method.toUpperCase()} ${path}`;
        expect(op.responses['500'], where).toBeDefined();
        for (const [status, response] of Object.entries<any>(op.responses)) {
          expect(response.headers?.['x-request-id'], `${where} ${status}`).toBeDefined();
          if (status === '429') expect(response.headers['Retry-After'], where).toBeDefined();
        }
        expect(Boolean(op.responses['415']), where).toBe(Boolean(op.requestBody));
        if (method === 'get') expect(op.responses['413'], where).toBeUndefined();
      }
    }
    expect(Object.keys(doc.paths['/health'].get.responses).sort()).toEqual(['200', '401', '429', '500', '503']);
    // What the document says, the service does: a 415 for a body that is not JSON, on an operation that lists it.
    const res = await fetch(`${api.url}/admin/v1/organizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: '{"name":"x"}',
    });
    expect(res.status).toBe(415);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });
});
