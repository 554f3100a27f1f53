/**
 * `npm run bench:writes`: write-back (PATCH a lease, poll its Operation until `succeeded`) against a floor measured
 * in the same run: a workflow with one no-op activity, started and awaited with a @temporalio/client Client from
 * this process on the same Temporal server.
 *
 * The stack runs as the service runs it, each part a process of its own: a Temporal dev server, the sandbox PMS, the
 * API (`--apis`, dist/api.mjs), the worker (dist/worker.mjs, SERVED_MODES=test, every role but the relay) over a
 * fresh database (both built first and run under plain node, as production runs them; `--from-source`: api/main.ts
 * and worker/main.ts through tsx), the floor's worker (bench/lib/floor-worker.ts with the write worker's settings)
 * and the client that writes (bench/lib/write-client.ts). One test-mode enterprise integration over a freshly
 * generated sandbox company of `--size` leases, initially synced. Its organization gets a rate-limit override through
 * the admin API: a caller polling every 10 ms makes far more requests than the enterprise plan's 1,200 a minute (the
 * limiter still runs on every request). The dev server's transfer-queue poll limit is raised (see TEMPORAL_DYNAMIC_CONFIG).
 *
 *   latency:    `--writes` lease updates one at a time, each a distinct `rent_amount` under a fresh Idempotency-Key,
 *               each timed as its caller sees it: PATCH sent → the reply of the poll that shows `succeeded` read
 *               (held polls, `Prefer: wait`, as the floor's client waits on Temporal's long poll; `--poll-ms N`: a poll
 *               every N ms instead); and `--floor` floor workflows one at a time, start → result. Both in
 *               `--rounds` alternating blocks, so the machine's other work falls on both alike.
 *   throughput: `--throughput` writes by `--callers` concurrent callers, each PATCH then poll (held, or every
 *               `--throughput-poll-ms`) until succeeded, then the next; each caller owns its leases, so a lease's
 *               writes are ordered. Writes/s from the first PATCH to the last write done; and, for comparison, as
 *               many floor workflows by as many concurrent callers.
 *
 * Checks, before any figure is printed (a failure exits 1): every PATCH answered 202 and every Operation ended
 * `succeeded`, as the client saw it and in the database, each after exactly one attempt at the source and with
 * exactly one change event; the source (read back through the connector) and the cache (GET /v1/leases/{id}) hold,
 * for every lease written, the rent written to it last. Timings are printed against their targets, never asserted.
 * The last line of the output is one JSON object: `{"bench": "writes", "ratios": {"p50", "p99", "throughput"},
 * "rss_mb": {...}, "ok"}`: the floor's p50 and p99 over the writes' (higher is better; targets >= 1/1.4 and >= 1/2),
 * writes/s over the floor's workflows/s with 20 callers (target >= 0.7), the worker's peak RSS, and `ok` whether
 * every check passed (ratios null if not).
 * Usage: npm run bench:writes [-- --writes 500 --floor 500 --throughput 1000 --callers 20 --poll-ms 0 --size 4000 --apis 1]
 *   (`--temporal-defaults`: the dev server's own dynamic config; `--writes 50 --floor 50 --throughput 100`: to try it;
 *   `--from-source`: the API and the worker through tsx instead of the built bundles; `--profile <dir>`: their CPU
 *   profiles, for diagnosis only)
 */
import { availableParallelism } from 'node:os';
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { leases } from '../db/schema';
import { createApiKey, type IntegrationRow } from '../db/tenants';
import { writeTaskQueueOf, writeWorkflowIdOf } from '../domain/contract';
import { createKeyring, openSourceConfig } from '../domain/secrets';
import { createConnector } from '../source';
import { workerProcessEnv } from '../worker/process-env';
import { benchArgs } from './lib/args';
import { commandsTo } from './lib/commands';
import type { floorWorkflow } from './lib/floor-workflow';
import { legsOfAll, sample } from './lib/histories';
import {
  buildDist,
  childPids,
  cpuMeter,
  cpuProfileArgs,
  loadAverage,
  peakRssMb,
  rssSampler,
  startApi,
  startChild,
  waitForPollers,
  waitHealthy,
  type Child,
  type ServiceProcessOptions,
} from './lib/processes';
import { CheckFailed, endBench, int, secs } from './lib/report';
import { percentile } from './lib/stats';
import { newIntegration, runSync, sandboxDatabaseUrl, startSyncBench, startWorker, type SyncBench } from './lib/sync-harness';
import type { LeaseWrite, WriteCommand, WriteOutcome, WriteRunResult } from './lib/write-client';

