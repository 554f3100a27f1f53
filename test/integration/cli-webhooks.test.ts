/**
 * The `webhook` noun of the operator CLI as an operator runs it: a child process (`tsx cli/main.ts ...`) against the
 * real app served over HTTP, with Postgres and the Temporal dev server behind it (no worker, no sandbox: integrations
 * are database rows). Checks stdout JSON, stderr lines and exit codes.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NOUNS } from '../../cli/commands';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { createOrganization } from '../../db/tenants';
import type { Plan } from '../../domain/plans';
import type { TestServer } from '../support/api-server';
import { expectFlags, expectUsageErrors, expectVerbs, fails as failsWith, ok, runCli, type CliRun } from '../support/cli';
import { unsyncedIntegration } from '../support/fixtures';
import { recordEvents, residentUpdates } from '../support/webhooks';
import { onServices } from '../support/services';

let db: Db;
let config: Config;
let api: TestServer;

/** Runs the CLI with the API's address and token in its environment, as an operator's shell would have them. */
const cli = (args: string[], env: Record<string, string> = {}): Promise<CliRun> => runCli({ url: api.url, token: config.ADMIN_TOKEN }, args, env);

/** Exit 1, nothing on stdout, one `error:` line on stderr. */
const fails = (r: CliRun) => failsWith(r, { stdout: '' });

/** A test-mode integration row of its own organization (no sandbox company behind it: nothing here syncs). */
async function integration(plan: Plan): Promise<string> {
  const org = await createOrganization(db, { name: `cli-webhooks-${randomUUID().slice(0, 8)}` });
  return (await unsyncedIntegration(db, org.id, { plan })).id;
}

onServices({ pool: 3, api: true }, (s) => ({ db, config, api } = s));

/** Every step spawns a tsx process (a second or more on a loaded machine), and a test here runs a dozen or more. */
const SPAWNS = { timeout: 180_000 };

describe('help', SPAWNS, () => {
  it('lists the webhook verbs and their flags, exit 0', async () => {
    const [top, noun, create, replayAll] = await Promise.all([
      cli(['--help']),
      cli(['webhook', '--help']),
      cli(['webhook', 'create', '--help']),
      cli(['webhook', 'replay-all', '--help']),
    ]);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^ {2}webhook +.*create, list, get/m);
    expect(noun.stdout).toContain('Usage: npm run -s cli -- webhook <verb>');
    expectVerbs(noun, [
      'create <integration_id>',
      'list <integration_id>',
      'get <subscription_id>',
      'update <subscription_id>',
      'enable <subscription_id>',
      'disable <subscription_id>',
      'delete <subscription_id>',
      'rotate-secret <subscription_id>',
      'deliveries <subscription_id>',
      'delivery <delivery_id>',
      'replay <delivery_id>',
      'replay-all <subscription_id>',
    ]);
    expectFlags(create, ['--endpoint <url>', '--events <TYPE,...|*>', '--description <text>', '--max-in-flight <n|default>']);
    expect(create.stdout).toContain('Usage: npm run -s cli -- webhook create <integration_id> [--flags]');
    expectFlags(replayAll, ['--dead-lettered', '--since <iso>', '--until <iso>']);
  });

  it('gives no verb a flag of its own that shadows a global one (--url, --token, --help)', () => {
    for (const [noun, n] of Object.entries(NOUNS)) {
      for (const [verb, cmd] of Object.entries(n.verbs)) {
        for (const global of ['url', 'token', 'help', 'h']) expect(cmd.flags[global], `${noun} ${verb} --${global}`).toBeUndefined();
      }
    }
  });

  it('refuses usage mistakes with exit 2 and one line on stderr, before calling the API', async () => {
    const sub = 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8';
    const integ = randomUUID();
    const cases: [string[], string][] = [
      [['webhook', 'create', integ, '--events', '*'], '--endpoint is required'],
      [['webhook', 'create', integ, '--endpoint', 'https://example.com/hook'], '--events is required'],
      [['webhook', 'create', integ, '--endpoint', 'https://example.com/hook', '--events', ' , '], '--events must list event types'],
      [['webhook', 'create', '--endpoint', 'https://example.com/hook', '--events', '*'], 'webhook create takes <integration_id>, got none'],
      [['webhook', 'update', sub], 'nothing to update: give --endpoint, --events, --description, --status, --standard-webhooks or --max-in-flight'],
      [['webhook', 'update', sub, '--max-in-flight', 'one'], '--max-in-flight must be an integer'],
      [['webhook', 'update', sub, '--standard-webhooks', 'maybe'], '--standard-webhooks must be on or off'],
      [['webhook', 'rotate-secret', sub, '--grace-seconds', 'soon'], '--grace-seconds must be an integer'],
      [['webhook', 'deliveries', sub, '--limit', 'ten'], '--limit must be an integer'],
      [['webhook', 'replay-all', sub], 'nothing to replay: give --dead-lettered, or --since and --until'],
      [
        ['webhook', 'replay-all', sub, '--dead-lettered', '--since', '2025-01-01T00:00:00Z', '--until', '2025-01-02T00:00:00Z'],
        'give either --dead-lettered or --since and --until, not both',
      ],
      [['webhook', 'replay-all', sub, '--since', '2025-01-01T00:00:00Z'], '--until is required'],
      [['webhook', 'replay', sub, '--dead-lettered'], "'--dead-lettered'"],
      [['webhook', 'get'], 'webhook get takes <subscription_id>, got none'],
      [['webhook', 'subscribe', integ], 'unknown verb "subscribe" for webhook'],
    ];
    // Pointed at nothing: a usage mistake must be caught before any request.
    await expectUsageErrors(config.ADMIN_TOKEN, cases);
    const noVerb = await cli(['webhook']);
    expect(noVerb.code).toBe(2);
    expect(noVerb.stdout).toBe('');
    expect(noVerb.stderr).toMatch(/^error: webhook expects a verb: create, list, get, .*; see webhook --help\n$/);
  });
});

