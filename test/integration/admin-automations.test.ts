/**
 * Automations in the admin API over real HTTP, real Postgres and the real Temporal dev server: creating each kind of
 * schedule and destination, every refusal with its pointer, header values never shown, the Temporal Schedule as
 * Temporal sees it (paused, moved, removed), manual runs as workflows, the run history, and what happens when
 * Temporal cannot be reached. No worker polls this file's task queues: runs stay queued.
 */
import { randomUUID } from 'node:crypto';
import { Client, ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { insertRun } from '../../db/automations';
import type { Db } from '../../db/client';
import { automationRuns, automations } from '../../db/schema';
import { createOrganization } from '../../db/tenants';
import { automationRunWorkflowIdOf, automationScheduleIdOf, automationTaskQueueOf } from '../../domain/contract';
import { openAutomationHeaders } from '../../domain/secrets';
import type { Mode } from '../../domain/plans';
import { startApi, type TestServer } from '../support/api-server';
import { testExportRoot, testKeyring } from '../support/context';
import { unsyncedIntegration } from '../support/fixtures';
import { onApi, onServices } from '../support/services';

let db: Db;
let config: Config;
let api: TestServer;
let temporal: Client;
let doc: Record<string, any>;
let ajv: InstanceType<typeof Ajv2020>;

/** Header values sent in this file: none may appear in any reply. */
const SECRET = 'Bearer dest-secret-7f3a9c';
const OTHER_SECRET = 'token-b81d44e0';
/** Every reply body of this file, to check that no header value was ever shown. */
const replies: string[] = [];

onServices({ pool: 4, api: true, temporal: true }, (s) => ({ db, config, api, temporal } = s));
beforeAll(async () => {
  testExportRoot('finance/units', 'x', 'out');
  doc = (await (await fetch(`${api.url}/admin/v1/openapi.json`)).json()) as Record<string, any>;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'admin.json');
});
afterAll(async () => {
  expect(replies.length).toBeGreaterThan(0);
  for (const body of replies) {
    expect(body).not.toContain(SECRET);
    expect(body).not.toContain(OTHER_SECRET);
  }
});

interface Reply {
  status: number;
  body: any;
}

async function admin(method: string, path: string, body?: unknown, base = api.url): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${config.ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}/admin/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  replies.push(text);
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The reply validates against the admin OpenAPI document's schema for its path, method and status. */
function conforms(r: Reply, path: string, method: string) {
  const ref = `admin.json#/paths/${escape(path)}/${method}/responses/${r.status}/content/application~1json/schema`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  expect(validate(r.body), JSON.stringify(validate.errors)).toBe(true);
}

function expectProblem(r: Reply, status: number, slug: string) {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.type).toBe(`${config.DOCS_BASE_URL}/errors/${slug}`);
}

/** Each call (`METHOD /path`, under /admin/v1) is answered 404 not_found. */
async function expectNotFound(...calls: string[]): Promise<void> {
  for (const call of calls) {
    const [method, path] = call.split(' ') as [string, string];
    expectProblem(await admin(method, path), 404, 'not_found');
  }
}
const pointers = (r: Reply) => (r.body.errors as { pointer: string }[]).map((e) => e.pointer).sort();

/** An integration row of its own organization (no source behind it: nothing here syncs). */
async function integration(mode: Mode = 'test'): Promise<string> {
  const org = await createOrganization(db, { name: `automations-${randomUUID().slice(0, 8)}` });
  return (await unsyncedIntegration(db, org.id, { mode, source: mode === 'test' ? 'sandbox' : 'entrata' })).id;
}

const HTTP = { type: 'http', url: 'https://files.example.com/leases', headers: { Authorization: SECRET } };
const valid = (over: Record<string, unknown> = {}) => ({
  name: 'Nightly leases',
  entity: 'leases',
  filters: { status: 'active,notice', start_date_gte: '2025-01-01', 'order-by': 'start_date:desc' },
  schedule: { every: 3600 },
  destination: HTTP,
  ...over,
});

