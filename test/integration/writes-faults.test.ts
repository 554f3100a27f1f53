/**
 * Write-back through faults, against real processes: the Temporal server stopped when a write arrives (502
 * enqueue_failed, the Operation kept; the same key collapses onto it once Temporal is back, or the sweeper starts
 * it), and the worker SIGKILLed while the source is applying a write. Each still ends `succeeded` with exactly one
 * record at the source.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { triggerSync, type SyncControlDeps } from '../../control/sync';
import type { Db } from '../../db/client';
import { getOperation } from '../../db/operations';
import { getSyncJob } from '../../db/sync-jobs';
import { writeTaskQueueOf } from '../../domain/contract';
import { sweepWrites } from '../../workflows/operation';
import { startApi, type TestServer } from '../support/api-server';
import { testConfig } from '../support/context';
import { onOwnDatabase } from '../support/services';
import { freePort, Processes, startTemporal, spawnWorker } from '../support/faults';
import { readSource, sandbox, sandboxIntegration, until, type SandboxIntegration } from '../support/sync';
import { getJson, keyFor, pollOperation, write } from '../support/writes';

const procs = new Processes();
const dbFile = join(tmpdir(), `propsync-writes-${randomUUID()}.sqlite`);
let db: Db;
let port: number;
let address: string;
let server: ChildProcess;
let connection: Connection;
let ctl: SyncControlDeps;
let api: TestServer;
let s: SandboxIntegration;
let key: string;
let worker: ReturnType<typeof spawnWorker>;
const taskQueue = `test-${randomUUID()}`;

let dbUrl = '';
// A database of its own: the sweeper below takes every Operation of the database it runs on, and on this file's own
// Temporal server it would start a second workflow for another file's write that is under way.
onOwnDatabase('writes_faults', (own) => ({ url: dbUrl, db } = own));

const startWorker = () => spawnWorker(procs, { DATABASE_URL: dbUrl, TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: taskQueue });

beforeAll(async () => {
  port = await freePort();
  address = `127.0.0.1:${port}`;
  server = await startTemporal(procs, port, dbFile);
  connection = await Connection.connect({ address });
  ctl = { db, client: new Client({ connection }), taskQueue };
  worker = startWorker();
  api = await startApi(db, testConfig({ DATABASE_URL: dbUrl, TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: taskQueue, WRITE_ENQUEUE_TIMEOUT_MS: '2000' }));
  s = await sandboxIntegration(db, { size: 20, seed: 5 });
  const job = await triggerSync(ctl, s.row);
  await until('the first sync', async () => ((await getSyncJob(db, job.id))?.status === 'succeeded' ? true : undefined), 60_000);
  key = await keyFor(db, s.row.organizationId);
}, 120_000);
afterAll(async () => {
  await api?.close();
  await procs.killAll();
  await connection?.close();
  for (const f of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`]) rmSync(f, { force: true });
});

async function restartTemporal(): Promise<void> {
  server = await startTemporal(procs, port, dbFile);
}

describe('Temporal stopped when a write arrives', () => {
  it('502 enqueue_failed names the Operation, which stays queued; the same key collapses onto it once Temporal is back', async () => {
    const lease = (await getJson(api.url, '/v1/leases?status=active&limit=1', key)).body.results[0];
    await procs.kill(server);
    const idem = randomUUID();
    const body = { rent_amount: { amount: 777_700, currency: 'USD' } };
    const began = Date.now();
    const r = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, body, { key, idempotencyKey: idem });
    expect(r.status, JSON.stringify(r.body)).toBe(502);
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body).toMatchObject({ status: 502, title: 'Bad Gateway' });
    expect(r.body.type).toMatch(/\/enqueue_failed$/);
    const opId = /opr_[0-9A-Z]{26}/.exec(r.body.detail)![0];
    expect(r.body.operation_id).toBe(opId);
    // The Operation was kept, and polling answers while Temporal is away.
    const queued = await getJson(api.url, `/v1/operations/${opId}`, key);
    expect(queued.status).toBe(200);
    expect(queued.body).toMatchObject({ id: opId, status: 'queued', idempotency_key: idem, reconcile: { attempts: 0 } });
    // Retrying while it is still down: 502 again, the same Operation.
    const again = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, body, { key, idempotencyKey: idem });
    expect(again.status).toBe(502);
    expect(again.body.detail).toContain(opId);

    await restartTemporal();
    const resent = await write(api.url, 'PATCH', `/v1/leases/${lease.id}`, body, { key, idempotencyKey: idem });
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    expect(resent.body.id).toBe(opId);
    const done = await pollOperation(api.url, key, opId, 90_000);
    expect(done).toMatchObject({ status: 'succeeded', result: { id: lease.id } });
    const source = (await readSource(s.row)).lease.find((l) => l.x_id === lease.x_id)!;
    expect(source.rent_amount).toEqual({ amount: 777_700, currency: 'USD' });
  }, 150_000);

  it('an Operation nobody resends is started by the sweeper', async () => {
    const property = (await getJson(api.url, '/v1/properties?limit=1', key)).body.results[0];
    await procs.kill(server);
    const number = `SW-${Date.now() % 100000}`;
    const r = await write(api.url, 'POST', '/v1/units', { property_id: property.id, unit_number: number }, { key });
    expect(r.status).toBe(502);
    const opId = /opr_[0-9A-Z]{26}/.exec(r.body.detail)![0];
    expect(r.body.operation_id).toBe(opId);
    await restartTemporal();
    // What the sweeper's schedule runs every minute (started here at once, and for Operations of any age).
    const swept = await ctl.client.workflow.execute(sweepWrites, {
      taskQueue: writeTaskQueueOf(taskQueue),
      workflowId: `sweep-${randomUUID()}`,
      args: [{ olderThanMs: 0 }],
    });
    expect(swept.started).toBeGreaterThanOrEqual(1);
    expect((await getOperation(db, opId))!.workflowStartedAt).not.toBeNull();
    const done = await pollOperation(api.url, key, opId, 90_000);
    expect(done.status).toBe('succeeded');
    expect((await readSource(s.row)).unit.filter((u) => u.unit_number === number)).toHaveLength(1);
  }, 150_000);
});

describe('the worker killed mid-operation', () => {
  it('while the source applies a create: the next worker looks it up, and the Operation succeeds with one record', async () => {
    const property = (await getJson(api.url, '/v1/properties?limit=1', key)).body.results[0];
    // The source applies at once and answers after 8 s: the worker dies while waiting for the answer.
    await sandbox().setFault(s.companyId, { kind: 'slow', delay_ms: 8_000, count: 1, methods: 'writes' });
    const number = `K-${Date.now() % 100000}`;
    const r = await write(api.url, 'POST', '/v1/units', { property_id: property.id, unit_number: number, bedrooms: 3 }, { key });
    expect(r.status).toBe(202);
    await until('the source to hold the unit', async () => ((await readSource(s.row)).unit.some((u) => u.unit_number === number) ? true : undefined));
    await procs.kill(worker);
    worker = startWorker();
    const done = await pollOperation(api.url, key, r.body.id, 90_000);
    expect(done).toMatchObject({ status: 'succeeded', reconcile: { attempts: 2 } });
    const units = (await readSource(s.row)).unit.filter((u) => u.unit_number === number);
    expect(units).toHaveLength(1);
    expect(done.resource.x_id).toBe(units[0]!.x_id);
    const cached = (await getJson(api.url, `/v1/units/${done.result.id}`, key)).body;
    expect(cached).toMatchObject({ unit_number: number, bedrooms: 3 });
    await sandbox().clearFaults(s.companyId);
  }, 120_000);
});
