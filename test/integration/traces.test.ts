/**
 * Traces: the API and the worker run as their own processes with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP
 * receiver in this test. A write's trace reaches it whole: the API's root span (with the request id) → the workflow
 * it starts → the attempt's activity → the source call, under one trace id, each span the child of the one before,
 * with the Operation id to search by and nothing of the request's data or credentials.
 */
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { closeDb, type Db } from '../../db/client';
import { createApiKey } from '../../db/tenants';
import { testDb } from '../support/context';
import { freePort, Processes, spawnWorker } from '../support/faults';
import { sandboxIntegration, until, type SandboxIntegration } from '../support/sync';

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

const ADMIN = 'traces-test-admin-token-0123456789';
const procs = new Processes();
const spans: ReceivedSpan[] = [];
let receiver: Server;
let db: Db;
let api = '';
let tenant: SandboxIntegration;
let key = '';

/** An OTLP/HTTP trace receiver: JSON bodies of ExportTraceServiceRequest, flattened into spans. */
async function startReceiver(): Promise<number> {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: RawSpan[] }[] }[];
        };
        for (const rs of body.resourceSpans) {
          const service = String(valueOf(rs.resource.attributes.find((a) => a.key === 'service.name')?.value));
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return (receiver.address() as AddressInfo).port;
}
interface Attr {
  key: string;
  value: Record<string, unknown>;
}
interface RawSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Attr[];
}
const valueOf = (v: Record<string, unknown> | undefined): unknown => (v ? Object.values(v)[0] : undefined);

async function ready(url: string, child: ChildProcess): Promise<void> {
  await until(
    `${url} to answer`,
    async () => {
      if (!procs.running.has(child)) throw new Error(`the process exited: ${procs.stderr.get(child)}`);
      return (await fetch(url).then((r) => r.ok).catch(() => false)) || undefined;
    },
    120_000,
  );
}

beforeAll(async () => {
  db = testDb();
  const otlp = `http://127.0.0.1:${await startReceiver()}`;
  const [port, workerMetrics] = [await freePort(), await freePort()];
  const common = {
    DATABASE_URL: inject('databaseUrl'),
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
  const worker = spawnWorker(procs, { ...common, WORKER_METRICS_PORT: String(workerMetrics) });
  tenant = await sandboxIntegration(db, { size: 8 });
  key = (await createApiKey(db, { organizationId: tenant.row.organizationId, mode: 'test' })).key;
  await ready(`${api}/healthz`, child);
  await ready(`http://127.0.0.1:${workerMetrics}/metrics`, worker);
}, 180_000);

afterAll(async () => {
  await procs.killAll();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  if (db) await closeDb(db);
});

describe('traces', () => {
  it("follow a write from the API's request through its workflow and activity to the source call, under one trace id", async () => {
    const admin = (method: string, path: string) => fetch(`${api}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } }).then((r) => r.json() as Promise<any>);
    const job = await admin('POST', `/integrations/${tenant.row.id}/syncs`);
    await until('the sync to end', async () => ((await admin('GET', `/sync_jobs/${job.id}`)).status === 'succeeded' || undefined), 60_000);
    // The sync's pages are spans of their own, with the job id.
    await until('sync page spans', async () => (spans.some((s) => s.name === 'sync.page' && s.attributes['propsync.sync_job_id'] === job.id) || undefined));

    const lease = ((await (await fetch(`${api}/v1/leases?status=active&limit=1`, { headers: { authorization: `Bearer ${key}` } })).json()) as { results: { id: string }[] }).results[0]!;
    const res = await fetch(`${api}/v1/leases/${lease.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ occupants: 4 }),
    });
    expect(res.status).toBe(202);
    const requestId = res.headers.get('x-request-id')!;
    const op = (await res.json()) as { id: string };

    const source = await until('the source call span', async () => spans.find((s) => s.name === 'source.write' && s.attributes['propsync.operation_id'] === op.id), 60_000);
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
    const chain = await until('the chain up to the request span', async () => {
      const links = chainOf();
      return links.at(-1)?.spanId === root.spanId ? links : undefined;
    }, 30_000).catch(() => chainOf());
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
  }, 150_000);
});