const args = benchArgs(
  { size: 4000, seed: 1, writes: 500, floor: 500, rounds: 5, warmup: 30, throughput: 1000, callers: 20, pollMs: 0, throughputPollMs: 0, apis: 1 },
  { temporalDefaults: false, fromSource: false, profile: '' },
);
/**
 * The API and the worker as production runs them (Dockerfile): the built bundles under plain node. `--profile <dir>`:
 * V8 CPU profiles of both, written when they stop (diagnosis only: it slows them).
 */
const SERVICE: ServiceProcessOptions = { built: !args.fromSource, nodeArgs: cpuProfileArgs(args.profile) };
/**
 * The dev server has one history shard, whose transfer queue (what hands a new workflow task to matching) is polled
 * at most 20 times a second (history.transferProcessorMaxPollRPS). Workflows run one after another then wait up to
 * 50 ms for each workflow task: a bare workflow took 100 ms back to back and 39 ms with 300 ms between runs, and
 * every figure came out a multiple of that tick. A cluster spreads workflows over hundreds of shards; here the
 * limit is raised for both the writes and the floor (`--temporal-defaults` keeps the server's defaults).
 */
const TEMPORAL_DYNAMIC_CONFIG = args.temporalDefaults ? [] : ['history.transferProcessorMaxPollRPS=1000'];
const TASK_QUEUE = 'bench-writes';
const WRITE_QUEUE = writeTaskQueueOf(TASK_QUEUE);
const FLOOR_QUEUE = 'bench-writes-floor';
const COMPANY = `bench-writes-${args.size}-${args.seed}`;
/** The organization's rate-limit override (requests a minute, and burst): far above what the bench asks. */
const RATE_LIMIT = { rate_limit_per_minute: 1_000_000, rate_limit_burst: 100_000 };
/** A write not terminal this long after its PATCH is an error. */
const WRITE_TIMEOUT_MS = 60_000;
/** Rents written are FIRST_RENT + a sequence number (cents): every write sets a value no other write sets. */
const FIRST_RENT = 150_000;

/** Workflow histories read per kind for the breakdown. */
const HISTORY_SAMPLE = 100;

/** Targets (the issue's): write p50 <= 1.4x the floor's, p99 <= 2x the floor's p99, throughput >= 0.7 of the floor's. */
const TARGET = { p50: 1.4, p99: 2, throughput: 0.7 };

interface Summary {
  bench: 'writes';
  /** Floor over writes for latencies, writes over floor for throughput: higher is better. */
  ratios: { p50: number | null; p99: number | null; throughput: number | null };
  rss_mb: { worker_peak: number | null; worker_after_sync: number | null; worker_throughput_peak: number | null };
  ok: boolean;
}
const summary: Summary = {
  bench: 'writes',
  ratios: { p50: null, p99: null, throughput: null },
  rss_mb: { worker_peak: null, worker_after_sync: null, worker_throughput_peak: null },
  ok: false,
};

const say = (msg: string) => console.log(`[bench:writes] ${msg}`);
const ms1 = (ms: number) => ms.toFixed(1);

interface FloorRun {
  id: string;
  ms: number;
  /** Epoch ms of the start call and of the result. */
  sentAt: number;
  doneAt: number;
}

interface Lease {
  id: string;
  xId: string;
}

