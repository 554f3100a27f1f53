/**
 * The `automation` noun of the operator CLI as an operator runs it: a child process (`tsx cli/main.ts ...`) against
 * the real app over HTTP, with Postgres and the Temporal dev server behind it. No worker runs exports here: a run
 * stays queued unless the test moves its row, which is what `run --wait` polls.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { moveRun } from '../../db/automations';
import type { Db } from '../../db/client';
import { automationRuns } from '../../db/schema';
import { createOrganization } from '../../db/tenants';
import { automationScheduleIdOf } from '../../domain/contract';
import type { TestServer } from '../support/api-server';
import { expectFlags, expectUsageErrors, expectVerbs, fails, ok, runCli, type CliRun } from '../support/cli';
import { testExportRoot } from '../support/context';
import { unsyncedIntegration } from '../support/fixtures';
import { onServices } from '../support/services';
import { until } from '../support/until';

let db: Db;
let config: Config;
let api: TestServer;
let temporal: Client;
const started: string[] = [];

const cli = (args: string[], env: Record<string, string> = {}): Promise<CliRun> => runCli({ url: api.url, token: config.ADMIN_TOKEN }, args, env);

async function integration(): Promise<string> {
  const org = await createOrganization(db, { name: `cli-automations-${randomUUID().slice(0, 8)}` });
  return (await unsyncedIntegration(db, org.id)).id;
}

onServices({ pool: 3, api: true, temporal: true }, (s) => ({ db, config, api, temporal } = s));
beforeAll(() => {
  testExportRoot('finance/units', 'x', 'out');
});
afterAll(async () => {
  // No worker will ever run them.
  await Promise.all(
    started.map((id) =>
      temporal.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => {}),
    ),
  );
});

const SPAWNS = { timeout: 180_000 };
const SECRET = 'Bearer cli-secret-51c0e2';

describe('help and usage', SPAWNS, () => {
  it('lists the automation verbs and their flags, exit 0', async () => {
    const [top, noun, create] = await Promise.all([cli(['--help']), cli(['automation', '--help']), cli(['automation', 'create', '--help'])]);
    expect(top.stdout).toMatch(/^ {2}automation +.*create, list, get/m);
    expectVerbs(noun, [
      'create <integration_id>',
      'list <integration_id>',
      'get <automation_id>',
      'update <automation_id>',
      'pause <automation_id>',
      'resume <automation_id>',
      'delete <automation_id>',
      'run <automation_id>',
      'runs <automation_id>',
      'run-get <run_id>',
    ]);
    expectFlags(create, [
      '--name <name>',
      '--entity <entity>',
      '--filter <name=value>',
      '--columns <field,...>',
      '--every <seconds>',
      '--cron "<expr>"',
      '--timezone <Area/City>',
      '--http-url <url>',
      '--method <PUT|POST>',
      '--header "<Name: value>"',
      '--directory <path>',
    ]);
    expect(create.stdout).toContain('(repeatable)');
  });

  it('refuses usage mistakes with exit 2 and one line on stderr, before calling the API', async () => {
    const integ = randomUUID();
    const atm = 'atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8';
    const base = ['automation', 'create', integ, '--name', 'n', '--entity', 'leases'];
    const cases: [string[], string][] = [
      [['automation', 'create', integ, '--entity', 'leases', '--every', '3600', '--directory', 'x'], '--name is required'],
      [['automation', 'create', integ, '--name', 'n', '--every', '3600', '--directory', 'x'], '--entity is required'],
      [[...base, '--directory', 'x'], 'a schedule is required'],
      [[...base, '--every', '3600'], 'a destination is required'],
      [[...base, '--every', '3600', '--cron', '0 6 * * *', '--directory', 'x'], 'give either --every or --cron, not both'],
      [[...base, '--every', '3600', '--timezone', 'UTC', '--directory', 'x'], '--timezone applies to --cron only'],
      [[...base, '--every', 'hourly', '--directory', 'x'], '--every must be an integer'],
      [[...base, '--every', '3600', '--directory', 'x', '--http-url', 'https://example.com'], 'give either --http-url or --directory, not both'],
      [[...base, '--every', '3600', '--directory', 'x', '--method', 'POST'], '--method, --header and --content-length apply to --http-url only'],
      [[...base, '--every', '3600', '--header', 'A: b'], '--method, --header and --content-length apply to --http-url only'],
      [[...base, '--every', '3600', '--directory', 'x', '--content-length'], '--method, --header and --content-length apply to --http-url only'],
      [[...base, '--every', '3600', '--http-url', 'https://example.com', '--header', 'no colon here'], '--header must be "Name: value"'],
      [[...base, '--every', '3600', '--directory', 'x', '--filter', 'status'], '--filter must be name=value'],
      [[...base, '--every', '3600', '--directory', 'x', '--filter', 'status=a', '--filter', 'status=b'], '--filter status is given twice'],
      [[...base, '--every', '3600', '--directory', 'x', '--columns', ' , '], '--columns must list field names'],
      [['automation', 'update', atm], 'nothing to update'],
      [['automation', 'update', atm, '--filter', 'a=b', '--clear-filters'], 'give either --filter or --clear-filters, not both'],
      [['automation', 'run', atm, '--timeout', '5'], '--timeout and --poll-ms apply to --wait only'],
      [['automation', 'run', atm, '--wait', '--timeout', '0'], '--timeout must be at least 1 second'],
      [['automation', 'get'], 'automation get takes <automation_id>, got none'],
    ];
    await expectUsageErrors(config.ADMIN_TOKEN, cases);
  });
});

describe('commands', SPAWNS, () => {
  it('create, list, get, update, pause, resume and delete an automation, never printing header values', async () => {
    const integ = await integration();
    const created = await cli([
      'automation',
      'create',
      integ,
      '--name',
      'Nightly leases',
      '--entity',
      'leases',
      '--filter',
      'status=active,notice',
      '--filter',
      'start_date_gte=2025-01-01',
      '--filter',
      'order-by=start_date:desc',
      '--columns',
      'id,status,rent_amount',
      '--every',
      '3600',
      '--http-url',
      'https://files.example.com/leases',
      '--method',
      'POST',
      '--header',
      `Authorization: ${SECRET}`,
      '--header',
      'X-Team:finance',
      '--content-length',
    ]);
    const a = ok(created);
    expect(created.stdout).not.toContain(SECRET);
    expect(a).toMatchObject({
      id: expect.stringMatching(/^atm_/),
      integration_id: integ,
      entity: 'leases',
      filters: { status: 'active,notice', start_date_gte: '2025-01-01', 'order-by': 'start_date:desc' },
      columns: ['id', 'status', 'rent_amount'],
      schedule: { every: 3600 },
      destination: { type: 'http', url: 'https://files.example.com/leases', method: 'POST', headers: ['Authorization', 'X-Team'], content_length: true },
      status: 'active',
    });
    const b = ok(
      await cli([
        'automation',
        'create',
        integ,
        '--name',
        'Units',
        '--entity',
        'unit',
        '--cron',
        '0 6 * * 1-5',
        '--timezone',
        'America/Chicago',
        '--directory',
        'finance/units',
      ]),
    );
    expect(b).toMatchObject({
      entity: 'units',
      filters: {},
      columns: null,
      schedule: { cron: '0 6 * * 1-5', timezone: 'America/Chicago' },
      destination: { type: 'directory', path: 'finance/units' },
    });

    const listed = await cli(['automation', 'list', integ]);
    expect(ok(listed).results.map((x: any) => x.id)).toEqual([a.id, b.id]);
    expect(listed.stdout).not.toContain(SECRET);
    expect(ok(await cli(['automation', 'list', integ, '--limit', '1', '--offset', '1'])).meta).toEqual({ limit: 1, offset: 1, hasMore: false });
    expect(ok(await cli(['automation', 'get', a.id]))).toEqual(a);

    const paused = ok(await cli(['automation', 'pause', a.id]));
    expect(paused.status).toBe('paused');
    expect((await temporal.schedule.getHandle(automationScheduleIdOf(a.id)).describe()).state.paused).toBe(true);
    expect(ok(await cli(['automation', 'resume', a.id])).status).toBe('active');
    expect((await temporal.schedule.getHandle(automationScheduleIdOf(a.id)).describe()).state.paused).toBe(false);

    const updated = ok(await cli(['automation', 'update', a.id, '--name', 'Renamed', '--clear-filters', '--columns', 'all', '--cron', '@daily']));
    expect(updated).toMatchObject({
      name: 'Renamed',
      filters: {},
      columns: null,
      schedule: { cron: '@daily', timezone: 'UTC' },
      destination: { headers: ['Authorization', 'X-Team'], content_length: true },
    });
    // A new destination says it again (as --method): without --content-length it is sent chunked.
    const moved = ok(await cli(['automation', 'update', a.id, '--http-url', 'https://files.example.com/leases', '--header', 'X-Team: finance']));
    expect(moved.destination).toEqual({ type: 'http', url: 'https://files.example.com/leases', method: 'PUT', headers: ['X-Team'], content_length: false });

    expect(ok(await cli(['automation', 'delete', b.id]))).toEqual({ id: b.id, deleted: true });
    expect(fails(await cli(['automation', 'get', b.id]))).toMatch(new RegExp(`^error: 404 Not Found: No automation ${b.id}\\.`));
  });

  it('run starts a queued run; runs and run-get show it; --wait follows it to success, failure or the time-out', async () => {
    const integ = await integration();
    const a = ok(await cli(['automation', 'create', integ, '--name', 'Export', '--entity', 'properties', '--every', '86400', '--directory', 'out']));

    const run = ok(await cli(['automation', 'run', a.id]));
    started.push(run.id);
    expect(run).toMatchObject({
      id: expect.stringMatching(/^aru_/),
      automation_id: a.id,
      status: 'queued',
      trigger: 'manual',
      file_name: `Export-${run.id}.csv`,
    });
    expect(ok(await cli(['automation', 'run-get', run.id]))).toEqual(run);
    expect(ok(await cli(['automation', 'runs', a.id])).results.map((r: any) => r.id)).toEqual([run.id]);

    // Nothing runs it here: the wait gives up, exit 1, and says the run goes on.
    const timedOut = await cli(['automation', 'run', a.id, '--wait', '--timeout', '1', '--poll-ms', '200']);
    expect(fails(timedOut)).toMatch(/^error: automation run aru_\w+ is still queued after 1 s; stopped waiting \(the run goes on\)/);
    started.push(timedOut.json.id);

    /** `run --wait` while the test ends the run the way the workflow would. */
    const waitWhile = async (end: (runId: string) => Promise<unknown>) => {
      const before = new Set((await db.select({ id: automationRuns.id }).from(automationRuns).where(eq(automationRuns.automationId, a.id))).map((r) => r.id));
      const waiting = cli(['automation', 'run', a.id, '--wait', '--poll-ms', '100', '--timeout', '60']);
      const runId = await until('the run `run --wait` started', async () => {
        const rows = await db.select({ id: automationRuns.id }).from(automationRuns).where(eq(automationRuns.automationId, a.id));
        return rows.map((r) => r.id).find((id) => !before.has(id));
      });
      started.push(runId);
      // Pacing, not an absence proof: lets --wait poll the queued run before it ends; what it prints is asserted below.
      await new Promise((r) => setTimeout(r, 300));
      await end(runId);
      return { runId, result: await waiting };
    };

    const failed = await waitWhile((id) =>
      moveRun(db, id, 'failed', { attempts: 4, error: 'the destination answered HTTP 503\nService Unavailable', finishedAt: new Date() }),
    );
    expect(failed.result.code).toBe(1);
    expect(failed.result.json).toMatchObject({ id: failed.runId, status: 'failed', attempts: 4 });
    expect(fails(failed.result)).toBe(
      `error: automation run ${failed.runId} failed after 4 attempt(s): the destination answered HTTP 503 Service Unavailable\n`,
    );

    const succeeded = await waitWhile((id) => moveRun(db, id, 'succeeded', { attempts: 1, recordsExported: 12, finishedAt: new Date() }));
    expect(ok(succeeded.result)).toMatchObject({ id: succeeded.runId, status: 'succeeded', records_exported: 12, attempts: 1 });
  });

  it('shows API refusals as one readable line with exit 1, and a line more per field when several are refused', async () => {
    const integ = await integration();
    const base = ['automation', 'create', integ, '--name', 'n', '--entity', 'leases', '--every', '3600', '--directory', 'x'];
    expect(fails(await cli([...base, '--filter', 'limit=10']))).toMatch(/^error: 422 Unprocessable Entity: --filter limit: .*every matching record/);
    expect(fails(await cli([...base, '--columns', 'id,colour']))).toMatch(/^error: 422 Unprocessable Entity: --columns item 2: /);
    expect(fails(await cli(['automation', 'create', integ, '--name', 'n', '--entity', 'leases', '--every', '3600', '--directory', '../up']))).toMatch(
      /^error: 422 Unprocessable Entity: --directory: /,
    );
    expect(fails(await cli(['automation', 'create', integ, '--name', 'n', '--entity', 'leases', '--cron', '0 6 * *', '--directory', 'x']))).toMatch(
      /^error: 422 Unprocessable Entity: --cron: /,
    );
    // Several fields refused at once: each on a line of its own under the summary, each named as the flag it came from.
    const several = await cli([...base, '--filter', 'limit=10', '--columns', 'id,colour']);
    expect(several.code).toBe(1);
    expect(several.stderr.trimEnd()).toMatch(
      /^error: 422 Unprocessable Entity: 2 invalid values: `--filter limit`, `--columns item 2`\. \(request req_\w+\)\n {2}--filter limit: .*every matching record.*\n {2}--columns item 2: \S/,
    );
    const missing = randomUUID();
    expect(fails(await cli(['automation', 'list', missing]))).toMatch(new RegExp(`^error: 404 Not Found: No integration ${missing}\\.`));
    const atm = 'atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8';
    const runs = await Promise.all(['get', 'pause', 'resume', 'delete', 'run', 'runs'].map((verb) => cli(['automation', verb, atm])));
    for (const r of runs) expect(fails(r)).toMatch(new RegExp(`^error: 404 Not Found: No automation ${atm}\\.`));
    expect(fails(await cli(['automation', 'run-get', 'aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8']))).toMatch(
      /^error: 404 Not Found: No automation run aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8\./,
    );
  });
});
