/**
 * `npm start`: the whole system on one machine, with prefixed logs.
 *  - without DATABASE_URL: an embedded PostgreSQL, data in DATA_DIR/postgres (scripts/embedded-postgres.ts); a second
 *    start on the same data while one runs refuses (a lock)
 *  - a Temporal dev server with its Web UI (unless TEMPORAL_ADDRESS names an existing one), state in DATA_DIR
 *  - migrations, and the re-encryption of stored secrets that are in plaintext or under an older key
 *  - the sandbox PMS, the worker and the API as child processes
 *  - on an empty database: a demo organization, a test-mode sandbox integration and a test key, printed with a curl line
 *  - the metrics endpoints: METRICS_PORT and WORKER_METRICS_PORT when set, else 9464 and 9465 (or free ports), printed
 * Ctrl-C stops everything, the embedded Postgres last (after its clients). A crashed sandbox, worker or API is started
 * again with a growing delay, and everything stops only on a crash loop (scripts/supervise.ts says the threshold) or
 * when Temporal or Postgres dies (they hold the state the others need).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DEV_ADMIN_TOKEN, loadConfigOrExit, localHostOf, localUrlOf } from '../config';
import { closeDb, createDb } from '../db/client';
import { migrateDatabase } from '../db/migrate';
import { describeReseal } from '../db/secrets';
import { organizationsPage } from '../db/tenants';
import { SEARCH_ATTRIBUTES } from '../domain/contract';
import { createKeyring } from '../domain/secrets';
import { workerProcessEnv } from '../worker/process-env';
import { EmbeddedPostgresError, startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { createRestartTracker, DEFAULT_RESTART_POLICY, describePolicy } from './supervise';
import { startDevServer } from './temporal-dev';
import { TEMPORAL_CLI } from './tools';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Metrics ports when METRICS_PORT / WORKER_METRICS_PORT are unset (when free; else any free port, printed). */
const DEFAULT_METRICS_PORT = 9464;
const DEFAULT_WORKER_METRICS_PORT = 9465;
// A development system serves test-mode keys only, unless told otherwise; serving live then needs secrets of its
// own (the API and worker refuse the development ones, and so does this script, before starting anything).
const liveAsked = Boolean(process.env.SERVED_MODES);
process.env.SERVED_MODES ||= 'test';
const cfg = loadConfigOrExit({ serving: true });
const dataDir = resolve(root, cfg.DATA_DIR);
const children: { name: string; proc: ChildProcess }[] = [];
/** The embedded Postgres (DATABASE_URL unset), once it is starting: stop() waits for it and stops it last. */
let embedded: Promise<EmbeddedPostgres> | undefined;
let databaseUrl = cfg.DATABASE_URL;
let stopping = false;

const COLORS: Record<string, string> = { postgres: '34', temporal: '35', sandbox: '33', worker: '36', api: '32', start: '1' };
function say(name: string, line: string) {
  const color = process.stdout.isTTY ? (COLORS[name] ?? '0') : '';
  const tag = `[${name}]`.padEnd(10);
  process.stdout.write(color ? `\x1b[${color}m${tag}\x1b[0m ${line}\n` : `${tag} ${line}\n`);
}

function spawnChild(name: string, cmd: string, args: string[], env: Record<string, string>, onLine?: (line: string) => void) {
  const proc = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let last = '';
  let portTaken = false;
  for (const stream of [proc.stdout, proc.stderr]) {
    createInterface({ input: stream }).on('line', (l) => {
      // Worth quoting: a line with words, not a pretty log's closing brace nor the "Node.js v20…" under a stack.
      if (/[A-Za-z]{2}/.test(l) && !/^\s*Node\.js v\d/.test(l)) last = l.trim();
      if (l.includes('EADDRINUSE')) portTaken = true;
      onLine?.(l);
      say(name, l);
    });
  }
  const entry = { name, proc };
  children.push(entry);
  proc.on('exit', () => children.splice(children.indexOf(entry), 1));
  return { proc, lastLine: () => last, portTaken: () => portTaken };
}

/**
 * The Temporal dev server, which the others cannot do without: once it serves, its death stops everything. A start
 * that loses a port the server picked at random to another process is made again (scripts/temporal-dev.ts).
 */
async function startTemporal(args: string[], address: string): Promise<void> {
  const launch = () => {
    const lines: string[] = [];
    const { proc } = spawnChild('temporal', TEMPORAL_CLI, args, {}, (line) => {
      lines.push(line);
      if (lines.length > 50) lines.shift();
    });
    return { child: proc, output: () => lines.join('\n') };
  };
  let proc: ChildProcess;
  try {
    proc = await startDevServer(launch, address, { stopped: () => stopping, onRetry: (why) => say('start', why) });
  } catch (err) {
    say('start', `${(err as Error).message.split('\n')[0]}; stopping everything`);
    return stop(1);
  }
  if (stopping) return;
  const stopAll = () => {
    if (stopping) return;
    say('start', `temporal exited (${proc.signalCode ?? proc.exitCode}); stopping everything`);
    void stop(1);
  };
  if (proc.exitCode !== null || proc.signalCode !== null) stopAll();
  else proc.once('exit', stopAll);
}