async function create(integrationId: string, over: Record<string, unknown> = {}): Promise<any> {
  const r = await admin('POST', `/integrations/${integrationId}/automations`, valid(over));
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

const describeSchedule = (automationId: string) => temporal.schedule.getHandle(automationScheduleIdOf(automationId)).describe();
const rowsOf = (integrationId: string) => db.select().from(automations).where(eq(automations.integrationId, integrationId));

describe('create', () => {
  it('an interval schedule to an HTTP destination: the entity stored singular and shown plural, header values sealed and never shown', async () => {
    const integ = await integration();
    const r = await admin('POST', `/integrations/${integ}/automations`, valid({ columns: ['id', 'status', 'rent_amount'] }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    conforms(r, '/integrations/{id}/automations', 'post');
    const [row] = await rowsOf(integ);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^atm_[0-9A-Z]{26}$/),
      integration_id: integ,
      organization_id: row!.organizationId,
      name: 'Nightly leases',
      entity: 'leases',
      filters: { status: 'active,notice', start_date_gte: '2025-01-01', 'order-by': 'start_date:desc' },
      columns: ['id', 'status', 'rent_amount'],
      schedule: { every: 3600 },
      destination: { type: 'http', url: 'https://files.example.com/leases', method: 'PUT', headers: ['Authorization'], content_length: false },
      escape_formulas: true,
      status: 'active',
      schedule_id: automationScheduleIdOf(r.body.id),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: expect.any(String),
    });
    expect(row!.entity).toBe('lease');
    expect(row!.filters).toEqual({ status: 'active,notice', start_date_gte: '2025-01-01', 'order-by': 'start_date:desc' });
    expect(row!.destinationHeaders).toMatch(/^enc:v1:/);
    expect(JSON.stringify(row!.destination)).not.toContain(SECRET);
    expect(openAutomationHeaders(testKeyring(), row!)).toEqual({ Authorization: SECRET });

    const s = await describeSchedule(r.body.id);
    expect(s.state.paused).toBe(false);
    expect(s.spec.intervals?.[0]?.every).toBe(3600_000);
    expect(s.action).toMatchObject({ type: 'startWorkflow', workflowType: 'automationTick', taskQueue: automationTaskQueueOf(config.TEMPORAL_TASK_QUEUE) });
  });

  it('a cron schedule in a time zone to a directory, with the singular entity and no filters', async () => {
    const integ = await integration();
    const a = await create(integ, {
      name: 'Units weekly',
      entity: 'unit',
      filters: undefined,
      schedule: { cron: '0 6 * * 1-5', timezone: 'America/Chicago' },
      destination: { type: 'directory', path: 'finance/units' },
    });
    expect(a).toMatchObject({
      entity: 'units',
      filters: {},
      columns: null,
      schedule: { cron: '0 6 * * 1-5', timezone: 'America/Chicago' },
      destination: { type: 'directory', path: 'finance/units' },
    });
    const [row] = await rowsOf(integ);
    expect(row!.destinationHeaders).toBeNull();
    const s = await describeSchedule(a.id);
    expect(s.spec.timezone).toBe('America/Chicago');
    expect(s.spec.calendars).toHaveLength(1);
    expect(s.spec.calendars![0]).toMatchObject({ hour: [{ start: 6, end: 6, step: 1 }], minute: [{ start: 0, end: 0, step: 1 }] });

    // A cron without a zone runs in UTC, and says so; POST and no headers.
    const b = await create(integ, {
      entity: 'residents',
      filters: { email: 'a@example.com' },
      schedule: { cron: '@daily' },
      destination: { type: 'http', url: 'http://127.0.0.1:9/in', method: 'POST' },
    });
    expect(b).toMatchObject({
      entity: 'residents',
      schedule: { cron: '@daily', timezone: 'UTC' },
      destination: { type: 'http', url: 'http://127.0.0.1:9/in', method: 'POST', headers: [] },
    });
    expect((await describeSchedule(b.id)).spec.timezone).toBe('UTC');
  });

  it('refuses every bad member with a 422 at its pointer, and creates nothing', async () => {
    const integ = await integration();
    const live = await integration('live');
    const cases: [string, Record<string, unknown>, string[]][] = [
      ['unknown filter', { filters: { colour: 'red' } }, ['/filters/colour']],
      ['paging', { filters: { limit: '10', offset: '5' } }, ['/filters/limit', '/filters/offset']],
      ['bad date', { filters: { start_date_gte: '2025-13-45' } }, ['/filters/start_date_gte']],
      ['bad sort', { filters: { 'order-by': 'rent:asc' } }, ['/filters/order-by']],
      ['bad boolean', { filters: { include_deleted: 'maybe' } }, ['/filters/include_deleted']],
      ['bad uuid', { filters: { integration_id: 'nope' } }, ['/filters/integration_id']],
      ['another integration', { filters: { integration_id: randomUUID() } }, ['/filters/integration_id']],
      ['another entity’s filter', { filters: { name: 'Harbor' } }, ['/filters/name']],
      ['a filter that is not a string', { filters: { status: 5 } }, ['/filters/status']],
      ['unknown column', { columns: ['id', 'colour'] }, ['/columns/1']],
      ['column twice', { columns: ['id', 'status', 'id'] }, ['/columns/2']],
      ['no columns', { columns: [] }, ['columns']],
      ['interval too short', { schedule: { every: 10 } }, ['/schedule/every']],
      ['no schedule form', { schedule: {} }, ['schedule']],
      ['both forms', { schedule: { every: 3600, cron: '0 6 * * *' } }, ['/schedule/cron']],
      ['cron of three fields', { schedule: { cron: '* * *' } }, ['/schedule/cron']],
      ['unknown time zone', { schedule: { cron: '0 6 * * *', timezone: 'Mars/Olympus' } }, ['/schedule/timezone']],
      ['time zone of an interval', { schedule: { every: 3600, timezone: 'UTC' } }, ['/schedule/timezone']],
      ['unknown destination type', { destination: { type: 'ftp', url: 'ftp://x' } }, ['/destination/type']],
      ['not a URL', { destination: { type: 'http', url: 'not a url' } }, ['/destination/url']],
      ['not http(s)', { destination: { type: 'http', url: 'ftp://files.example.com/x' } }, ['/destination/url']],
      ['credentials in the URL', { destination: { type: 'http', url: 'https://user:pw@files.example.com/x' } }, ['/destination/url']],
      ['bad method', { destination: { type: 'http', url: 'https://files.example.com/x', method: 'GET' } }, ['/destination/method']],
      [
        'content_length not a boolean',
        { destination: { type: 'http', url: 'https://files.example.com/x', content_length: 'yes' } },
        ['/destination/content_length'],
      ],
      ['content_length of a directory', { destination: { type: 'directory', path: 'x', content_length: true } }, ['/destination/content_length']],
      [
        'bad header name',
        { destination: { type: 'http', url: 'https://files.example.com/x', headers: { 'Bad Header': 'x' } } },
        ['/destination/headers/Bad Header'],
      ],
      [
        'framing header',
        { destination: { type: 'http', url: 'https://files.example.com/x', headers: { 'Content-Length': '1' } } },
        ['/destination/headers/Content-Length'],
      ],
      [
        'header twice',
        { destination: { type: 'http', url: 'https://files.example.com/x', headers: { 'X-Key': 'a', 'x-key': 'b' } } },
        ['/destination/headers/x-key'],
      ],
      [
        'two-line header value',
        { destination: { type: 'http', url: 'https://files.example.com/x', headers: { 'X-Key': 'a\r\nX-Evil: 1' } } },
        ['/destination/headers/X-Key'],
      ],
      ['absolute path', { destination: { type: 'directory', path: '/etc' } }, ['/destination/path']],
      ['parent path', { destination: { type: 'directory', path: '../up' } }, ['/destination/path']],
      ['parent segment inside', { destination: { type: 'directory', path: 'a/../../b' } }, ['/destination/path']],
      ['directory with a URL', { destination: { type: 'directory', path: 'x', url: 'https://files.example.com' } }, ['/destination/url']],
      ['directory that does not exist', { destination: { type: 'directory', path: 'finance/nowhere' } }, ['/destination/path']],
      ['unknown entity', { entity: 'tenants' }, ['entity']],
      ['empty name', { name: ' ' }, ['name']],
      ['unknown field', { colour: 'red' }, ['colour']],
      ['several at once', { filters: { colour: 'red' }, columns: ['nope'] }, ['/columns/0', '/filters/colour']],
    ];
    for (const [what, over, want] of cases) {
      const r = await admin('POST', `/integrations/${integ}/automations`, valid(over));
      expectProblem(r, 422, 'validation_error');
      expect(pointers(r), what).toEqual(want);
      // A missing directory says where it looked, and what EXPORT_ROOT is.
      if (what === 'directory that does not exist') expect(r.body.errors[0].detail).toContain(`looked for ${testExportRoot()}/finance/nowhere`);
    }
    // A live integration sends to public https only, as its webhooks do.
    for (const url of [
      'http://files.example.com/x',
      'https://127.0.0.1/x',
      'https://localhost/x',
      'https://[::1]/x',
      'https://169.254.169.254/latest',
      'https://[::127.0.0.1]/',
      'https://[::ffff:0:7f00:1]/',
      'https://[2002:7f00:1::]/x',
    ]) {
      const r = await admin('POST', `/integrations/${live}/automations`, valid({ destination: { type: 'http', url } }));
      expectProblem(r, 422, 'validation_error');
      expect(pointers(r), url).toEqual(['/destination/url']);
    }
    expect(await rowsOf(integ)).toEqual([]);
    expect(await rowsOf(live)).toEqual([]);
    // The same URLs are fine for a test integration, and public https for a live one.
    await create(integ, { destination: { type: 'http', url: 'http://127.0.0.1:9/x' } });
    await create(live, { destination: { type: 'http', url: 'https://files.example.com/x' } });
  });

  it('refuses a header value HTTP cannot carry, on create and on change, naming the character and never the value', async () => {
    const integ = await integration();
    const dest = (value: string) => ({ type: 'http', url: 'https://files.example.com/x', headers: { Authorization: 'Bearer ok', 'X-Key': value } });
    const cases: [string, string, RegExp][] = [
      ['characters above U+00FF', '\u00e9\u0130\u560a', /^contains U\+0130, which an HTTP header cannot carry/],
      ['an astral character', 'key-\u{1F511}', /^contains U\+1F511, /],
      ['DEL', 'a\u007fb', /^contains U\+007F, /],
      ['a control character', 'a\u0001b', /^contains U\+0001, /],
      ['NUL', 'a\u0000b', /^contains U\+0000, /],
      ['a line break', 'a\nb', /^a header value is one line/],
      ['a leading space', ' token', /start or end with a space or tab/],
      ['a trailing tab', 'token\t', /start or end with a space or tab/],
      ['too long', 'x'.repeat(4097), /at most 4096 characters/],
    ];
    for (const [what, value, detail] of cases) {
      const r = await admin('POST', `/integrations/${integ}/automations`, valid({ destination: dest(value) }));
      expectProblem(r, 422, 'validation_error');
      expect(r.body.errors, what).toEqual([{ pointer: '/destination/headers/X-Key', detail: expect.stringMatching(detail) }]);
      if (value.length > 1) expect(JSON.stringify(r.body), what).not.toContain(JSON.stringify(value).slice(1, -1));
    }
    expect(await rowsOf(integ)).toEqual([]);

    // The same refusal on a change, which keeps the stored destination and its sealed values.
    const a = await create(integ);
    const sealed = (await rowsOf(integ))[0]!.destinationHeaders;
    const r = await admin('PATCH', `/automations/${a.id}`, { destination: dest('\u00e9\u0130\u560a') });
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['/destination/headers/X-Key']);
    expect((await admin('GET', `/automations/${a.id}`)).body).toEqual(a);
    expect((await rowsOf(integ))[0]!.destinationHeaders).toBe(sealed);

    // What HTTP can carry is kept as given: spaces and tabs inside, Latin-1 (sent as single bytes), an empty value.
    const ok = await admin('PATCH', `/automations/${a.id}`, {
      destination: { type: 'http', url: 'https://files.example.com/x', headers: { 'X-Key': 'caf\u00e9 \t au lait', 'X-Empty': '' } },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.destination.headers).toEqual(['X-Key', 'X-Empty']);
    expect(openAutomationHeaders(testKeyring(), (await rowsOf(integ))[0]!)).toEqual({ 'X-Key': 'caf\u00e9 \t au lait', 'X-Empty': '' });
  });

  it('takes every cron and time zone spelling Temporal reads: month and day names, Sunday as 7, leading zeros, current zone names', async () => {
    const integ = await integration();
    for (const [cron, timezone] of [
      ['0 6 * * MON-FRI', 'Asia/Kolkata'],
      ['0 6 1 JAN *', 'Europe/Kyiv'],
      ['5 4 * * sun', 'America/Argentina/Buenos_Aires'],
      ['0 6 * * 7', 'Etc/UTC'],
      ['00 06 * * *', 'Asia/Ho_Chi_Minh'],
    ] as const) {
      const r = await admin(
        'POST',
        `/integrations/${integ}/automations`,
        valid({ schedule: { cron, timezone }, filters: { integration_id: integ.toUpperCase() } }),
      );
      expect(r.status, `${cron} ${timezone}: ${JSON.stringify(r.body)}`).toBe(201);
      expect((await describeSchedule(r.body.id)).spec.timezone).toBe(timezone);
    }
  });

  it('runs a cron naming a day of the month and a day of the week on a day that matches either, as cron does', async () => {
    const integ = await integration();
    const cron = '0 6 1 jan,JUL sun';
    const r = await admin('POST', `/integrations/${integ}/automations`, valid({ schedule: { cron, timezone: 'UTC' } }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.schedule).toEqual({ cron, timezone: 'UTC' });
    const next = (await describeSchedule(r.body.id)).info.nextActionTimes.map((t) => t.toISOString());
    // Every 1st of January and July, and every Sunday of those months (not only the Sundays that are a 1st).
    expect(next.length).toBeGreaterThan(2);
    for (const t of next) {
      const d = new Date(t);
      expect([0, 6], t).toContain(d.getUTCMonth());
      expect(d.getUTCDate() === 1 || d.getUTCDay() === 0, t).toBe(true);
      expect(t.slice(11), t).toBe('06:00:00.000Z');
    }
    expect(next.some((t) => new Date(t).getUTCDate() === 1 && new Date(t).getUTCDay() !== 0)).toBe(true);
    expect(next.some((t) => new Date(t).getUTCDate() !== 1)).toBe(true);
  });

  it("refuses a cron outside the fields' ranges with a 422 at /schedule/cron, leaving no row and no schedule", async () => {
    const integ = await integration();
    const r = await admin('POST', `/integrations/${integ}/automations`, valid({ schedule: { cron: '61 * * * *' } }));
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['/schedule/cron']);
    expect(r.body.errors[0].detail).toContain('five cron fields');
    expect(await rowsOf(integ)).toEqual([]);
  });

  it('is 404 for an unknown, malformed or deleted integration', async () => {
    expectProblem(await admin('POST', `/integrations/${randomUUID()}/automations`, valid()), 404, 'not_found');
    expectProblem(await admin('POST', '/integrations/not-a-uuid/automations', valid()), 404, 'not_found');
    expectProblem(await admin('GET', `/integrations/${randomUUID()}/automations`), 404, 'not_found');
    const integ = await integration();
    const a = await create(integ);
    expect((await admin('DELETE', `/integrations/${integ}`)).status).toBe(204);
    expectProblem(await admin('POST', `/integrations/${integ}/automations`, valid()), 404, 'not_found');
    expectProblem(await admin('GET', `/integrations/${integ}/automations`), 404, 'not_found');
    // Its automations went with it, schedules included.
    expectProblem(await admin('GET', `/automations/${a.id}`), 404, 'not_found');
    await expect(describeSchedule(a.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect((await rowsOf(integ))[0]!.deletedAt).not.toBeNull();
  });
});

describe('read', () => {
  it('lists an integration’s automations oldest first, paged, and only its own; retrieves one; 404 for unknown ids', async () => {
    const integ = await integration();
    const other = await integration();
    const a1 = await create(integ, { name: 'first' });
    const a2 = await create(integ, { name: 'second', destination: { type: 'directory', path: 'x' } });
    const theirs = await create(other, { name: 'theirs' });

    const page1 = await admin('GET', `/integrations/${integ}/automations?limit=1`);
    conforms(page1, '/integrations/{id}/automations', 'get');
    expect(page1.body.meta).toEqual({ limit: 1, offset: 0, hasMore: true });
    expect(page1.body.results).toEqual([a1]);
    const page2 = await admin('GET', `/integrations/${integ}/automations?limit=1&offset=1`);
    expect(page2.body).toEqual({ meta: { limit: 1, offset: 1, hasMore: false }, results: [a2] });
    expect((await admin('GET', `/integrations/${other}/automations`)).body.results.map((a: any) => a.id)).toEqual([theirs.id]);
    expect(pointers(await admin('GET', `/integrations/${integ}/automations?limit=0`))).toEqual(['limit']);

    const got = await admin('GET', `/automations/${a1.id}`);
    conforms(got, '/automations/{id}', 'get');
    expect(got.body).toEqual(a1);
    await expectNotFound(
      'GET /automations/atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8',
      'GET /automations/nope',
      'GET /automation_runs/aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8',
      'GET /automations/atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8/runs',
      'POST /automations/atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8/runs',
    );
  });
});

describe('update', () => {
  it('pauses and resumes the Temporal Schedule, and moves it', async () => {
    const integ = await integration();
    const a = await create(integ);
    const paused = await admin('PATCH', `/automations/${a.id}`, { status: 'paused' });
    expect(paused.status).toBe(200);
    conforms(paused, '/automations/{id}', 'patch');
    expect(paused.body).toMatchObject({ status: 'paused', schedule: { every: 3600 } });
    expect((await describeSchedule(a.id)).state.paused).toBe(true);

    const moved = await admin('PATCH', `/automations/${a.id}`, { schedule: { cron: '30 2 * * *', timezone: 'Europe/Paris' } });
    expect(moved.body).toMatchObject({ status: 'paused', schedule: { cron: '30 2 * * *', timezone: 'Europe/Paris' } });
    let s = await describeSchedule(a.id);
    expect(s.state.paused).toBe(true);
    expect(s.spec.timezone).toBe('Europe/Paris');
    expect(s.spec.intervals ?? []).toEqual([]);

    const resumed = await admin('PATCH', `/automations/${a.id}`, { status: 'active', schedule: { every: 7200 } });
    expect(resumed.body).toMatchObject({ status: 'active', schedule: { every: 7200 } });
    s = await describeSchedule(a.id);
    expect(s.state.paused).toBe(false);
    expect(s.spec.intervals?.[0]?.every).toBe(7200_000);
    expect((await admin('GET', `/automations/${a.id}`)).body).toEqual(resumed.body);
  });

  it('two changes made at once leave the schedule as the database says: its interval and whether it is paused', async () => {
    const a = await create(await integration());
    for (let round = 0; round < 6; round++) {
      await Promise.all([
        admin('PATCH', `/automations/${a.id}`, { status: 'paused', schedule: { every: 3600 } }),
        admin('PATCH', `/automations/${a.id}`, { status: 'active', schedule: { every: 7200 } }),
      ]);
      const row = (await admin('GET', `/automations/${a.id}`)).body;
      const s = await describeSchedule(a.id);
      expect([s.state.paused, s.spec.intervals?.[0]?.every], `round ${round}`).toEqual([row.status === 'paused', row.schedule.every * 1000]);
    }
  });

  it('a status the database already holds is still pushed (another request may have paused the schedule since it read)', async () => {
    const a = await create(await integration());
    // What a racing request's pause leaves behind when this one's write lands after it.
    await temporal.schedule.getHandle(automationScheduleIdOf(a.id)).pause('a racing request');
    expect((await admin('PATCH', `/automations/${a.id}`, { status: 'active' })).body.status).toBe('active');
    expect((await describeSchedule(a.id)).state.paused).toBe(false);
  });

  it('changes name, filters, columns and destination; keeps, replaces or clears header values without showing them', async () => {
    const integ = await integration();
    const a = await create(integ);
    const sealedBefore = (await rowsOf(integ))[0]!.destinationHeaders;

    let r = await admin('PATCH', `/automations/${a.id}`, { name: 'Renamed', filters: { status: 'past' }, columns: ['id', 'end_date'] });
    expect(r.body).toMatchObject({ name: 'Renamed', filters: { status: 'past' }, columns: ['id', 'end_date'] });
    r = await admin('PATCH', `/automations/${a.id}`, { columns: null, destination: { type: 'http', url: 'https://files.example.com/in', method: 'POST' } });
    expect(r.body).toMatchObject({
      columns: null,
      destination: { type: 'http', url: 'https://files.example.com/in', method: 'POST', headers: ['Authorization'] },
    });
    expect((await rowsOf(integ))[0]!.destinationHeaders).toBe(sealedBefore);
    // The stored values are not carried to another origin (another host, scheme or port) unless the request says so.
    for (const url of ['https://other.example.com/in', 'https://files.example.com:8443/in', 'https://evil.files.example.com/in']) {
      const moved = await admin('PATCH', `/automations/${a.id}`, { name: 'Moved', destination: { type: 'http', url } });
      expect(moved.status, url).toBe(422);
      expect(pointers(moved)).toEqual(['/destination/headers']);
      expect(moved.body.errors[0].detail).toContain('Authorization');
      expect(moved.body.errors[0].detail).not.toContain(SECRET);
    }
    expect((await admin('GET', `/automations/${a.id}`)).body).toMatchObject({
      name: 'Renamed',
      destination: { url: 'https://files.example.com/in', headers: ['Authorization'] },
    });
    expect((await rowsOf(integ))[0]!.destinationHeaders).toBe(sealedBefore);

    r = await admin('PATCH', `/automations/${a.id}`, {
      destination: { type: 'http', url: 'https://other.example.com/in', headers: { 'X-Api-Key': OTHER_SECRET } },
    });
    expect(r.body.destination).toEqual({ type: 'http', url: 'https://other.example.com/in', method: 'PUT', headers: ['X-Api-Key'], content_length: false });
    expect(openAutomationHeaders(testKeyring(), (await rowsOf(integ))[0]!)).toEqual({ 'X-Api-Key': OTHER_SECRET });
    r = await admin('PATCH', `/automations/${a.id}`, { destination: { type: 'http', url: 'https://other.example.com/in', headers: {} } });
    expect(r.body.destination.headers).toEqual([]);
    expect((await rowsOf(integ))[0]!.destinationHeaders).toBeNull();

    await admin('PATCH', `/automations/${a.id}`, { destination: HTTP });
    r = await admin('PATCH', `/automations/${a.id}`, { destination: { type: 'directory', path: 'out' } });
    expect(r.body.destination).toEqual({ type: 'directory', path: 'out' });
    expect((await rowsOf(integ))[0]!.destinationHeaders).toBeNull();
    // An empty change is refused (the document asks for at least one field) and changes nothing.
    const same = await admin('PATCH', `/automations/${a.id}`, {});
    expect(same.status).toBe(422);
    expect(pointers(same)).toEqual(['/']);
    const after = await admin('GET', `/automations/${a.id}`);
    expect(after.body).toEqual(r.body);
  });

  it('sends with a Content-Length when the destination says so: shown, stored, kept by a PATCH that leaves the destination, reset by a new one', async () => {
    const integ = await integration();
    const stored = async () => (await rowsOf(integ))[0]!.destination;
    const a = await create(integ, { destination: { ...HTTP, content_length: true } });
    expect(a.destination).toEqual({ type: 'http', url: 'https://files.example.com/leases', method: 'PUT', headers: ['Authorization'], content_length: true });
    expect(await stored()).toMatchObject({ type: 'http', content_length: true });
    expect((await admin('GET', `/automations/${a.id}`)).body.destination.content_length).toBe(true);

    // A change that leaves the destination keeps it, the escaping option included.
    let r = await admin('PATCH', `/automations/${a.id}`, { name: 'Renamed', escape_formulas: false });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    conforms(r, '/automations/{id}', 'patch');
    expect(r.body.destination.content_length).toBe(true);
    // A new destination says it again, as it says its method: left out, it is the default (chunked), as `method` is PUT.
    r = await admin('PATCH', `/automations/${a.id}`, { destination: { type: 'http', url: 'https://files.example.com/leases', method: 'POST' } });
    expect(r.body.destination).toEqual({
      type: 'http',
      url: 'https://files.example.com/leases',
      method: 'POST',
      headers: ['Authorization'],
      content_length: false,
    });
    expect(await stored()).toMatchObject({ content_length: false });
    r = await admin('PATCH', `/automations/${a.id}`, { destination: { type: 'http', url: 'https://files.example.com/leases', content_length: true } });
    expect(r.body.destination).toMatchObject({ method: 'PUT', headers: ['Authorization'], content_length: true });
    expect((await admin('GET', `/automations/${a.id}`)).body.destination.content_length).toBe(true);
    // A directory has no such option.
    r = await admin('PATCH', `/automations/${a.id}`, { destination: { type: 'directory', path: 'out' } });
    expect(r.body.destination).toEqual({ type: 'directory', path: 'out' });

    // Not a boolean: a 422 problem at its pointer, nothing changed.
    const before = (await admin('GET', `/automations/${a.id}`)).body;
    const res = await fetch(`${api.url}/admin/v1/automations/${a.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${config.ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ destination: { type: 'http', url: 'https://files.example.com/leases', content_length: 'true' } }),
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const bad = { status: res.status, body: (await res.json()) as any };
    expectProblem(bad, 422, 'validation_error');
    expect(pointers(bad)).toEqual(['/destination/content_length']);
    expect((await admin('GET', `/automations/${a.id}`)).body).toEqual(before);

    // An automation stored before the option existed (no member) sends chunked.
    await db
      .update(automations)
      .set({ destination: { type: 'http', url: 'https://files.example.com/leases', method: 'PUT' } })
      .where(eq(automations.id, a.id));
    expect((await admin('GET', `/automations/${a.id}`)).body.destination).toMatchObject({ content_length: false });
  });

  it('turns formula escaping off and on (on by default); a new destination keeps the setting unless told otherwise', async () => {
    const integ = await integration();
    const a = await create(integ, { escape_formulas: false });
    expect(a.escape_formulas).toBe(false);
    const stored = async () => (await rowsOf(integ))[0]!.destination;
    expect(await stored()).toMatchObject({ escape_formulas: false });

    let r = await admin('PATCH', `/automations/${a.id}`, { destination: { type: 'directory', path: 'out' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    conforms(r, '/automations/{id}', 'patch');
    expect(r.body).toMatchObject({ escape_formulas: false, destination: { type: 'directory', path: 'out' } });
    r = await admin('PATCH', `/automations/${a.id}`, { escape_formulas: true });
    expect(r.body).toMatchObject({ escape_formulas: true, destination: { type: 'directory', path: 'out' } });
    expect(await stored()).toEqual({ type: 'directory', path: 'out', escape_formulas: true });
    r = await admin('PATCH', `/automations/${a.id}`, { escape_formulas: false, destination: HTTP });
    expect(r.body).toMatchObject({ escape_formulas: false, destination: { type: 'http', headers: ['Authorization'] } });
    expect((await admin('GET', `/automations/${a.id}`)).body.escape_formulas).toBe(false);

    // Not a boolean: a 422 at its pointer, nothing changed.
    const bad = await admin('PATCH', `/automations/${a.id}`, { escape_formulas: 'yes' });
    expect(bad.status).toBe(422);
    expect(pointers(bad)).toEqual(['escape_formulas']);
    // An automation stored before the option existed (no member) escapes.
    await db
      .update(automations)
      .set({ destination: { type: 'directory', path: 'out' } })
      .where(eq(automations.id, a.id));
    expect((await admin('GET', `/automations/${a.id}`)).body.escape_formulas).toBe(true);
  });

  it('refuses bad changes with their pointers (filters and columns checked against the stored entity), changing nothing', async () => {
    const integ = await integration();
    const live = await integration('live');
    const a = await create(integ);
    const b = await create(live);
    const cases: [string, string, Record<string, unknown>, string[]][] = [
      [a.id, 'property filter on leases', { filters: { name: 'x' } }, ['/filters/name']],
      [a.id, 'paging', { filters: { limit: '5' } }, ['/filters/limit']],
      [a.id, 'unit column on leases', { columns: ['unit_number'] }, ['/columns/0']],
      [a.id, 'status', { status: 'deleted' }, ['status']],
      [a.id, 'entity cannot change', { entity: 'units' }, ['entity']],
      [a.id, 'path', { destination: { type: 'directory', path: '../x' } }, ['/destination/path']],
      [b.id, 'live loopback', { destination: { type: 'http', url: 'https://127.0.0.1/x' } }, ['/destination/url']],
      [a.id, 'cron Temporal refuses', { schedule: { cron: '0 25 * * *' }, name: 'Not this' }, ['/schedule/cron']],
    ];
    for (const [id, what, body, want] of cases) {
      const r = await admin('PATCH', `/automations/${id}`, body);
      expectProblem(r, 422, 'validation_error');
      expect(pointers(r), what).toEqual(want);
    }
    expect((await admin('GET', `/automations/${a.id}`)).body).toEqual(a);
    expect((await admin('GET', `/automations/${b.id}`)).body).toEqual(b);
    expect((await describeSchedule(a.id)).spec.intervals?.[0]?.every).toBe(3600_000);
    expectProblem(await admin('PATCH', '/automations/atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8', { name: 'x' }), 404, 'not_found');
  });
});

describe('delete', () => {
  it('removes the schedule; later reads are 404; the row is kept, marked deleted', async () => {
    const integ = await integration();
    const a = await create(integ);
    const r = await admin('DELETE', `/automations/${a.id}`);
    expect(r.status).toBe(204);
    await expect(describeSchedule(a.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expectProblem(await admin('GET', `/automations/${a.id}`), 404, 'not_found');
    expectProblem(await admin('DELETE', `/automations/${a.id}`), 404, 'not_found');
    expectProblem(await admin('PATCH', `/automations/${a.id}`, { status: 'paused' }), 404, 'not_found');
    expectProblem(await admin('POST', `/automations/${a.id}/runs`), 404, 'not_found');
    expect((await admin('GET', `/integrations/${integ}/automations`)).body.results).toEqual([]);
    expect((await rowsOf(integ))[0]!.deletedAt).toBeInstanceOf(Date);
  });
});

describe('runs', () => {
  it('starts a queued run whose workflow exists (also for a paused automation), and lists runs newest first', async () => {
    const integ = await integration();
    const a = await create(integ);
    await admin('PATCH', `/automations/${a.id}`, { status: 'paused' });
    const r = await admin('POST', `/automations/${a.id}/runs`);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    conforms(r, '/automations/{id}/runs', 'post');
    expect(r.body).toEqual({
      id: expect.stringMatching(/^aru_[0-9A-Z]{26}$/),
      automation_id: a.id,
      status: 'queued',
      trigger: 'manual',
      records_exported: null,
      file_name: `Nightly leases-${r.body.id}.csv`,
      attempts: 0,
      next_attempt_at: null,
      error: null,
      started_at: null,
      finished_at: null,
      created_at: expect.any(String),
    });
    const handle = temporal.workflow.getHandle(automationRunWorkflowIdOf(r.body.id));
    const wf = await handle.describe();
    expect(wf.type).toBe('runAutomation');
    expect(wf.taskQueue).toBe(automationTaskQueueOf(config.TEMPORAL_TASK_QUEUE));
    expect(wf.status.name).toBe('RUNNING');
    await handle.terminate('test over');

    const got = await admin('GET', `/automation_runs/${r.body.id}`);
    conforms(got, '/automation_runs/{id}', 'get');
    expect(got.body).toEqual(r.body);

    // An older scheduled run, to see the order and paging.
    const [row] = await db.select().from(automations).where(eq(automations.id, a.id));
    const older = await insertRun(db, row!, 'schedule', new Date(Date.now() - 60_000));
    const page1 = await admin('GET', `/automations/${a.id}/runs?limit=1`);
    conforms(page1, '/automations/{id}/runs', 'get');
    expect(page1.body).toEqual({ meta: { limit: 1, offset: 0, hasMore: true }, results: [r.body] });
    const page2 = await admin('GET', `/automations/${a.id}/runs?limit=1&offset=1`);
    expect(page2.body.meta.hasMore).toBe(false);
    expect(page2.body.results).toMatchObject([{ id: older.id, trigger: 'schedule', status: 'queued' }]);
    await expect(temporal.workflow.getHandle(older.id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);

    // A run stays readable after its automation is deleted, by its id and in the automation's list.
    await admin('DELETE', `/automations/${a.id}`);
    expect((await admin('GET', `/automation_runs/${r.body.id}`)).status).toBe(200);
    const after = await admin('GET', `/automations/${a.id}/runs`);
    expect(after.status).toBe(200);
    expect(after.body.results.map((x: { id: string }) => x.id)).toEqual([r.body.id, older.id]);
  });
});

describe('when Temporal is unreachable or refuses', () => {
  const down = onApi(() => startApi(db, { ...config, TEMPORAL_ADDRESS: '127.0.0.1:1' }));
  // Reachable, but every call names a namespace the server does not have.
  const refusing = onApi(() => startApi(db, { ...config, TEMPORAL_NAMESPACE: `missing-${randomUUID().slice(0, 8)}` }));

  it('answers 503 that says nothing changed, and nothing did', async () => {
    const integ = await integration();
    const a = await create(integ);
    let r = await admin('POST', `/integrations/${integ}/automations`, valid({ name: 'never' }), down.url);
    expectProblem(r, 503, 'internal_error');
    expect(r.body.detail).toContain('Nothing was changed');
    expect((await rowsOf(integ)).map((x) => x.id)).toEqual([a.id]);

    r = await admin('POST', `/integrations/${integ}/automations`, valid({ name: 'never' }), refusing.url);
    expectProblem(r, 503, 'internal_error');
    expect((await rowsOf(integ)).map((x) => x.id)).toEqual([a.id]);

    expectProblem(await admin('PATCH', `/automations/${a.id}`, { status: 'paused', name: 'not this' }, down.url), 503, 'internal_error');
    expectProblem(await admin('PATCH', `/automations/${a.id}`, { schedule: { every: 600 } }, refusing.url), 503, 'internal_error');
    expect((await admin('GET', `/automations/${a.id}`)).body).toEqual(a);
    expect((await describeSchedule(a.id)).state.paused).toBe(false);
    // A change that needs no Temporal call goes through.
    expect((await admin('PATCH', `/automations/${a.id}`, { name: 'renamed' }, down.url)).body.name).toBe('renamed');

    expectProblem(await admin('DELETE', `/automations/${a.id}`, undefined, down.url), 503, 'internal_error');
    expect((await admin('GET', `/automations/${a.id}`)).status).toBe(200);

    r = await admin('POST', `/automations/${a.id}/runs`, undefined, down.url);
    expectProblem(r, 503, 'internal_error');
    expect(await db.select().from(automationRuns).where(eq(automationRuns.automationId, a.id))).toEqual([]);
  });

  it('marks a run failed when its workflow could not be started, and says so', async () => {
    const integ = await integration();
    const a = await create(integ);
    const r = await admin('POST', `/automations/${a.id}/runs`, undefined, refusing.url);
    expectProblem(r, 503, 'internal_error');
    const runs = await db.select().from(automationRuns).where(eq(automationRuns.automationId, a.id));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      status: 'failed',
      trigger: 'manual',
      finishedAt: expect.any(Date),
      error: expect.stringContaining('could not be started'),
    });
    expect(r.body.detail).toContain(`Run ${runs[0]!.id} was recorded and marked failed`);
    expect(r.body.run_id).toBe(runs[0]!.id);
    expect((await admin('GET', `/automation_runs/${runs[0]!.id}`)).body).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('could not be started'),
    });
  });
});
