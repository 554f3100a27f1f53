/**
 * The metrics as an operator's Prometheus reads them: the API and the worker run as their own processes (api/main.ts,
 * worker/main.ts) on a database of this file's own, so the database facts are this file's alone. After a real sync,
 * a delivered webhook, a dead letter and a write, both /metrics endpoints are scraped and every counter and gauge
 * must have moved by exactly what happened; no label carries a raw path, an id or anything of the tenant's data.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { and, eq, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { parse } from 'yaml';
import type { Db } from '../../db/client';
import { TABLES } from '../../db/records';
import { webhookDeliveries } from '../../db/schema';
import { createApiKey } from '../../db/tenants';
import { ENTITIES } from '../../domain/cdm';
import { freePort, Processes, spawnWorker } from '../support/faults';
import { scrape, type Scrape } from '../support/metrics';
import { onOwnDatabase } from '../support/services';
import { sandboxIntegration, until, type SandboxIntegration } from '../support/sync';
import { startReceiver, type Receiver } from '../support/webhooks';

const ADMIN = 'metrics-test-admin-token-0123456789';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARTIFACTS = join(ROOT, 'test/artifacts/metrics');
/** The scrapes of the first test, which the dashboard's queries are checked against. */
let scraped: { api: Scrape; worker: Scrape } | undefined;
const procs = new Processes();
let dbUrl = '';
let db: Db;
let api: { url: string; metrics: string; child: ChildProcess };
let workerMetrics = '';
let ok: Receiver;
let failing: Receiver;
let tenant: SandboxIntegration;
let key = '';

/** A database of this file's own: the facts (backlogs, dead letters) are then exactly what this file did. */
onOwnDatabase('metrics', (own) => ({ url: dbUrl, db } = own));

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${api.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

beforeAll(async () => {
  const [port, metricsPort, workerPort] = [await freePort(), await freePort(), await freePort()];
  const taskQueue = `test-${randomUUID()}`;
  const common = {
    DATABASE_URL: dbUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    SANDBOX_URL: inject('sandboxUrl'),
    SANDBOX_CONTROL_TOKEN: inject('sandboxControlToken'),
    ADMIN_TOKEN: ADMIN,
    SERVED_MODES: 'test',
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
  };
  const child = procs.spawn(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
    ...process.env,
    ...common,
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
  });
  api = { url: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, child };
  // The relay runs: this database is the file's own. Two attempts, the second 200 ms after the first.
  const worker = spawnWorker(procs, {
    ...common,
    WORKER_METRICS_PORT: String(workerPort),
    WORKER_ROLES: 'sync,webhooks,writes,automations,relay',
    WEBHOOK_RETRY_SCHEDULE_MS: '0,200',
  });
  workerMetrics = `http://127.0.0.1:${workerPort}/metrics`;
  ok = await startReceiver();
  failing = await startReceiver();
  failing.reply(() => 500);
  tenant = await sandboxIntegration(db, { size: 12 });
  key = (await createApiKey(db, { organizationId: tenant.row.organizationId, mode: 'test' })).key;
  await procs.answering(`${api.url}/healthz`, child);
  await procs.answering(workerMetrics, worker);
}, 180_000);

afterAll(async () => {
  await procs.killAll();
  await ok?.close();
  await failing?.close();
});

