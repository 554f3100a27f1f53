/**
 * `npm start` supervises its processes: the worker killed with SIGKILL in the middle of a sync is started again (the
 * log says why and when), and the sync it was running finishes, with the API and sandbox untouched. The system runs on
 * the test database and Temporal server (DATABASE_URL and TEMPORAL_ADDRESS set: no embedded Postgres, no dev server)
 * with a task queue, ports and metrics ports of its own.
 */
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it, inject } from 'vitest';
import type { Db } from '../../db/client';
import { getSyncJob } from '../../db/sync-jobs';
import { makeTenant, testDb } from '../support/context';
import { descendants, freePort, Processes } from '../support/faults';
import { scrape } from '../support/metrics';
import { sandbox, sandboxIntegration, until } from '../support/sync';

const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));
const ADMIN = 'supervise-test-admin-token-0123456789';
const procs = new Processes();
let db: Db;
let run: { child: ChildProcess; output: () => string };
let ports: { api: number; sandbox: number; metrics: number; workerMetrics: number };

/** The live processes under `pid` (at any depth: tsx runs start.ts in a child of its own) running `script`. */
function descendantsRunning(pid: number, script: string): number[] {
  return descendants(pid).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(script);
    } catch {
      return false;
    }
  });
}

beforeAll(async () => {
  db = testDb();
  // npm start seeds a demo organization into a database that has none: there is one (the test files share it).
  await makeTenant(db);
  ports = { api: await freePort(), sandbox: await freePort(), metrics: await freePort(), workerMetrics: await freePort() };
  run = procs.spawnLogged(process.execPath, [TSX, 'scripts/start.ts'], {
    ...process.env,
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    PORT: String(ports.api),
    PUBLIC_BASE_URL: `http://127.0.0.1:${ports.api}`,
    SANDBOX_PORT: String(ports.sandbox),
    SANDBOX_URL: inject('sandboxUrl'),
    SANDBOX_CONTROL_TOKEN: inject('sandboxControlToken'),
    METRICS_PORT: String(ports.metrics),
    WORKER_METRICS_PORT: String(ports.workerMetrics),
    ADMIN_TOKEN: ADMIN,
    // The test database is shared: no schedules of other files' integrations, no relay of their events.
    WORKER_RECONCILE_SCHEDULES: 'false',
    WORKER_ROLES: 'sync,webhooks,writes,automations',
    SYNC_PAGE_SIZE: '5',
    SYNC_RETRY_INITIAL_MS: '200',
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
  });
  await until(
    'npm start to be ready',
    async () => {
      if (!procs.running.has(run.child)) throw new Error(`npm start exited:\n${run.output()}`);
      return /ready: API|Operator console: /.test(run.output()) || undefined;
    },
    150_000,
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; its output:\n${run.output().slice(-6000)}`);
  });
}, 180_000);

afterAll(async () => {
  if (run && procs.running.has(run.child)) {
    const exited = new Promise((resolve) => run.child.once('exit', resolve));
    run.child.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
  }
  await procs.killAll();
});

it('restarts a killed worker with a growing delay and says why; the sync in flight finishes', async () => {
  expect(run.output()).toContain(`metrics: API http://127.0.0.1:${ports.metrics}/metrics, worker http://127.0.0.1:${ports.workerMetrics}/metrics`);
  const integration = await sandboxIntegration(db, { size: 30 });
  // Every source page takes 150 ms: the run lasts long enough to be caught in the middle.
  await sandbox().setFault(integration.companyId, { kind: 'slow', delay_ms: 150, methods: 'reads' });
  const res = await fetch(`http://127.0.0.1:${ports.api}/admin/v1/integrations/${integration.row.id}/syncs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  expect(res.status).toBe(202);
  const job = (await res.json()) as { id: string };
  await until('the run to be under way', async () => ((await getSyncJob(db, job.id))!.recordsSeen > 0 ? true : undefined), 60_000);

  const [worker] = descendantsRunning(run.child.pid!, 'worker/main.ts');
  expect(worker).toBeDefined();
  process.kill(worker!, 'SIGKILL');
  expect((await getSyncJob(db, job.id))!.status, 'the run was killed in the middle').toBe('running');
  await until('the restart to be logged', async () => (/\[worker\] *exited|worker exited \(SIGKILL\)/.test(run.output()) ? true : undefined), 15_000);
  expect(run.output()).toMatch(/worker exited \(SIGKILL\) after \d+ s.*; restarting it in 1 s \(crash 1 of 5/);

  const ended = await until(
    'the run to finish',
    async () => {
      const j = (await getSyncJob(db, job.id))!;
      return j.status === 'succeeded' || j.status === 'failed' ? j : undefined;
    },
    120_000,
  );
  expect(ended.status).toBe('succeeded');
  await sandbox().clearFaults(integration.companyId);
  // A new worker process (its metrics endpoint answers again), and the API and the sandbox were never restarted.
  const [again] = descendantsRunning(run.child.pid!, 'worker/main.ts');
  expect(again).toBeDefined();
  expect(again).not.toBe(worker);
  expect((await scrape(`http://127.0.0.1:${ports.workerMetrics}/metrics`)).value('process_resident_memory_bytes')).toBeGreaterThan(0);
  expect(run.output()).not.toMatch(/(api|sandbox) exited/);
  expect(procs.running.has(run.child)).toBe(true);
}, 240_000);
