/**
 * `npm run bench:export`: an automation exporting every lease of an integration (no filters) as CSV to an HTTP
 * destination, against a floor measured in the same run: Postgres writing the same CSV itself, the export's own
 * `COPY (SELECT …) TO STDOUT` (the same columns, the lease residents joined in, the same order, the same formula
 * escaping), streamed by a bare process into a PUT to the same destination.
 *
 * Each part is a process of its own: a Temporal dev server, the worker (worker/main.ts as the service runs it,
 * SERVED_MODES=test, every role but the relay, WORKER_RECONCILE_SCHEDULES=false), the destination
 * (bench/lib/export-destination.ts: consumes each body as it arrives, counts its bytes and CSV records, checks their
 * field counts, digests their first field and the whole body, keeps the first 64 KiB) and the floor
 * (bench/lib/export-floor.ts). The cache is a fresh database holding one test-mode integration of `--leases` leases
 * with their properties, units, residents and lease residents, written with COPY (bench/lib/export-data.ts, values
 * with commas, quotes, newlines, formulas and non-ASCII), and a second integration of the same organization (400
 * leases) that the export must leave out.
 *
 * First a warm-up export of the first tenth of the leases (a `created_before` filter) on the fresh worker, which also
 * shows its memory at a tenth of the rows; then `--runs` rounds, each the floor then the export of every lease. An
 * export is started with startAutomationRun (one attempt: a failure is not retried) and awaited through its
 * workflow. Rows/s are timed at the destination from the request's arrival to its last body byte (both writers send
 * the request's headers before their COPY); end to end is also printed (start call → workflow result). The worker's
 * RSS is sampled every 100 ms: idle (2 s before each export) and its peak during it.
 *
 * Checks, before any figure is printed (a failure exits 1): every body, export's and floor's, arrived whole with
 * exactly `--leases` data rows and a header, every record as many fields as the header, and the first field of its
 * rows (the lease id) in the order and set the database gives for the integration's live leases (created_at, id);
 * the export's body is the floor's byte for byte (after its byte order mark); its first records, read back, equal
 * what the list API serves for them (every column, formula escaping applied); every run ended `succeeded` after one
 * attempt with records_exported = `--leases`, and its workflow said the same. The last line of the output is one
 * JSON object: `{"bench": "export", "ratios": {"rows_per_s": export / floor}, "rss_mb": {...}, "ok": …}`.
 * Usage: npm run bench:export [-- --leases 100000 --runs 3]   (`--leases 4000 --runs 1`: to try it)
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { sql } from 'drizzle-orm';
import { loadConfigOrExit } from '../config';
import { automationControlOf, startAutomationRun } from '../control/automations';
import { closeDb, createDb } from '../db/client';
import { getRun, insertAutomation, type AutomationRow } from '../db/automations';
import { listRecords } from '../db/queries';
import { createIntegration, createOrganization } from '../db/tenants';
import { csvColumns, MONEY_FIELDS, RECORD_FIELDS } from '../domain/automations';
import { automationRunWorkflowIdOf, automationTaskQueueOf } from '../domain/contract';
import { createKeyring } from '../domain/secrets';
import type { runAutomation } from '../workflows/automation';
import { parse } from 'csv-parse/sync';
import { exportStatementOf } from '../activities/export';
import { benchArgs } from './lib/args';
import { commandsTo } from './lib/commands';
import { loadExportData } from './lib/export-data';
import type { Received } from './lib/export-destination';
import type { ExportFloorCommand, ExportFloorResult } from './lib/export-floor';
import { childPids, cpuMeter, cpuSeconds, freshStack, loadAverage, peakRssMb, rssSampler, startChild, waitForPollers, type Child } from './lib/processes';
import { CheckFailed, endBench, int, secs } from './lib/report';
import { sizeOf } from './lib/seed';
import { spread } from './lib/stats';
import { settle, startWorker } from './lib/sync-harness';

const args = benchArgs({ leases: 100000, runs: 3 });
const OTHER_LEASES = 400;
const TASK_QUEUE = 'bench-export';
const AUTOMATION_QUEUE = automationTaskQueueOf(TASK_QUEUE);
/** The worker's memory may grow by at most this over its idle RSS while it exports, whatever the row count. */
const MAX_GROWTH_MB = 50;
/** Export rows/s over the floor's, at least. */
const MIN_RATIO = 0.8;
/** Records of the export's head read back against the list API. */
const HEAD_RECORDS = 50;
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

