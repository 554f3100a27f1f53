/**
 * `npm start` on a machine with no Postgres: with DATABASE_URL unset, `tsx scripts/start.ts` (npm start without its
 * ensure step) runs an embedded PostgreSQL in DATA_DIR (here an empty temporary directory, on ports of its own),
 * serves the demo key's leases, refuses a second start while it runs, stops every process it started on SIGINT (and
 * on SIGHUP, a closed terminal), the embedded Postgres included, and finds the same organization on the next start.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { descendants, freePort, Processes } from '../support/faults';
import { until } from '../support/until';
import { DEV_ADMIN_TOKEN } from '../../config';

const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

const procs = new Processes();
let dir: string;
let pgDir: string;
let ports: { pg: number; api: number; sandbox: number; temporal: number; temporalUi: number };
const runs: Run[] = [];

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'propsync-start-'));
  pgDir = join(dir, 'postgres');
  ports = { pg: await freePort(), api: await freePort(), sandbox: await freePort(), temporal: await freePort(), temporalUi: await freePort() };
});

afterAll(async () => {
  // A failed test may leave a system running: stop it as a user would, then kill whatever is left.
  for (const run of runs) {
    if (run.child.exitCode === null && run.child.signalCode === null) {
      const tree = descendants(run.child.pid!);
      run.child.kill('SIGINT');
      if ((await within(run.exited, 30_000)) === 'timeout') for (const pid of [run.child.pid!, ...tree]) kill(pid, 'SIGKILL');
    }
  }
  await procs.killAll();
  const orphan = postmasterPid();
  if (orphan !== undefined) kill(orphan, 'SIGQUIT');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the README's "first ten minutes" block (between its first-ten-minutes markers) with bash, as a reader pastes
 * it: the key and integration id filled in, the API at this test's port, the receiver on a free port. Then checks
 * what the reader is told to look for: verified LEASE_UPDATED and SYNC_COMPLETE events at the receiver, and the
 * write's Operation succeeded (`operations get --wait` exits 1 otherwise, and `set -e` stops the block).
 */
