/**
 * `npm run bench:webhooks`: webhook delivery (the outbox relay queuing deliveries, a dispatcher per subscription
 * making first attempts in queue order, 16 in flight) against the plain HTTP floor measured in the same run, on a
 * bench database and a Temporal dev server of its own, with the production settings (retry schedule, circuit,
 * in-flight bound: whatever the environment says, by default the defaults).
 *
 * Processes: the Temporal dev server; the worker (dist/worker.mjs, built first, as production runs it; or
 * worker/main.ts with --from-source: its workers and the outbox relay); the healthy receiver
 * (bench/lib/webhook-receiver.ts, answers 200 at once and records every request); the hanging receiver (the same
 * with --hang: reads each request and never answers); the event writer, which commits the events
 * (bench/lib/event-writer.ts); the floor client (bench/lib/http-floor.ts); and this process, which orchestrates,
 * reads the database and Temporal's visibility, and checks. One test-mode integration on the scale plan; subscription
 * A (healthy) wants every event from the start; subscription B (hanging, same integration, every event) is created
 * before the last phase.
 *
 *   1. warm-up: `--warmup` events in transactions of `--per-tx`, delivered to A, unmeasured (a burst, so that the
 *      measured bursts run on a warm worker and database alike);
 *   2. steady: `--steady-rate` events a second for `--steady-seconds`, one per transaction: commit → first arrival;
 *   3. `--rounds` times: a burst of `--events` events committed back to back in transactions of `--per-tx` (a sync
 *      page's events arrive in one insert), to A alone: deliveries/s = events / (last first arrival at the receiver
 *      − first commit), the relay's queuing included; commit → first arrival per event; Temporal executions on the
 *      webhook task queue; then the floor: the same bodies with the same headers (the events' stored envelopes,
 *      signed with A's secret as a first attempt signs them), POSTed in the same order by a bare node:http client
 *      with as many requests in flight as a dispatcher keeps (WEBHOOK_MAX_IN_FLIGHT) over keep-alive, to the same
 *      receiver process (path /floor), after a warm-up of `--warmup` of them: requests/s = events / (last arrival −
 *      first request started);
 *   4. isolation: subscription B created (its receiver never answers), then `--rounds` more bursts; A's rate with B
 *      alongside over A's rate alone. B's circuit (WEBHOOK_CIRCUIT_FAILURES failed first attempts, each 10 s) is
 *      waited for and reported, with the retry workflows its failed first attempts became.
 * Each rate is the median of its rounds; the latency percentiles pool the rounds' events.
 *
 * With `--observability`, between 3 and 4, the cost of metrics and tracing: `--rounds` rounds (one more when odd, so
 * that plain and observed go first equally often) of two worker lives,
 * the worker restarted plain (as above: no metrics listener, no tracing) and observed (WORKER_METRICS_PORT, scraped
 * every 15 s as Prometheus would, and OTEL_EXPORTER_OTLP_ENDPOINT to bench/lib/span-sink.ts, a process of its own that
 * takes and drops every export), taking turns going first (off/on, then on/off, ...); each life takes an unmeasured
 * warm-up burst, then one burst of `--events` to A, measured as in 3. Cost = 1 - median deliveries/s observed ÷ plain,
 * and the worker's CPU per delivery observed ÷ plain - 1 (target <= 5 %). Each observed life must have counted every
 * attempt it made in propsync_webhook_attempts_total and exported a `webhook.attempt` span for each; a plain life must
 * have exported none. The worker is plain again for 4. `--observed metrics` or `--observed tracing` gives the observed
 * lives only one of the two (WORKER_METRICS_PORT or OTEL_EXPORTER_OTLP_ENDPOINT), to see what each costs; the checks
 * follow (no span from a life without tracing, no counters read from one without metrics).
 *
 * Before printing any ratio it checks the run: every event recorded reached A's receiver at least once with a valid
 * `X-Service-Signature` under A's secret, its own id in the body and attempt 1, and nothing else arrived there;
 * every delivery of A ended `succeeded` after one attempt, no retry workflow exists for A; A's first attempts went
 * out in seq order (`first_sent_at` never decreases along seq); every event was dispatched; every floor request was
 * answered 2xx and arrived validly signed; B has one delivery per event of its bursts, none succeeded. A failed check
 * exits 1 and prints null ratios. Timings are printed against their targets, never asserted. The last line of
 * output is one line of JSON: {"bench": "webhooks", "ratios": {...}, "rss_mb": {...}, "ok": ...}; with
 * --observability the ratios add `deliveries_cost_pct` and `worker_cpu_cost_pct` (per cent) and rss_mb
 * `worker_observed`.
 * Usage: npm run bench:webhooks [-- --events 10000 --per-tx 1000 --steady-rate 50 --steady-seconds 20 --warmup 2000 --rounds 3]
 *   (`--events 1000 --steady-seconds 5 --rounds 1`: to try it; `--from-source`: the worker from source through tsx
 *   instead of the built dist/worker.mjs production runs; `--profile-worker <dir>`: a V8 CPU profile of the worker, written
 *   when it stops, for diagnosis only, as is `'--worker-node-options=--trace-opt --trace-deopt'` (more options for its
 *   node); `--observability`: the cost of metrics and tracing, above, with `--observed metrics`
 *   or `--observed tracing` for one of the two)
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { sql } from 'drizzle-orm';
import { attemptHeaders } from '../activities/webhooks';
import { loadConfigOrExit } from '../config';
import { closeDb, createDb, type Db } from '../db/client';
import { createIntegration, createOrganization, type IntegrationRow } from '../db/tenants';
import { createSubscription, type SubscriptionRow } from '../db/webhooks';
import { dispatcherWorkflowIdOf, dispatchTaskQueueOf, webhookTaskQueueOf } from '../domain/contract';
import { createKeyring } from '../domain/secrets';
import { verifyWebhookSignature } from '../domain/signature';
import { DEFAULT_RETRY_SCHEDULES, listOfSchedule } from '../domain/retry';
import { DEFAULT_DISPATCH } from '../domain/webhooks';
import { WEBHOOK_WORKER_V8_OPTIONS, workerProcessEnv } from '../worker/process-env';
import { benchArgs } from './lib/args';
import { commandsTo } from './lib/commands';
import type { EventCommand, EventRunResult } from './lib/event-writer';
import type { FloorRequest, FloorResult, FloorSpec } from './lib/http-floor';
import {
  buildDist,
  childPids,
  cpuMeter,
  cpuProfileArgs,
  freePort,
  freshStack,
  loadAverage,
  peakRssMb,
  rssSampler,
  startChild,
  waitForPollers,
  type Child,
} from './lib/processes';
import { sampleOf, startSpanSink, type SpanSink } from './lib/observed';
import { CheckFailed, endBench, int, secs } from './lib/report';
import { percentile } from './lib/stats';
import type { ReceivedRecord } from './lib/webhook-receiver';

const args = benchArgs(
  { events: 10000, perTx: 1000, steadyRate: 50, steadySeconds: 20, warmup: 2000, rounds: 3 },
  {
    /** Write a V8 CPU profile of the worker process into this directory (diagnosis only: it slows the worker). */
    profileWorker: '',
    /** More options for the worker's node, space-separated (diagnosis: `--perf-basic-prof` for perf, `--trace-deopt`). */
    workerNodeOptions: '',
    /** Run the worker from source through tsx (bundling its workflows at start) instead of the built dist/worker.mjs. */
    fromSource: false,
    /** Also measure what metrics and tracing cost: plain and observed worker lives, taking turns. */
    observability: false,
    /** What an observed life has on: `both` (as production with both configured), `metrics` or `tracing` alone. */
    observed: 'both',
  },
);
/** `--observed`: what an observed worker life has on, and how the bench names it. */
const OBSERVED = {
  both: { metrics: true, tracing: true, name: 'metrics and tracing' },
  metrics: { metrics: true, tracing: false, name: 'metrics only' },
  tracing: { metrics: false, tracing: true, name: 'tracing only' },
} as const;
/**
 * Rounds of the observability comparison: `--rounds`, made even, so that each kind goes first as often as the other.
 * In a trial with both kinds plain (2026-11-27, 4 rounds), the two lives of a round differed by 3-9 %, either way;
 * the medians of the kinds by 0.1 % (deliveries/s) and 0.4 % (worker CPU per delivery).
 */
