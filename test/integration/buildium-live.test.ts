/**
 * A live integration of the buildium dialect over HTTPS, end to end: a TLS front with a certificate of the test's own
 * (made with openssl for 127.0.0.1) proxies to a buildium sandbox company; the admin API creates a live integration
 * with its base_url, client id and secret; a worker process that trusts the test's certificate through Node's own
 * NODE_EXTRA_CA_CERTS runs its first sync; its records read with a live key. A plain-http base_url is refused.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { startApi, type TestServer } from '../support/api-server';
import { SERVE_LIVE, testConfig, testDb } from '../support/context';
import { Processes, spawnWorker } from '../support/faults';
import { sandbox, until } from '../support/sync';

let db: Db;
let config: Config;
let api: TestServer;
let front: Server;
let dir: string;
let requests = 0;
const procs = new Processes();

/** A self-signed certificate for 127.0.0.1 in a directory of the test's own: the key and the certificate's path. */
function selfSigned(): { key: Buffer; cert: Buffer; certPath: string } {
  dir = mkdtempSync(join(tmpdir(), 'propsync-tls-'));
  const [keyPath, certPath] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyPath), cert: readFileSync(certPath), certPath };
}

/** HTTPS in front of the sandbox: every request passed on as it came, every reply passed back as it came. */
async function tlsFront(tls: { key: Buffer; cert: Buffer }): Promise<Server> {
  const target = new URL(inject('sandboxUrl'));
  const server = createServer(tls, (req, res) => {
    requests++;
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
      (reply) => {
        res.writeHead(reply.statusCode!, reply.headers);
        reply.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

beforeAll(async () => {
  const tls = selfSigned();
  front = await tlsFront(tls);
  db = testDb(2);
  config = testConfig(SERVE_LIVE);
  api = await startApi(db, config);
  spawnWorker(procs, {
    DATABASE_URL: config.DATABASE_URL,
    TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS!,
    TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    ADMIN_TOKEN: config.ADMIN_TOKEN,
    ...SERVE_LIVE,
    // The worker trusts the test's certificate as Node does any extra CA: nothing of the product's own.
    NODE_EXTRA_CA_CERTS: tls.certPath,
  });
});
afterAll(async () => {
  await procs.killAll();
  await api?.close();
  await new Promise<void>((resolve) => (front ? front.close(() => resolve()) : resolve()));
  if (db) await closeDb(db);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${api.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${config.ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe('a live buildium integration over HTTPS', () => {
  let credentials: { client_id: string; client_secret: string };
  let orgId: string;
  beforeAll(async () => {
    const created = await sandbox().createCompany({ companyId: randomUUID(), size: 10, seed: 5, dialect: 'buildium' });
    credentials = { client_id: created.client_id!, client_secret: created.client_secret! };
    orgId = (await admin('POST', '/organizations', { name: 'Live Buildium' })).body.id;
  });

  it('syncs through the TLS front at once, and its records read with a live key', async () => {
    const base_url = `https://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'live',
      plan: 'enterprise',
      source: { type: 'buildium', base_url, ...credentials },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ mode: 'live', source: { type: 'buildium', dialect: 'buildium' } });
    expect(JSON.stringify(r.body)).not.toContain(credentials.client_secret);

    const [first] = (await admin('GET', `/integrations/${r.body.id}/sync_jobs`)).body.results;
    const worker = () => [...procs.stderr.values()].join('\n');
    let last: unknown;
    const job = await until(
      'the first sync to end',
      async () => {
        if (procs.running.size === 0) throw new Error(`the worker exited: ${worker()}`);
        const j = (last = (await admin('GET', `/sync_jobs/${first.id}`)).body);
        return j.status === 'succeeded' || j.status === 'failed' ? j : undefined;
      },
      // A worker process's start (tsx compiling the worker) takes a while on a loaded machine.
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the job: ${JSON.stringify(last)}; ${requests} requests at the front; the worker said: ${worker()}`);
    });
    expect(job, JSON.stringify(job)).toMatchObject({ trigger: 'initial', kind: 'full', status: 'succeeded', error: null });
    expect(job.records_new).toBeGreaterThan(10);
    // Through the front, over TLS.
    expect(requests).toBeGreaterThan(0);

    const key = (await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'live', scopes: ['read'] })).body.key;
    expect(key).toMatch(/live/);
    const res = await api.get('/v1/leases?limit=100', { key });
    expect(res.status).toBe(200);
    const leases = ((await res.json()) as { results: Record<string, unknown>[] }).results;
    expect(leases).toHaveLength(10);
    for (const l of leases) expect(l).toMatchObject({ integration_id: r.body.id, rent_amount: { amount: expect.any(Number), currency: 'USD' } });
  }, 150_000);

  it('refuses a plain-http base_url for a live integration with 422 at /source/base_url, and keeps nothing', async () => {
    const before = (await admin('GET', `/organizations/${orgId}/integrations`)).body.results.length;
    const r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'live',
      plan: 'enterprise',
      source: { type: 'buildium', base_url: inject('sandboxUrl'), ...credentials },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/source/base_url']);
    expect((await admin('GET', `/organizations/${orgId}/integrations`)).body.results).toHaveLength(before);
  });
});