describe('commands', SPAWNS, () => {
  it('manage a subscription of a scale-plan integration: create, list, get, update, disable, enable, rotate, delete', async () => {
    const integ = await integration('scale');
    const created = ok(
      await cli([
        'webhook',
        'create',
        integ,
        '--endpoint',
        'https://example.com/hooks/a',
        '--events',
        'LEASE_SIGNED, LEASE_UPDATED,LEASE_SIGNED',
        '--description',
        'leases',
      ]),
    );
    expect(created).toMatchObject({
      id: expect.stringMatching(/^whs_/),
      integration_id: integ,
      url: 'https://example.com/hooks/a',
      event_types: ['LEASE_SIGNED', 'LEASE_UPDATED'],
      description: 'leases',
      status: 'active',
      previous_secret_expires_at: null,
      secret: expect.stringMatching(/^whsec_/),
    });
    const all = ok(await cli(['webhook', 'create', integ, '--endpoint', 'http://127.0.0.1:9/hook', '--events', '*']));
    expect(all).toMatchObject({ event_types: ['*'], description: null, secret: expect.stringMatching(/^whsec_/) });
    expect(all.secret).not.toBe(created.secret);

    const listed = ok(await cli(['webhook', 'list', integ]));
    expect(listed.results.map((s: any) => s.id)).toEqual([created.id, all.id]);
    for (const s of listed.results) expect(s.secret).toBeUndefined();
    const paged = ok(await cli(['webhook', 'list', integ, '--limit', '1', '--offset', '1']));
    expect(paged.meta).toEqual({ limit: 1, offset: 1, hasMore: false });
    expect(paged.results.map((s: any) => s.id)).toEqual([all.id]);

    const { secret, ...withoutSecret } = created;
    expect(secret).toEqual(expect.any(String));
    expect(ok(await cli(['webhook', 'get', created.id]))).toEqual(withoutSecret);

    const updated = ok(
      await cli(['webhook', 'update', created.id, '--endpoint', 'https://example.com/hooks/b', '--events', '*', '--description', 'everything']),
    );
    expect(updated).toMatchObject({ id: created.id, url: 'https://example.com/hooks/b', event_types: ['*'], description: 'everything', status: 'active' });
    expect(ok(await cli(['webhook', 'update', created.id, '--description', ''])).description).toBeNull();
    expect(ok(await cli(['webhook', 'update', created.id, '--status', 'disabled'])).status).toBe('disabled');
    expect(ok(await cli(['webhook', 'enable', created.id])).status).toBe('active');
    expect(ok(await cli(['webhook', 'disable', created.id])).status).toBe('disabled');
    expect(ok(await cli(['webhook', 'get', created.id])).status).toBe('disabled');
    // Endpoint health, and who disabled it and why.
    expect(ok(await cli(['webhook', 'health', created.id]))).toEqual({
      id: created.id,
      url: 'https://example.com/hooks/b',
      status: 'disabled',
      disabled: { at: expect.any(String), by: 'operator', reason: 'disabled by an operator' },
      success_rate: null,
      attempts: 0,
      last_success_at: null,
      last_failure_at: null,
      failing_since: null,
      pending: 0,
      retrying: 0,
      dead_lettered: 0,
    });
    expect(created.standard_webhooks).toBe(true);
    // Attempts in flight at once: 1 for in-order delivery, back to the deployment default with `default`.
    expect(created.max_in_flight).toBeNull();
    expect(ok(await cli(['webhook', 'update', created.id, '--max-in-flight', '1'])).max_in_flight).toBe(1);
    expect(ok(await cli(['webhook', 'get', created.id])).max_in_flight).toBe(1);
    expect(ok(await cli(['webhook', 'update', created.id, '--max-in-flight', 'default'])).max_in_flight).toBeNull();
    const ordered = ok(await cli(['webhook', 'create', integ, '--endpoint', 'https://example.com/hooks/o', '--events', '*', '--max-in-flight', '1']));
    expect(ordered.max_in_flight).toBe(1);
    ok(await cli(['webhook', 'delete', ordered.id]));
    expect(ok(await cli(['webhook', 'update', created.id, '--standard-webhooks', 'off'])).standard_webhooks).toBe(false);
    const off = ok(await cli(['webhook', 'create', integ, '--endpoint', 'https://example.com/hooks/c', '--events', '*', '--standard-webhooks', 'off']));
    expect(off.standard_webhooks).toBe(false);
    ok(await cli(['webhook', 'delete', off.id]));

    const rotated = ok(await cli(['webhook', 'rotate-secret', created.id, '--grace-seconds', '60']));
    expect(rotated).toEqual({ secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: expect.any(String) });
    expect(rotated.secret).not.toBe(created.secret);
    const window = Date.parse(rotated.previous_secret_expires_at) - Date.now();
    expect(window).toBeGreaterThan(30_000);
    expect(window).toBeLessThanOrEqual(60_000);
    expect(ok(await cli(['webhook', 'get', created.id])).previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);
    const byDefault = ok(await cli(['webhook', 'rotate-secret', all.id]));
    expect(Date.parse(byDefault.previous_secret_expires_at) - Date.now()).toBeGreaterThan(86_300_000);

    expect(ok(await cli(['webhook', 'delete', created.id]))).toEqual({ id: created.id, deleted: true });
    expect(fails(await cli(['webhook', 'get', created.id]))).toMatch(new RegExp(`^error: 404 Not Found: No webhook subscription ${created.id}\\.`));
    expect(ok(await cli(['webhook', 'list', integ])).results.map((s: any) => s.id)).toEqual([all.id]);
  });

  it('list deliveries (none yet), 404 an unknown delivery, and replay-all --dead-lettered with nothing dead-lettered', async () => {
    const integ = await integration('enterprise');
    const sub = ok(await cli(['webhook', 'create', integ, '--endpoint', 'https://example.com/hooks/c', '--events', 'LEASE_SIGNED']));

    const none = ok(await cli(['webhook', 'deliveries', sub.id]));
    expect(none).toEqual({ meta: { limit: 25, offset: 0, hasMore: false }, results: [] });
    const filtered = ok(
      await cli(['webhook', 'deliveries', sub.id, '--status', 'dead_lettered', '--event-type', 'LEASE_SIGNED', '--limit', '5', '--offset', '0']),
    );
    expect(filtered).toEqual({ meta: { limit: 5, offset: 0, hasMore: false }, results: [] });

    const badStatus = fails(await cli(['webhook', 'deliveries', sub.id, '--status', 'lost']));
    expect(badStatus).toMatch(/^error: 422 Unprocessable Entity: Invalid query parameter `status`: .*dead_lettered/);

    const unknown = 'whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8';
    expect(fails(await cli(['webhook', 'delivery', unknown]))).toMatch(
      new RegExp(`^error: 404 Not Found: No webhook delivery ${unknown}\\. \\(request req_\\w+\\)\\n$`),
    );
    expect(fails(await cli(['webhook', 'replay', unknown]))).toMatch(new RegExp(`^error: 404 Not Found: No webhook delivery ${unknown}\\.`));

    expect(ok(await cli(['webhook', 'replay-all', sub.id, '--dead-lettered']))).toEqual({ replayed: 0, delivery_ids: [] });

    // A disabled subscription is not replayed: 409 with the way out.
    ok(await cli(['webhook', 'disable', sub.id]));
    expect(fails(await cli(['webhook', 'replay-all', sub.id, '--dead-lettered']))).toMatch(/^error: 409 Conflict: .*disabled.*enable it/);
  });

  it('show API refusals as one readable line with exit 1', async () => {
    const starter = await integration('starter');
    const gated = fails(await cli(['webhook', 'create', starter, '--endpoint', 'https://example.com/hooks', '--events', '*']));
    expect(gated).toMatch(
      new RegExp(
        `^error: 403 Forbidden: Webhooks are available on the scale and enterprise plans; integration ${starter} is on the starter plan .*\\(request req_\\w+\\)\\n$`,
      ),
    );

    const scale = await integration('scale');
    expect(fails(await cli(['webhook', 'create', scale, '--endpoint', 'https://example.com/hooks', '--events', 'LEASE_SIGNED,NOT_AN_EVENT']))).toMatch(
      /^error: 422 Unprocessable Entity: --events item 2: .*LEASE_SIGNED/,
    );
    // The API's fields are said as the CLI's flags: the endpoint is --endpoint (--url is the API's own address).
    expect(fails(await cli(['webhook', 'create', scale, '--endpoint', 'not a url', '--events', '*']))).toMatch(
      /^error: 422 Unprocessable Entity: --endpoint: Not a valid absolute URL\. \(request req_\w+\)\n$/,
    );
    expect(fails(await cli(['webhook', 'create', scale, '--endpoint', 'https://example.com/hooks', '--events', '*', '--max-in-flight', '0']))).toMatch(
      /^error: 422 Unprocessable Entity: --max-in-flight: /,
    );
    const several = await cli([
      'webhook',
      'create',
      scale,
      '--endpoint',
      'https://example.com/hooks',
      '--events',
      'LEASE_SIGNED,NOPE',
      '--max-in-flight',
      '999',
    ]);
    expect(several.code).toBe(1);
    expect(several.stdout).toBe('');
    const [head, ...fieldLines] = several.stderr.trim().split('\n');
    expect(head).toMatch(/^error: 422 Unprocessable Entity: 2 invalid values: `--events item 2`, `--max-in-flight`\. \(request req_\w+\)$/);
    expect(fieldLines).toEqual([expect.stringMatching(/^ {2}--events item 2: /), expect.stringMatching(/^ {2}--max-in-flight: /)]);
    const sub = ok(await cli(['webhook', 'create', scale, '--endpoint', 'https://example.com/hooks/d', '--events', '*']));
    expect(fails(await cli(['webhook', 'rotate-secret', sub.id, '--grace-seconds', '99999999']))).toMatch(
      /^error: 422 Unprocessable Entity: --grace-seconds: /,
    );
    expect(fails(await cli(['webhook', 'deliveries', sub.id, '--event-type', 'NOPE']))).toMatch(/^error: 422 Unprocessable Entity: --event-type: /);

    // --url and --token (the API's address and token) still work with the webhook verbs, whose endpoint is --endpoint.
    const viaFlags = await cli(
      ['webhook', 'create', scale, '--endpoint', 'https://example.com/hooks', '--events', '*', '--url', api.url, '--token', config.ADMIN_TOKEN],
      {
        PUBLIC_BASE_URL: 'http://127.0.0.1:1',
        ADMIN_TOKEN: 'x'.repeat(20),
      },
    );
    expect(ok(viaFlags)).toMatchObject({ url: 'https://example.com/hooks', event_types: ['*'] });

    const missingInteg = randomUUID();
    expect(fails(await cli(['webhook', 'list', missingInteg]))).toMatch(new RegExp(`^error: 404 Not Found: No integration ${missingInteg}\\.`));
    const missingSub = 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8';
    const verbs = ['get', 'disable', 'rotate-secret', 'deliveries', 'delete'];
    const runs = await Promise.all(verbs.map((verb) => cli(['webhook', verb, missingSub])));
    for (const r of runs) expect(fails(r)).toMatch(new RegExp(`^error: 404 Not Found: No webhook subscription ${missingSub}\\.`));
  });
});

