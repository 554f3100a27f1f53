/**
 * `npm run bench:export`: an automation exporting every lease of an integration (no filters) as CSV to an HTTP
 * destination, against a floor measured in the same run: Postgres writing the CSV of the same rows itself,
 * `COPY (<the export's list query>) TO STDOUT WITH (FORMAT csv, HEADER)`, streamed into a PUT to the same destination.
 *
 * Each part is a process of its own: a Temporal dev server, the worker (worker/main.ts as the service runs it,
 * SERVED_MODES=test, WEBHOOK_RELAY=false, WORKER_RECONCILE_SCHEDULES=false), the destination
 * (bench/lib/export-destination.ts: consumes each body as it arrives, counts its bytes and CSV records, checks their
 * field counts and digests their first field) and the floor (bench/lib/export-floor.ts). The cache is a fresh
 * database holding one test-mode integration of `--leases` leases with their properties, units, residents and lease
 * residents, written with COPY (bench/lib/export-data.ts, values with commas, quotes, newlines and non-ASCII), and a
 * second integration of the same organization (400 leases) that the export must leave out.
 *
 * First a warm-up export of the first tenth of the leases (a `created_before` filter) on the fresh worker, which also
 * shows its memory at a tenth of the rows; then `--runs` rounds, each the floor then the export of every lease. An
 * export is started with startAutomationRun (one attempt: a failure is not retried) and awaited through its workflow. Rows/s are timed at the destination from the request's
 * arrival to its last body byte (both writers send the request's headers before their first query); end to end is
 * also printed (start call → workflow result). The worker's RSS is sampled every 100 ms: idle (2 s before each
 * export) and its peak during it. Last, where an export's time goes: its reading alone (the rows through the worker's
 * postgres.js client; streamRecords into API records), timed in the floor process with nothing sent.
 *
 * Checks, before any figure is printed (a failure exits 1): every body, export's and floor's, arrived whole with
 * exactly `--leases` data rows and a header, every record as many fields as the header, and the first field of its
 * rows (the lease id) in the order and set the database gives for the integration's live leases (created_at, id);
 * every run ended `succeeded` after one attempt with records_exported = `--leases`, and its workflow said the same.
 * Usage: npm run bench:export [-- --leases 100000 --runs 3]   (`--leases 4000 --runs 1`: to try it)
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { loadConfigOrExit } from '../config';
import { automationControlOf, startAutomationRun } from '../control/automations';
import { closeDb, createDb } from '../db/client';
import { getRun, insertAutomation, type AutomationRow } from '../db/automations';
import { listQuery, sqlOf } from '../db/queries';
import { createIntegration, createOrganization } from '../db/tenants';
import { csvColumns } from '../domain/automations';
import { automationRunWorkflowIdOf, automationTaskQueueOf } from '../domain/contract';
import { createKeyring } from '../domain/secrets';
import type { runAutomation } from '../workflows/automation';
import { SHAPES } from './lib/copy';
import { loadExportData } from './lib/export-data';
import type { Received } from './lib/export-destination';
import type { ExportFloorCommand, ExportFloorResult } from './lib/export-floor';
import { atInterrupt, childPids, cpuMeter, freshDatabase, loadAverage, peakRssMb, rssSampler, startChild, startTemporal, waitForPollers, type Child } from './lib/processes';
import { sizeOf } from './lib/seed';
import { CheckFailed, int, secs, settle, spread, startWorker } from './lib/sync-harness';

const { values: args } = parseArgs({
  options: {
    leases: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
  },
});
const LEASES = Number(args.leases);
const RUNS = Number(args.runs);
const OTHER_LEASES = 400;
const TASK_QUEUE = 'bench-export';
const AUTOMATION_QUEUE = automationTaskQueueOf(TASK_QUEUE);
/** The worker's memory may grow by less than this over its idle RSS while it exports, whatever the row count. */
const MAX_GROWTH_MB = 100;
/** A run or a floor not done this long after its start is an error. */
const RUN_TIMEOUT_MS = 5 * 60_000;

