/**
 * A run retrying a failing source says so while it waits: its attempt, why the last one failed and when the next
 * starts, in the admin API, the CLI (`sync get`, and the progress line of `sync run --wait`), the console's page of
 * the run and the metrics; once the source answers again the run succeeds and the retry state is cleared.
 */
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { newId } from '../../db/ids';
import { syncJobs } from '../../db/schema';
import { clearStepFailures, noteStepAttempt, noteStepFailure } from '../../db/sync-runs';
import { adminCaller, type TestServer } from '../support/api-server';
import { runCli, startCli } from '../support/cli';
import { parseExposition } from '../support/metrics';
import { onServices } from '../support/services';
import { sandbox, sandboxIntegration, until } from '../support/sync';

/** The retry as `sync run --wait` prints it in its progress line. */
const RETRY_LINE = /retrying: attempt \d+ (at \d\d:\d\d:\d\dZ|\(running\)) after: .*(503|unavailable)/i;

let db: Db;
let config: Config;
let api: TestServer;

// Attempts 2 s apart (then 4 s, …): long enough to read the state between two of them.
onServices({ settings: { SYNC_RETRY_INITIAL_MS: '2000', SYNC_RETRY_MAX_ATTEMPTS: '20' }, worker: true, api: true }, (s) => {
  ({ db, config, api } = s);
});

async function consoleSession(): Promise<string> {
  const res = await fetch(`${api.url}/console/sign-in`, {
    method: 'POST',
    body: new URLSearchParams({ token: config.ADMIN_TOKEN, next: '/console' }),
    headers: { origin: api.url },
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

describe('a sync retrying a failing source', () => {
  it('shows its attempt, last error and next attempt everywhere, and clears them when it succeeds', async () => {
    const admin = adminCaller(api, config.ADMIN_TOKEN);
    const { row: integration, companyId } = await sandboxIntegration(db, { size: 10 });
    await sandbox().setFault(companyId, { kind: 'unavailable', methods: 'reads' });
    const started = await admin('POST', `/integrations/${integration.id}/syncs`);
    expect(started.status).toBe(202);
    const id = started.body.id as string;

    const waiting = await until(
      'the run to wait for its next attempt',
      async () => {
        const r = await admin('GET', `/sync_jobs/${id}`);
        return r.body.attempt >= 2 && r.body.next_attempt_at ? r.body : undefined;
      },
      30_000,
    );
    expect(waiting.status).toBe('running');
    expect(waiting.error).toBeNull();
    expect(waiting.last_error).toMatch(/503|unavailable/i);
    const next = Date.parse(waiting.next_attempt_at);
    expect(next).toBeGreaterThan(Date.now() - 5_000);
    expect(next).toBeLessThan(Date.now() + 60_000);

    const cli = await runCli({ url: api.url, token: config.ADMIN_TOKEN }, ['sync', 'get', id]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json).toMatchObject({ id, status: 'running' });
    expect(cli.json.attempt).toBeGreaterThanOrEqual(2);
    expect(cli.json.last_error).toMatch(/503|unavailable/i);

    const page = await (await fetch(`${api.url}/console/sync-jobs/${id}`, { headers: { cookie: await consoleSession() } })).text();
    expect(page).toMatch(/data-retrying[^>]*>\s*\d+, retrying/);
    expect(page).toContain(waiting.last_error.slice(0, 30).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;'));

    const scraped = parseExposition(await api.app.metrics.registry.metrics());
    expect(scraped.value('propsync_sync_runs_retrying')).toBeGreaterThanOrEqual(1);

    // `sync run --wait` on the same integration follows the running job and prints the retry in its progress line.
    const waitRun = startCli({ url: api.url, token: config.ADMIN_TOKEN }, ['sync', 'run', integration.id, '--wait', '--poll-ms', '200']);
    // The source recovers once the CLI has printed the retry, not before.
    await until('sync run --wait to print the retry in its progress line', () => RETRY_LINE.test(waitRun.stderr()), {
      timeoutMs: 45_000,
      detail: () => `its stderr so far:\n${waitRun.stderr()}`,
    });
    await sandbox().clearFaults(companyId);
    const followed = await waitRun.done;
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stderr).toMatch(RETRY_LINE);

    const done = await until(
      'the run to succeed',
      async () => {
        const r = await admin('GET', `/sync_jobs/${id}`);
        return r.body.status === 'succeeded' || r.body.status === 'failed' ? r.body : undefined;
      },
      60_000,
    );
    expect(done).toMatchObject({ status: 'succeeded', attempt: 1, last_error: null, next_attempt_at: null, error: null });
  }, 120_000);

  it('keeps the retry state of the step still failing when another step beside it succeeds', async () => {
    const { row } = await sandboxIntegration(db, { size: 3 });
    const [job] = await db
      .insert(syncJobs)
      .values({ id: newId('syncJob'), organizationId: row.organizationId, integrationId: row.id, status: 'running', trigger: 'manual' })
      .returning();
    const admin = adminCaller(api, config.ADMIN_TOKEN);
    const shown = async () => (await admin('GET', `/sync_jobs/${job!.id}`)).body;
    const nextAttemptAt = new Date(Date.now() + 4_000);
    // Units fail (their next attempt is due); residents, running beside them, succeed: units still show.
    await noteStepFailure(db, job!.id, 'syncEntity:unit', { attempt: 2, lastError: 'getPropertyUnits: source answered HTTP 503', nextAttemptAt });
    await clearStepFailures(db, job!.id, 'syncEntity:resident');
    expect(await shown()).toMatchObject({ attempt: 2, last_error: 'getPropertyUnits: source answered HTTP 503', next_attempt_at: nextAttemptAt.toISOString() });
    // The units' own success clears it.
    await noteStepAttempt(db, job!.id, 'syncEntity:unit', 2);
    await clearStepFailures(db, job!.id, 'syncEntity:unit');
    expect(await shown()).toMatchObject({ attempt: 1, last_error: null, next_attempt_at: null });
  });
});