/** Fields whose values are objects or arrays: JSON text in the file, compared parsed. */
const JSON_FIELDS = new Set(['address', 'phones', 'media', 'custom_data', 'residents', 'resident_ids']);

/** A lease as the file's cells, spelt out from the API record: Money split, JSON parsed, formulas escaped (OWASP). */
function expectedCells(record: Record<string, unknown>): unknown[] {
  const text = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);
  return RECORD_FIELDS.lease.flatMap((f): unknown[] => {
    const v = record[f];
    if (MONEY_FIELDS.lease.includes(f)) return v ? [String((v as { amount: number }).amount), text((v as { currency: string }).currency)] : [null, null];
    if (v === null || v === undefined) return [null];
    if (typeof v === 'object') return [v];
    return [typeof v === 'string' ? text(v) : String(v)];
  });
}

/**
 * The complete records of a body's head (cut off anywhere), with JSON cells parsed and unquoted empty cells as null:
 * parsed up to its last line end that closes a record (one inside a quoted value leaves a quote open, and fails).
 */
function headCells(head: Buffer): unknown[][] {
  for (let end = head.lastIndexOf(0x0a); end > 0; end = head.lastIndexOf(0x0a, end - 1)) {
    let records: (string | null)[][];
    try {
      records = parse(head.subarray(0, end + 1), { cast: (value: string, ctx: { quoting: boolean }) => (value === '' && !ctx.quoting ? null : value) }) as (
        | string
        | null
      )[][];
    } catch {
      continue;
    }
    const [header, ...rows] = records;
    return rows.map((row) => row.map((cell, i) => (cell !== null && JSON_FIELDS.has(header![i]!) ? (JSON.parse(cell) as unknown) : cell)));
  }
  return [];
}