const say = (msg: string) => console.log(`[bench:export] ${msg}`);
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Delivery {
  /** Destination: request arrival → last body byte, ms. */
  ms: number;
  /** The writer's own: start call → workflow result (export), request opened → answer read (floor). */
  endToEndMs: number;
  received: Received;
  cpu: Record<string, number>;
}

interface ExportRun extends Delivery {
  runId: string;
  rows: number;
  /** The run row's started_at → finished_at. */
  rowMs: number;
  idleMb: number;
  peakMb: number;
}

/** A SQL literal of a parameter value (COPY takes no parameters): text, a number, or a list as an array literal. */
function literal(v: unknown): string {
  if (Array.isArray(v)) return literal(`{${v.map((x) => `"${String(x).replace(/["\\]/g, (ch) => `\\${ch}`)}"`).join(',')}}`);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
  throw new Error(`no literal for ${JSON.stringify(v)}`);
}

/**
 * The floor's query: the list query an export of these filters pages through (db/queries.ts listQuery: the same
 * columns, conditions and order as streamRecords' batches, whose keyset condition and batch limit it lacks), without
 * its page, with its values written in.
 */
function floorQuery(db: ReturnType<typeof createDb>, principal: { organizationId: string; mode: 'test' }, integrationId: string): string {
  const { text, params } = sqlOf(listQuery(db, 'lease', principal, { limit: 1, offset: 0, integration_id: [integrationId] }));
  const page = / limit \$\d+ offset \$\d+$/.exec(text);
  if (!page) throw new Error(`the list query does not end with its page: ${text}`);
  return text.slice(0, page.index).replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1]));
}

