/**
 * A worker process killed with SIGKILL in the middle of a sync: another worker process picks the run up from its
 * last committed page, and the run ends with a cache equal to the source and every event exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { triggerSync, type SyncControlDeps } from '../../control/sync';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { getSyncJob, type SyncJobRow } from '../../db/sync-jobs';
import { ENTITIES } from '../../domain/cdm';
import { syncWorkflowIdOf } from '../../domain/contract';
import { testConfig, testDb } from '../support/context';
import { Processes, spawnWorker } from '../support/faults';
import {
  eventsOf,
  expectCacheEqualsSource,
  expectEachChangeOnce,
  expectRecordedOnce,
  readCache,
  sandbox,
  sandboxIntegration,
  type SandboxIntegration,
  until,
} from '../support/sync';

let db: Db;
let config: Config;
let connection: Connection;
let ctl: SyncControlDeps;
const procs = new Processes();

/** `npm run worker`, as a child process on this file's task queue. */
function startWorker(): ChildProcess {
  return spawnWorker(procs, { DATABASE_URL: config.DATABASE_URL, TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS!, TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE });
}

/** Wait until the job has committed at least `records` records, but is not finished. */
async function midRun(jobId: string, records: number): Promise<SyncJobRow> {
  return until(
    `job ${jobId} to pass ${records} records`,
    async () => {
      if (procs.running.size === 0) throw new Error(`no worker is running; the last one said: ${[...procs.stderr.values()].at(-1)}`);
      const job = await getSyncJob(db, jobId);
      if (job?.status !== 'running' && job?.status !== 'queued') throw new Error(`job ended before the kill: ${job?.status}`);
      return job.recordsSeen >= records ? job : undefined;
    },
    90_000,
  );
}

beforeAll(async () => {
  db = testDb(3);
  config = testConfig();
  connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS! });
  ctl = { db, client: new Client({ connection }), taskQueue: config.TEMPORAL_TASK_QUEUE };
});
afterAll(async () => {
  await procs.killAll();
  await connection?.close();
  await closeDb(db);
});

describe('a worker killed mid-sync', () => {
  let s: SandboxIntegration;

  it('first sync: the next worker finishes it with the cache equal to the source and one FIRST_SYNC_COMPLETE', async () => {
    s = await sandboxIntegration(db, { size: 600, seed: 21 });
    const first = startWorker();
    const job = await triggerSync(ctl, s.row);
    const at = await midRun(job.id, 300);
    await procs.kill(first);
    startWorker();
    await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
    const done = (await getSyncJob(db, job.id))!;
    const cache = await expectCacheEqualsSource(db, s.row);
    const total = ENTITIES.reduce((n, e) => n + cache[e].length, 0);
    expect(done).toMatchObject({ status: 'succeeded', recordsSeen: total, recordsNew: total });
    expect(at.recordsSeen).toBeLessThan(total);
    expect((await eventsOf(db, s.row.id)).map((e) => e.type)).toEqual(['FIRST_SYNC_COMPLETE']);
  }, 180_000);

  it('a later sync: every change is recorded exactly once, however the kill fell', async () => {
    await sandbox().applyChanges(s.companyId, {
      update: { property: 2, unit: 40, resident: 80, lease: 120 },
      create: { unit: 5, resident: 10, lease: 10 },
      delete: { resident: 5, lease: 5 },
      lease_transitions: 40,
    });
    const before = await readCache(db, s.row.id);
    const job = await triggerSync(ctl, s.row);
    await midRun(job.id, 500);
    for (const child of [...procs.running]) await procs.kill(child);
    startWorker();
    await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
    await expectRecordedOnce(db, s.row, before, job.id);
  }, 180_000);

  it('SIGTERM stops a worker cleanly mid-sync; the run carries on elsewhere with every change recorded once', async () => {
    await sandbox().applyChanges(s.companyId, { update: { unit: 30, resident: 60, lease: 90 }, lease_transitions: 20 });
    const before = await readCache(db, s.row.id);
    const job = await triggerSync(ctl, s.row);
    await midRun(job.id, 400);
    const [worker] = [...procs.running];
    const exited = new Promise<number | null>((resolve) => worker!.once('exit', (code) => resolve(code)));
    worker!.kill('SIGTERM');
    // Activities get the shutdown grace period (10 s), then are cancelled and the process exits on its own.
    expect(await exited).toBe(0);
    startWorker();
    await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
    expect((await getSyncJob(db, job.id))!.status).toBe('succeeded');
    await expectEachChangeOnce(db, s.row, before, job.id);
  }, 180_000);
});
