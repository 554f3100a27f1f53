/**
 * The operator CLI as an operator runs it: a child process (`tsx cli/main.ts ...`) against the real app served over
 * HTTP, with Postgres and the Temporal dev server behind it. Checks stdout JSON, stderr lines and exit codes.
 */
import { createServer, type AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { scheduleIdOf } from '../../domain/contract';
import type { TestServer } from '../support/api-server';
import { expectUsageErrors, ok, runCli, type CliRun } from '../support/cli';
import { onServices } from '../support/services';

let config: Config;
let api: TestServer;
let temporal: Client;

/** Runs the CLI with the API's address and token in its environment, as an operator's shell would have them. */
const cli = (args: string[], env: Record<string, string> = {}): Promise<CliRun> => runCli({ url: api.url, token: config.ADMIN_TOKEN }, args, env);

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

onServices({ pool: 3, api: true, temporal: true }, (s) => ({ config, api, temporal } = s));

describe('help', () => {
  it('is available at every level and exits 0', async () => {
    const [top, noun, verb] = await Promise.all([cli(['--help']), cli(['integration', '--help']), cli(['sync', 'run', '--help'])]);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('Usage: npm run -s cli -- <noun> <verb>');
    for (const n of ['org', 'integration', 'key', 'sync', 'sandbox']) expect(top.stdout).toContain(n);
    expect(noun.code).toBe(0);
    expect(noun.stdout).toMatch(/create[\s\S]*get[\s\S]*update[\s\S]*delete/);
    expect(verb.code).toBe(0);
    expect(verb.stdout).toContain('--wait');
    expect(verb.stdout).toContain('<integration_id>');
  });

  it('refuses usage mistakes with exit 2 and one line on stderr', async () => {
    const runs = await Promise.all([
      cli(['planet', 'get']),
      cli(['org', 'fly']),
      cli(['org', 'get']),
      cli(['org', 'create', '--bogus']),
      cli(['org', 'create']),
      cli(['org', 'list', '--offset', '-1']),
      cli(['sync', 'run', '00000000-0000-4000-8000-000000000000', '--wait', '--poll-ms', '0']),
      cli(['sync', 'run', '00000000-0000-4000-8000-000000000000', '--timeout', '5']),
    ]);
    for (const r of runs) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^error: /);
    }
    expect(runs[0]!.stderr).toContain('unknown noun "planet"');
    expect(runs[3]!.stderr).toContain("'--bogus'");
    expect(runs[4]!.stderr).toContain('--name is required');
    expect(runs[5]!.stderr).toContain("'--offset' argument is ambiguous");
    expect(runs[6]!.stderr).toContain('--poll-ms must be at least 1');
    expect(runs[7]!.stderr).toContain('apply to --wait only');
  });

  it('refuses a missing noun or verb as a usage mistake: one line on stderr, nothing on stdout, exit 2', async () => {
    const [none, noVerb, flagsOnly, flagNoNoun] = await Promise.all([cli([]), cli(['org']), cli(['org', '--limit', '5']), cli(['--limit', '5'])]);
    for (const r of [none, noVerb, flagsOnly, flagNoNoun]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(none.stderr).toMatch(/^error: expected a noun first \(org, integration, .*\); see --help\n$/);
    expect(flagNoNoun.stderr).toBe(none.stderr);
    expect(noVerb.stderr).toBe('error: org expects a verb: list, create, get, update, integrations, keys; see org --help\n');
    expect(flagsOnly.stderr).toBe(noVerb.stderr);
    // Help asked for is still help: stdout, exit 0.
    const [top, noun] = await Promise.all([cli(['-h']), cli(['org', '--help'])]);
    expect(top).toMatchObject({ code: 0, stderr: '' });
    expect(top.stdout).toContain('Nouns:');
    expect(noun).toMatchObject({ code: 0, stderr: '' });
    expect(noun.stdout).toContain('Verbs:');
  });

  it('refuses the flags of another source than the one chosen, before any request', async () => {
    const org = '6b1d1f4e-0000-4000-8000-000000000000';
    const base = ['integration', 'create', '--org', org, '--plan', 'growth'];
    await expectUsageErrors(config.ADMIN_TOKEN, [
      [
        [...base, '--mode', 'test', '--base-url', 'https://pms.example.com', '--api-key', 'K'],
        'error: --base-url needs --source entrata or buildium, --api-key needs --source entrata; this is --source sandbox (the default)\n',
      ],
      [
        [...base, '--mode', 'live', '--source', 'entrata', '--base-url', 'https://pms.example.com', '--api-key', 'K', '--dialect', 'buildium', '--size', '5'],
        'error: --dialect needs --source sandbox, --size needs --source sandbox; this is --source entrata\n',
      ],
      [
        [
          ...base,
          '--mode',
          'live',
          '--source',
          'buildium',
          '--base-url',
          'https://pms.example.com',
          '--client-id',
          'c',
          '--client-secret',
          's',
          '--api-key',
          'K',
        ],
        'error: --api-key needs --source entrata; this is --source buildium\n',
      ],
      [
        [...base, '--mode', 'test', '--source', 'sandbox', '--seed', '7', '--client-secret', 's'],
        '--client-secret needs --source buildium; this is --source sandbox\n',
      ],
    ]);
  });
});

