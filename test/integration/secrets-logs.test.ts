/**
 * Secrets stay secret through a full run of the real processes, as deployed with live mode served: the sandbox PMS,
 * the API, the worker and a webhook worker with its relay, all at LOG_LEVEL=debug with their output captured. A
 * sandbox integration is created and synced, a webhook subscription gets deliveries (and a rotation and a replay),
 * an API key reads. Then no log line holds the source api key, a signing secret, the admin or control token, the
 * API key or the encryption key, and the database holds only `enc:v1:` values.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { closeDb, type Db } from '../../db/client';
import { verifyWebhookSignature } from '../../domain/signature';
import { sandboxControlClient } from '../../sandbox/control';
import { testDb } from '../support/context';
import { freePort, Processes } from '../support/faults';
import { until as poll } from '../support/until';
import { startReceiver, type Receiver } from '../support/webhooks';

const procs = new Processes();
const logs: { name: string; output: () => string }[] = [];
let db: Db;
let receiver: Receiver;

const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const ADMIN_TOKEN = `admin-${randomBytes(18).toString('base64url')}`;
const CONTROL_TOKEN = `control-${randomBytes(18).toString('base64url')}`;
let env: NodeJS.ProcessEnv;
let apiUrl: string;
let sandboxUrl: string;

function start(name: string, script: string, args: string[] = []) {
  const { child, output } = procs.spawnLogged(process.execPath, ['--import', 'tsx', script, ...args], env);
  logs.push({ name, output });
  return { child, output };
}

/** SIGTERM, so that a process writes its last lines; SIGKILL if it has not exited in 5 s (the webhook child never does). */
async function stopAll(): Promise<void> {
  await Promise.all(
    [...procs.running].map(async (child) => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** The shared helper, with this file's patience: the processes are starting; a refused connection means not yet. */
const until = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 90_000) =>
  poll(what, () => check().catch(() => undefined), {
    timeoutMs,
    intervalMs: 200,
    detail: () => logs.map((l) => `--- ${l.name}\n${l.output().slice(-3000)}`).join('\n'),
  });

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${apiUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

beforeAll(async () => {
  db = testDb(2);
  receiver = await startReceiver();
  const [apiPort, sandboxPort] = [await freePort(), await freePort()];
  apiUrl = `http://127.0.0.1:${apiPort}`;
  sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  env = {
    ...process.env,
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-secrets-logs-${randomBytes(4).toString('hex')}`,
    // A deployment that serves live mode, so every secret is one of its own.
    SERVED_MODES: 'test,live',
    ADMIN_TOKEN,
    SANDBOX_CONTROL_TOKEN: CONTROL_TOKEN,
    ENCRYPTION_KEYS: `k-logs:${ENCRYPTION_KEY}`,
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    // The test database is shared with other files: no schedule reconciliation, and only a relay scoped to this org.
    WORKER_RECONCILE_SCHEDULES: 'false',
    WORKER_ROLES: 'sync,webhooks,writes,automations',
    WEBHOOK_RETRY_SCHEDULE_MS: '0,200,200,200,200,200,200',
    SYNC_PAGE_SIZE: '10',
    DB_POOL_MAX: '3',
    LOG_LEVEL: 'debug',
    LOG_PRETTY: 'false',
  };
  start('sandbox', 'sandbox/main.ts');
  start('api', 'api/main.ts');
  const worker = start('worker', 'worker/main.ts');
  await until('the API to be ready', async () => ((await fetch(`${apiUrl}/readyz`)).ok ? true : undefined));
  await until('the sandbox to listen', async () => (worker && (await fetch(`${sandboxUrl}/control/companies/x`)).status ? true : undefined));
  await until('the worker to start', async () => (worker.output().includes('worker started') ? true : undefined), 120_000);
}, 180_000);

afterAll(async () => {
  await stopAll();
  await receiver?.close();
  if (db) await closeDb(db);
});

it('no secret reaches any log of a full run, and the database holds only encrypted values', async () => {
  const org = (await admin('POST', '/organizations', { name: 'secrets-in-logs' })).body;
  const created = await admin('POST', `/organizations/${org.id}/integrations`, {
    mode: 'test',
    plan: 'scale',
    source: { type: 'sandbox', size: 20, seed: 7 },
    initial_sync: false,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const integration = created.body;
  const subscribed = await admin('POST', `/integrations/${integration.id}/webhook_subscriptions`, { url: receiver.url, event_types: ['*'] });
  expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
  const subscription = subscribed.body;
  const firstSecret: string = subscription.secret;
  expect(firstSecret).toMatch(/^whsec_/);
  const apiKey: string = (await admin('POST', `/organizations/${org.id}/api_keys`, { mode: 'test' })).body.key;
  expect(apiKey).toMatch(/^sk_test_/);
  const webhooks = start('webhook-child', 'test/support/webhook-child.ts', [org.id]);
  await until('the webhook worker to start', async () => (webhooks.output().includes('webhook-child ready') ? true : undefined), 120_000);

  // A sync to its end: the worker opens the source api key to read.
  const job = (await admin('POST', `/integrations/${integration.id}/syncs`)).body;
  const done = await until('the sync to end', async () => {
    const j = (await admin('GET', `/sync_jobs/${job.id}`)).body;
    return j.status === 'running' || j.status === 'queued' ? undefined : j;
  });
  expect(done.status, JSON.stringify(done)).toBe('succeeded');
  expect(done.records_new).toBeGreaterThan(0);

  // Its FIRST_SYNC_COMPLETE, delivered and signed with the secret the activity opened.
  await receiver.waitFor((r) => r.some((x) => x.body.type === 'FIRST_SYNC_COMPLETE'), 60_000);
  const first = receiver.received.find((x) => x.body.type === 'FIRST_SYNC_COMPLETE')!;
  expect(verifyWebhookSignature(first.raw, first.headers, firstSecret)).toBe(true);
  const delivery = await until('the delivery to succeed', async () => {
    const ds = (await admin('GET', `/webhook_subscriptions/${subscription.id}/deliveries`)).body.results as any[];
    return ds.find((d) => d.status === 'succeeded' && d.event_type === 'FIRST_SYNC_COMPLETE');
  });

  // A rotation, then a replay signed with both secrets.
  const rotated = await admin('POST', `/webhook_subscriptions/${subscription.id}/rotate_secret`, {});
  expect(rotated.status).toBe(200);
  const secondSecret: string = rotated.body.secret;
  expect((await admin('POST', `/webhook_deliveries/${delivery.id}/replay`)).status).toBe(202);
  await receiver.waitFor((r) => r.some((x) => x.headers['x-service-delivery-attempt'] === '2'), 60_000);
  const replayed = receiver.received.find((x) => x.headers['x-service-delivery-attempt'] === '2')!;
  expect(verifyWebhookSignature(replayed.raw, { 'x-service-signature': replayed.headers['x-service-signature'] }, secondSecret)).toBe(true);
  expect(verifyWebhookSignature(replayed.raw, { 'x-service-signature': replayed.headers['x-service-signature-previous'] }, firstSecret)).toBe(true);

  // The key reads what the sync wrote.
  const leases = await fetch(`${apiUrl}/v1/leases?limit=5`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(leases.status).toBe(200);
  expect(((await leases.json()) as { results: unknown[] }).results.length).toBeGreaterThan(0);
  // Refusals log nothing they were sent either.
  expect((await fetch(`${apiUrl}/v1/leases`, { headers: { authorization: `Bearer ${apiKey}x` } })).status).toBe(401);
  expect((await fetch(`${apiUrl}/admin/v1/organizations/${org.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}x` } })).status).toBe(401);

  // The source key, as the sandbox knows it (asking again for the same company returns its key).
  const { api_key: sourceKey } = await sandboxControlClient(sandboxUrl, CONTROL_TOKEN).createCompany({ companyId: integration.id, size: 20, seed: 7 });
  expect(sourceKey).toMatch(/^sbx_/);

  // No admin view shows a stored value, encrypted or not.
  for (const path of [
    `/integrations/${integration.id}`,
    `/webhook_subscriptions/${subscription.id}`,
    `/integrations/${integration.id}/webhook_subscriptions`,
  ]) {
    const text = JSON.stringify((await admin('GET', path)).body);
    for (const s of ['enc:v1', sourceKey, firstSecret, secondSecret]) expect(text, path).not.toContain(s);
  }

  // The database holds every secret encrypted with the configured key.
  const [stored] = await db.execute<{ api_key: string }>(sql`select source_config->>'api_key' as api_key from integrations where id = ${integration.id}`);
  const [sub] = await db.execute<{ secret: string; previous_secret: string }>(
    sql`select secret, previous_secret from webhook_subscriptions where id = ${subscription.id}`,
  );
  for (const value of [stored!.api_key, sub!.secret, sub!.previous_secret])
    expect(value).toMatch(/^enc:v1:k-logs:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);

  expect((await admin('DELETE', `/integrations/${integration.id}`)).status).toBe(204);
  await stopAll();

  const all = logs.map((l) => l.output()).join('\n');
  // The logs are real and at debug level: they name the run, its delivery, each process.
  for (const line of ['API listening', 'worker started', 'sandbox PMS listening', 'webhook attempt', delivery.id]) expect(all).toContain(line);
  expect(all.split('\n').length).toBeGreaterThan(10);
  for (const [what, secret] of [
    ['source api key', sourceKey],
    ['signing secret', firstSecret],
    ['rotated signing secret', secondSecret],
    ['admin token', ADMIN_TOKEN],
    ['sandbox control token', CONTROL_TOKEN],
    ['API key', apiKey],
    ['encryption key', ENCRYPTION_KEY],
  ] as const) {
    expect(all.includes(secret), `${what} in the logs`).toBe(false);
    // Nor a good part of it (the part after its prefix).
    expect(all.includes(secret.slice(-20)), `${what} (its tail) in the logs`).toBe(false);
  }
}, 300_000);