/** Any write that went wrong fails the run, listing what the client saw (request, reply, request id). */
function checkOutcomes(label: string, outcomes: WriteOutcome[], expected: number): void {
  const bad = outcomes.filter((o) => o.error !== null || o.status !== 'succeeded');
  if (bad.length > 0 || outcomes.length !== expected) {
    throw new CheckFailed(
      `${label}: ${bad.length} of ${outcomes.length} writes went wrong (${expected} sent):\n  - ${bad
        .slice(0, 10)
        .map((o) => `lane ${o.lane}, ${ms1(o.startMs)} ms into the phase: ${o.error ?? `ended ${o.status}`}`)
        .join('\n  - ')}`,
    );
  }
}

/** How the callers poll, in words. */
const pollingOf = (ms: number) => (ms === 0 ? 'held polls, Prefer: wait' : `a poll every ${ms} ms`);

async function main() {
  const began = Date.now();
  const positive = [args.size, args.writes, args.floor, args.rounds, args.throughput, args.callers, args.apis].every((n) => Number.isInteger(n) && n >= 1);
  const natural = [args.warmup, args.pollMs, args.throughputPollMs].every((n) => Number.isInteger(n) && n >= 0);
  if (!positive || !natural)
    throw new Error(
      '--size, --writes, --floor, --rounds, --throughput, --callers and --apis must be positive integers; --warmup, --poll-ms and --throughput-poll-ms integers >= 0',
    );
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  const b = await startSyncBench('bench_writes', say, TEMPORAL_DYNAMIC_CONFIG);
  say(`Temporal dev server with ${TEMPORAL_DYNAMIC_CONFIG.length ? TEMPORAL_DYNAMIC_CONFIG.join(', ') : 'its default dynamic config'}`);
  const children: Child[] = [];
  try {
    // ---- the integration: a fresh company (the bench changes it, so it is never reused), initially synced
    if (await b.control.getCompany(COMPANY)) await b.control.deleteCompany(COMPANY);
    const t0 = performance.now();
    const { api_key } = await b.control.createCompany({ companyId: COMPANY, size: args.size, seed: args.seed });
    const settings = { base_url: b.sandboxUrl, api_key };
    say(`sandbox company ${COMPANY} of ${int(args.size)} leases generated in ${secs(performance.now() - t0)} s`);
    const integration = await newIntegration(b, settings);

    if (SERVICE.built) {
      say('building dist/ (npm run build), to run the API and the worker as production does');
      await buildDist();
    }
    const worker = await startWorker(b, TASK_QUEUE, { WORKER_ROLES: 'sync,webhooks,writes,automations' }, SERVICE);
    children.push(worker);
    await waitForPollers(b.client, WRITE_QUEUE, 120_000, worker.pid);
    say(
      `the worker (${SERVICE.built ? 'dist/worker.mjs' : 'worker/main.ts'}) pid ${worker.pid} polls ${TASK_QUEUE} and ${WRITE_QUEUE} (WRITE_MAX_ACTIVITIES ${b.cfg.WRITE_MAX_ACTIVITIES}, no outbox relay)`,
    );
    const sync = await runSync(b, TASK_QUEUE, integration);
    const syncHwm = peakRssMb(worker.pid);
    say(`initial sync: ${int(sync.job.records_seen)} records in ${secs(sync.ms)} s (worker VmHWM ${syncHwm} MB after it)`);

    const apis: (Child & { url: string })[] = [];
    for (let i = 0; i < args.apis; i++) {
      const api = await startApi(
        b.databaseUrl,
        { TEMPORAL_ADDRESS: b.temporalAddress, TEMPORAL_TASK_QUEUE: TASK_QUEUE },
        args.apis > 1 ? `[api ${i + 1}]` : '[api]',
        SERVICE,
      );
      apis.push(api);
      children.push(api);
    }
    await Promise.all(apis.map((a) => waitHealthy(a.url)));
    const urls = apis.map((a) => a.url);
    await overrideRateLimit(b, urls[0]!, integration.organizationId);
    const key = (await createApiKey(b.db, { organizationId: integration.organizationId, mode: 'test' })).key;

    // ---- the leases: open ones (a closed lease refuses changes), each written by one caller only
    const all = await b.db
      .select({ id: leases.id, xId: leases.xId })
      .from(leases)
      .where(and(eq(leases.integrationId, integration.id), eq(leases.status, 'active'), isNull(leases.deletedAt)))
      .orderBy(asc(leases.id));
    if (all.length < args.warmup + args.writes)
      throw new CheckFailed(`the company has ${all.length} active leases; the bench writes to ${args.warmup + args.writes} (raise --size)`);
    const warmLeases = all.slice(0, args.warmup);
    const measured = all.slice(args.warmup, args.warmup + args.writes);
    /** Every write sent, in order: the last one to each lease is what the source and the cache must hold. */
    const sent: LeaseWrite[] = [];
    const next = (lease: Lease): LeaseWrite => {
      const w = { leaseId: lease.id, rent: FIRST_RENT + sent.length };
      sent.push(w);
      return w;
    };
    const xIdOf = new Map(all.map((l) => [l.id, l.xId]));

    // ---- the floor's worker and the client
    const floorWorker = startChild(
      'bench/lib/floor-worker.ts',
      ['writes'],
      { ...workerProcessEnv(process.env), TEMPORAL_ADDRESS: b.temporalAddress, TEMPORAL_TASK_QUEUE: FLOOR_QUEUE, LOG_LEVEL: 'warn' },
      '[floor-worker]',
    );
    children.push(floorWorker);
    await floorWorker.line(/floor worker started/, 120_000);
    await waitForPollers(b.client, FLOOR_QUEUE, 120_000, floorWorker.pid);
    const clientChild = startChild('bench/lib/write-client.ts', [], {}, '[client]', { stdin: true, echo: (l) => !l.startsWith('write-result ') });
    children.push(clientChild);
    await clientChild.line(/^write client ready/);
    // The client process runs one command (lanes of writes) at a time.
    const write = commandsTo<WriteCommand, WriteRunResult>(clientChild, 'write', 'the write client', 60 * 60_000);
    const outcomes: WriteOutcome[] = [];

    let floorRuns = 0;
    /** One floor workflow, started and awaited from this process: ms from the start call to the result. */
    const floorOnce = async (): Promise<FloorRun> => {
      const id = `floor-${++floorRuns}`;
      const sentAt = Date.now();
      const t = performance.now();
      await b.client.workflow.execute<typeof floorWorkflow>('floorWorkflow', { taskQueue: FLOOR_QUEUE, workflowId: id, args: [{ id }] });
      const ms = performance.now() - t;
      return { id, ms, sentAt, doneAt: sentAt + ms };
    };

    // ---- warm-up: both paths
    for (let i = 0; i < args.warmup; i++) await floorOnce();
    const warm = await write({ urls, key, lanes: [warmLeases.map(next)], pollMs: args.pollMs, timeoutMs: WRITE_TIMEOUT_MS });
    checkOutcomes('warm-up', warm.outcomes, args.warmup);
    outcomes.push(...warm.outcomes);
    say(`warmed up: ${args.warmup} floor workflows, ${args.warmup} writes`);

    // ---- latency: alternating blocks of floor workflows and sequential writes
    const rss = rssSampler(worker.pid);
    const floorLatency: FloorRun[] = [];
    const writeMs: number[] = [];
    const latencyOutcomes: WriteOutcome[] = [];
    for (let r = 0; r < args.rounds; r++) {
      const [f0, f1] = [Math.floor((args.floor * r) / args.rounds), Math.floor((args.floor * (r + 1)) / args.rounds)];
      for (let i = f0; i < f1; i++) floorLatency.push(await floorOnce());
      const [w0, w1] = [Math.floor((args.writes * r) / args.rounds), Math.floor((args.writes * (r + 1)) / args.rounds)];
      const res = await write({ urls, key, lanes: [measured.slice(w0, w1).map(next)], pollMs: args.pollMs, timeoutMs: WRITE_TIMEOUT_MS });
      checkOutcomes(`latency round ${r + 1}`, res.outcomes, w1 - w0);
      latencyOutcomes.push(...res.outcomes);
      writeMs.push(...res.outcomes.map((o) => o.ms));
      say(
        `latency round ${r + 1}/${args.rounds}: floor p50 ${ms1(
          percentile(
            floorLatency.slice(f0).map((f) => f.ms),
            50,
          ),
        )} ms over ${f1 - f0}; ` +
          `write p50 ${ms1(
            percentile(
              res.outcomes.map((o) => o.ms),
              50,
            ),
          )} ms over ${w1 - w0}`,
      );
    }
    outcomes.push(...latencyOutcomes);
    const floorMs = floorLatency.map((f) => f.ms);
    const latencyRss = rss.peakMb();

    // ---- throughput: concurrent callers, each owning every args.callers-th lease
    const lanes: LeaseWrite[][] = Array.from({ length: args.callers }, () => []);
    for (let k = 0; k < args.throughput; k++) {
      const i = k % measured.length;
      lanes[i % args.callers]!.push(next(measured[i]!));
    }
    // Postgres backends of the bench's two databases (the cache's and the sandbox's), not of anything else on the server.
    const databases = [b.databaseUrl, sandboxDatabaseUrl(b.cfg.DATABASE_URL)].map((u) => new URL(u).pathname.slice(1));
    const pgPids = async () =>
      (
        await b.db.execute<{ pid: number }>(
          sql`select pid from pg_stat_activity where datname in (${databases[0]!}, ${databases[1]!}) and pid <> pg_backend_pid()`,
        )
      ).map((r) => r.pid);
    const meter = cpuMeter({
      api: () => apis.map((a) => a.pid),
      worker: () => [worker.pid],
      temporal: () => childPids('temporal'),
      postgres: pgPids,
      sandbox: () => [b.sandboxPid],
      client: () => [clientChild.pid],
    });
    await new Promise((r) => setTimeout(r, 1_000));
    rss.reset();
    const stopMeter = await meter.start();
    const tp = await write({ urls, key, lanes, pollMs: args.throughputPollMs, timeoutMs: WRITE_TIMEOUT_MS });
    const tpCpu = await stopMeter();
    const throughputRss = rss.peakMb();
    rss.stop();
    const tpErrors = tp.outcomes.filter((o) => o.error !== null || o.status !== 'succeeded').length;
    say(`throughput: ${int(args.throughput)} writes by ${args.callers} callers in ${secs(tp.ms)} s, ${tpErrors} error(s)`);
    checkOutcomes('throughput', tp.outcomes, args.throughput);
    outcomes.push(...tp.outcomes);

    // The floor's throughput, the same way: args.callers concurrent callers, each starting and awaiting one at a time.
    let floorLeft = args.throughput;
    const stopFloorMeter = await cpuMeter({
      temporal: () => childPids('temporal'),
      'floor worker': () => [floorWorker.pid],
      bench: () => [process.pid],
    }).start();
    const ft0 = performance.now();
    await Promise.all(
      Array.from({ length: args.callers }, async () => {
        while (floorLeft > 0) {
          floorLeft--;
          await floorOnce();
        }
      }),
    );
    const floorTpMs = performance.now() - ft0;
    const floorCpu = await stopFloorMeter();
    const workerHwm = peakRssMb(worker.pid);

    // ---- checks, before any figure
    const checked = await checkRun(b, integration, urls[0]!, key, sent, outcomes, xIdOf);

    // Where the time went: legs of a sample of workflow histories of the latency phase, lined up with the callers.
    const legs = async (runs: { id: string; sentAt: number; doneAt: number }[]) =>
      [
        ...(
          await legsOfAll(
            b.client,
            sample(runs, HISTORY_SAMPLE).map((r) => r.id),
          )
        ).entries(),
      ].map(([id, l]) => {
        const r = runs.find((x) => x.id === id)!;
        return { ...l, toStarted: l.startedAt - r.sentAt, seen: r.doneAt - l.activityEndedAt };
      });
    const floorLegs = await legs(floorLatency);
    const writeLegs = await legs(latencyOutcomes.map((o) => ({ id: writeWorkflowIdOf(o.operationId!), sentAt: o.sentAt, doneAt: o.doneAt })));

    // ---- figures
    const writeP50 = percentile(writeMs, 50);
    const floorP50 = percentile(floorMs, 50);
    const ratio = writeP50 / floorP50;
    const p99Ratio = percentile(writeMs, 99) / percentile(floorMs, 99);
    const writesPerSec = args.throughput / (tp.ms / 1000);
    const floorPerSec = args.throughput / (floorTpMs / 1000);
    const round3 = (x: number) => Number(x.toFixed(3));
    summary.ratios = { p50: round3(1 / ratio), p99: round3(1 / p99Ratio), throughput: round3(writesPerSec / floorPerSec) };
    summary.rss_mb = { worker_peak: workerHwm, worker_after_sync: syncHwm, worker_throughput_peak: throughputRss };
    const mark = (ok: boolean) => (ok ? 'meets target' : 'BELOW TARGET');
    const row = (name: string, xs: number[]) =>
      console.log(
        `  ${name.padEnd(52)}${int(xs.length).padStart(7)}${ms1(percentile(xs, 50)).padStart(9)}${ms1(percentile(xs, 90)).padStart(9)}` +
          `${ms1(percentile(xs, 99)).padStart(9)}${ms1(Math.max(...xs)).padStart(9)}`,
      );
    const accept = latencyOutcomes.map((o) => o.acceptMs);
    const polls = latencyOutcomes.map((o) => o.polls);
    const tpPolls = tp.outcomes.reduce((n, o) => n + o.polls, 0);
    console.log('');
    console.log(
      `  ${int(args.size)}-lease sandbox company, enterprise integration (test mode), ${args.apis} API process(es), one worker process; ` +
        `latency in ${args.rounds} alternating blocks, one at a time; Temporal dev server with ${TEMPORAL_DYNAMIC_CONFIG.join(', ') || 'its defaults'}`,
    );
    console.log(
      `  ${'latency, one at a time'.padEnd(52)}${'n'.padStart(7)}${'p50 ms'.padStart(9)}${'p90 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`,
    );
    row(`write: PATCH sent → poll shows succeeded (${pollingOf(args.pollMs)})`, writeMs);
    row('  of which PATCH sent → 202 read', accept);
    row(
      `  in the database: accepted → succeeded`,
      latencyOutcomes.map((o) => checked.serverMs.get(o.operationId!)!),
    );
    row('floor: workflow + no-op activity, start → result', floorMs);
    console.log(
      args.pollMs === 0
        ? `  (a write took ${percentile(polls, 50)} held poll(s) at the median, each answered when its Operation's end was committed)`
        : `  (a write took ${percentile(polls, 50)} polls at the median; polling adds up to ${args.pollMs} ms plus one GET to the moment its Operation turned succeeded)`,
    );
    console.log('');
    console.log(
      `  write p50 / floor p50                 ${ratio.toFixed(2)}x  (target <= ${TARGET.p50}x: ${mark(ratio <= TARGET.p50)}); ` +
        `p99 / floor p99 ${p99Ratio.toFixed(2)}x (target <= ${TARGET.p99}x: ${mark(p99Ratio <= TARGET.p99)})`,
    );
    console.log(
      `  throughput, ${args.callers} concurrent callers     ${writesPerSec.toFixed(1)} writes/s (${int(args.throughput)} writes in ${secs(tp.ms)} s, ${tpErrors} errors, target 0; ` +
        `${pollingOf(args.throughputPollMs)}: ${int(tpPolls)} polls, ${int(tpPolls / (tp.ms / 1000))}/s); ` +
        `per write p50 ${ms1(
          percentile(
            tp.outcomes.map((o) => o.ms),
            50,
          ),
        )} ms, p99 ${ms1(
          percentile(
            tp.outcomes.map((o) => o.ms),
            99,
          ),
        )} ms`,
    );
    console.log(
      `  floor throughput, ${args.callers} callers           ${floorPerSec.toFixed(1)} workflows/s (${int(args.throughput)} in ${secs(floorTpMs)} s); ` +
        `writes/s / floor ${(writesPerSec / floorPerSec).toFixed(2)} (target >= ${TARGET.throughput}: ${mark(writesPerSec / floorPerSec >= TARGET.throughput)})`,
    );
    const cpuLine = (used: Record<string, number>, wallMs: number) =>
      `${Object.entries(used)
        .map(([name, s]) => `${name} ${((s * 1000) / args.throughput).toFixed(1)}`)
        .join(', ')} (${(Object.values(used).reduce((a, s) => a + s, 0) / (wallMs / 1000)).toFixed(2)} of ${availableParallelism()} CPUs busy)`;
    console.log(`  CPU ms per item in the throughput phases (user + system, from /proc)`);
    console.log(`    writes: ${cpuLine(tpCpu, tp.ms)}`);
    console.log(`    floor:  ${cpuLine(floorCpu, floorTpMs)}`);
    console.log(
      `  worker peak RSS                       ${workerHwm} MB over the run (VmHWM; ${syncHwm} MB after the initial sync, so the writes raised it by ${workerHwm - syncHwm} MB); ` +
        `sampled VmRSS peaks: ${latencyRss} MB in the latency phase (it starts just after the sync), ${throughputRss} MB in the throughput phase`,
    );
    console.log('');
    console.log(`  where the time went, one at a time: median ms over ${HISTORY_SAMPLE} sampled workflow histories of each`);
    const legCols = ['toStarted', 'firstTaskWait', 'firstTask', 'activityWait', 'activity', 'seen', 'close'] as const;
    console.log(`  ${''.padEnd(8)}${legCols.map((c) => c.padStart(14)).join('')}`);
    for (const [name, rows] of [
      ['floor', floorLegs],
      ['write', writeLegs],
    ] as const) {
      console.log(
        `  ${name.padEnd(8)}${legCols
          .map((c) =>
            ms1(
              percentile(
                rows.map((r) => r[c]),
                50,
              ),
            ).padStart(14),
          )
          .join('')}`,
      );
    }
    console.log('  (toStarted: the caller sends (the PATCH, or the start call) → workflow started; firstTaskWait / activityWait: waiting on the task queue;');
    console.log(
      '   activity: the no-op, or the source write, read-back and cache update; seen: activity end → the caller has the result (the floor: its result;',
    );
    console.log("   a write: the poll that shows succeeded, which the activity already committed); close: activity end → workflow closed, off a write's path)");
    console.log('');
    console.log(
      `  checks passed: ${int(outcomes.length)} writes (warm-up ${args.warmup}, latency ${args.writes}, throughput ${int(args.throughput)}) to ${int(checked.leases)} leases, ` +
        `every PATCH answered 202, every Operation succeeded (as polled and in the database) after exactly one source attempt, with one LEASE_UPDATED event each; ` +
        `the source (read back through the connector) and the cache (GET /v1/leases/{id}) hold the last rent written to each lease`,
    );
    console.log(
      `  rate limit: override of ${int(RATE_LIMIT.rate_limit_per_minute)}/min on the organization (the enterprise plan's 1,200/min would refuse a caller polling every 10 ms)`,
    );
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await b.close();
  }
}