async function main() {
  const began = Date.now();
  if (!(Number.isInteger(args.runs) && args.runs >= 1)) throw new Error('--runs must be a positive integer');
  const size = sizeOf(args.leases);
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  const cfg = loadConfigOrExit();
  const { databaseUrl, env, client, temporalAddress } = await freshStack(cfg.DATABASE_URL, 'bench_export');
  const db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench', statementTimeoutMs: 0 });
  const children: Child[] = [];
  try {
    // ---- the cache: one integration of args.leases leases, and another of the same organization the export leaves out
    const keyring = createKeyring(cfg.ENCRYPTION_KEYS);
    const org = await createOrganization(db, { name: 'bench-export' });
    const newIntegration = () =>
      createIntegration(
        db,
        {
          organizationId: org.id,
          mode: 'test',
          plan: 'enterprise',
          sourceType: 'sandbox',
          sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' },
        },
        keyring,
      );
    const integration = await newIntegration();
    const other = await newIntegration();
    const t0 = performance.now();
    const written = await loadExportData(db.$client, { id: integration.id, organizationId: org.id, mode: 'test' }, args.leases);
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
    const floorChild = startChild('bench/lib/export-floor.ts', [], { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', LOG_PRETTY: 'false' }, '[floor]', {
      stdin: true,
      echo: (l) => !l.startsWith('floor-result '),
    });
    children.push(floorChild);
    await floorChild.line(/^floor ready/, 120_000);
    const worker = await startWorker({ databaseUrl, temporalAddress, client }, TASK_QUEUE, { WORKER_ROLES: 'sync,webhooks,writes,automations' });
    children.push(worker);
    await waitForPollers(client, AUTOMATION_QUEUE, 120_000, worker.pid);
    say(
      `worker/main.ts pid ${worker.pid} polls ${AUTOMATION_QUEUE} (AUTOMATION_MAX_ACTIVITIES ${cfg.AUTOMATION_MAX_ACTIVITIES}); destination ${destinationUrl}; floor pid ${floorChild.pid}`,
    );

    // ---- what every body must hold: the integration's live lease ids, in the export's order (all, or up to a bound)
    const expected = async (createdBefore?: string) => {
      const [w] = await db.execute<{ n: number; digest: string }>(sql`
        select count(*)::int as n, md5(coalesce(string_agg(id, E'\n' order by created_at, id) || E'\n', '')) as digest
        from leases where integration_id = ${integration.id} and deleted_at is null
          and (${createdBefore ?? null}::timestamptz is null or created_at <= ${createdBefore ?? null}::timestamptz)`);
      return w!;
    };
    const want = await expected();
    if (want.n !== args.leases) throw new CheckFailed(`the integration holds ${want.n} live leases, ${args.leases} were loaded`);
    // The warm-up's bound: the created_at of the lease a tenth of the way in.
    const [tenth] = await db.execute<{ created_at: string }>(
      sql`select created_at::text from leases where integration_id = ${integration.id} order by created_at, id offset ${Math.floor(args.leases / 10)} limit 1`,
    );
    const warmBefore = new Date(tenth!.created_at).toISOString();
    const wantWarm = await expected(warmBefore);
    const integrationRef = { id: integration.id, organizationId: org.id, mode: 'test' as const };
    /** An automation of every lease (or those created up to a bound) to a path of the destination; formula escaping on, the default. */
    const leaseAutomation = (n: number, filters: Record<string, string>, path: string) =>
      insertAutomation(db, {
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
    // The floor runs the very statement an export of every lease runs.
    const statement = exportStatementOf(
      {
        id: 'atm_FLOOR',
        entity: 'lease',
        organizationId: org.id,
        integrationId: integration.id,
        filters: {},
        columns: null,
        destination: { type: 'http', url: destinationUrl },
        destinationHeaders: null,
      },
      integrationRef,
    );
    // What the API lists first, for the head of every body.
    const apiHead = (
      await listRecords(db, 'lease', { organizationId: org.id, mode: 'test' }, { limit: HEAD_RECORDS, offset: 0, integration_id: [integration.id] })
    ).results.map((r) => expectedCells(r as unknown as Record<string, unknown>));

    // Asked for once the writer is done: the destination prints its line before it answers (lines are kept).
    const received = (path: string) =>
      destination
        .line(new RegExp(`^received (\\{"path":"${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}".*)$`), 30_000)
        .then(([, json]) => JSON.parse(json!) as Received);
    const databaseName = new URL(databaseUrl).pathname.slice(1);
    const pgPids = async () =>
      (await db.execute<{ pid: number }>(sql`select pid from pg_stat_activity where datname = ${databaseName} and pid <> pg_backend_pid()`)).map((r) => r.pid);
    /**
     * The CPU of the database's backends while `run` runs, sampled every 100 ms: an export's backend (its connection's
     * own) starts and ends within the run, so a meter reading pids at the start and the end would miss it. A backend's
     * last 100 ms may be missed. The total is left in lastPostgresCpu.
     */
    const postgresCpu = async <T>(run: () => Promise<T>): Promise<T> => {
      const seen = new Map<number, { first: number; last: number }>();
      const sample = async () => {
        for (const pid of await pgPids()) {
          const cpu = cpuSeconds(pid);
          const s = seen.get(pid);
          if (s) s.last = Math.max(s.last, cpu);
          else seen.set(pid, { first: cpu, last: cpu });
        }
      };
      await sample();
      const before = new Set(seen.keys());
      let stopped = false;
      const sampling = (async () => {
        while (!stopped) {
          await sleep(100);
          await sample().catch(() => {});
        }
      })();
      try {
        return await run();
      } finally {
        stopped = true;
        await sampling;
        await sample();
        let total = 0;
        for (const [pid, s] of seen) total += s.last - (before.has(pid) ? s.first : 0);
        lastPostgresCpu = total;
      }
    };
    let lastPostgresCpu = 0;
    const problems: string[] = [];
    /** The export's whole body (after its BOM), which the floor's must equal. */
    let exportBody: string | undefined;
    const check = (label: string, r: Received, w: { n: number; digest: string }, headerFields: number, bom: boolean) => {
      const bad: string[] = [];
      const head = headCells(Buffer.from(r.head, 'base64'));
      if (head.length < Math.min(HEAD_RECORDS, w.n)) bad.push(`only ${head.length} whole records in the first 64 KiB`);
      else if (JSON.stringify(head.slice(0, HEAD_RECORDS)) !== JSON.stringify(apiHead.slice(0, head.length < HEAD_RECORDS ? head.length : HEAD_RECORDS))) {
        bad.push('its first records read back are not what the list API serves');
      }
      if (w.n === args.leases) {
        exportBody ??= r.bodyDigest;
        if (r.bodyDigest !== exportBody) bad.push("a body other than the other writer's, byte for byte");
      }
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
    const toFloor = commandsTo<ExportFloorCommand, ExportFloorResult>(floorChild, 'floor', 'the floor', RUN_TIMEOUT_MS);
    /** One command to the floor process: its result, and the CPU used meanwhile (Postgres's sampled from before it is sent, as an export's). */
    const floorCommand = async (cmd: Omit<ExportFloorCommand, 'id'>) => {
      const meter = await cpuMeter({ floor: () => [floorChild.pid], destination: () => [destination.pid] }).start();
      const result = await postgresCpu(() => toFloor(cmd));
      return { result, cpu: { ...(await meter()), postgres: lastPostgresCpu } };
    };
    const floorOnce = async (): Promise<Delivery> => {
      const id = `f${++floors}`;
      const path = `/floor/${id}`;
      const { result, cpu } = await floorCommand({ statement, url: `${destinationUrl}${path}` });
      const r = await received(path);
      check(`floor ${id}`, r, want, csvColumns('lease').length, false);
      if (result.rows !== args.leases) problems.push(`floor ${id}: the COPY sent ${result.rows} rows`);
      return { ms: r.lastByteAt! - r.arrivedAt, endToEndMs: result.ms, received: r, cpu };
    };

    // ---- the export: a run of a new automation each round (its own URL), one attempt, awaited through its workflow
    const control = { ...automationControlOf(client, cfg), taskQueue: AUTOMATION_QUEUE, schedule: { delaysMs: [] }, db };
    const rss = rssSampler(worker.pid);
    let exports = 0;
    const exportOnce = async (filters: Record<string, string>, w: { n: number; digest: string }): Promise<ExportRun> => {
      const n = ++exports;
      const path = `/export/${n}`;
      const automation: AutomationRow = await leaseAutomation(n, filters, path);
      // Idle: the worker's RSS over 2 s with nothing to do.
      rss.reset();
      await sleep(2_000);
      const idleMb = rss.peakMb();
      rss.reset();
      const meter = await cpuMeter({ worker: () => [worker.pid], destination: () => [destination.pid], temporal: () => childPids('temporal') }).start();
      const t = performance.now();
      const [run, result] = await postgresCpu(async () => {
        const started = await startAutomationRun(control, automation);
        const ended = await Promise.race([
          client.workflow.getHandle<typeof runAutomation>(automationRunWorkflowIdOf(started.id)).result(),
          sleep(RUN_TIMEOUT_MS).then(() => Promise.reject(new CheckFailed(`run ${started.id} not done after ${RUN_TIMEOUT_MS / 1000} s`))),
        ]);
        return [started, ended] as const;
      });
      const endToEndMs = performance.now() - t;
      const cpu = { ...(await meter()), postgres: lastPostgresCpu };
      const peakMb = rss.peakMb();
      const row = (await getRun(db, run.id))!;
      const label = `export ${n} (run ${run.id})`;
      if (result.status !== 'succeeded' || result.recordsExported !== w.n)
        problems.push(`${label}: the workflow ended ${result.status} with ${result.recordsExported} records`);
      if (row.status !== 'succeeded' || row.recordsExported !== w.n || row.attempts !== 1) {
        problems.push(
          `${label}: the run row says ${row.status}, records_exported ${row.recordsExported}, ${row.attempts} attempt(s)${row.error ? `: ${row.error}` : ''}`,
        );
      }
      const r = await received(path);
      check(label, r, w, csvColumns('lease').length, true);
      const rowMs = row.startedAt && row.finishedAt ? row.finishedAt.getTime() - row.startedAt.getTime() : NaN;
      return { runId: run.id, rows: w.n, ms: r.lastByteAt! - r.arrivedAt, endToEndMs, received: r, cpu, rowMs, idleMb, peakMb };
    };

    const rate = (d: Delivery) => args.leases / (d.ms / 1000);
    // Warm-up: the first tenth of the leases, on the fresh worker (its code gets compiled; its memory is compared).
    const warm = await exportOnce({ created_before: warmBefore }, wantWarm);
    say(
      `warm-up export of ${int(warm.rows)} leases (created_before ${warmBefore}): ${int(warm.rows / (warm.ms / 1000))} rows/s; ` +
        `worker RSS ${warm.idleMb} MB idle, ${warm.peakMb} MB peak`,
    );
    const floorRuns: Delivery[] = [];
    const exportRuns: ExportRun[] = [];
    for (let r = 1; r <= args.runs; r++) {
      const f = await floorOnce();
      floorRuns.push(f);
      const e = await exportOnce({}, want);
      exportRuns.push(e);
      say(
        `round ${r}/${args.runs}: floor ${int(rate(f))} rows/s (${secs(f.ms)} s, ${mb(f.received.bytes)} MB); ` +
          `export ${int(rate(e))} rows/s (${secs(e.ms)} s, ${mb(e.received.bytes)} MB; end to end ${secs(e.endToEndMs)} s); worker RSS ${e.idleMb} MB idle, ${e.peakMb} MB peak`,
      );
    }
    rss.stop();
    const hwm = peakRssMb(worker.pid);
    const memory = workerMemory(worker.pid);
    if (problems.length > 0) {
      ok = false;
      throw new CheckFailed(`the run is broken:\n  - ${problems.join('\n  - ')}`);
    }

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
      `  ${int(args.leases)} leases of one test-mode integration (with ${int(size.properties)} properties, ${int(size.units)} units, ${int(size.residents)} residents, ` +
        `${int(written.lease_residents ?? 0)} lease residents; another integration's ${OTHER_LEASES} leases left out), loaded with COPY; ${args.runs} round(s), the floor then the export`,
    );
    console.log(`  rows/s from the request's arrival to its last byte at the destination: median (min–max) of ${args.runs}`);
    console.log(
      `    export: automation run on worker/main.ts (no filters)      ${range(exportRate, int)} rows/s; ${range(spread(exportRuns.map((e) => e.ms)), secs)} s`,
    );
    console.log(
      `    floor:  the same COPY TO STDOUT → PUT, bare process        ${range(floorRate, int)} rows/s; ${range(spread(floorRuns.map((f) => f.ms)), secs)} s`,
    );
    console.log(`  export / floor                        ${ratio.toFixed(2)} (target >= ${MIN_RATIO}: ${mark(ratio >= MIN_RATIO)})`);
    console.log(
      `  export end to end                     ${range(spread(exportRuns.map((e) => e.endToEndMs)), secs)} s from startAutomationRun to the workflow's result ` +
        `(the run row's started_at → finished_at ${range(spread(exportRuns.map((e) => e.rowMs)), secs)} s); floor: ${range(spread(floorRuns.map((f) => f.endToEndMs)), secs)} s from the request opened to the answer read`,
    );
    console.log(
      `  bodies                                export ${mb(e0.bytes)} MB, ${e0.headerFields} columns (UTF-8 BOM, LF); floor ${mb(f0.bytes)} MB, ${f0.headerFields} columns: ` +
        `${int(e0.bytes / (args.leases + 1))} bytes a row; the same bytes after the BOM`,
    );
    console.log(
      `  worker RSS                            ${warm.idleMb} MB idle on the fresh worker, ${warm.peakMb} MB peak exporting ${int(warm.rows)} leases (+${warm.peakMb - warm.idleMb} MB); ` +
        `then idle ${exportRuns.map((e) => e.idleMb).join(' / ')} MB before each export of ${int(args.leases)}, peak ${exportRuns.map((e) => e.peakMb).join(' / ')} MB during it ` +
        `(+${growths.join(' / +')} MB; VmRSS sampled every 100 ms). Highest peak over the fresh worker's idle: +${growth} MB ` +
        `(target <= ${MAX_GROWTH_MB} MB: ${mark(growth <= MAX_GROWTH_MB)}); VmHWM ${hwm} MB over the worker's life, start-up included`,
    );
    console.log(`  the worker's memory at the end        ${memory}`);
    console.log(`  CPU seconds per body, median (user + system, from /proc)`);
    console.log(`    export: ${cpuLine(exportRuns)}`);
    console.log(`    floor:  ${cpuLine(floorRuns)}`);
    console.log('');
    console.log(
      "  How close it is: the floor runs the export's own statement (activities/export.ts exportStatementOf: the same columns, the lease residents joined",
    );
    console.log(
      '  in, the same rows, order and formula escaping) on a connection it keeps open, and pipes the COPY into the PUT. The export adds its workflow and',
    );
    console.log(
      "  activity, a connection of its own per attempt (opened before the request), the byte order mark, and gathers the COPY's row-sized chunks into",
    );
    console.log('  64 KiB writes.');
    console.log('');
    console.log(
      `  checks passed: every body (${args.runs} export(s), ${args.runs} floor(s)) arrived whole with exactly ${int(args.leases)} data rows and a header (the warm-up: ${int(warm.rows)}), ` +
        `every record as many fields as the header, and the lease ids of the integration's live leases in (created_at, id) order (the other integration's left out); ` +
        `the export's bodies equal the floor's byte for byte after the BOM; the first ${HEAD_RECORDS} records of every body read back equal to the list API's; ` +
        `every run succeeded after one attempt with records_exported ${int(args.leases)} (the warm-up: ${int(warm.rows)})`,
    );
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
    result = {
      ratios: { rows_per_s: round(ratio) },
      rss_mb: { idle: warm.idleMb, peak: Math.max(...exportRuns.map((e) => e.peakMb)), growth, limit: MAX_GROWTH_MB },
      rows_per_s: { export: Math.round(exportRate.median), floor: Math.round(floorRate.median) },
      leases: args.leases,
    };
  } finally {
    for (const c of children.reverse()) await c.stop();
    await closeDb(db).catch(() => {});
    await env.teardown();
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
/** Every correctness check passed (false once one failed, or the bench did not get to its checks). */
let ok = true;
/** The figures of the last line. */
let result: { ratios: Record<string, number>; rss_mb: Record<string, number>; rows_per_s: Record<string, number>; leases: number } | undefined;

/** What the worker's memory is made of, from /proc: resident anonymous and file-backed memory, and its threads. */
function workerMemory(pid: number): string {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => /^(\S+):\s+(\d+)/m.exec(status.split('\n').find((l) => l.startsWith(`${name}:`)) ?? '')?.[2];
    const kb = (name: string) => `${Math.round(Number(field(name) ?? 0) / 1024)} MB`;
    return `VmRSS ${kb('VmRSS')} (anonymous ${kb('RssAnon')}, files ${kb('RssFile')}, shared memory ${kb('RssShmem')}), ${field('Threads')} threads`;
  } catch {
    return 'unknown (no /proc)';
  }
}

/** The last line: one JSON object anyone can compare runs by. */
endBench('export', main, (passed) => ({
  bench: 'export',
  ratios: result?.ratios ?? {},
  rss_mb: result?.rss_mb ?? {},
  rows_per_s: result?.rows_per_s ?? {},
  leases: args.leases,
  ok: passed && ok && result !== undefined,
}));