async function firstTenMinutes(key: string, integrationId: string): Promise<void> {
  const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
  const block = readme.match(/<!-- first-ten-minutes -->\s*```bash\n([\s\S]*?)```\s*<!-- \/first-ten-minutes -->/)?.[1];
  expect(block, 'the README has its first-ten-minutes block').toBeDefined();
  // The first sync must be over before the block's own sync run (two runs of one integration never overlap).
  const base = `http://127.0.0.1:${ports.api}`;
  const admin = { authorization: `Bearer ${DEV_ADMIN_TOKEN}` };
  await until(
    'the first sync to succeed',
    async () => {
      const res = await fetch(`${base}/admin/v1/integrations/${integrationId}/sync_jobs`, { headers: admin });
      const jobs = ((await res.json()) as { results: { status: string }[] }).results;
      return jobs.length > 0 && jobs.every((j) => j.status === 'succeeded');
    },
    60_000,
  );
  const receiverPort = await freePort();
  const work = mkdtempSync(join(tmpdir(), 'propsync-readme-'));
  const script = [
    'set -euo pipefail',
    block!
      .replace(/^export KEY=.*$/m, `export KEY=${key}`)
      .replace(/^export INTEGRATION=.*$/m, `export INTEGRATION=${integrationId}`)
      .replace(/^export API=.*$/m, `export API=${base}`)
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`)
      .replace('node examples/receiver.mjs', `RECEIVER_PORT=${receiverPort} node examples/receiver.mjs`)
      .replaceAll('receiver.log', join(work, 'receiver.log')),
  ].join('\n');
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  const result = spawnSync('bash', ['-c', script], {
    cwd: repo,
    env: { ...process.env, PUBLIC_BASE_URL: base, ADMIN_TOKEN: admin.authorization.slice(7), DATABASE_URL: '', TEMPORAL_ADDRESS: '' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  const log = existsSync(join(work, 'receiver.log')) ? readFileSync(join(work, 'receiver.log'), 'utf8') : '';
  rmSync(work, { recursive: true, force: true });
  expect(result.status, `the README block failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
  expect(log).toMatch(/receiver listening/);
  expect(log).toMatch(/^LEASE_UPDATED evt_/m);
  expect(log).toMatch(/^SYNC_COMPLETE evt_/m);
  expect(log).not.toMatch(/bad signature/);
  expect(result.stdout).toMatch(/"status": ?"succeeded"/);
}

/** `npm start` with DATABASE_URL unset and every port and DATA_DIR of this test's own. */
function start(): Run {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['DATABASE_URL', 'TEST_DATABASE_BASE_URL', 'TEMPORAL_ADDRESS', 'PUBLIC_BASE_URL', 'SANDBOX_URL', 'SERVED_MODES', 'TEMPORAL_TASK_QUEUE']) {
    delete env[name];
  }
  const { child, output } = procs.spawnLogged(process.execPath, [TSX, 'scripts/start.ts'], {
    ...env,
    DATA_DIR: dir,
    EMBEDDED_PG_PORT: String(ports.pg),
    PORT: String(ports.api),
    SANDBOX_PORT: String(ports.sandbox),
    TEMPORAL_PORT: String(ports.temporal),
    TEMPORAL_UI_PORT: String(ports.temporalUi),
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const run = { child, output, exited };
  runs.push(run);
  return run;
}

async function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first match of `pattern` in the run's output, waiting for it; fails early when the run exits. */
function waitForOutput(run: Run, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  const tail = () => `its output:\n${run.output().slice(-6000)}`;
  return until(
    `${pattern} in the output of npm start`,
    () => {
      const m = run.output().match(pattern);
      if (m) return m;
      if (run.child.exitCode !== null || run.child.signalCode !== null) throw new Error(`npm start exited; ${tail()}`);
      return undefined;
    },
    { timeoutMs, intervalMs: 250, detail: tail },
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

function postmasterPid(): number | undefined {
  try {
    return Number(readFileSync(join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

async function leases(key: string): Promise<{ status: number; results: unknown[] }> {
  const res = await fetch(`http://127.0.0.1:${ports.api}/v1/leases?limit=5`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { results?: unknown[] };
  return { status: res.status, results: body.results ?? [] };
}

/**
 * SIGINT (what Ctrl-C sends) to `npm start`, or SIGHUP (a closed terminal: sent to the start script itself, since the
 * tsx command in front of it relays only SIGINT and SIGTERM): it exits 0, and every process it started is gone, ports
 * closed, the embedded Postgres (in a process group of its own, which the terminal's SIGHUP does not reach) included.
 */
async function interrupt(run: Run, signal: 'SIGINT' | 'SIGHUP' = 'SIGINT'): Promise<void> {
  const tree = descendants(run.child.pid!);
  const pg = postmasterPid();
  expect(pg, 'the embedded Postgres is one of the processes npm start runs').toBeDefined();
  expect(tree).toContain(pg);
  if (signal === 'SIGINT') run.child.kill('SIGINT');
  else process.kill(tree.find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('scripts/start.ts'))!, 'SIGHUP');
  expect(await within(run.exited, 45_000)).toBe(0);
  await until(
    'every process npm start ran to be gone (the last answer: those left running)',
    () => tree.filter(alive),
    (left) => left.length === 0,
    5_000,
  );
  for (const [name, port] of Object.entries(ports)) expect(await portOpen(port), `${name} port ${port}`).toBe(false);
  // A clean shutdown removes postmaster.pid; the start's own lock is released.
  expect(existsSync(join(pgDir, 'postmaster.pid'))).toBe(false);
  expect(existsSync(`${pgDir}.lock`)).toBe(false);
}

// Three starts of the whole system (two of them bundle the workflows for their worker) and a first sync: its own,
// long timeout (it takes some 25 s on two cores, more while other files run).
it('runs on an embedded Postgres in an empty DATA_DIR, refuses a second start, stops cleanly and keeps its data', { timeout: 300_000 }, async () => {
  const first = start();
  const [, key] = await waitForOutput(first, /test key\s+(sk_test_\S+)/, 90_000);
  const [, organizationId] = first.output().match(/ organization {2}(\S+)/)!;
  const url = `postgres://postgres@127.0.0.1:${ports.pg}/propsync`;
  expect(first.output()).toContain(`embedded PostgreSQL created: data in ${pgDir}`);
  expect(first.output()).toContain(`psql "${url}"`);

  // The demo key reads its leases once the first sync has run.
  await until(
    'the demo key to read some leases',
    async () => {
      const read = await leases(key!);
      expect(read.status).toBe(200);
      return read.results.length > 0;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );

  // The README's first ten minutes, as written, against this system.
  const [, integrationId] = first.output().match(/ integration {3}(\S+)/)!;
  await firstTenMinutes(key!, integrationId!);

  // A second start on the same data says so and exits non-zero, leaving the first one serving.
  const second = start();
  expect(await within(second.exited, 30_000)).toBe(1);
  expect(second.output()).toMatch(/not starting: another process \(pid \d+: node scripts\/start\.ts\) is running the embedded Postgres of /);
  expect((await leases(key!)).status).toBe(200);

  await interrupt(first);

  // Started again on the same DATA_DIR: the same cluster, organization and key.
  const third = start();
  await waitForOutput(third, /a new test key: npm run -s cli -- key create --org \S+ --mode test/, 90_000);
  expect(third.output()).toContain(`embedded PostgreSQL reused: data in ${pgDir}`);
  expect(third.output()).not.toContain('Demo organization created');
  // A restart cannot show the old key: it names the organization to make a new one for.
  expect(third.output()).toContain(`  ${organizationId}  Demo Property Co`);
  expect(third.output()).toContain(`key create --org ${organizationId} --mode test`);
  const again = await leases(key!);
  expect(again.status).toBe(200);
  expect(again.results.length).toBeGreaterThan(0);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    expect((await sql`select id from organizations`).map((r) => r.id)).toEqual([organizationId]);
  } finally {
    await sql.end();
  }

  await interrupt(third, 'SIGHUP');
});
