/**
 * Traces: the API and the worker run as their own processes, on a database of this file's own (the worker's outbox
 * relay runs), with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver in this test. A write's trace
 * reaches it whole: the API's root span (with the request id) → the workflow it starts → the attempt's activity → the
 * source call, under one trace id, each span the child of the one before, with the Operation id to search by and
 * nothing of the request's data or credentials. A sync's pages and the webhook attempts it causes are spans too,
 * with the ids an operator searches by (sync job, entity, page; delivery, subscription) and nothing of the synced
 * residents, the source's api key or the subscription's signing secret.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import type { Db } from '../../db/client';
import { events, residents, webhookDeliveries } from '../../db/schema';
import { createApiKey, createIntegration, createOrganization } from '../../db/tenants';
import { ENTITIES } from '../../domain/cdm';
import { testKeyring } from '../support/context';
import { freePort, Processes, spawnWorker } from '../support/faults';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp';
import { onOwnDatabase } from '../support/services';
import { sandbox, until } from '../support/sync';
import { startReceiver as startWebhookReceiver, type Receiver } from '../support/webhooks';

const ADMIN = 'traces-test-admin-token-0123456789';
const procs = new Processes();
let receiver: OtlpReceiver;
/** Every span the receiver got (its own array). */
let spans: ReceivedSpan[] = [];
let hooks: Receiver;
let dbUrl = '';
let db: Db;
let api = '';
let tenant: { integrationId: string; companyId: string; sourceApiKey: string };
let key = '';

/** A database of this file's own, so that the worker's relay dispatches this file's events alone. */
onOwnDatabase('traces', (own) => ({ url: dbUrl, db } = own));

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  spans = receiver.spans;
  const otlp = receiver.endpoint;
  const [port, workerMetrics] = [await freePort(), await freePort()];
  const common = {
    DATABASE_URL: dbUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    ADMIN_TOKEN: ADMIN,
    SERVED_MODES: 'test',
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
  };
  const child = procs.spawn(process.execPath, ['--import', 'tsx', 'api/main.ts'], { ...process.env, ...common, PORT: String(port) });
  api = `http://127.0.0.1:${port}`;
  const worker = spawnWorker(procs, { ...common, WORKER_METRICS_PORT: String(workerMetrics), WORKER_ROLES: 'sync,webhooks,writes,automations,relay' });
  hooks = await startWebhookReceiver();
  // A sandbox company of 8 leases (as test/support/sync.ts's sandboxIntegration makes one), keeping its api key.
  const org = await createOrganization(db, { name: `traces-${randomUUID().slice(0, 8)}` });
  const companyId = randomUUID();
  const { api_key } = await sandbox().createCompany({ companyId, size: 8, seed: 7 });
  const row = await createIntegration(
    db,
    {
      organizationId: org.id,
      mode: 'test',
      plan: 'enterprise',
      sourceType: 'sandbox',
      sourceConfig: { base_url: inject('sandboxUrl'), api_key, size: 8, seed: 7 },
    },
    testKeyring(),
  );
  tenant = { integrationId: row.id, companyId, sourceApiKey: api_key };
  key = (await createApiKey(db, { organizationId: org.id, mode: 'test' })).key;
  await procs.answering(`${api}/healthz`, child);
  await procs.answering(`http://127.0.0.1:${workerMetrics}/metrics`, worker);
}, 180_000);

afterAll(async () => {
  await procs.killAll();
  await receiver?.close();
  await hooks?.close();
});

/** Attribute values of every span received, as text: what an operator's tracing backend stores and shows. */
const everyAttributeValue = () => spans.flatMap((s) => Object.values(s.attributes).map((v) => String(v)));