/**
 * A service process (the sandbox, the worker, the API): when it exits on its own it is started again after a
 * growing delay, with why it stopped (its exit code or signal, and its last line) in the log; a crash loop stops
 * everything.
 */
function supervise(name: string, cmd: string, args: string[], env: Record<string, string> = {}) {
  const tracker = createRestartTracker();
  const launch = () => {
    const startedAt = Date.now();
    const { proc, lastLine, portTaken } = spawnChild(name, cmd, args, env);
    proc.on('exit', (code, signal) => {
      if (stopping) return;
      const upFor = Date.now() - startedAt;
      const why = `${name} exited (${signal ?? `code ${code}`}) after ${Math.round(upFor / 1000)} s${lastLine() ? `; its last line: ${lastLine()}` : ''}`;
      if (portTaken()) {
        // Another program took its port after the check at the start: a restart would meet it again.
        say('start', `${why}`);
        say('start', `${name} could not listen: its port is taken by another program; stopping everything (choose other ports: README, Troubleshooting)`);
        void stop(1);
        return;
      }
      const next = tracker.crashed(Date.now(), upFor);
      if (!next.restart) {
        say('start', `${why}`);
        say(
          'start',
          `${name} crashed ${next.crashes} times within ${DEFAULT_RESTART_POLICY.loopWindowMs / 60_000} min: a crash loop, which a restart will not fix; stopping everything`,
        );
        void stop(1);
        return;
      }
      say('start', `${why}; restarting it in ${next.delayMs / 1000} s (crash ${next.crashes} of ${DEFAULT_RESTART_POLICY.loopCrashes} that make a loop)`);
      const timer = setTimeout(() => {
        if (!stopping) launch();
      }, next.delayMs);
      restarts.add(timer);
    });
  };
  launch();
}
/** Restarts waiting for their delay: a stop cancels them. */
const restarts = new Set<NodeJS.Timeout>();