async function main() {
  const began = Date.now();
  if (!(Number.isInteger(RUNS) && RUNS >= 1)) throw new Error('--runs must be a positive integer');
  const size = sizeOf(LEASES);
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  const cfg = loadConfigOrExit();
  const databaseUrl = await freshDatabase(cfg.DATABASE_URL, 'bench_export');
  const env = await startTemporal();
  atInterrupt(() => env.teardown());
  const client = env.client;
  const temporalAddress = env.connection.options.address;
  const db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench', statementTimeoutMs: 0 });
  const children: Child[] = [];
  try {
    // ---- the cache: one integration of LEASES leases, and another of the same organization the export leaves out
    const keyring = createKeyring(cfg.ENCRYPTION_KEYS);
    const org = await createOrganization(db, { name: 'bench-export' });
    const newIntegration = () =>
      createIntegration(
        db,
        { organizationId: org.id, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' } },
        keyring,
      );
    const integration = await newIntegration();
    const other = await newIntegration();
    const t0 = performance.now();
    const written = await loadExportData(db.$client, { id: integration.id, organizationId: org.id, mode: 'test' }, LEASES);
    await loadExportData(db.$client, { id: other.id, organizationId: org.id, mode: 'test' }, OTHER_LEASES);
    await settle(db);
    say(
      `cache database ${new URL(databaseUrl).pathname.slice(1)} (fresh): ${Object.entries(written)
        .map(([t, n]) => `${int(n)} ${t}`)
        .join(', ')} written with COPY in ${secs(performance.now() - t0)} s, plus another integration of ${OTHER_LEASES} leases`,
    );

    // ---- the processes: destination, floor, worker
    const destination = startChild('bench/lib/export-destination.ts', [], {}, '[destination]', { echo: (l) => !l.startsWith('received ') });
    children.push(destination);
    const [, port] = await destination.line(/^destination listening (\d+)$/);
    const destinationUrl = `http://127.0.0.1:${port}`;
    const floorChild = startChild(
      'bench/lib/export-floor.ts',
      [],
      { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', LOG_PRETTY: 'false' },
      '[floor]',
      { stdin: true, echo: (l) => !l.startsWith('floor-result ') },
    );
    children.push(floorChild);
    await floorChild.line(/^floor ready/, 120_000);
    const worker = await startWorker({ databaseUrl, temporalAddress, client }, TASK_QUEUE, { WEBHOOK_RELAY: 'false' });
    children.push(worker);
    await waitForPollers(client, AUTOMATION_QUEUE, 120_000, worker.pid);
    say(`worker/main.ts pid ${worker.pid} polls ${AUTOMATION_QUEUE} (AUTOMATION_MAX_ACTIVITIES ${cfg.AUTOMATION_MAX_ACTIVITIES}); destination ${destinationUrl}; floor pid ${floorChild.pid}`);

    // ---- what every body must hold: the integration's live lease ids, in the export's order (all, or up to a bound)
    const expected = async (createdBefore?: string) => {
      const [w] = await db.execute<{ n: number; digest: string }>(sql`
        select count(*)::int as n, md5(coalesce(string_agg(id, E'\n' order by created_at, id) || E'\n', '')) as digest
        from leases where integration_id = ${integration.id} and deleted_at is null
          and (${createdBefore ?? null}::timestamptz is null or created_at <= ${createdBefore ?? null}::timestamptz)`);
      return w!;
    };
    const want = await expected();
    if (want.n !== LEASES) throw new CheckFailed(`the integration holds ${want.n} live leases, ${LEASES} were loaded`);
    // The warm-up's bound: the created_at of the lease a tenth of the way in.
    const [tenth] = await db.execute<{ created_at: string }>(
      sql`select created_at::text from leases where integration_id = ${integration.id} order by created_at, id offset ${Math.floor(LEASES / 10)} limit 1`,
    );
    const warmBefore = new Date(tenth!.created_at).toISOString();
    const wantWarm = await expected(warmBefore);
    const query = floorQuery(db, { organizationId: org.id, mode: 'test' }, integration.id);

    // Asked for once the writer is done: the destination prints its line before it answers (lines are kept).
    const received = (path: string) =>
      destination.line(new RegExp(`^received (\\{"path":"${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}".*)$`), 30_000).then(([, json]) => JSON.parse(json!) as Received);
    const databaseName = new URL(databaseUrl).pathname.slice(1);
    const pgPids = async () =>
      (await db.execute<{ pid: number }>(sql`select pid from pg_stat_activity where datname = ${databaseName} and pid <> pg_backend_pid()`)).map((r) => r.pid);
    const problems: string[] = [];
    const check = (label: string, r: Received, w: { n: number; digest: string }, headerFields: number, bom: boolean) => {
      const bad: string[] = [];
      if (!r.complete) bad.push('the body did not arrive whole');
      if (r.records !== w.n + 1) bad.push(`${int(r.records)} records (want ${int(w.n)} rows and a header)`);
      if (r.headerFields !== headerFields) bad.push(`a header of ${r.headerFields} fields (want ${headerFields})`);
      if (r.ragged !== 0) bad.push(`${r.ragged} records whose field count is not the header's`);
      if (r.firstFieldDigest !== w.digest) bad.push(`lease ids (first field) other than the integration's live leases in (created_at, id) order`);
      if (r.bom !== bom) bad.push(bom ? 'no UTF-8 byte order mark' : 'a byte order mark');
      if (bad.length > 0) problems.push(`${label}: ${bad.join('; ')}`);
    };

    // ---- the floor: COPY of the same query into a PUT to the destination
    let floors = 0;
    /** One command to the floor process: its result, and the CPU used meanwhile. */
    const floorCommand = async (cmd: ExportFloorCommand) => {
      const answer = floorChild.line(new RegExp(`^floor-(result|error) ${cmd.id} (.*)$`), RUN_TIMEOUT_MS);
      const meter = await cpuMeter({ floor: () => [floorChild.pid], postgres: pgPids, destination: () => [destination.pid] }).start();
      floorChild.send(JSON.stringify(cmd));
      const [, kind, body] = await answer;
      const cpu = await meter();
      if (kind === 'error') throw new Error(`the floor failed: ${body}`);
      return { result: JSON.parse(body!) as ExportFloorResult, cpu };
    };
    const floorOnce = async (): Promise<Delivery> => {
      const id = `f${++floors}`;
      const path = `/floor/${id}`;
      const { result, cpu } = await floorCommand({ id, kind: 'copy', query, url: `${destinationUrl}${path}` });
      const r = await received(path);
      check(`floor ${id}`, r, want, SHAPES.lease.columns.length, false);
      return { ms: r.lastByteAt! - r.arrivedAt, endToEndMs: result.ms, received: r, cpu };
    };
    /** Part of an export's reading alone, nothing sent (see bench/lib/export-floor.ts). */
    const readOnce = async (part: 'driver' | 'records') => {
      const { result } = await floorCommand({ id: `r${++floors}`, kind: 'read', part, query, principal: { organizationId: org.id, mode: 'test' }, integrationId: integration.id });
      if (result.rows !== LEASES) problems.push(`reading (${part}): ${result.rows} rows, want ${LEASES}`);
      return result.ms;
    };

    // ---- the export: a run of a new automation each round (its own URL), one attempt, awaited through its workflow
    const control = { ...automationControlOf(client, cfg), taskQueue: AUTOMATION_QUEUE, scheduleMs: [0], db };
    const rss = rssSampler(worker.pid);
    let exports = 0;
    const exportOnce = async (filters: Record<string, string>, w: { n: number; digest: string }): Promise<ExportRun> => {
      const n = ++exports;
      const path = `/export/${n}`;
      const automation: AutomationRow = await insertAutomation(db, {
        organizationId: org.id,
        integrationId: integration.id,
        name: `All leases, "bench" ${n}`,
        entity: 'lease',
        filters,
        schedule: { every: 86_400 },
        destination: { type: 'http', url: `${destinationUrl}${path}`, method: 'PUT' },
        destinationHeaders: null,
        status: 'active',
      });
      // Idle: the worker's RSS over 2 s with nothing to do.
      rss.reset();
      await sleep(2_000);
      const idleMb = rss.peakMb();
      rss.reset();
      const meter = await cpuMeter({ worker: () => [worker.pid], postgres: pgPids, destination: () => [destination.pid], temporal: () => childPids('temporal') }).start();
      const t = performance.now();
      const run = await startAutomationRun(control, automation);
      const result = await Promise.race([
        client.workflow.getHandle<typeof runAutomation>(automationRunWorkflowIdOf(run.id)).result(),
        sleep(RUN_TIMEOUT_MS).then(() => Promise.reject(new CheckFailed(`run ${run.id} not done after ${RUN_TIMEOUT_MS / 1000} s`))),
      ]);
      const endToEndMs = performance.now() - t;
      const cpu = await meter();
      const peakMb = rss.peakMb();
      const row = (await getRun(db, run.id))!;
      const label = `export ${n} (run ${run.id})`;
      if (result.status !== 'succeeded' || result.recordsExported !== w.n) problems.push(`${label}: the workflow ended ${result.status} with ${result.recordsExported} records`);
      if (row.status !== 'succeeded' || row.recordsExported !== w.n || row.attempts !== 1) {
        problems.push(`${label}: the run row says ${row.status}, records_exported ${row.recordsExported}, ${row.attempts} attempt(s)${row.error ? `: ${row.error}` : ''}`);
      }
      const r = await received(path);
      check(label, r, w, csvColumns('lease').length, true);
      const rowMs = row.startedAt && row.finishedAt ? row.finishedAt.getTime() - row.startedAt.getTime() : NaN;
      return { runId: run.id, rows: w.n, ms: r.lastByteAt! - r.arrivedAt, endToEndMs, received: r, cpu, rowMs, idleMb, peakMb };
    };

    const rate = (d: Delivery) => LEASES / (d.ms / 1000);
    // Warm-up: the first tenth of the leases, on the fresh worker (its code gets compiled; its memory is compared).
    const warm = await exportOnce({ created_before: warmBefore }, wantWarm);
    say(
      `warm-up export of ${int(warm.rows)} leases (created_before ${warmBefore}): ${int(warm.rows / (warm.ms / 1000))} rows/s; ` +
        `worker RSS ${warm.idleMb} MB idle, ${warm.peakMb} MB peak`,
    );
    const floorRuns: Delivery[] = [];
    const exportRuns: ExportRun[] = [];
    for (let r = 1; r <= RUNS; r++) {
      const f = await floorOnce();
      floorRuns.push(f);
      const e = await exportOnce({}, want);
      exportRuns.push(e);
      say(
        `round ${r}/${RUNS}: floor ${int(rate(f))} rows/s (${secs(f.ms)} s, ${mb(f.received.bytes)} MB); ` +
          `export ${int(rate(e))} rows/s (${secs(e.ms)} s, ${mb(e.received.bytes)} MB; end to end ${secs(e.endToEndMs)} s); worker RSS ${e.idleMb} MB idle, ${e.peakMb} MB peak`,
      );
    }
    rss.stop();
    const hwm = peakRssMb(worker.pid);
    // Where an export's time goes: its reading alone, twice each, the faster kept.
    const driverMs = Math.min(await readOnce('driver'), await readOnce('driver'));
    const recordsMs = Math.min(await readOnce('records'), await readOnce('records'));
    if (problems.length > 0) throw new CheckFailed(`the run is broken:\n  - ${problems.join('\n  - ')}`);

    // ---- figures
    const exportRate = spread(exportRuns.map(rate));
    const floorRate = spread(floorRuns.map(rate));
    const ratio = exportRate.median / floorRate.median;
    const growths = exportRuns.map((e) => e.peakMb - e.idleMb);
    // Against the fresh worker's idle, before the warm-up: the most the worker ever grew while exporting.
    const growth = Math.max(...exportRuns.map((e) => e.peakMb)) - warm.idleMb;
    const mark = (ok: boolean) => (ok ? 'meets target' : 'BELOW TARGET');
    const range = (s: { median: number; min: number; max: number }, f: (x: number) => string) => `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
    const cpuLine = (runs: Delivery[]) => {
      const names = Object.keys(runs[0]!.cpu);
      return `${names.map((k) => `${k} ${spread(runs.map((d) => d.cpu[k]!)).median.toFixed(2)}`).join(', ')} (${spread(
        runs.map((d) => Object.values(d.cpu).reduce((a, s) => a + s, 0) / (d.endToEndMs / 1000)),
      ).median.toFixed(2)} of ${availableParallelism()} CPUs busy)`;
    };
    const e0 = exportRuns[0]!.received;
    const f0 = floorRuns[0]!.received;
    console.log('');
    console.log(
      `  ${int(LEASES)} leases of one test-mode integration (with ${int(size.properties)} properties, ${int(size.units)} units, ${int(size.residents)} residents, ` +
        `${int(written.lease_residents ?? 0)} lease residents; another integration's ${OTHER_LEASES} leases left out), loaded with COPY; ${RUNS} round(s), the floor then the export`,
    );
    console.log(`  rows/s from the request's arrival to its last byte at the destination: median (min–max) of ${RUNS}`);
    console.log(`    export: automation run on worker/main.ts (no filters)      ${range(exportRate, int)} rows/s; ${range(spread(exportRuns.map((e) => e.ms)), secs)} s`);
    console.log(`    floor:  COPY (the same query) TO STDOUT → PUT              ${range(floorRate, int)} rows/s; ${range(spread(floorRuns.map((f) => f.ms)), secs)} s`);
    console.log(`  export / floor                        ${ratio.toFixed(2)} (target >= 0.5: ${mark(ratio >= 0.5)})`);
    console.log(
      `  export end to end                     ${range(spread(exportRuns.map((e) => e.endToEndMs)), secs)} s from startAutomationRun to the workflow's result ` +
        `(the run row's started_at → finished_at ${range(spread(exportRuns.map((e) => e.rowMs)), secs)} s); floor: ${range(spread(floorRuns.map((f) => f.endToEndMs)), secs)} s from the request opened to the answer read`,
    );
    console.log(
      `  bodies                                export ${mb(e0.bytes)} MB, ${e0.headerFields} columns (UTF-8 BOM, CRLF); floor ${mb(f0.bytes)} MB, ${f0.headerFields} columns (LF): ` +
        `${int(e0.bytes / (LEASES + 1))} and ${int(f0.bytes / (LEASES + 1))} bytes a row`,
    );
    console.log(
      `  worker RSS                            ${warm.idleMb} MB idle on the fresh worker, ${warm.peakMb} MB peak exporting ${int(warm.rows)} leases (+${warm.peakMb - warm.idleMb} MB); ` +
        `then idle ${exportRuns.map((e) => e.idleMb).join(' / ')} MB before each export of ${int(LEASES)}, peak ${exportRuns.map((e) => e.peakMb).join(' / ')} MB during it ` +
        `(+${growths.join(' / +')} MB; VmRSS sampled every 100 ms). Highest peak over the fresh worker's idle: +${growth} MB ` +
        `(target < ${MAX_GROWTH_MB} MB: ${mark(growth < MAX_GROWTH_MB)}); VmHWM ${hwm} MB over the worker's life, start-up (workflow bundling) included`,
    );
    const exportMs = spread(exportRuns.map((e) => e.ms)).median;
    console.log(
      `  where an export's time goes          of its ${secs(exportMs)} s: ${secs(driverMs)} s to read the rows through the worker's postgres.js client alone (the floor's query, ` +
        `cursor batches of 2,000, nothing else), ${secs(recordsMs)} s to read them as streamRecords does (keyset batches of 2,000, their lease residents, ` +
        `decoded into API records), the rest CSV, sending and the run's bookkeeping; reading alone reaches ${(LEASES / (driverMs / 1000) / floorRate.median).toFixed(2)} of the floor's rate ` +
        `(faster of 2 runs each, in the floor process)`,
    );
    console.log(`  CPU seconds per body, median (user + system, from /proc)`);
    console.log(`    export: ${cpuLine(exportRuns)}`);
    console.log(`    floor:  ${cpuLine(floorRuns)}`);
    console.log('');
    console.log(`  the floor's query (db/queries.ts listQuery for the export's filters, its page left out and its values written in):`);
    console.log(`    ${query}`);
    console.log(
      '  How close it is: the same rows (the organization, mode, integration and live leases the export reads), the same order (created_at, id) and the',
    );
    console.log(
      "  lease table's columns, in one statement that Postgres turns into CSV itself. The export reads the same rows in keyset batches of 2,000 (each its own",
    );
    console.log(
      "  statement, with a created_at::text order key), plus each batch's lease_residents in a second statement, and in JS decodes every row, builds the API",
    );
    console.log(
      '  record (nested residents and resident_ids, Money objects), JSON-encodes residents, resident_ids and custom_data, splits Money into amount and',
    );
    console.log("  currency, and writes CSV (activities/export.ts csvText); the floor's columns include mode and content_hash, which the export leaves out.");
    console.log('');
    console.log(
      `  checks passed: every body (${RUNS} export(s), ${RUNS} floor(s)) arrived whole with exactly ${int(LEASES)} data rows and a header (the warm-up: ${int(warm.rows)}), ` +
        `every record as many fields as the header, and the lease ids of the integration's live leases in (created_at, id) order (the other integration's left out); ` +
        `every run succeeded after one attempt with records_exported ${int(LEASES)} (the warm-up: ${int(warm.rows)})`,
    );
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await closeDb(db).catch(() => {});
    await env.teardown();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err instanceof CheckFailed ? `\n[bench:export] FAILED: ${err.message}` : err);
    process.exit(1);
  },
);