/** A PATCH of the admin API with this file's token. */
const patch = (body: unknown): RequestInit => ({
  method: 'PATCH',
  headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** Scrape until `ready` holds (gauges are cached for a few seconds), then return that scrape. */
async function scrapeUntil(url: string, what: string, ready: (s: Scrape) => boolean, timeoutMs = 30_000): Promise<Scrape> {
  return until(
    what,
    async () => {
      const s = await scrape(url);
      return ready(s) ? s : undefined;
    },
    timeoutMs,
  );
}

describe('metrics', () => {
  it('moves by exactly what happened: a sync, a delivered webhook, a dead letter and a write', async () => {
    const before = { api: await scrape(api.metrics), worker: await scrape(workerMetrics) };
    // Every series of a bounded label set is there from the start, at 0 (a counter's first increment is then a rise).
    expect(before.worker.all('propsync_sync_runs_total').map((s) => s.value)).toEqual(Array(9).fill(0));
    expect(before.worker.all('propsync_webhook_attempts_total')).toHaveLength(16);
    expect(before.worker.all('propsync_operations_completed_total')).toHaveLength(12);
    expect(
      before.worker
        .all('propsync_automation_runs_total')
        .map((s) => s.labels.outcome)
        .sort(),
    ).toEqual(['failed', 'succeeded']);
    expect(
      before.api
        .all('propsync_rate_limited_requests_total')
        .map((s) => s.labels.plan)
        .sort(),
    ).toEqual(['custom', 'enterprise', 'growth', 'scale', 'starter']);

    // Two subscriptions to the end of the first sync: one receiver answers 200, the other 500 (a dead letter after 2 attempts).
    const subscriptions: string[] = [];
    for (const url of [ok.url, failing.url]) {
      subscriptions.push((await admin('POST', `/integrations/${tenant.row.id}/webhook_subscriptions`, { url, event_types: ['FIRST_SYNC_COMPLETE'] })).id);
    }
    const job = await admin('POST', `/integrations/${tenant.row.id}/syncs`);
    const ended = await until(
      'the sync to end',
      async () => {
        const j = await admin('GET', `/sync_jobs/${job.id}`);
        return j.status === 'succeeded' || j.status === 'failed' ? j : undefined;
      },
      60_000,
    );
    expect(ended.status).toBe('succeeded');
    await ok.waitFor((r) => r.length === 1);
    await until('the dead letter', async () => {
      const [d] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.status, 'dead_lettered'));
      return d;
    });

    // A write: PATCH a lease, then poll its Operation to its end (every GET is counted below).
    const listed = await fetch(`${api.url}/v1/leases?status=active&limit=1`, { headers: { authorization: `Bearer ${key}` } });
    const page = (await listed.json()) as { results: { id: string }[] };
    expect(listed.status, JSON.stringify(page)).toBe(200);
    const lease = page.results[0]!;
    const patched = await fetch(`${api.url}/v1/leases/${lease.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ occupants: 3 }),
    });
    expect(patched.status).toBe(202);
    const operation = (await patched.json()) as { id: string };
    let polls = 0;
    const done = await until(
      'the Operation to end',
      async () => {
        polls++;
        const op = (await (await fetch(`${api.url}/v1/operations/${operation.id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
          status: string;
        };
        return op.status === 'succeeded' || op.status === 'failed' ? op : undefined;
      },
      60_000,
    );
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    // A lease that does not exist (its id in the path), and a path no route has.
    expect((await fetch(`${api.url}/v1/leases/lea_${'0'.repeat(26)}`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
    expect((await fetch(`${api.url}/nowhere/${lease.id}?email=someone@example.com`)).status).toBe(404);

    // The worker: runs, records per entity, attempts, the write.
    const worker = await scrapeUntil(
      workerMetrics,
      'the worker counters',
      (s) => s.value('propsync_operations_completed_total', { type: 'lease.update', outcome: 'succeeded' }) === 1,
    );
    expect(worker.value('propsync_sync_runs_total', { outcome: 'succeeded', kind: 'full' })).toBe(1);
    expect(worker.value('propsync_sync_run_duration_seconds_count', { outcome: 'succeeded', kind: 'full', trigger: 'manual' })).toBe(1);
    expect(worker.all('propsync_sync_runs_total').reduce((n, s) => n + s.value, 0)).toBe(1);
    for (const entity of ENTITIES) {
      const t = TABLES[entity] as unknown as (typeof TABLES)['property'];
      const live = await db
        .select({ id: t.id })
        .from(t)
        .where(and(eq(t.integrationId, tenant.row.id), isNull(t.deletedAt)));
      expect(live.length, entity).toBeGreaterThan(0);
      expect(worker.value('propsync_sync_records_total', { entity, change: 'created' }), entity).toBe(live.length);
      for (const change of ['updated', 'deleted', 'skipped'])
        expect(worker.value('propsync_sync_records_total', { entity, change }), `${entity} ${change}`).toBe(0);
    }
    expect(worker.value('propsync_webhook_attempts_total', { outcome: 'succeeded', attempt: '1' })).toBe(1);
    expect(worker.value('propsync_webhook_attempts_total', { outcome: 'failed', attempt: '1' })).toBe(1);
    expect(worker.value('propsync_webhook_attempts_total', { outcome: 'failed', attempt: '2' })).toBe(1);
    expect(worker.all('propsync_webhook_attempts_total').reduce((n, s) => n + s.value, 0)).toBe(3);
    expect(worker.value('propsync_webhook_attempt_duration_seconds_count', { outcome: 'succeeded' })).toBe(1);
    expect(worker.value('propsync_webhook_attempt_duration_seconds_count', { outcome: 'failed' })).toBe(2);
    expect(worker.all('propsync_operations_completed_total').reduce((n, s) => n + s.value, 0)).toBe(1);
    expect(worker.value('propsync_automation_runs_total', { outcome: 'succeeded' })).toBe(0);
    expect(ok.received).toHaveLength(1);
    expect(failing.received).toHaveLength(2);
    // The Temporal SDK's own metrics and the process's, on the same endpoint.
    expect(worker.all('temporal_worker_task_slots_available').length).toBeGreaterThan(0);
    expect(worker.all('temporal_workflow_task_schedule_to_start_latency_seconds_count').length).toBeGreaterThan(0);
    expect(worker.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(worker.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');

    // The API: requests by route template, and the database facts.
    const apiNow = await scrapeUntil(
      api.metrics,
      'the facts to settle',
      (s) => s.value('propsync_webhook_dead_letters_open') === 1 && s.value('propsync_outbox_lag_seconds') === 0,
    );
    const requests = (method: string, route: string, status_class: string) =>
      apiNow.value('propsync_http_request_duration_seconds_count', { method, route, status_class }) -
      before.api.value('propsync_http_request_duration_seconds_count', { method, route, status_class });
    expect(requests('PATCH', '/v1/leases/{id}', '2xx')).toBe(1);
    expect(requests('GET', '/v1/operations/{id}', '2xx')).toBe(polls);
    expect(requests('GET', '/v1/leases', '2xx')).toBe(1);
    expect(requests('GET', '/v1/leases/{id}', '4xx')).toBe(1);
    expect(requests('GET', 'unmatched', '4xx')).toBe(1);
    expect(requests('POST', '/admin/v1/integrations/{id}/syncs', '2xx')).toBe(1);
    expect(requests('POST', '/admin/v1/integrations/{id}/webhook_subscriptions', '2xx')).toBe(2);
    // Nothing waits, fails or is refused any more.
    for (const idle of [
      'propsync_webhook_deliveries_pending',
      'propsync_webhook_deliveries_in_flight',
      'propsync_webhook_deliveries_retrying',
      'propsync_operation_oldest_queued_age_seconds',
      'propsync_records_quarantined',
      'propsync_integrations_failing',
      'propsync_integrations_sync_overdue',
      'propsync_sync_runs_retrying',
      'propsync_webhook_circuits_open',
      'propsync_webhook_circuit_open_oldest_seconds',
      'propsync_rate_limited_requests_total',
    ]) {
      expect(
        apiNow.all(idle).map((s) => s.value),
        idle,
      ).toEqual(apiNow.all(idle).map(() => 0));
      expect(apiNow.all(idle).length, idle).toBeGreaterThan(0);
    }
    expect(apiNow.value('propsync_health_facts_up')).toBe(1);
    // The subscription whose receiver answers 500 has failed every attempt since it began (its circuit never opened).
    expect(apiNow.value('propsync_webhook_subscription_failing_oldest_seconds')).toBeGreaterThan(0);
    expect(apiNow.all('propsync_webhook_subscription_deliveries_pending')).toEqual([]);
    expect(apiNow.value('process_resident_memory_bytes')).toBeGreaterThan(0);

    // The admin API's health numbers and the console's home read the same facts.
    const health = await admin('GET', '/health');
    expect(health).toMatchObject({
      outbox_lag_seconds: 0,
      webhook_dead_letters_open: 1,
      webhook_deliveries_pending: 0,
      integrations_failing: 0,
      operation_oldest_queued_age_seconds: 0,
    });
    const signIn = await fetch(`${api.url}/console/sign-in`, {
      method: 'POST',
      body: new URLSearchParams({ token: ADMIN, next: '/console' }),
      headers: { origin: api.url },
      redirect: 'manual',
    });
    const home = await (await fetch(`${api.url}/console/organizations`, { headers: { cookie: signIn.headers.get('set-cookie')!.split(';')[0]! } })).text();
    expect(home).toMatch(/<dt>Outbox relay lag<\/dt><dd><span>0 s<\/span><\/dd>/);
    expect(home).toMatch(/<dt>Dead letters open<\/dt><dd><span data-warn="true">1<\/span><\/dd>/);
    expect(home).toMatch(/<dt>Failing integrations<\/dt><dd><span>0 failing, 0 overdue, 0 retrying<\/span><\/dd>/);
    expect(home).toMatch(/<dt>Oldest queued Operation<\/dt><dd><span>none<\/span><\/dd>/);
    expect(home).toMatch(/<dt>Deliveries<\/dt><dd>0 pending \(0 in flight\), \d+ retrying, 0 circuits open<\/dd>/);
    // Failing under an hour: shown, not yet marked (the alert's threshold).
    expect(health.webhook_subscription_failing_oldest_seconds).toBeGreaterThan(0);
    expect(home).toMatch(/<dt>Subscription failing<\/dt><dd><span>for \d+ (s|min)<\/span><\/dd>/);
    expect(home).toMatch(
      new RegExp(`<dt>Records quarantined</dt><dd><span${health.records_quarantined > 0 ? ' data-warn="true"' : ''}>${health.records_quarantined}</span></dd>`),
    );

    // Kept for operators (and the dashboard's authors): what a scrape of each looks like.
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(join(ARTIFACTS, 'api.prom'), apiNow.text);
    writeFileSync(join(ARTIFACTS, 'worker.prom'), worker.text);
    scraped = { api: apiNow, worker };

    // No label carries a raw path, an id, a key or the tenant's data.
    const secrets = [lease.id, operation.id, job.id, tenant.row.id, tenant.row.organizationId, key, 'someone@example.com', '/nowhere'];
    for (const s of [apiNow, worker]) {
      for (const sample of s.samples) {
        for (const [label, value] of Object.entries(sample.labels)) {
          // The SDK's task queue label names this file's own queues (a UUID of the test's making, not a tenant's).
          if (label === 'task_queue') continue;
          for (const secret of secrets) expect(value, `${sample.name}{${label}}`).not.toContain(secret);
          expect(value, `${sample.name}{${label}}`).not.toMatch(/[a-z]{2,4}_[0-9A-HJKMNP-TV-Z]{26}|[0-9a-f]{8}-[0-9a-f]{4}-/i);
        }
      }
      expect(s.text).not.toContain('/v1/leases/lea_');
    }

    // A deleted subscription's dead letters can no longer be replayed: they stop counting as open.
    const deleted = await fetch(`${api.url}/admin/v1/webhook_subscriptions/${subscriptions[1]}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(deleted.status).toBe(204);
    await scrapeUntil(api.metrics, 'the deleted subscription’s dead letter to stop counting', (s) => s.value('propsync_webhook_dead_letters_open') === 0);
    expect((await admin('GET', '/health')).webhook_dead_letters_open).toBe(0);
  }, 180_000);

  it("counts a 429 under the plan its budget comes from: `custom` for an organization's own limit, even one equal to a plan's", async () => {
    const org = tenant.row.organizationId;
    const before = await scrape(api.metrics);
    // 120 a minute is also the starter plan's budget: the label says where it comes from, not what it equals.
    expect((await fetch(`${api.url}/admin/v1/organizations/${org}`, patch({ rate_limit_per_minute: 120, rate_limit_burst: 1 }))).status).toBe(200);
    try {
      let refused = 0;
      for (let i = 0; i < 8; i++) {
        const res = await fetch(`${api.url}/v1/leases?limit=1`, { headers: { authorization: `Bearer ${key}` } });
        await res.arrayBuffer();
        if (res.status === 429) refused++;
      }
      expect(refused).toBeGreaterThan(0);
      const after = await scrape(api.metrics);
      const moved = (plan: string) =>
        after.value('propsync_rate_limited_requests_total', { plan }) - before.value('propsync_rate_limited_requests_total', { plan });
      expect(moved('custom')).toBe(refused);
      expect(moved('starter')).toBe(0);
    } finally {
      await fetch(`${api.url}/admin/v1/organizations/${org}`, patch({ rate_limit_per_minute: null, rate_limit_burst: null }));
    }
  });

  it('has a dashboard whose every panel queries metrics the service exports (checked against the scrapes above)', () => {
    expect(scraped, 'the first test scraped both endpoints').toBeDefined();
    const families = new Set([...scraped!.api.types.keys(), ...scraped!.worker.types.keys()]);
    interface Panel {
      type: string;
      title: string;
      panels?: Panel[];
      targets?: { expr: string }[];
      datasource?: { uid: string };
    }
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards/propsync.json'), 'utf8')) as { uid: string; panels: Panel[] };
    const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(20);
    const named = new Set<string>();
    for (const panel of panels) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.datasource?.uid, panel.title).toBe('prometheus');
      for (const { expr } of panel.targets!) {
        const metrics = [...expr.matchAll(/\b(?:propsync|temporal|process|nodejs)_[A-Za-z0-9_]+/g)].map((m) => m[0]);
        expect(metrics.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
        for (const m of metrics) {
          const family = m.replace(/_(bucket|count|sum)$/, '');
          expect(families.has(m) || families.has(family), `${panel.title}: ${m} is not exported`).toBe(true);
          named.add(family);
        }
      }
    }
    // The panels: request rate and latency, sync health, the delivery flow, Operations, the worker's slots.
    for (const m of [
      'propsync_http_request_duration_seconds',
      'propsync_sync_runs_total',
      'propsync_webhook_deliveries_pending',
      'propsync_webhook_deliveries_in_flight',
      'propsync_webhook_deliveries_retrying',
      'propsync_webhook_dead_letters_open',
      'propsync_webhook_attempts_total',
      'propsync_operations_completed_total',
      'propsync_operation_oldest_queued_age_seconds',
      'temporal_worker_task_slots_available',
    ]) {
      expect(named.has(m), m).toBe(true);
    }
    // Provisioned by compose: the datasource uid the panels name, and the folder the dashboard is read from.
    const datasource = parse(readFileSync(join(ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as {
      datasources: { uid: string; url: string }[];
    };
    expect(datasource.datasources[0]).toMatchObject({ uid: 'prometheus', url: 'http://prometheus:9090' });
    const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { volumes?: string[] }> };
    expect(compose.services.grafana!.volumes).toContain('./deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro');
    expect(compose.services.prometheus!.volumes).toContain('./deploy/prometheus:/etc/prometheus:ro');
  });

  it('serves only GET /metrics on the metrics port, and nothing of it on the public one', async () => {
    expect((await fetch(api.metrics.replace('/metrics', '/'))).status).toBe(404);
    const post = await fetch(api.metrics, { method: 'POST' });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
  });
});