/** `preferred` when nothing listens on it on 127.0.0.1, else a free port (a second system, a test run). */
async function portOr(preferred: number): Promise<number> {
  if (!(await portOpen('127.0.0.1', preferred))) return preferred;
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

async function stop(code: number) {
  if (stopping) return;
  stopping = true;
  for (const t of restarts) clearTimeout(t);
  for (const { proc } of [...children].reverse()) proc.kill('SIGTERM');
  const deadline = Date.now() + 10_000;
  while (children.some((c) => c.proc.exitCode === null && c.proc.signalCode === null) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const { proc } of children) if (proc.exitCode === null) proc.kill('SIGKILL');
  // Postgres last, once its clients are gone: a fast shutdown, then its lock is released.
  const pg = await embedded?.catch(() => undefined);
  await pg?.stop();
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
// A closed terminal: the embedded Postgres, in a process group of its own, would otherwise outlive it.
process.on('SIGHUP', () => {
  // The terminal is gone: writing to it fails (EIO), which must not end this process before Postgres is stopped.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  void stop(0);
});

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (stopping) return;
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  say('start', `${what} did not come up within ${timeoutMs / 1000}s`);
  await stop(1);
}

/**
 * The dev server's state file. One per port, so that a second system started on other ports (another checkout, an
 * audit, a demo) neither fights over the file with the first nor inherits its schedules; the default port keeps the
 * historical name.
 */
function temporalDbFile(port: number): string {
  return join(dataDir, port === 7233 ? 'temporal.db' : `temporal-${port}.db`);
}

/**
 * The embedded PostgreSQL, in a process group of its own so that a Ctrl-C reaches it only through stop(), after its
 * clients. As root it runs as an unprivileged user (the data directory's owner, or propsync-pg, created if missing).
 */
async function startPostgres(): Promise<void> {
  const pgDir = join(dataDir, 'postgres');
  embedded = startEmbeddedPostgres({ dataDir: pgDir, port: cfg.EMBEDDED_PG_PORT, detached: true, log: (l) => say('postgres', l) });
  const pg = await embedded;
  pg.process.on('exit', (code, signal) => {
    if (stopping) return;
    say('start', `postgres exited (${signal ?? code}); stopping everything`);
    void stop(1);
  });
  databaseUrl = pg.url('propsync');
  const psql = spawnSync('psql', ['--version']).error
    ? '  (psql is not installed: it comes with the PostgreSQL client, e.g. apt-get install postgresql-client)'
    : '';
  say('start', `embedded PostgreSQL ${pg.created ? 'created' : 'reused'}: data in ${pgDir} (server runs as OS user ${pg.osUser}), port ${pg.port}`);
  say('start', `  DATABASE_URL=${databaseUrl}`);
  say('start', `  psql "${databaseUrl}"${psql}`);
}

/**
 * The ports this start will listen on that another program holds already, each with the variable that moves it.
 * Checked before anything but the embedded Postgres starts: a second system on the same ports would otherwise have its API fail to listen
 * while the first one answered its readiness check (and got its demo organization), or would adopt the first one's
 * Temporal server for a database of its own. The metrics ports count only when set (unset, free ones are taken).
 */
async function takenPorts(): Promise<string[]> {
  type Wanted = [variable: string, host: string, port: number];
  const wanted: Wanted[] = [
    ['PORT', localHostOf(cfg.HOST), cfg.PORT],
    ['SANDBOX_PORT', localHostOf(cfg.HOST), cfg.SANDBOX_PORT],
  ];
  if (!cfg.TEMPORAL_ADDRESS) wanted.push(['TEMPORAL_PORT', '127.0.0.1', cfg.TEMPORAL_PORT], ['TEMPORAL_UI_PORT', '127.0.0.1', cfg.TEMPORAL_UI_PORT]);
  if (cfg.METRICS_PORT !== undefined) wanted.push(['METRICS_PORT', localHostOf(cfg.METRICS_HOST), cfg.METRICS_PORT]);
  if (cfg.WORKER_METRICS_PORT !== undefined) wanted.push(['WORKER_METRICS_PORT', localHostOf(cfg.METRICS_HOST), cfg.WORKER_METRICS_PORT]);
  const taken: string[] = [];
  for (const [name, host, port] of wanted) if (await portOpen(host, port)) taken.push(`${host}:${port} (${name})`);
  return taken;
}

async function main() {
  // The embedded Postgres first: a second start on the same DATA_DIR is refused by its lock, which names the start
  // that holds it (more use than "the port is taken"); stop() below stops what it started.
  if (!cfg.DATABASE_URL_SET) await startPostgres();
  if (stopping) return;
  const taken = await takenPorts();
  if (taken.length > 0) {
    say('start', `not starting: another program already listens on ${taken.join(', ')}`);
    say('start', '  choose free ports with those variables, or stop what holds them (another npm start?)');
    if (!cfg.TEMPORAL_ADDRESS && taken.some((t) => t.endsWith('(TEMPORAL_PORT)'))) {
      say('start', `  a Temporal server of your own there: set TEMPORAL_ADDRESS=127.0.0.1:${cfg.TEMPORAL_PORT} to use it`);
    }
    return stop(1);
  }

  let temporalAddress = cfg.TEMPORAL_ADDRESS;
  if (!temporalAddress) {
    temporalAddress = `127.0.0.1:${cfg.TEMPORAL_PORT}`;
    mkdirSync(dataDir, { recursive: true });
    await startTemporal(
      [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(cfg.TEMPORAL_PORT),
        '--ui-port',
        String(cfg.TEMPORAL_UI_PORT),
        '--db-filename',
        temporalDbFile(cfg.TEMPORAL_PORT),
        '--namespace',
        cfg.TEMPORAL_NAMESPACE,
        '--log-level',
        'warn',
        '--ui-disable-news-fetch',
        ...SEARCH_ATTRIBUTES.flatMap((sa) => ['--search-attribute', `${sa.name}=Keyword`]),
      ],
      temporalAddress,
    );
    if (stopping) return;
    say('start', `Temporal UI: http://127.0.0.1:${cfg.TEMPORAL_UI_PORT}`);
  }

  const resealed = await migrateDatabase(databaseUrl, { secrets: createKeyring(cfg.ENCRYPTION_KEYS) });
  say('start', 'database migrated');
  say('start', describeReseal(resealed!));
  if (!liveAsked) {
    say(
      'start',
      'serving test-mode keys only; to serve live keys too, set SERVED_MODES=test,live with ADMIN_TOKEN, SANDBOX_CONTROL_TOKEN and ENCRYPTION_KEYS of your own',
    );
  }

  const env = { DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress, LOG_PRETTY: process.env.LOG_PRETTY ?? 'true' };
  const metricsPort = cfg.METRICS_PORT ?? (await portOr(DEFAULT_METRICS_PORT));
  const workerMetricsPort = cfg.WORKER_METRICS_PORT ?? (await portOr(DEFAULT_WORKER_METRICS_PORT));
  const tsx = ['--import', 'tsx'];
  supervise('sandbox', process.execPath, [...tsx, 'sandbox/main.ts'], env);
  supervise('worker', process.execPath, [...tsx, 'worker/main.ts'], {
    ...workerProcessEnv(process.env),
    ...env,
    WORKER_METRICS_PORT: String(workerMetricsPort),
  });
  supervise('api', process.execPath, [...tsx, 'api/main.ts'], { ...env, METRICS_PORT: String(metricsPort) });
  const how = cfg.METRICS_PORT === undefined || cfg.WORKER_METRICS_PORT === undefined ? ' (METRICS_PORT / WORKER_METRICS_PORT choose others)' : '';
  say('start', `metrics: API http://${cfg.METRICS_HOST}:${metricsPort}/metrics, worker http://${cfg.METRICS_HOST}:${workerMetricsPort}/metrics${how}`);
  say('start', `a crashed sandbox, worker or API is restarted: ${describePolicy()}`);

  const base = cfg.PUBLIC_BASE_URL;
  // Its own API, where it listens: PUBLIC_BASE_URL may name another (a shell that exported it for the CLI of a first
  // system), which would then answer the readiness check and get this system's demo organization.
  const own = localUrlOf(cfg.HOST, cfg.PORT);
  await waitFor('the sandbox', () => portOpen(localHostOf(cfg.HOST), cfg.SANDBOX_PORT));
  await waitFor('the API', async () => (await fetch(`${own}/readyz`)).ok, 120_000);
  if (stopping) return;
  await seedDemo(own, base);
}

/** On an empty database: a demo organization with a sandbox integration and a test key, through the admin API. */
async function seedDemo(own: string, base: string) {
  const db = createDb(databaseUrl, { max: 1 });
  const existing = await organizationsPage(db, { limit: 6, offset: 0, order: 'asc' });
  await closeDb(db);
  const admin = async (path: string, body: unknown) => {
    const res = await fetch(`${own}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cfg.ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`POST /admin/v1${path} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };
  if (existing.length > 0) {
    say(
      'start',
      `ready: API ${base}  docs ${base}/docs  console ${base}/console (admin token: ${cfg.ADMIN_TOKEN === DEV_ADMIN_TOKEN ? cfg.ADMIN_TOKEN : 'your ADMIN_TOKEN'})`,
    );
    // Keys are shown once: a restart cannot print the old one, so say how to make another for an organization here.
    say('start', `existing data; organizations (all of them: npm run -s cli -- org list):`);
    for (const o of existing.slice(0, 5)) say('start', `  ${o.id}  ${o.name}`);
    say('start', `a new test key: npm run -s cli -- key create --org ${existing[0]!.id} --mode test`);
    return;
  }
  const org = await admin('/organizations', { name: 'Demo Property Co' });
  const integration = await admin(`/organizations/${org.id}/integrations`, {
    name: 'Demo sandbox',
    mode: 'test',
    plan: 'enterprise',
    source: { type: 'sandbox', size: 200, seed: 42 },
  });
  const key = await admin(`/organizations/${org.id}/api_keys`, { mode: 'test' });
  const lines = [
    '',
    'Demo organization created; its first sync is running (watch it in the Temporal UI).',
    `  organization  ${org.id}`,
    `  integration   ${integration.id} (test mode, sandbox PMS, enterprise plan)`,
    `  test key      ${key.key}   (shown once)`,
    '',
    'Try:',
    `  curl -s -H "Authorization: Bearer ${key.key}" "${base}/v1/leases?status=active&limit=2"`,
    'and a write to an active lease of that list (the source refuses writes to closed leases): 202 with an Operation;',
    'poll GET /v1/operations/<id>, or: npm run -s cli -- operations get <id> --wait',
    `  curl -s -X PATCH -H "Authorization: Bearer ${key.key}" -H "Idempotency-Key: $(node -p 'crypto.randomUUID()')" -H "Content-Type: application/json" \\`,
    `    -d '{"occupants": 2}' "${base}/v1/leases/<an id from the list>"`,
    '',
    `API docs: ${base}/docs   Admin CLI: npm run -s cli -- --help`,
    `Operator console: ${base}/console  (sign in with the admin token: ${cfg.ADMIN_TOKEN === DEV_ADMIN_TOKEN ? cfg.ADMIN_TOKEN : 'your ADMIN_TOKEN'})`,
  ];
  for (const l of lines) say('start', l);
}

main().catch(async (err) => {
  // Another start holds the data, or the embedded Postgres cannot run here: say why, without a stack.
  if (err instanceof EmbeddedPostgresError) say('start', `not starting: ${err.message}`);
  else say('start', `start-up failed: ${(err as Error).stack ?? String(err)}`);
  await stop(1);
});