describe('events and health', SPAWNS, () => {
  it("list an integration's events with their deliveries, show one, resend it; and show the health numbers", async () => {
    const org = await createOrganization(db, { name: `cli-events-${randomUUID().slice(0, 8)}` });
    const integ = await unsyncedIntegration(db, org.id, { plan: 'scale' });
    const [first, second] = await recordEvents(db, integ, residentUpdates(2, 'cli'));
    const [signed] = await recordEvents(db, integ, [{ type: 'LEASE_SIGNED', data: { id: 'lea_cli', changed: ['status'] } }]);

    const newest = ok(await cli(['events', 'list', integ.id]));
    expect(newest.results.map((e: any) => e.id)).toEqual([signed, second, first]);
    expect(newest.results[0]).toMatchObject({ integration_id: integ.id, type: 'LEASE_SIGNED', deliveries: { total: 0 } });
    const oldest = ok(await cli(['events', 'list', integ.id, '--type', 'RESIDENT_UPDATED', '--order', 'asc', '--limit', '1']));
    expect(oldest.meta).toEqual({ limit: 1, offset: 0, hasMore: true });
    expect(oldest.results.map((e: any) => e.id)).toEqual([first]);
    expect(fails(await cli(['events', 'list', integ.id, '--type', 'NOPE']))).toMatch(/^error: 422 Unprocessable Entity: Invalid query parameter `type`: /);

    expect(ok(await cli(['events', 'get', signed!]))).toMatchObject({ id: signed, type: 'LEASE_SIGNED', payload: null, deliveries: { total: 0 } });
    expect(fails(await cli(['events', 'get', 'evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8']))).toMatch(/^error: 404 Not Found: No event evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8 /);

    // No subscription wants it: nothing is sent. Then one that wants leases gets it as a new delivery.
    expect(ok(await cli(['events', 'resend', signed!]))).toEqual({ resent: 0, delivery_ids: [] });
    const sub = ok(await cli(['webhook', 'create', integ.id, '--endpoint', 'https://example.com/hooks/events', '--events', 'LEASE_SIGNED']));
    const resent = ok(await cli(['events', 'resend', signed!]));
    expect(resent).toEqual({ resent: 1, delivery_ids: [expect.stringMatching(/^whd_/)] });
    expect(ok(await cli(['webhook', 'deliveries', sub.id])).results.map((d: any) => d.id)).toEqual(resent.delivery_ids);

    // `health` is `health get`.
    const [bare, get] = await Promise.all([cli(['health']), cli(['health', 'get'])]);
    for (const h of [ok(bare), ok(get)]) {
      expect(h).toMatchObject({
        outbox_lag_seconds: expect.any(Number),
        webhook_dead_letters_open: expect.any(Number),
        integrations_failing: expect.any(Number),
      });
    }
    const help = await cli(['health', '--help']);
    expectVerbs(help, ['get']);
    expectVerbs(await cli(['events', '--help']), ['list <integration_id>', 'get <event_id>', 'resend <event_id>']);
    expectFlags(await cli(['events', 'list', '--help']), ['--type <TYPE,...>', '--order <asc|desc>', '--limit <n>']);
  });
});
