/**
 * A worker process killed with SIGKILL in the middle of a sync: another worker process picks the run up from its
 * last committed page, and the run ends with a cache equal to the source and every event exactly once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { triggerSync, type SyncControlDeps } from '../../control/sync';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { getSyncJob, type SyncJobRow } from '../../db/sync-jobs';
import { ENTITIES } from '../../domain/cdm';
import { syncWorkflowIdOf } from '../../domain/contract';
import { testConfig, testDb } from '../support/context';
import { eventsOf, expectCacheEqualsSource, expectedEvents, readCache, sandbox, sandboxIntegration, until, type SandboxIntegration } from '../support/sync';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let db: Db;
let config: Config;
let connection: Connection;
let ctl: SyncControlDeps;
const children = new Set<ChildProcess>();
let lastStderr = '';

/** `npm run worker`, as a child process on this file's task queue. */
function spawnWorker(): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: config.DATABASE_URL,
      TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
      // This database is shared with other test files whose schedules point at their own task queues.
      WORKER_RECONCILE_SCHEDULES: 'false',
      // An unscoped relay would take other files' events (this database is shared) and deliver them from this
      // worker's webhook queue, out of their order and on the default retry schedule.
      WORKER_ROLES: 'sync,webhooks,writes,automations',
      // Test keys only: serving live would need secrets of its own.
      SERVED_MODES: 'test',
      SYNC_PAGE_SIZE: '25',
      DB_POOL_MAX: '3',
      LOG_LEVEL: 'warn',
      LOG_PRETTY: 'false',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  child.on('exit', () => {
    children.delete(child);
    lastStderr = stderr;
  });
  children.add(child);
  return child;
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Wait until the job has committed at least `records` records, but is not finished. */
async function midRun(jobId: string, records: number): Promise<SyncJobRow> {
  return until(
    `job ${jobId} to pass ${records} records`,
    async () => {
      if (children.size === 0) throw new Error(`no worker is running; the last one said: ${lastStderr}`);
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
  await Promise.all([...children].map(kill));
  await connection?.close();
  await closeDb(db);
});

describe('a worker killed mid-sync', () => {
  let s: SandboxIntegration;

  it('first sync: the next worker finishes it with the cache equal to the source and one FIRST_SYNC_COMPLETE', async () => {
    s = await sandboxIntegration(db, { size: 600, seed: 21 });
    const first = spawnWorker();
    const job = await triggerSync(ctl, s.row);
    const at = await midRun(job.id, 300);
    await kill(first);
    spawnWorker();
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
    for (const child of [...children]) await kill(child);
    spawnWorker();
    await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
    const done = (await getSyncJob(db, job.id))!;
    expect(done.status).toBe('succeeded');
    const after = await expectCacheEqualsSource(db, s.row);
    const want = expectedEvents(before, after);
    const got = await eventsOf(db, s.row.id, job.id);
    const key = (e: { type: string; recordId: string | null }) => `${e.type} ${e.recordId}`;
    expect(
      got
        .filter((e) => e.type !== 'SYNC_COMPLETE')
        .map(key)
        .sort(),
    ).toEqual(want.events.map(key).sort());
    expect(got.filter((e) => e.type === 'SYNC_COMPLETE')).toHaveLength(1);
    expect(got.at(-1)!.type).toBe('SYNC_COMPLETE');
    expect(done).toMatchObject({ recordsNew: want.created, recordsUpdated: want.updated, recordsSoftDeleted: want.deleted });
    expect(done.recordsSeen).toBe(ENTITIES.reduce((n, e) => n + after[e].filter((r) => r.deleted_at === null).length, 0));
    expect(want.events.length).toBeGreaterThan(200);
  }, 180_000);

  it('SIGTERM stops a worker cleanly mid-sync; the run carries on elsewhere with every change recorded once', async () => {
    await sandbox().applyChanges(s.companyId, { update: { unit: 30, resident: 60, lease: 90 }, lease_transitions: 20 });
    const before = await readCache(db, s.row.id);
    const job = await triggerSync(ctl, s.row);
    await midRun(job.id, 400);
    const [worker] = [...children];
    const exited = new Promise<number | null>((resolve) => worker!.once('exit', (code) => resolve(code)));
    worker!.kill('SIGTERM');
    // Activities get the shutdown grace period (10 s), then are cancelled and the process exits on its own.
    expect(await exited).toBe(0);
    spawnWorker();
    await ctl.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result();
    expect((await getSyncJob(db, job.id))!.status).toBe('succeeded');
    const after = await expectCacheEqualsSource(db, s.row);
    const want = expectedEvents(before, after);
    const got = await eventsOf(db, s.row.id, job.id);
    const key = (e: { type: string; recordId: string | null }) => `${e.type} ${e.recordId}`;
    expect(
      got
        .filter((e) => e.type !== 'SYNC_COMPLETE')
        .map(key)
        .sort(),
    ).toEqual(want.events.map(key).sort());
    expect(got.filter((e) => e.type === 'SYNC_COMPLETE')).toHaveLength(1);
  }, 180_000);
});