/** The organization's rate-limit override, set through the admin API as an operator would. */
async function overrideRateLimit(b: SyncBench, apiUrl: string, organizationId: string): Promise<void> {
  const res = await fetch(`${apiUrl}/admin/v1/organizations/${organizationId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${b.cfg.ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(RATE_LIMIT),
  });
  if (res.status !== 200) throw new Error(`PATCH /admin/v1/organizations/${organizationId}: ${res.status} ${await res.text()}`);
}

/**
 * The run did what it claims: every Operation succeeded in the database after one attempt, with one change event;
 * the source and the cache hold the last rent written to each lease. Returns each Operation's accepted → succeeded
 * time (created_at → updated_at) as the database recorded it, and how many leases were written.
 */
async function checkRun(
  b: SyncBench,
  integration: IntegrationRow,
  apiUrl: string,
  key: string,
  sent: LeaseWrite[],
  outcomes: WriteOutcome[],
  xIdOf: Map<string, string>,
): Promise<{ serverMs: Map<string, number>; leases: number }> {
  const problems: string[] = [];
  if (outcomes.length !== sent.length) problems.push(`${sent.length} writes sent, ${outcomes.length} outcomes`);
  const opIds = new Set(outcomes.map((o) => o.operationId));
  if (opIds.size !== sent.length) problems.push(`${sent.length} writes made ${opIds.size} distinct Operations`);

  const ops = await b.db.execute<{ id: string; status: string; attempts: number; source_state: string | null; events: number; ms: number }>(sql`
    select o.id, o.status, o.attempts, o.source_state,
      (select count(*)::int from events e where e.operation_id = o.id and e.type = 'LEASE_UPDATED') as events,
      extract(epoch from o.updated_at - o.created_at) * 1000 as ms
    from operations o where o.integration_id = ${integration.id}`);
  const wrong = ops.filter((o) => o.status !== 'succeeded' || o.attempts !== 1 || o.source_state !== 'applied' || o.events !== 1);
  if (ops.length !== sent.length) problems.push(`the database holds ${ops.length} Operations of the integration; ${sent.length} writes were sent`);
  if (wrong.length > 0) {
    problems.push(
      `${wrong.length} Operation(s) not succeeded after exactly one source attempt with one LEASE_UPDATED event, e.g. ` +
        wrong
          .slice(0, 5)
          .map((o) => `${o.id} ${o.status}, ${o.attempts} attempt(s), source ${o.source_state}, ${o.events} event(s)`)
          .join('; '),
    );
  }
  const [other] = await b.db.execute<{ n: number }>(sql`select count(*)::int as n from events where operation_id is not null and type <> 'LEASE_UPDATED'`);
  if (other!.n !== 0) problems.push(`${other!.n} event(s) of another type recorded for the writes`);

  // The last rent written to each lease.
  const last = new Map<string, number>();
  for (const w of sent) last.set(w.leaseId, w.rent);
  const connector = createConnector(openSourceConfig(createKeyring(b.cfg.ENCRYPTION_KEYS), integration));
  const xIds = [...last.keys()].map((id) => xIdOf.get(id)!);
  const source = await connector.readByIds('lease', xIds);
  const sourceRent = new Map(source.records.map((r) => [r.x_id, r.rent_amount]));
  const sourceOff: string[] = [];
  const cacheOff: string[] = [];
  for (const [leaseId, rent] of last) {
    const xId = xIdOf.get(leaseId)!;
    const s = sourceRent.get(xId);
    if (!s || s.amount !== rent || s.currency !== 'USD') sourceOff.push(`${xId}: ${s ? `${s.amount} ${s.currency}` : 'missing'}, last written ${rent}`);
    const res = await fetch(`${apiUrl}/v1/leases/${leaseId}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await res.json()) as { rent_amount?: { amount: number; currency: string } };
    if (res.status !== 200 || body.rent_amount?.amount !== rent || body.rent_amount.currency !== 'USD') {
      cacheOff.push(`${leaseId}: ${res.status} ${JSON.stringify(body.rent_amount ?? body).slice(0, 200)}, last written ${rent}`);
    }
  }
  if (source.skipped.length > 0) problems.push(`the source served ${source.skipped.length} written lease(s) unreadably`);
  if (sourceOff.length > 0)
    problems.push(
      `the source holds another rent than the last written for ${sourceOff.length} of ${last.size} leases, e.g. ${sourceOff.slice(0, 5).join('; ')}`,
    );
  if (cacheOff.length > 0)
    problems.push(`the cache shows another rent than the last written for ${cacheOff.length} of ${last.size} leases, e.g. ${cacheOff.slice(0, 5).join('; ')}`);
  if (problems.length > 0) throw new CheckFailed(`the run is broken:\n  - ${problems.join('\n  - ')}`);
  return { serverMs: new Map(ops.map((o) => [o.id, Number(o.ms)])), leases: last.size };
}

// No figure of a run that failed a check stands: the line says so, with no ratios.
endBench('writes', main, (passed) => (passed ? { ...summary, ok: true } : { ...summary, ratios: { p50: null, p99: null, throughput: null }, ok: false }));