describe('commands', () => {
  it('manage an organization, its integration, keys and sync runs, printing JSON', async () => {
    const org = ok(await cli(['org', 'create', '--name', 'CLI Co']));
    expect(org).toMatchObject({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'CLI Co' });
    expect(ok(await cli(['org', 'get', org.id]))).toEqual(org);
    // After a restart the banner cannot show an old key: `org list` finds the id to make a new one for.
    // The test database holds every file's organizations, oldest first: page to the end.
    const listed: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const page = ok(await cli(['org', 'list', '--limit', '100', '--offset', String(offset)]));
      listed.push(...page.results.map((o: { id: string }) => o.id));
      if (!page.meta.hasMore) break;
    }
    expect(listed).toContain(org.id);
    expect(ok(await cli(['org', 'update', org.id, '--rate-limit', '42'])).rate_limit_per_minute).toBe(42);
    expect(ok(await cli(['org', 'update', org.id, '--rate-limit', 'null'])).rate_limit_per_minute).toBeNull();

    const integration = ok(
      await cli([
        'integration',
        'create',
        '--org',
        org.id,
        '--mode',
        'live',
        '--plan',
        'scale',
        '--source',
        'entrata',
        '--base-url',
        'https://pms.example.com',
        '--api-key',
        'secret-key',
        '--name',
        'HQ',
        '--no-initial-sync',
      ]),
    );
    expect(integration).toMatchObject({ organization_id: org.id, name: 'HQ', plan: 'scale', source: { type: 'entrata' }, sync_interval_seconds: 3600 });
    const moved = ok(await cli(['integration', 'update', integration.id, '--plan', 'enterprise', '--interval', '300']));
    expect(moved).toMatchObject({ plan: 'enterprise', sync_interval_seconds: 300 });
    const d = await temporal.schedule.getHandle(scheduleIdOf(integration.id)).describe();
    expect(d.spec.intervals![0]!.every).toBe(300_000);
    expect(ok(await cli(['integration', 'update', integration.id, '--interval', 'default'])).sync_interval_seconds).toBe(900);
    expect(ok(await cli(['integration', 'get', integration.id]))).toMatchObject({ id: integration.id, plan: 'enterprise' });
    expect(ok(await cli(['org', 'integrations', org.id])).results.map((i: any) => i.id)).toEqual([integration.id]);

    const key = ok(await cli(['key', 'create', '--org', org.id, '--mode', 'test', '--scopes', 'read']));
    expect(key).toMatchObject({ key: expect.stringMatching(/^sk_test_/), scopes: ['read'] });
    const keys = ok(await cli(['org', 'keys', org.id, '--limit', '10']));
    expect(keys.meta.limit).toBe(10);
    expect(keys.results).toHaveLength(1);
    expect(keys.results[0].key).toBeUndefined();
    expect(ok(await cli(['key', 'revoke', key.id])).revoked_at).toEqual(expect.any(String));

    const job = ok(await cli(['sync', 'run', integration.id]));
    expect(job).toMatchObject({ id: expect.stringMatching(/^syj_/), status: 'queued', trigger: 'manual' });
    expect(ok(await cli(['sync', 'get', job.id])).id).toBe(job.id);
    expect(ok(await cli(['sync', 'list', integration.id, '--limit', '5'])).results.map((j: any) => j.id)).toEqual([job.id]);

    expect(ok(await cli(['integration', 'delete', integration.id]))).toEqual({ id: integration.id, deleted: true });
  });

  it('show API errors as one readable line with exit 1', async () => {
    const org = ok(await cli(['org', 'create', '--name', 'Errors Inc']));
    const tooFast = await cli([
      'integration',
      'create',
      '--org',
      org.id,
      '--mode',
      'test',
      '--plan',
      'growth',
      '--source',
      'entrata',
      '--base-url',
      'https://pms.example.com',
      '--api-key',
      'k',
      '--interval',
      '600',
    ]);
    expect(tooFast.code).toBe(1);
    expect(tooFast.stdout).toBe('');
    // The API's field is said as the flag it came from.
    expect(tooFast.stderr).toMatch(/^error: 422 Unprocessable Entity: --interval: .*3600.*\(request req_\w+\)\n$/);
    const badSize = await cli(['integration', 'create', '--org', org.id, '--mode', 'test', '--plan', 'growth', '--size', '0', '--no-initial-sync']);
    expect(badSize.code).toBe(1);
    expect(badSize.stderr).toMatch(/^error: 422 Unprocessable Entity: --size: .*\(request req_\w+\)\n$/);
    const burst = await cli(['org', 'update', org.id, '--burst', '0']);
    expect(burst.code).toBe(1);
    expect(burst.stderr).toMatch(/^error: 422 Unprocessable Entity: --burst: /);

    const missing = await cli(['integration', 'get', '6b1d1f4e-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: 404 Not Found: No integration 6b1d1f4e-0000-4000-8000-000000000000\./);

    const badToken = await cli(['org', 'get', org.id, '--token', 'not-the-admin-token']);
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/^error: 401 Unauthorized: The admin token is not valid\./);

    // --url and --token override the environment.
    const nobody = `http://127.0.0.1:${await closedPort()}`;
    const flags = await cli(['org', 'get', org.id, '--url', api.url, '--token', config.ADMIN_TOKEN], { PUBLIC_BASE_URL: nobody, ADMIN_TOKEN: 'x'.repeat(20) });
    expect(ok(flags).id).toBe(org.id);

    const down = await cli(['org', 'get', org.id], { PUBLIC_BASE_URL: nobody });
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`error: cannot reach the admin API at ${nobody}: ECONNREFUSED\n`);
  });
});