describe('traces', () => {
  it("follow a write from the API's request through its workflow and activity to the source call, under one trace id", async () => {
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${api}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as any;
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    // Every event goes to a receiver: the second sync's resident events carry the residents' names and emails.
    const subscription = await admin('POST', `/integrations/${tenant.integrationId}/webhook_subscriptions`, { url: hooks.url, event_types: ['*'] });
    const secret = subscription.secret as string;
    expect(secret).toBeTruthy();
    const sync = async () => {
      const started = await admin('POST', `/integrations/${tenant.integrationId}/syncs`);
      await until('the sync to end', async () => (await admin('GET', `/sync_jobs/${started.id}`)).status === 'succeeded' || undefined, 60_000);
      return started as { id: string };
    };
    const job = await sync();
    await sandbox().applyChanges(tenant.companyId, { update: { resident: 2 }, create: { resident: 2 } });
    await sync();

    // The sync's pages are spans of their own, by job, entity and page: every entity's first page is there.
    const pages = await until('sync page spans of every entity', async () => {
      const ofJob = spans.filter((s) => s.name === 'sync.page' && s.attributes['propsync.sync_job_id'] === job.id);
      return ENTITIES.every((e) => ofJob.some((s) => s.attributes['propsync.entity'] === e && s.attributes['propsync.page'] === 1)) ? ofJob : undefined;
    });
    for (const p of pages) {
      expect(p.service).toBe('propsync-worker');
      expect(Object.keys(p.attributes).sort()).toEqual(['propsync.entity', 'propsync.page', 'propsync.sync_job_id', 'propsync.sync_kind']);
      expect(p.attributes['propsync.page']).toBeGreaterThanOrEqual(1);
      expect(p.attributes['propsync.sync_kind']).toBe('full'); // an entrata source: every run is full
      expect(p.parentSpanId).not.toBe(''); // inside its activity's span, not a trace of its own
    }

    // Each delivery's attempt is a span with its delivery id, subscription and outcome.
    const deliveries = await until(
      'every event relayed and every delivery succeeded',
      async () => {
        const undispatched = await db
          .select({ id: events.id })
          .from(events)
          .where(and(eq(events.integrationId, tenant.integrationId), isNull(events.dispatchedAt)));
        if (undispatched.length > 0) return undefined;
        const rows = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.id));
        return rows.length > 0 && rows.every((d) => d.status === 'succeeded') ? rows : undefined;
      },
      60_000,
    );
    expect(hooks.received.length).toBeGreaterThanOrEqual(deliveries.length);
    const attempts = await until('an attempt span for every delivery', async () => {
      const ofSub = spans.filter((s) => s.name === 'webhook.attempt' && s.attributes['propsync.subscription_id'] === subscription.id);
      return deliveries.every((d) => ofSub.some((s) => s.attributes['propsync.delivery_id'] === d.id)) ? ofSub : undefined;
    });
    expect(attempts).toHaveLength(deliveries.length);
    for (const a of attempts) {
      const d = deliveries.find((x) => x.id === a.attributes['propsync.delivery_id'])!;
      expect(a.service).toBe('propsync-worker');
      // Inside its batch's span: the root of a trace of its own, linked to the dispatcher activity's span (a
      // dispatcher lives as long as its subscription; one trace of all its batches would never end).
      const batch = await until('the batch span of an attempt', async () => spans.find((s) => s.spanId === a.parentSpanId && s.traceId === a.traceId));
      expect(batch).toMatchObject({ service: 'propsync-worker', name: 'webhook.dispatch', parentSpanId: '' });
      expect(batch.attributes).toMatchObject({ 'propsync.subscription_id': subscription.id, 'propsync.stopped_by': expect.any(String) });
      expect(batch.links).toHaveLength(1);
      const [linkedTrace, linkedSpan] = batch.links[0]!.split('/');
      const activity = await until('the activity span a batch links to', async () => spans.find((s) => s.traceId === linkedTrace && s.spanId === linkedSpan));
      expect(activity).toMatchObject({ service: 'propsync-worker', name: 'RunActivity:dispatchBatch' });
      expect(activity.traceId).not.toBe(batch.traceId);
      expect(a.attributes).toEqual({
        'propsync.delivery_id': d.id,
        'propsync.subscription_id': subscription.id,
        'propsync.event_type': d.eventType,
        'propsync.attempt': 1,
        'propsync.outcome': 'succeeded',
        'http.response.status_code': 200,
      });
    }

    // A caller's own x-request-id is on the root span of its request, and the query string is not.
    const callerRequestId = `traces-test-${randomUUID()}`;
    const listed = await fetch(`${api}/v1/leases?status=active&limit=1`, { headers: { authorization: `Bearer ${key}`, 'x-request-id': callerRequestId } });
    expect(listed.headers.get('x-request-id')).toBe(callerRequestId);
    const lease = ((await listed.json()) as { results: { id: string }[] }).results[0]!;
    const listSpan = await until('the list request span', async () => spans.find((s) => s.attributes['propsync.request_id'] === callerRequestId));
    expect(listSpan).toMatchObject({ service: 'propsync-api', name: 'GET /v1/leases', parentSpanId: '' });
    expect(listSpan.attributes).toMatchObject({ 'http.route': '/v1/leases', 'http.response.status_code': 200 });

    const res = await fetch(`${api}/v1/leases/${lease.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ occupants: 4 }),
    });
    expect(res.status).toBe(202);
    const requestId = res.headers.get('x-request-id')!;
    const op = (await res.json()) as { id: string };

    const source = await until(
      'the source call span',
      async () => spans.find((s) => s.name === 'source.write' && s.attributes['propsync.operation_id'] === op.id),
      60_000,
    );
    const root = await until('the request span', async () => spans.find((s) => s.attributes['propsync.request_id'] === requestId));
    expect(root).toMatchObject({ service: 'propsync-api', name: 'PATCH /v1/leases/{id}', parentSpanId: '' });
    expect(root.attributes).toMatchObject({ 'http.route': '/v1/leases/{id}', 'http.response.status_code': 202 });
    expect(source.traceId).toBe(root.traceId);
    expect(source).toMatchObject({ service: 'propsync-worker' });
    expect(source.attributes).toMatchObject({ 'propsync.operation_type': 'lease.update', 'propsync.attempt': 1 });

    // The chain of parents from the source call up to the request's span: activity, workflow, the client's start.
    // The workflow's spans reach the exporter through a sink, after the activity's: wait for the chain to close.
    const chainOf = () => {
      const byId = new Map(spans.filter((s) => s.traceId === root.traceId).map((s) => [s.spanId, s]));
      const links: ReceivedSpan[] = [];
      for (let s: ReceivedSpan | undefined = source; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined) links.push(s);
      return links;
    };
    const chain = await until(
      'the chain up to the request span',
      async () => {
        const links = chainOf();
        return links.at(-1)?.spanId === root.spanId ? links : undefined;
      },
      30_000,
    ).catch(() => chainOf());
    const names = chain.map((s) => `${s.service}:${s.name}`);
    expect(names[0]).toBe('propsync-worker:source.write');
    expect(names[1]).toBe('propsync-worker:RunActivity:attemptWrite');
    expect(names).toContain('propsync-worker:RunWorkflow:writeOperation');
    expect(names.at(-1)).toBe('propsync-api:PATCH /v1/leases/{id}');
    expect(names.indexOf('propsync-worker:RunWorkflow:writeOperation')).toBeLessThan(names.length - 1);

    // Nothing of the request's body, the key or the query string in any span.
    for (const s of spans) {
      const text = JSON.stringify(s.attributes);
      expect(text).not.toContain(key);
      expect(text).not.toContain('status=active');
      expect(text).not.toMatch(/"occupants"|Bearer/);
    }
    // No secret and nothing of the synced residents in any attribute value: not the signing secret, not the source's
    // api key, not a resident's name or email (which the delivered bodies held).
    const people = await db
      .select({ firstName: residents.firstName, lastName: residents.lastName, email: residents.email })
      .from(residents)
      .where(eq(residents.integrationId, tenant.integrationId));
    expect(people.length).toBeGreaterThan(0);
    const personal = people.flatMap((p) => [p.firstName, p.lastName, p.email]).filter((v): v is string => !!v && v.length >= 3);
    expect(personal.length).toBeGreaterThan(0);
    expect(hooks.received.some((r) => personal.some((v) => r.raw.toString('utf8').includes(v)))).toBe(true);
    const values = everyAttributeValue();
    expect(values.length).toBeGreaterThan(0);
    for (const v of values) {
      expect(v).not.toContain(secret);
      expect(v).not.toContain(tenant.sourceApiKey);
      for (const p of personal) expect(v, `an attribute holds a resident's "${p}"`).not.toContain(p);
    }
  }, 180_000);
});
