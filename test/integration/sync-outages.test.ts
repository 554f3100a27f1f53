/**
 * Outages in the middle of a later sync, against the real processes: the Temporal server SIGKILLed and restarted on
 * its state file, and Postgres unreachable from the worker for several seconds. Either way the run ends succeeded,
 * the cache equals the source, and every change is recorded exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { triggerSync, type SyncControlDeps } from '../../control/sync';
import { closeDb, type Db } from '../../db/client';
import { getSyncJob, type SyncJobRow } from '../../db/sync-jobs';
import { syncWorkflowIdOf } from '../../domain/contract';
import { testDb } from '../support/context';
import { freePort, Processes, startTemporal, spawnWorker, TcpProxy } from '../support/faults';
import { expectRecordedOnce, readCache, sandbox, sandboxIntegration, until } from '../support/sync';

const procs = new Processes();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let db: Db;

beforeAll(() => {
  db = testDb(3);
});
afterAll(async () => {
  await procs.killAll();
  await closeDb(db);
});

/** The changes every later run here has to carry: updates, creations, deletions and lease transitions. */
const CHANGES = {
  update: { property: 2, unit: 40, resident: 80, lease: 120 },
  create: { unit: 5, resident: 10, lease: 10 },
  delete: { resident: 5, lease: 5 },
  lease_transitions: 40,
};

/** Wait until the job has committed at least `records` records and is still going. */
async function midRun(jobId: string, records: number, alive: () => void): Promise<SyncJobRow> {
  return until(
    `job ${jobId} to pass ${records} records`,
    async () => {
      alive();
      const job = await getSyncJob(db, jobId);
      if (job?.status !== 'running' && job?.status !== 'queued') throw new Error(`job ended before the outage: ${job?.status}`);
      return job.recordsSeen >= records ? job : undefined;
    },
    40_000,
  );
}

/** Wait for the job to end (read from the database, which stays up while Temporal is away). */
async function ended(jobId: string, alive: () => void, timeoutMs = 60_000): Promise<SyncJobRow> {
  return until(
    `job ${jobId} to end`,
    async () => {
      alive();
      const job = await getSyncJob(db, jobId);
      return job && job.status !== 'running' && job.status !== 'queued' ? job : undefined;
    },
    timeoutMs,
  );
}

/**
 * A company of 600 leases synced once and then changed (CHANGES), and a later run of it caught past its 500th record,
 * where the outage strikes. `carriedOn()` waits for that run to end, checks that it succeeded with the cache equal to
 * the source and each change recorded once (SYNC_COMPLETE last), and returns the job as it ended.
 */
async function laterRunUnderWay(ctl: SyncControlDeps, seed: number, alive: () => void) {
  const s = await sandboxIntegration(db, { size: 600, seed });
  const first = await triggerSync(ctl, s.row);
  expect((await ended(first.id, alive)).status).toBe('succeeded');
  await sandbox().applyChanges(s.companyId, CHANGES);
  const before = await readCache(db, s.row.id);

  const job = await triggerSync(ctl, s.row);
  const at = await midRun(job.id, 500, alive);
  const carriedOn = async (): Promise<SyncJobRow> => {
    await ended(job.id, alive);
    await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
    await expectRecordedOnce(db, s.row, before, job.id);
    return (await getSyncJob(db, job.id))!;
  };
  return { job, at, carriedOn };
}

describe('the Temporal server restarts mid-sync', () => {
  const dbFile = join(tmpdir(), `propsync-outage-${randomUUID()}.sqlite`);
  let port: number;
  let address: string;
  let server: ChildProcess;
  let connection: Connection;
  let ctl: SyncControlDeps;
  const workers = new Set<ReturnType<typeof spawnWorker>>();
  const alive = () => {
    for (const w of workers) if (!procs.running.has(w)) throw new Error(`the worker exited: ${procs.stderr.get(w)}`);
  };

  beforeAll(async () => {
    port = await freePort();
    address = `127.0.0.1:${port}`;
    server = await startTemporal(procs, port, dbFile);
    connection = await Connection.connect({ address });
    ctl = { db, client: new Client({ connection }), taskQueue: `test-${randomUUID()}` };
    workers.add(spawnWorker(procs, { DATABASE_URL: inject('databaseUrl'), TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: ctl.taskQueue }));
  });
  afterAll(async () => {
    await procs.killAll();
    await connection?.close();
    for (const f of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`]) rmSync(f, { force: true });
  });

  it('a later run carries on after the restart: cache equal to the source, every change once', async () => {
    const { at, carriedOn } = await laterRunUnderWay(ctl, 31, alive);
    await procs.kill(server);
    // The worker keeps running without its server; its heartbeats and completions fail meanwhile. The sleep is the
    // outage's length, not an absence proof: what the run did is checked once it has ended.
    await sleep(4_000);
    server = await startTemporal(procs, port, dbFile);

    expect(at.recordsSeen).toBeLessThan((await carriedOn()).recordsSeen);
  }, 120_000);
});

describe('Postgres unreachable from the worker mid-sync', () => {
  const proxy = new TcpProxy(postgresTarget());
  let connection: Connection;
  let ctl: SyncControlDeps;
  let worker: ReturnType<typeof spawnWorker>;
  const alive = () => {
    if (!procs.running.has(worker)) throw new Error(`the worker exited: ${procs.stderr.get(worker)}`);
  };

  beforeAll(async () => {
    await proxy.start();
    connection = await Connection.connect({ address: inject('temporalAddress') });
    ctl = { db, client: new Client({ connection }), taskQueue: `test-${randomUUID()}` };
    const url = new URL(inject('databaseUrl'));
    url.host = `127.0.0.1:${proxy.port}`;
    worker = spawnWorker(procs, { DATABASE_URL: url.toString(), TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: ctl.taskQueue });
  });
  afterAll(async () => {
    await procs.kill(worker);
    await proxy.cut();
    await connection?.close();
  });

  it('a later run carries on once the database is back: cache equal to the source, every change once', async () => {
    const { job, at, carriedOn } = await laterRunUnderWay(ctl, 32, alive);
    expect(proxy.connections).toBeGreaterThan(0);
    await proxy.cut();
    // The outage's length, not an absence proof: the worker cannot write while cut off, and the run is checked at its end.
    await sleep(6_000);
    const during = (await getSyncJob(db, job.id))!;
    await proxy.start();

    const final = await carriedOn();
    // Nothing moved while the worker could not reach the database, and the run went on afterwards.
    expect(during.status).toBe('running');
    expect(during.recordsSeen).toBeLessThan(final.recordsSeen);
    expect(at.recordsSeen).toBeLessThanOrEqual(during.recordsSeen);
  }, 120_000);
});

function postgresTarget(): { host: string; port: number } {
  const url = new URL(inject('databaseUrl'));
  return { host: url.hostname, port: Number(url.port || 5432) };
}