const OBS_ROUNDS = args.rounds + (args.rounds % 2);
const TASK_QUEUE = 'bench-webhooks';
const WEBHOOK_QUEUE = webhookTaskQueueOf(TASK_QUEUE);
const DISPATCH_QUEUE = dispatchTaskQueueOf(WEBHOOK_QUEUE);
/** A wait fails when nothing moved for this long. */
const STALL_MS = 90_000;
/** How long the bench waits, after the isolation burst, for the hanging subscription's circuit to open. */
const CIRCUIT_WAIT_MS = 120_000;

/** The targets the issue sets; printed beside the figures, never asserted. */
const TARGETS = { throughput: 0.5, isolation: 0.9, burstP99Ms: 30_000, steadyP50Ms: 200, executionsPer1000: 20, workerRssMb: 400, observabilityCostPct: 5 };

const cfg = loadConfigOrExit();
/** Requests in flight: the dispatcher's bound, and so the floor's. */
const IN_FLIGHT = cfg.WEBHOOK_MAX_IN_FLIGHT;
const say = (msg: string) => console.log(`[bench:webhooks] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const mark = (ok: boolean) => (ok ? 'meets target' : 'BELOW TARGET');

/**
 * Polls `probe` until it reaches `target`; logs progress every 10 s; throws when it stalls for STALL_MS, with what
 * `diagnose` says of the state things were left in.
 */
async function waitFor(label: string, probe: () => Promise<number>, target: number, diagnose?: () => Promise<string>, intervalMs = 250): Promise<void> {
  let last = -1;
  let movedAt = Date.now();
  let loggedAt = Date.now();
  for (;;) {
    const n = await probe();
    if (n >= target) return;
    if (n !== last) {
      last = n;
      movedAt = Date.now();
    }
    if (Date.now() - movedAt > STALL_MS) {
      const state = diagnose ? `\n    ${(await diagnose().catch((err: unknown) => `(no diagnosis: ${String(err)})`)).replace(/\n/g, '\n    ')}` : '';
      throw new CheckFailed(`${label}: stuck at ${int(n)}/${int(target)} for ${STALL_MS / 1000} s${state}`);
    }
    if (Date.now() - loggedAt >= 10_000) {
      loggedAt = Date.now();
      say(`  ${label}: ${int(n)}/${int(target)}`);
    }
    await sleep(intervalMs);
  }
}

/** Waits until a task queue has activity pollers (the dispatch queue has no workflows); with `pid`, that process's. */
async function waitForActivityPollers(client: Client, taskQueue: string, timeoutMs = 120_000, pid?: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    if ((r.pollers ?? []).some((p) => pid === undefined || (p.identity ?? '').startsWith(`${pid}@`))) return;
    if (Date.now() > deadline) throw new Error(`no worker polls task queue ${taskQueue} after ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** A receiver's records from index `from` on (index = arrival order), read a page at a time. */
async function receivedSince(receiverUrl: string, from = 0): Promise<ReceivedRecord[]> {
  const out: ReceivedRecord[] = [];
  for (;;) {
    const res = await fetch(`${receiverUrl}/_records?from=${from + out.length}&limit=5000`);
    if (!res.ok) throw new Error(`receiver: ${res.status}`);
    const page = (await res.json()) as ReceivedRecord[];
    out.push(...page);
    if (page.length < 5000) return out;
  }
}

async function receivedCount(receiverUrl: string): Promise<number> {
  const res = await fetch(`${receiverUrl}/_stats`);
  return ((await res.json()) as { requests: number }).requests;
}

interface Arrival {
  at: number;
  /** Index in the receiver's records: its arrival order. */
  index: number;
}

/** First arrival of each event at `path` of a receiver, from its records starting at `offset`. */
function firstArrivals(records: ReceivedRecord[], path: string, offset = 0): Map<string, Arrival> {
  const first = new Map<string, Arrival>();
  records.forEach((r, i) => {
    if (r.path !== path || !r.eventId) return;
    if (!first.has(r.eventId)) first.set(r.eventId, { at: r.at, index: offset + i });
  });
  return first;
}

/** Commit epoch ms of every event of a writer run. */
function commitsOf(run: EventRunResult): Map<string, number> {
  const out = new Map<string, number>();
  for (const tx of run.txs) for (const id of tx.ids) out.set(id, tx.at);
  return out;
}

/** Commit → first arrival of each event of `committed`, in ms (events that never arrived are left out: the checks catch them). */
function latencies(committed: Map<string, number>, first: Map<string, Arrival>): number[] {
  const out: number[] = [];
  for (const [id, at] of committed) {
    const arrived = first.get(id);
    if (arrived !== undefined) out.push(arrived.at - at);
  }
  return out;
}

/** A live process's resident set now (VmRSS), MB. */
function rssNowMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** Postgres backends serving the bench database (the worker's pool, its LISTENs, the writer's and the bench's own). */
async function postgresPids(db: Db, databaseUrl: string): Promise<number[]> {
  const rows = await db.execute<{ pid: number }>(sql`select pid from pg_stat_activity where datname = ${new URL(databaseUrl).pathname.slice(1)}`);
  return rows.map((r) => r.pid);
}

interface Execution {
  workflowId: string;
  type: string;
  status: string;
  start: number;
  close: number | null;
}

/** Every execution (run) on the webhook task queue, continue-as-new runs included. */
async function executions(client: Client): Promise<Execution[]> {
  const out: Execution[] = [];
  for await (const wf of client.workflow.list({ query: `TaskQueue="${WEBHOOK_QUEUE}"`, pageSize: 1000 })) {
    out.push({ workflowId: wf.workflowId, type: wf.type, status: wf.status.name, start: wf.startTime.getTime(), close: wf.closeTime?.getTime() ?? null });
  }
  return out;
}

/** Executions that were open at some moment of [from, to]. */
const openDuring = (xs: Execution[], from: number, to: number) => xs.filter((x) => x.start <= to && (x.close === null || x.close >= from));

const countBy = <T>(xs: T[], key: (x: T) => string) => xs.reduce<Record<string, number>>((acc, x) => ((acc[key(x)] = (acc[key(x)] ?? 0) + 1), acc), {});
const describeCounts = (c: Record<string, number>) =>
  Object.entries(c)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ') || 'none';

/** Where a subscription's deliveries of a set of events stand: by status, and the span of their queuing and first attempts (epoch ms). */
async function deliveriesOf(db: Db, subscriptionId: string, eventIds: string[]) {
  const [row] = await db.execute<{
    n: number;
    by_status: Record<string, number> | null;
    queued_first: string | null;
    queued_last: string | null;
    sent_first: string | null;
    sent_last: string | null;
  }>(sql`
    with d as (select * from webhook_deliveries where subscription_id = ${subscriptionId} and event_id = any(${sql.param(eventIds)}::text[]))
    select (select count(*)::int from d) as n,
      (select json_object_agg(status, n) from (select status, count(*)::int as n from d group by status) s) as by_status,
      (select min(created_at) from d)::text as queued_first, (select max(created_at) from d)::text as queued_last,
      (select min(first_sent_at) from d)::text as sent_first, (select max(first_sent_at) from d)::text as sent_last`);
  const ms = (t: string | null) => (t === null ? NaN : new Date(t).getTime());
  return {
    n: row!.n,
    byStatus: row!.by_status ?? {},
    queuedFirst: ms(row!.queued_first),
    queuedLast: ms(row!.queued_last),
    sentFirst: ms(row!.sent_first),
    sentLast: ms(row!.sent_last),
  };
}

/** A gap longer than this between one first attempt and the next (in seq order) is a stall: nothing was started. */
const SEND_GAP_MS = 10;

/**
 * How steadily a subscription's first attempts of a set of events went out: the gaps between one first attempt and
 * the next in seq order (`first_sent_at`), split into stalls (gaps over SEND_GAP_MS: the dispatcher waiting for a claim,
 * the relay, or a CPU) and the rest, the time spent sending.
 */
async function stallsOf(db: Db, subscriptionId: string, eventIds: string[]) {
  const [row] = await db.execute<{ stalls: number; within_ms: number; between_ms: number }>(sql`
    with d as (select first_sent_at from webhook_deliveries where subscription_id = ${subscriptionId} and event_id = any(${sql.param(eventIds)}::text[])),
    g as (select extract(epoch from first_sent_at - lag(first_sent_at) over (order by first_sent_at)) * 1000 as gap from d)
    select (count(*) filter (where gap > ${SEND_GAP_MS}))::int as stalls,
      coalesce(sum(gap) filter (where gap <= ${SEND_GAP_MS}), 0)::float8 as within_ms,
      coalesce(sum(gap) filter (where gap > ${SEND_GAP_MS}), 0)::float8 as between_ms
    from g`);
  return { stalls: row!.stalls, withinMs: Number(row!.within_ms), betweenMs: Number(row!.between_ms) };
}

interface Subscription {
  row: SubscriptionRow;
  /** The signing secret in plaintext (the row holds it sealed). */
  secret: string;
}

async function succeededOf(db: Db, subscriptionId: string): Promise<number> {
  const [row] = await db.execute<{ n: number }>(
    sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscriptionId} and status = 'succeeded'`,
  );
  return row!.n;
}

interface FloorFigures {
  result: FloorResult;
  /** First timed request started → last arrival at the receiver, ms. */
  ms: number;
  perSec: number;
  cpu: Record<string, number>;
  warmup: number;
}

interface BurstFigures {
  run: EventRunResult;
  committed: Map<string, number>;
  first: Map<string, Arrival>;
  /** First commit → last first arrival, ms. */
  ms: number;
  perSec: number;
  lat: number[];
  from: number;
  to: number;
  executions: Execution[];
  cpu: Record<string, number>;
  workerRssMb: number;
  timeline: Awaited<ReturnType<typeof deliveriesOf>>;
  stalls: Awaited<ReturnType<typeof stallsOf>>;
}

async function main(): Promise<void> {
  const began = Date.now();
  const positive =
    [args.events, args.perTx, args.steadyRate, args.steadySeconds].every((n) => Number.isFinite(n) && n > 0) &&
    Number.isInteger(args.events) &&
    Number.isInteger(args.perTx);
  if (!positive || !(Number.isInteger(args.warmup) && args.warmup >= 1) || !(Number.isInteger(args.rounds) && args.rounds >= 1)) {
    throw new Error('--events, --per-tx, --steady-rate, --steady-seconds, --warmup and --rounds must be positive numbers');
  }
  if (!(args.observed in OBSERVED)) throw new Error(`--observed takes ${Object.keys(OBSERVED).join(', ')}, not ${JSON.stringify(args.observed)}`);
  const observedAs = OBSERVED[args.observed as keyof typeof OBSERVED];
  const settings = {
    WEBHOOK_MAX_IN_FLIGHT: [cfg.WEBHOOK_MAX_IN_FLIGHT, DEFAULT_DISPATCH.maxInFlight],
    WEBHOOK_CIRCUIT_FAILURES: [cfg.WEBHOOK_CIRCUIT_FAILURES, DEFAULT_DISPATCH.circuitFailures],
    WEBHOOK_PROBE_SCHEDULE_MS: [cfg.WEBHOOK_PROBE_SCHEDULE_MS.join(','), DEFAULT_DISPATCH.probeScheduleMs.join(',')],
    WEBHOOK_RETRY_SCHEDULE_MS: [cfg.WEBHOOK_RETRY_SCHEDULE_MS.join(','), listOfSchedule(DEFAULT_RETRY_SCHEDULES.webhook).join(',')],
    WEBHOOK_BATCH_MS: [cfg.WEBHOOK_BATCH_MS, DEFAULT_DISPATCH.batchMs],
    WEBHOOK_LINGER_MS: [cfg.WEBHOOK_LINGER_MS, DEFAULT_DISPATCH.lingerMs],
    WEBHOOK_DISPATCH_IDLE_MS: [cfg.WEBHOOK_DISPATCH_IDLE_MS, DEFAULT_DISPATCH.idleMs],
  } as const;
  const changed = Object.entries(settings).filter(([, [v, d]]) => v !== d);
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  say(
    changed.length === 0
      ? `production webhook settings (the defaults): ${Object.entries(settings)
          .map(([k, [v]]) => `${k} ${v}`)
          .join(', ')}`
      : `webhook settings from the environment, NOT the defaults: ${changed.map(([k, [v, d]]) => `${k} ${v} (default ${d})`).join(', ')}`,
  );
  const { databaseUrl, env, client, temporalAddress } = await freshStack(cfg.DATABASE_URL, 'bench_webhooks');
  say(`bench database ${new URL(databaseUrl).pathname.slice(1)} (fresh); bursts of ${int(args.events)} events in transactions of ${int(args.perTx)}`);

  const children: Child[] = [];
  const rssMb: Record<string, number> = {};
  let db: Db | undefined;
  let ok = false;
  let ratios: Record<string, number | null> = {
    throughput: null,
    isolation: null,
    ...(args.observability ? { deliveries_cost_pct: null, worker_cpu_cost_pct: null } : {}),
  };
  /** VmHWM of each live child, read before they stop. */
  const readRss = (name: string, child: Child | undefined) => {
    if (!child) return;
    try {
      // The highest of every process that ran under this name (the worker restarts with --observability).
      rssMb[name] = Math.max(rssMb[name] ?? 0, peakRssMb(child.pid));
    } catch {
      // gone already
    }
  };
  /** The worker's log lines by level and message. */
  const workerLog: Record<string, number> = {};
  let worker: Child | undefined;
  let receiver: Child | undefined;
  let hanging: Child | undefined;
  let writerChild: Child | undefined;
  let sink: SpanSink | undefined;
  try {
    // The receivers and the event writer, each a process of its own.
    receiver = startChild('bench/lib/webhook-receiver.ts', [], {}, '[receiver]');
    hanging = startChild('bench/lib/webhook-receiver.ts', ['--hang'], {}, '[hanging receiver]');
    children.push(receiver, hanging);
    const receiverUrl = `http://127.0.0.1:${(await receiver.line(/receiver listening on (\d+)/))[1]}`;
    const hangingUrl = `http://127.0.0.1:${(await hanging.line(/receiver listening on (\d+)/))[1]}`;
    writerChild = startChild('bench/lib/event-writer.ts', [], { DATABASE_URL: databaseUrl }, '[event writer]', {
      stdin: true,
      echo: (l) => !l.startsWith('events-result'),
    });
    children.push(writerChild);
    await writerChild.line(/event writer ready/);
    const write = commandsTo<EventCommand, EventRunResult>(writerChild, 'events', 'the event writer', 30 * 60_000);

    // One integration; subscription A wants every event from the start.
    db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench' });
    const org = await createOrganization(db, { name: 'bench-webhooks' });
    // Test mode: deliveries to loopback are allowed (live ones are held to public addresses). Sealed with the key
    // the worker gets from the same environment.
    const secrets = createKeyring(cfg.ENCRYPTION_KEYS);
    const integration: IntegrationRow = await createIntegration(
      db,
      { organizationId: org.id, mode: 'test', plan: 'scale', sourceType: 'sandbox', sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' } },
      secrets,
    );
    const a: Subscription = await createSubscription(
      db,
      { organizationId: org.id, integrationId: integration.id, url: `${receiverUrl}/hooks`, eventTypes: ['*'], description: 'bench:webhooks healthy receiver' },
      secrets,
    );
    const integrationRef = { id: integration.id, organizationId: integration.organizationId, mode: integration.mode };

    // The worker production runs (Dockerfile): the built bundle under plain node, its workflow bundle prebuilt.
    if (!args.fromSource) {
      say('building dist/ (npm run build), to run the worker as production does');
      await buildDist();
    }
    if (args.observability) {
      sink = await startSpanSink();
      children.push(sink.child);
    }
    /** The worker, plain or observed (its metrics listener on, its spans to the sink); resolves once it polls. */
    const startWorker = async (observed: boolean): Promise<{ child: Child; metricsUrl: string | null }> => {
      const metricsPort = observed && observedAs.metrics ? await freePort() : null;
      const child = startChild(
        args.fromSource ? 'worker/main.ts' : 'dist/worker.mjs',
        [],
        {
          ...workerProcessEnv(process.env),
          DATABASE_URL: databaseUrl,
          TEMPORAL_ADDRESS: temporalAddress,
          TEMPORAL_TASK_QUEUE: TASK_QUEUE,
          WORKER_RECONCILE_SCHEDULES: 'false',
          SERVED_MODES: 'test',
          LOG_LEVEL: 'warn',
          LOG_PRETTY: 'false',
          ...(metricsPort === null ? {} : { WORKER_METRICS_PORT: String(metricsPort) }),
          ...(observed && observedAs.tracing ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink!.url } : {}),
        },
        observed ? '[worker+obs]' : '[worker]',
        {
          // As docker-compose.yml's worker-webhooks runs (worker/process-env.ts).
          nodeArgs: [...WEBHOOK_WORKER_V8_OPTIONS, ...args.workerNodeOptions.split(' ').filter(Boolean), ...cpuProfileArgs(args.profileWorker)],
          plainNode: !args.fromSource,
          // Every line is counted by its message; long ones (a failed query lists its parameters) are cut.
          echo: (line) => {
            let msg = 'unparsed line';
            try {
              const entry = JSON.parse(line) as { msg?: string; level?: number };
              msg = `${entry.level === 40 ? 'warn' : entry.level === 50 ? 'error' : `level ${entry.level}`} "${entry.msg}"`;
            } catch {
              // not a log entry
            }
            workerLog[msg] = (workerLog[msg] ?? 0) + 1;
            console.log(`[worker] ${line.length > 400 ? `${line.slice(0, 400)} …(${line.length} chars)` : line}`);
            return false;
          },
        },
      );
      children.push(child);
      const exited = new Promise<never>((_, reject) =>
        child.process.once('exit', (code, signal) => reject(new Error(`worker/main.ts exited (${signal ?? code}) before it polled its task queues`))),
      );
      exited.catch(() => {});
      // This process's pollers: a stopped worker's are listed for minutes.
      await Promise.race([
        Promise.all([waitForPollers(client, WEBHOOK_QUEUE, 120_000, child.pid), waitForActivityPollers(client, DISPATCH_QUEUE, 120_000, child.pid)]),
        exited,
      ]);
      return { child, metricsUrl: metricsPort === null ? null : `http://127.0.0.1:${metricsPort}/metrics` };
    };
    worker = (await startWorker(false)).child;
    let workerPid = worker.pid;
    const workerIdleMb = rssNowMb(workerPid);
    const receiverPid = receiver.pid;
    const writerPid = writerChild.pid;
    const hangingPid = hanging.pid;

    /** Every event recorded, for A. */
    const expected = new Set<string>();
    const record = async (cmd: Omit<EventCommand, 'id' | 'integration'>) => {
      const run = await write({ ...cmd, integration: integrationRef });
      const ids = run.txs.flatMap((t) => t.ids);
      if (ids.length !== cmd.count) throw new CheckFailed(`the event writer recorded ${ids.length} events, not ${cmd.count}`);
      for (const id of ids) expected.add(id);
      return run;
    };
    /** Subscriptions so far (B joins for the last phase). */
    const subs: { name: string; sub: Subscription }[] = [{ name: 'A', sub: a }];
    /** Where the relay and the dispatchers stand: what a stalled wait prints. */
    const diagnose = async (): Promise<string> => {
      const [ev] = await db!.execute<{ undispatched: number }>(sql`select (count(*) filter (where dispatched_at is null))::int as undispatched from events`);
      const lines = [`events not yet dispatched by the relay: ${ev!.undispatched}`];
      for (const { name, sub } of subs) {
        const [row] = await db!.execute<{ idle: boolean; opened: string | null; by_status: Record<string, number> | null; taken: number }>(sql`
          select s.dispatch_idle as idle, s.circuit_opened_at::text as opened,
            (select json_object_agg(status, n) from (select status, count(*)::int as n from webhook_deliveries where subscription_id = s.id group by status) x) as by_status,
            (select count(*)::int from webhook_deliveries d join webhook_dispatch_cursors c on c.subscription_id = d.subscription_id
              where d.subscription_id = s.id and d.status = 'pending' and d.seq <= c.taken_seq) as taken
          from webhook_subscriptions s where s.id = ${sub.row.id}`);
        let dispatcher = 'no dispatcher workflow';
        try {
          const d = await client.workflow.getHandle(dispatcherWorkflowIdOf(sub.row.id)).describe();
          dispatcher = `dispatcher ${d.status.name} (run started ${d.startTime.toISOString()})`;
        } catch {
          // none
        }
        lines.push(
          `${name}: dispatch_idle ${row!.idle}, circuit ${row!.opened ? `open since ${row!.opened}` : 'closed'}, deliveries ${JSON.stringify(row!.by_status ?? {})}, ` +
            `${row!.taken} taken and not recorded; ${dispatcher}`,
        );
      }
      lines.push(`worker log so far: ${describeCounts(workerLog)}`);
      return lines.join('\n');
    };
    const allDeliveredToA = (label: string) => waitFor(label, () => succeededOf(db!, a.row.id), expected.size, diagnose);

    // 1. Warm-up.
    await record({ kind: 'burst', count: args.warmup, perTx: args.perTx, tag: 'w' });
    await allDeliveredToA('warm-up deliveries succeeded');
    say(`warmed up: ${args.warmup} events delivered`);

    // 2. Steady rate, one event per transaction.
    const steadyCount = Math.round(args.steadyRate * args.steadySeconds);
    say(`steady phase: ${int(steadyCount)} events at ${args.steadyRate}/s, one per transaction`);
    const steadyFrom = await receivedCount(receiverUrl);
    const steadyRun = await record({ kind: 'steady', count: steadyCount, perTx: 1, rate: args.steadyRate, tag: 's' });
    await allDeliveredToA('steady deliveries succeeded');
    const steadyFirst = firstArrivals(await receivedSince(receiverUrl, steadyFrom), '/hooks', steadyFrom);
    const steadyLat = latencies(commitsOf(steadyRun), steadyFirst);
    say(
      `  steady: ${int(steadyCount)} events committed in ${secs(steadyRun.ms)} s (${steadyRun.late} late ticks); ` +
        `commit → first arrival p50 ${int(percentile(steadyLat, 50))} ms, p99 ${int(percentile(steadyLat, 99))} ms`,
    );

    let rss = rssSampler(workerPid);
    /** One burst of `--events` events; done when A has every delivery succeeded. */
    const burst = async (label: string, tag: string, extra: Record<string, () => number[]> = {}): Promise<BurstFigures> => {
      await sleep(2_000);
      const recFrom = await receivedCount(receiverUrl);
      const meter = await cpuMeter({
        temporal: () => childPids('temporal'),
        worker: () => [workerPid],
        postgres: () => postgresPids(db!, databaseUrl),
        receiver: () => [receiverPid],
        ...extra,
        'event writer': () => [writerPid],
        bench: () => [process.pid],
      }).start();
      rss.reset();
      const from = Date.now();
      say(`${label}: ${int(args.events)} events in ${Math.ceil(args.events / args.perTx)} transaction(s) of up to ${int(args.perTx)}`);
      const run = await record({ kind: 'burst', count: args.events, perTx: args.perTx, tag });
      say(`  committed in ${secs(run.ms)} s`);
      await allDeliveredToA(`${label}: deliveries to A succeeded`);
      const cpu = await meter();
      const workerRssMb = rss.peakMb();
      const to = Date.now();
      const committed = commitsOf(run);
      const first = firstArrivals(await receivedSince(receiverUrl, recFrom), '/hooks', recFrom);
      const firstCommit = run.txs[0]!.at;
      const lastArrival = Math.max(...[...committed.keys()].map((id) => first.get(id)?.at ?? -Infinity));
      const ms = lastArrival - firstCommit;
      // Visibility may lag a moment behind a start or a close.
      await sleep(1_000);
      const xs = openDuring(await executions(client), from, to);
      const timeline = await deliveriesOf(db!, a.row.id, [...committed.keys()]);
      const stalls = await stallsOf(db!, a.row.id, [...committed.keys()]);
      say(`  ${label}: ${int(args.events)} deliveries to A in ${secs(ms)} s (${int(args.events / (ms / 1000))}/s)`);
      return {
        run,
        committed,
        first,
        ms,
        perSec: args.events / (ms / 1000),
        lat: latencies(committed, first),
        from,
        to,
        executions: xs,
        cpu,
        workerRssMb,
        timeline,
        stalls,
      };
    };

    /** One floor round: the bodies and headers of a burst's deliveries, in A's queue order, to the same receiver process. */
    const floorRound = async (of: BurstFigures, label: string): Promise<FloorFigures> => {
      const bodies = await db!.execute<{ event_id: string; event_type: string; body: string | null }>(sql`
        select d.event_id, d.event_type, e.body from webhook_deliveries d join events e on e.id = d.event_id
        where d.subscription_id = ${a.row.id} and d.event_id = any(${sql.param([...of.committed.keys()])}::text[]) order by d.seq`);
      const stored = { secret: a.row.secret, previousSecret: null, previousExpiresAt: null, standardWebhooks: a.row.standardWebhooks };
      const requests: FloorRequest[] = bodies.map((r) => {
        if (r.body === null) throw new CheckFailed(`event ${r.event_id} has no stored body after its delivery`);
        return {
          body: r.body,
          headers: attemptHeaders(secrets, a.row.id, stored, r.body, { eventId: r.event_id, eventType: r.event_type, attempt: 1 }, new Date()),
        };
      });
      if (requests.length !== args.events) throw new CheckFailed(`floor: ${requests.length} bodies for ${args.events} events`);
      await sleep(2_000);
      const floorFrom = await receivedCount(receiverUrl);
      const child = startChild('bench/lib/http-floor.ts', [], {}, '[floor]', { stdin: true, echo: (l) => !l.startsWith('floor-') });
      children.push(child);
      const spec: FloorSpec = { url: `${receiverUrl}/floor`, concurrency: IN_FLIGHT, warmup: Math.min(args.warmup, args.events), requests };
      const answer = child.line(/^floor-result (.*)$/, 30 * 60_000);
      const timed = child.line(/^floor-timed-start$/, 30 * 60_000);
      child.process.stdin!.end(JSON.stringify(spec));
      await timed;
      // The receiver's CPU over the timed run (the client measures its own).
      const meter = await cpuMeter({ receiver: () => [receiverPid] }).start();
      const result = JSON.parse((await answer)[1]!) as FloorResult;
      const cpu = { ...(await meter()), 'floor client': result.cpuMs / 1000 };
      await child.stop();
      const records = (await receivedSince(receiverUrl, floorFrom)).filter((r) => r.path === '/floor');
      const ms = Math.max(...records.map((r) => r.at)) - result.startedAt;
      say(
        `  ${label}: ${int(args.events)} requests in ${secs(ms)} s (${int(args.events / (ms / 1000))}/s; ${secs(result.endedAt - result.startedAt)} s as the client timed it)`,
      );
      return { result, ms, perSec: args.events / (ms / 1000), cpu, warmup: spec.warmup };
    };

    // 3. Bursts to A alone, each followed by the floor over the same bodies.
    const alone: BurstFigures[] = [];
    const floors: FloorFigures[] = [];
    for (let r = 1; r <= args.rounds; r++) {
      alone.push(await burst(`burst ${r}/${args.rounds}, A alone`, `b${r}-`));
      say(
        `floor ${r}/${args.rounds}: the same ${int(args.events)} signed bodies from a bare node:http client, ${IN_FLIGHT} in flight over keep-alive, after ${int(Math.min(args.warmup, args.events))} to warm up`,
      );
      floors.push(await floorRound(alone.at(-1)!, `floor ${r}/${args.rounds}`));
    }

    // 3b. With --observability: plain and observed worker lives, taking turns, each a warm-up burst and a measured one.
    const observability: Record<'off' | 'on', BurstFigures[]> = { off: [], on: [] };
    if (args.observability) {
      let observedNow = false;
      let scrapes = 0;
      let metricsUrl: string | null = null;
      const scraper = setInterval(() => {
        if (metricsUrl)
          fetch(metricsUrl)
            .then((r) => r.text())
            .then(
              () => scrapes++,
              () => {},
            );
      }, 15_000);
      /** Stops the running worker and starts the other kind; checks what the stopped one exported to the sink. */
      const restart = async (observed: boolean, attemptsMade: number) => {
        const spansBefore = lifeSpans;
        readRss(observedNow ? 'worker_observed' : 'worker', worker);
        await worker!.stop(); // an observed worker exports what its tracer still holds on the way out
        const spans = (await sink!.count('webhook.attempt')) - spansBefore;
        const traced = observedNow && observedAs.tracing;
        if (spans !== (traced ? attemptsMade : 0)) {
          throw new CheckFailed(
            `the ${observedNow ? 'observed' : 'plain'} worker's life made ${attemptsMade} attempts and exported ${spans} webhook.attempt spans (expected ${traced ? attemptsMade : 0})`,
          );
        }
        lifeSpans += spans;
        const started = await startWorker(observed);
        worker = started.child;
        metricsUrl = started.metricsUrl;
        workerPid = worker.pid;
        rss.stop();
        rss = rssSampler(workerPid);
        observedNow = observed;
      };
      let lifeSpans = await sink!.count('webhook.attempt');
      let madeThisLife = 0;
      const warm = Math.min(args.warmup, args.events);
      try {
        for (let r = 1; r <= OBS_ROUNDS; r++) {
          for (const mode of r % 2 === 1 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
            say(
              `observability ${r}/${OBS_ROUNDS}: the worker restarted ${mode === 'on' ? `with ${observedAs.name} on` : 'plain'}; ${int(warm)} events to warm it up`,
            );
            await restart(mode === 'on', madeThisLife);
            await record({ kind: 'burst', count: warm, perTx: args.perTx, tag: `o${r}${mode}w-` });
            await allDeliveredToA(`observability ${r}/${OBS_ROUNDS} ${mode}: warm-up deliveries succeeded`);
            observability[mode].push(await burst(`observability ${r}/${OBS_ROUNDS}, ${observedAs.name} ${mode}`, `o${r}${mode}-`));
            madeThisLife = warm + args.events;
            if (mode === 'on' && observedAs.metrics) {
              // The observed worker counted every attempt of its life, each a first attempt that succeeded.
              const text = await (await fetch(metricsUrl!)).text();
              const counted = sampleOf(text, 'propsync_webhook_attempts_total', { outcome: 'succeeded', attempt: '1' });
              const failed = sampleOf(text, 'propsync_webhook_attempts_total', { outcome: 'failed', attempt: '1' });
              if (counted !== madeThisLife || failed !== 0) {
                throw new CheckFailed(
                  `the observed worker's metrics counted ${counted} succeeded and ${failed} failed first attempts, not the ${madeThisLife} it made`,
                );
              }
            }
          }
        }
        if (observedNow) await restart(false, madeThisLife);
      } finally {
        clearInterval(scraper);
      }
      say(`observability: the observed workers' /metrics scraped ${scrapes} times besides the checks; the sink took ${(await sink!.stats()).exports} exports`);
    }

    // 4. Isolation: subscription B, whose receiver never answers, wants the same events.
    const b: Subscription = await createSubscription(
      db,
      { organizationId: org.id, integrationId: integration.id, url: `${hangingUrl}/hooks`, eventTypes: ['*'], description: 'bench:webhooks hanging receiver' },
      secrets,
    );
    subs.push({ name: 'B', sub: b });
    // An event goes to the subscriptions that existed when it was recorded.
    await sleep(100);
    const withB: BurstFigures[] = [];
    for (let r = 1; r <= args.rounds; r++)
      withB.push(await burst(`burst ${r}/${args.rounds}, A with hanging B`, `h${r}-`, { 'hanging receiver': () => [hangingPid] }));
    say(`waiting (at most ${CIRCUIT_WAIT_MS / 1000} s) for the hanging subscription's circuit to open`);
    const circuitDeadline = Date.now() + CIRCUIT_WAIT_MS;
    let circuitOpen = false;
    while (Date.now() < circuitDeadline && !circuitOpen) {
      const [row] = await db.execute<{ at: string | null }>(sql`select circuit_opened_at::text as at from webhook_subscriptions where id = ${b.row.id}`);
      circuitOpen = Boolean(row?.at);
      if (!circuitOpen) await sleep(500);
    }
    // Let the failures of the batch that opened the circuit be handed to their retry workflows and recorded.
    await sleep(3_000);
    const withCommitted = new Set(withB.flatMap((f) => [...f.committed.keys()]));
    const hangingRecords = await receivedSince(hangingUrl);
    const bAfter = await deliveriesOf(db, b.row.id, [...withCommitted]);
    const [bRow] = await db.execute<{ opened: string | null; next_probe: string | null }>(
      sql`select circuit_opened_at::text as opened, circuit_next_probe_at::text as next_probe from webhook_subscriptions where id = ${b.row.id}`,
    );
    const allExecutions = await executions(client);
    // Retry workflows are named by their delivery's id: whose subscription is each?
    const retryIds = allExecutions.filter((x) => x.type === 'deliverWebhook').map((x) => x.workflowId);
    const retryOwner = new Map(
      (
        await db.execute<{ id: string; subscription_id: string }>(
          sql`select id, subscription_id from webhook_deliveries where id = any(${sql.param(retryIds)}::text[])`,
        )
      ).map((r) => [r.id, r.subscription_id]),
    );
    const bRetries = allExecutions.filter((x) => x.type === 'deliverWebhook' && retryOwner.get(x.workflowId) === b.row.id);
    const bDispatcherRuns = allExecutions.filter((x) => x.workflowId === dispatcherWorkflowIdOf(b.row.id));

    // RSS of every process, before anything stops.
    readRss('worker', worker);
    readRss('receiver', receiver);
    readRss('hanging_receiver', hanging);
    readRss('event_writer', writerChild);
    rssMb.floor_client = Math.max(...floors.map((f) => f.result.rssMb));

    // 5. Checks, before any ratio is printed.
    const problems: string[] = [];
    const allRecords = await receivedSince(receiverUrl);
    const bad: string[] = [];
    const valid = new Map<string, number>();
    const unexpected = new Set<string>();
    let floorValid = 0;
    for (const r of allRecords) {
      const headers = { 'x-service-signature': r.signature ?? undefined, 'x-service-signature-previous': r.previousSignature ?? undefined };
      let bodyId: unknown;
      try {
        bodyId = (JSON.parse(r.raw) as { id?: unknown }).id;
      } catch {
        bodyId = undefined;
      }
      const why = !verifyWebhookSignature(r.raw, headers, a.secret)
        ? 'signature does not verify under A’s secret'
        : !r.eventId || bodyId !== r.eventId
          ? `body id ${String(bodyId)} differs from the event id header`
          : r.attempt !== '1'
            ? `attempt header ${r.attempt} (every attempt of A should be its first)`
            : null;
      if (r.path !== '/hooks' && r.path !== '/floor') bad.push(`${r.eventId}: unexpected path ${r.path}`);
      else if (why) bad.push(`${r.path} ${r.eventId}: ${why}`);
      else if (r.path === '/floor') floorValid++;
      else if (!expected.has(r.eventId!)) unexpected.add(r.eventId!);
      else valid.set(r.eventId!, (valid.get(r.eventId!) ?? 0) + 1);
    }
    const missing = [...expected].filter((id) => !valid.has(id));
    const duplicates = [...valid.values()].filter((n) => n > 1).length;
    const floorSent = floors.reduce((n, f) => n + args.events + f.warmup, 0);
    if (bad.length > 0) problems.push(`${bad.length} request(s) at the healthy receiver went wrong, e.g. ${bad.slice(0, 3).join('; ')}`);
    if (missing.length > 0)
      problems.push(`${missing.length} of ${expected.size} events never reached A's receiver validly signed, e.g. ${missing.slice(0, 3).join(', ')}`);
    if (unexpected.size > 0) problems.push(`${unexpected.size} event id(s) the bench never recorded reached A's receiver`);
    for (const [i, f] of floors.entries()) {
      if (f.result.ok !== args.events || f.result.failures.length > 0)
        problems.push(`floor ${i + 1}: ${f.result.ok} of ${args.events} timed requests answered 2xx: ${f.result.failures.join('; ')}`);
    }
    if (floorValid !== floorSent) problems.push(`floor: the receiver got ${floorValid} validly signed floor requests, not ${floorSent}`);

    // A's attempts as the admin API shows them: the rows, and a first attempt that succeeded kept on its delivery.
    const [aRows] = await db.execute<{ n: number; by_status: Record<string, number>; multi: number; attempts: number; not_ok: number }>(sql`
      with a_attempts as (
        select t.number, t.response_status from webhook_attempts t join webhook_deliveries d on d.id = t.delivery_id
        where d.subscription_id = ${a.row.id} and not (t.number = 1 and d.first_duration_ms is not null)
        union all
        select 1, d.first_response_status from webhook_deliveries d where d.subscription_id = ${a.row.id} and d.first_duration_ms is not null
      )
      select (select count(*)::int from webhook_deliveries where subscription_id = ${a.row.id}) as n,
        (select json_object_agg(status, n) from (select status, count(*)::int as n from webhook_deliveries where subscription_id = ${a.row.id} group by status) s) as by_status,
        (select count(*)::int from webhook_deliveries where subscription_id = ${a.row.id} and attempts <> 1) as multi,
        (select count(*)::int from a_attempts) as attempts,
        (select count(*)::int from a_attempts where number <> 1 or response_status is distinct from 200) as not_ok`);
    if (aRows!.n !== expected.size || aRows!.by_status.succeeded !== expected.size) {
      problems.push(`A's deliveries: expected ${expected.size} succeeded, found ${aRows!.n}: ${JSON.stringify(aRows!.by_status)}`);
    }
    if (aRows!.multi > 0 || aRows!.attempts !== expected.size || aRows!.not_ok > 0) {
      problems.push(
        `A's attempts: ${aRows!.attempts} recorded for ${expected.size} deliveries, ${aRows!.multi} deliveries with other than one attempt, ${aRows!.not_ok} not a first attempt answered 200`,
      );
    }
    const [aOrder] = await db.execute<{ links: number; backwards: number; worst_ms: number | null; unsent: number; no_seq: number }>(sql`
      select count(prev)::int as links, (count(*) filter (where first_sent_at < prev))::int as backwards,
        max(extract(epoch from prev - first_sent_at) * 1000) filter (where first_sent_at < prev) as worst_ms,
        (count(*) filter (where first_sent_at is null))::int as unsent, (count(*) filter (where seq is null))::int as no_seq
      from (select seq, first_sent_at, lag(first_sent_at) over (order by seq) as prev from webhook_deliveries where subscription_id = ${a.row.id}) t`);
    if (aOrder!.backwards > 0 || aOrder!.unsent > 0 || aOrder!.no_seq > 0) {
      problems.push(
        `A's first attempts out of seq order: first_sent_at went backwards ${aOrder!.backwards} time(s) along seq (by up to ${Number(aOrder!.worst_ms ?? 0).toFixed(0)} ms), ` +
          `${aOrder!.unsent} without first_sent_at, ${aOrder!.no_seq} without seq`,
      );
    }
    const aRetries = allExecutions.filter((x) => x.type === 'deliverWebhook' && retryOwner.get(x.workflowId) !== b.row.id);
    if (aRetries.length > 0)
      problems.push(
        `${aRetries.length} retry workflow(s) not of B's deliveries (A's first attempts should all have succeeded), e.g. ${aRetries[0]!.workflowId}`,
      );
    const [aCircuit] = await db.execute<{ opened: string | null }>(
      sql`select circuit_opened_at::text as opened from webhook_subscriptions where id = ${a.row.id}`,
    );
    if (aCircuit!.opened) problems.push(`A's circuit is open (since ${aCircuit!.opened})`);
    const [evs] = await db.execute<{ total: number; undispatched: number }>(
      sql`select count(*)::int as total, (count(*) filter (where dispatched_at is null))::int as undispatched from events`,
    );
    if (evs!.total !== expected.size || evs!.undispatched !== 0)
      problems.push(`events: expected ${expected.size} all dispatched, found ${evs!.total} with ${evs!.undispatched} undispatched`);
    if (bAfter.n !== withCommitted.size || (bAfter.byStatus.succeeded ?? 0) > 0) {
      problems.push(`B's deliveries: expected ${withCommitted.size}, none succeeded; found ${bAfter.n}: ${JSON.stringify(bAfter.byStatus)}`);
    }
    const hangingBad = hangingRecords.filter(
      (r) => !r.eventId || !withCommitted.has(r.eventId) || !verifyWebhookSignature(r.raw, { 'x-service-signature': r.signature ?? undefined }, b.secret),
    );
    if (hangingBad.length > 0) problems.push(`${hangingBad.length} request(s) at the hanging receiver not of B's bursts or not signed with B's secret`);
    if (problems.length > 0) throw new CheckFailed(`the run is broken:\n  - ${problems.join('\n  - ')}`);

    // Order at the receiver: first arrivals of A's events along seq.
    const seqOrder = (
      await db.execute<{ event_id: string }>(sql`select event_id from webhook_deliveries where subscription_id = ${a.row.id} order by seq`)
    ).map((r) => r.event_id);
    const arrivalIndex = firstArrivals(allRecords, '/hooks');
    let inversions = 0;
    let latest = -1;
    const bySeq = seqOrder.map((id) => arrivalIndex.get(id)!.index);
    for (const i of bySeq) {
      if (i < latest) inversions++;
      latest = Math.max(latest, i);
    }
    const arrivalRank = new Map([...bySeq].sort((x, y) => x - y).map((idx, rank) => [idx, rank]));
    // (A loop, not Math.max(...): with --observability A has some 120,000 deliveries, more arguments than a call takes.)
    const displacement = bySeq.reduce((most, idx, seqRank) => Math.max(most, Math.abs(arrivalRank.get(idx)! - seqRank)), 0);

    // 6. Figures: medians over the rounds.
    const median = (xs: number[]) => percentile(xs, 50);
    const floorPerSec = median(floors.map((f) => f.perSec));
    const alonePerSec = median(alone.map((f) => f.perSec));
    const withPerSec = median(withB.map((f) => f.perSec));
    const throughput = alonePerSec / floorPerSec;
    const isolation = withPerSec / alonePerSec;
    const steadyP50 = percentile(steadyLat, 50);
    const aloneLat = alone.flatMap((f) => f.lat);
    const withLat = withB.flatMap((f) => f.lat);
    const aloneP99 = percentile(aloneLat, 99);
    /** Distinct executions open during any of the bursts. */
    const distinct = (fs: BurstFigures[]) => [...new Map(fs.flatMap((f) => f.executions).map((x) => [`${x.workflowId} ${x.start}`, x])).values()];
    const aloneExec = distinct(alone);
    const per1000 = aloneExec.length / ((args.rounds * args.events) / 1000);
    const withExec = distinct(withB);
    const withA = withExec.filter((x) => x.workflowId === dispatcherWorkflowIdOf(a.row.id));
    const withOthers = withExec.filter((x) => x.workflowId !== dispatcherWorkflowIdOf(a.row.id));
    const at = (t: number, base: number) => `+${secs(t - base)}`;
    const cpuOf = (c: Record<string, number>) =>
      ['worker', 'postgres', 'receiver', 'temporal'].map((k) => (((c[k] ?? 0) * 1000) / args.events).toFixed(2)).join(' / ');
    console.log('');
    const txs = Math.ceil(args.events / args.perTx);
    console.log(
      `  Bursts of ${int(args.events)} events (${txs} transaction${txs === 1 ? '' : 's'} of up to ${int(args.perTx)}) to subscription A, ${args.rounds} round(s) each; times from each burst's first commit.`,
    );
    console.log(
      `  ${'run'.padEnd(26)}${'seconds'.padStart(8)}${'per s'.padStart(8)}${'p50 s'.padStart(7)}${'p99 s'.padStart(7)}${'relay'.padStart(9)}` +
        `${'sending'.padStart(15)}${'stalls'.padStart(7)}${'within'.padStart(8)}${'stalled'.padStart(9)}   CPU ms/delivery worker / postgres / receiver / temporal`,
    );
    for (const [name, fs] of [
      ['A alone', alone],
      ['A with hanging B', withB],
    ] as const) {
      fs.forEach((f, i) => {
        const c0 = f.run.txs[0]!.at;
        console.log(
          `  ${`${name}, round ${i + 1}`.padEnd(26)}${secs(f.ms).padStart(8)}${int(f.perSec).padStart(8)}${secs(percentile(f.lat, 50)).padStart(7)}${secs(percentile(f.lat, 99)).padStart(7)}` +
            `${at(f.timeline.queuedLast, c0).padStart(9)}${`${at(f.timeline.sentFirst, c0)} → ${secs(f.timeline.sentLast - c0)}`.padStart(15)}${int(f.stalls.stalls).padStart(7)}` +
            `${secs(f.stalls.withinMs).padStart(8)}${secs(f.stalls.betweenMs).padStart(9)}   ${cpuOf(f.cpu)}`,
        );
      });
    }
    floors.forEach((f, i) => {
      console.log(
        `  ${`floor, round ${i + 1}`.padEnd(26)}${secs(f.ms).padStart(8)}${int(f.perSec).padStart(8)}${''.padStart(71)}floor client ${((f.cpu['floor client']! * 1000) / args.events).toFixed(2)}, receiver ${((f.cpu.receiver! * 1000) / args.events).toFixed(2)}`,
      );
    });
    console.log(
      `  (relay: when its last transaction queuing A's deliveries began; sending: first to last first attempt; stalls: gaps of over ${SEND_GAP_MS} ms between one first attempt ` +
        `and the next, during which nothing was started; within: the seconds spent sending outside them; stalled: the seconds in them)`,
    );
    console.log('');
    console.log(`  deliveries/s to A alone (median of rounds)         ${int(alonePerSec)}`);
    console.log(
      `  floor requests/s (median of rounds)                 ${int(floorPerSec)}   (node:http, ${IN_FLIGHT} in flight, same bodies, headers and receiver)`,
    );
    console.log(
      `  throughput: deliveries/s ÷ floor requests/s         ${throughput.toFixed(2)}   (target >= ${TARGETS.throughput}: ${mark(throughput >= TARGETS.throughput)})`,
    );
    console.log(`  deliveries/s to A with hanging B (median of rounds) ${int(withPerSec)}`);
    console.log(
      `  isolation: A's rate with hanging B ÷ alone          ${isolation.toFixed(2)}   (target >= ${TARGETS.isolation}: ${mark(isolation >= TARGETS.isolation)})`,
    );
    console.log(
      `  commit → first arrival, bursts alone                p50 ${secs(percentile(aloneLat, 50))} s, p99 ${secs(aloneP99)} s (target p99 <= ${TARGETS.burstP99Ms / 1000} s: ${mark(aloneP99 <= TARGETS.burstP99Ms)})`,
    );
    console.log(`  commit → first arrival, bursts with hanging B       p50 ${secs(percentile(withLat, 50))} s, p99 ${secs(percentile(withLat, 99))} s`);
    console.log(
      `  commit → first arrival, steady ${args.steadyRate}/s                p50 ${int(steadyP50)} ms, p99 ${int(percentile(steadyLat, 99))} ms over ${steadyLat.length} events ` +
        `(target p50 <= ${TARGETS.steadyP50Ms} ms: ${mark(steadyP50 <= TARGETS.steadyP50Ms)})`,
    );
    console.log(
      `  Temporal executions per 1,000 deliveries, alone     ${per1000.toFixed(2)}   (${aloneExec.length} on ${WEBHOOK_QUEUE} open during the ${args.rounds} bursts: ` +
        `${describeCounts(countBy(aloneExec, (x) => `${x.type} ${x.status.toLowerCase()}`))}; target <= ${TARGETS.executionsPer1000}: ${mark(per1000 <= TARGETS.executionsPer1000)})`,
    );
    console.log(
      `    with hanging B: A's ${withA.length} (${(withA.length / ((args.rounds * args.events) / 1000)).toFixed(2)} per 1,000); B's ${withOthers.length} ` +
        `(${describeCounts(countBy(withOthers, (x) => `${x.type} ${x.status.toLowerCase()}`))}); by the end B had ${bDispatcherRuns.length} dispatcher run(s) and ${bRetries.length} retry workflow(s)`,
    );
    const workerRss = rssMb.worker ?? NaN;
    console.log(
      `  worker peak RSS                                     ${workerRss} MB over the run (VmHWM; target <= ${TARGETS.workerRssMb} MB: ${mark(workerRss <= TARGETS.workerRssMb)}); ` +
        `${workerIdleMb} MB idle after start; ${Math.max(...alone.map((f) => f.workerRssMb))} / ${Math.max(...withB.map((f) => f.workerRssMb))} MB sampled during the bursts alone / with B (VmRSS)`,
    );
    console.log(
      `  other peaks (VmHWM)                                 receiver ${rssMb.receiver} MB, floor client ${rssMb.floor_client} MB, hanging receiver ${rssMb.hanging_receiver} MB, event writer ${rssMb.event_writer} MB`,
    );
    console.log(
      `  order: A's first_sent_at never decreased along seq (${int(aOrder!.links + 1)} deliveries); at the receiver ${int(inversions)} first arrival(s) came before an earlier-seq event's, ` +
        `largest displacement ${displacement} position(s) (${IN_FLIGHT} in flight)`,
    );
    const firstWith = withB[0]!.run.txs[0]!.at;
    console.log(
      `  hanging B: ${hangingRecords.length} request(s) reached its receiver; ` +
        (bRow!.opened
          ? `circuit opened ${at(new Date(bRow!.opened).getTime(), firstWith)} s after the first commit of its first burst, next probe ${bRow!.next_probe ? `${at(new Date(bRow!.next_probe).getTime(), firstWith)} s` : '-'}`
          : `circuit NOT open ${CIRCUIT_WAIT_MS / 1000} s after A's bursts`) +
        `; its deliveries: ${describeCounts(bAfter.byStatus)}`,
    );
    let costs: { deliveries: number; cpu: number } | null = null;
    if (args.observability) {
      // Worker CPU per delivery of a burst, ms.
      const cpuPer = (f: BurstFigures) => ((f.cpu.worker ?? 0) * 1000) / args.events;
      // The middle value, or the mean of the middle two (an even number of rounds: plain and observed alike).
      const mid = (xs: number[]) => {
        const v = [...xs].sort((x, y) => x - y);
        const h = Math.floor(v.length / 2);
        return v.length % 2 ? v[h]! : (v[h - 1]! + v[h]!) / 2;
      };
      const offRate = mid(observability.off.map((f) => f.perSec));
      const onRate = mid(observability.on.map((f) => f.perSec));
      const offCpu = mid(observability.off.map(cpuPer));
      const onCpu = mid(observability.on.map(cpuPer));
      costs = { deliveries: (1 - onRate / offRate) * 100, cpu: (onCpu / offCpu - 1) * 100 };
      console.log('');
      console.log(
        `  ${observedAs.name[0]!.toUpperCase()}${observedAs.name.slice(1)}: ${OBS_ROUNDS} round(s) of a plain and an observed worker life, taking turns, each a burst of ${int(args.events)} to A after ${int(Math.min(args.warmup, args.events))} to warm up`,
      );
      for (const mode of ['off', 'on'] as const) {
        observability[mode].forEach((f, i) => {
          console.log(
            `  ${`${mode === 'on' ? 'observed' : 'plain'}, round ${i + 1}`.padEnd(26)}${secs(f.ms).padStart(8)}${int(f.perSec).padStart(8)}${secs(percentile(f.lat, 50)).padStart(7)}${secs(percentile(f.lat, 99)).padStart(7)}` +
              `   CPU ms/delivery worker / postgres / receiver / temporal ${cpuOf(f.cpu)}`,
          );
        });
      }
      const mark5 = (pct: number) => (pct <= TARGETS.observabilityCostPct ? 'meets target' : 'ABOVE TARGET');
      console.log(
        `  deliveries/s plain ${int(offRate)}, observed ${int(onRate)} (medians): cost ${costs.deliveries.toFixed(1)} % of throughput ` +
          `(target <= ${TARGETS.observabilityCostPct} %: ${mark5(costs.deliveries)})`,
      );
      console.log(
        `  worker CPU per delivery plain ${offCpu.toFixed(2)} ms, observed ${onCpu.toFixed(2)} ms (medians): cost ${costs.cpu.toFixed(1)} % (target <= ${TARGETS.observabilityCostPct} %: ${mark5(costs.cpu)})`,
      );
      console.log(`  observed worker peak RSS ${rssMb.worker_observed} MB (VmHWM), plain ${rssMb.worker} MB`);
    }
    console.log('');
    console.log(
      `  checks passed: ${int(expected.size)} events (warm-up ${int(args.warmup)}, steady ${int(steadyCount)}, ${2 * args.rounds} bursts of ${int(args.events)}${args.observability ? `, ${2 * OBS_ROUNDS} more with plain and observed workers and their warm-ups` : ''}) each reached A's receiver validly signed (attempt 1), ` +
        `${int(allRecords.length - floorValid)} delivery requests in all, ${duplicates} event(s) received more than once; every delivery of A succeeded after one attempt, ` +
        `first attempts in seq order, no retry workflow for A, A's circuit closed, every event dispatched; the floor's ${int(floorSent)} requests answered 2xx and arrived validly signed; ` +
        `B has ${int(withCommitted.size)} deliveries, none succeeded`,
    );
    console.log(`  worker log (warnings and above): ${describeCounts(workerLog)}`);
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
    ok = true;
    ratios = {
      throughput: Number(throughput.toFixed(3)),
      isolation: Number(isolation.toFixed(3)),
      ...(costs ? { deliveries_cost_pct: Number(costs.deliveries.toFixed(1)), worker_cpu_cost_pct: Number(costs.cpu.toFixed(1)) } : {}),
    };
  } catch (err) {
    console.error(err instanceof CheckFailed ? `\n[bench:webhooks] FAILED: ${err.message}` : err);
    console.error(`[bench:webhooks] worker log (warnings and above): ${describeCounts(workerLog)}`);
    readRss('worker', worker);
    readRss('receiver', receiver);
    readRss('hanging_receiver', hanging);
    readRss('event_writer', writerChild);
  } finally {
    for (const c of children.reverse()) await c.stop();
    if (db) await closeDb(db);
    await env.teardown();
  }
  // The last line of output.
  console.log(JSON.stringify({ bench: 'webhooks', ratios, rss_mb: rssMb, ok }));
  process.exit(ok ? 0 : 1);
}

// main ends the process itself once it has started (its last line holds what it measured); this is for a failure before.
endBench('webhooks', main, (passed) =>
  passed
    ? undefined
    : {
        bench: 'webhooks',
        ratios: { throughput: null, isolation: null, ...(args.observability ? { deliveries_cost_pct: null, worker_cpu_cost_pct: null } : {}) },
        rss_mb: {},
        ok: false,
      },
);
