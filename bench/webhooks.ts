/**
 * `npm run bench:webhooks`: webhook delivery throughput and latency against a floor measured in the same run, on a
 * bench database and a Temporal dev server of its own.
 *
 *   1. floor: N bare workflows, each calling one no-op activity, started by this process with as many starts in
 *      flight as the outbox relay keeps (64), on a worker process with the delivery worker's task-queue settings
 *      (bench/lib/floor-worker.ts);
 *   2. the real worker process (worker/main.ts: sync worker, webhook worker and outbox relay) and a receiver process
 *      that answers 200 at once (bench/lib/webhook-receiver.ts); one integration on the scale plan, one subscription;
 *   3. latency: a few hundred events committed at a steady, modest rate in small transactions; commit → first
 *      attempt at the receiver, per event;
 *   4. burst: N events committed back to back, 1000 per transaction (a sync page's worth); deliveries per second
 *      from the first commit until the last delivery workflow closed, and the burst's own commit → first attempt.
 *
 * Before printing any figure it checks the run: every event reached the receiver at least once with a valid
 * signature under the subscription's secret and its own id in the body, nothing else arrived, every delivery row
 * ended `succeeded`, every event was dispatched, every workflow of both kinds completed. A failed check exits 1.
 * Timings are printed against their targets, never asserted. To show where the time went it also prints, per
 * phase, the median legs of a sample of workflow histories and the CPU each process used per item.
 * Usage: npm run bench:webhooks [-- --events 10000 --latency-events 300 --latency-rate 10 --warmup 200]
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { inArray, sql } from 'drizzle-orm';
import { loadConfigOrExit } from '../config';
import { closeDb, createDb, type Db } from '../db/client';
import { webhookDeliveries } from '../db/schema';
import { createIntegration, createOrganization, type IntegrationRow } from '../db/tenants';
import { createSubscription, type SubscriptionRow } from '../db/webhooks';
import { webhookTaskQueueOf } from '../domain/contract';
import { createKeyring } from '../domain/secrets';
import { verifyWebhookSignature } from '../domain/signature';
import { recordEvents, residentUpdates } from '../test/support/webhooks';
import { workerProcessEnv } from '../worker/process-env';
import type { floorWorkflow } from './lib/floor-workflow';
import { legsOfAll, sample, type Legs } from './lib/histories';
import { atInterrupt, childPids, cpuMeter, freshDatabase, peakRssMb, rssSampler, startChild, startTemporal, waitForPollers, type Child } from './lib/processes';
import { percentile } from './lib/stats';
import type { ReceivedRecord } from './lib/webhook-receiver';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '10000' },
    'latency-events': { type: 'string', default: '300' },
    'latency-rate': { type: 'string', default: '10' },
    warmup: { type: 'string', default: '200' },
  },
});
const N = Number(args.events);
const LATENCY_EVENTS = Number(args['latency-events']);
const LATENCY_RATE = Number(args['latency-rate']);
const WARMUP = Number(args.warmup);
/** Events per transaction: of the steady phase, and of the burst (a sync page's events arrive in one insert). */
const LATENCY_TX = 2;
const BURST_TX = 1000;
/** Workflow starts in flight at once: the outbox relay's default (worker/relay.ts startConcurrency). */
const START_LANES = 64;
const TASK_QUEUE = 'bench-webhooks';
const WEBHOOK_QUEUE = webhookTaskQueueOf(TASK_QUEUE);
const FLOOR_QUEUE = 'bench-webhooks-floor';
/** A wait fails when nothing moved for this long (a delivery's second attempt comes 30 s after a failed first). */
const STALL_MS = 90_000;
/** Workflow histories read per phase for the breakdown. */
const HISTORY_SAMPLE = 100;

const cfg = loadConfigOrExit();
const say = (msg: string) => console.log(`[bench:webhooks] ${msg}`);
const secs = (ms: number) => (ms / 1000).toFixed(2);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

class CheckFailed extends Error {
  override name = 'CheckFailed';
}

/**
 * Polls `probe` until it reaches `target`; logs progress every 5 s; throws when it stalls for STALL_MS.
 */
async function waitFor(label: string, probe: () => Promise<number>, target: number, intervalMs = 200): Promise<void> {
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
    if (Date.now() - movedAt > STALL_MS) throw new CheckFailed(`${label}: stuck at ${int(n)}/${int(target)} for ${STALL_MS / 1000} s`);
    if (Date.now() - loggedAt >= 10_000) {
      loggedAt = Date.now();
      say(`  ${label}: ${int(n)}/${int(target)}`);
    }
    await sleep(intervalMs);
  }
}

/** Runs `count` calls of `start`, at most START_LANES in flight, as the relay's startAll does. */
async function startInLanes(count: number, start: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(START_LANES, count) }, async () => {
      while (next < count) await start(next++);
    }),
  );
}

/** Every workflow the query matches: how many in each status, and when the last one closed (epoch ms). */
async function workflowsOf(client: Client, query: string): Promise<{ total: number; byStatus: Record<string, number>; lastCloseMs: number }> {
  const byStatus: Record<string, number> = {};
  let total = 0;
  let lastCloseMs = 0;
  for await (const wf of client.workflow.list({ query, pageSize: 1000 })) {
    total++;
    byStatus[wf.status.name] = (byStatus[wf.status.name] ?? 0) + 1;
    if (wf.closeTime) lastCloseMs = Math.max(lastCloseMs, wf.closeTime.getTime());
  }
  return { total, byStatus, lastCloseMs };
}

const completedOn = async (client: Client, taskQueue: string) =>
  (await client.workflow.count(`TaskQueue="${taskQueue}" AND ExecutionStatus="Completed"`)).count;

async function succeededDeliveries(db: Db): Promise<number> {
  const [row] = await db.execute<{ n: number }>(sql`select count(*)::int as n from webhook_deliveries where status = 'succeeded'`);
  return row!.n;
}

/** The receiver's records from index `from` on. */
async function receivedSince(receiverUrl: string, from = 0): Promise<ReceivedRecord[]> {
  const res = await fetch(`${receiverUrl}/_records?from=${from}`);
  if (!res.ok) throw new Error(`receiver: ${res.status}`);
  return (await res.json()) as ReceivedRecord[];
}

/** First arrival of each event at the receiver (epoch ms). */
function firstArrivals(records: ReceivedRecord[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const r of records) {
    if (!r.eventId) continue;
    const seen = first.get(r.eventId);
    if (seen === undefined || r.at < seen) first.set(r.eventId, r.at);
  }
  return first;
}

/** Commit → first attempt of each event of `committed` (event id → commit epoch ms), in ms. */
function latencies(committed: Map<string, number>, first: Map<string, number>): number[] {
  const out: number[] = [];
  for (const [id, at] of committed) {
    const arrived = first.get(id);
    if (arrived !== undefined) out.push(arrived - at);
  }
  return out;
}

const median = (xs: number[]) => percentile(xs, 50);

/** Postgres backends serving the bench database (the worker's pool, the relay's and gate's LISTEN, the bench's own). */
async function postgresPids(db: Db, databaseUrl: string): Promise<number[]> {
  const rows = await db.execute<{ pid: number }>(sql`select pid from pg_stat_activity where datname = ${new URL(databaseUrl).pathname.slice(1)}`);
  return rows.map((r) => r.pid);
}

/** CPU milliseconds per item of each process group, as one line. */
const cpuLine = (used: Record<string, number>, items: number) =>
  Object.entries(used)
    .map(([name, s]) => `${name} ${((s * 1000) / items).toFixed(1)}`)
    .join(', ');

interface Floor {
  ms: number;
  rssMb: number;
  cpu: Record<string, number>;
  legs: Legs[];
}

/** The floor: N bare workflows with one no-op activity each, on a worker process of their own. */
async function runFloor(client: Client, temporalAddress: string): Promise<Floor> {
  const worker = startChild(
    'bench/lib/floor-worker.ts',
    [],
    { ...workerProcessEnv(process.env), TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_TASK_QUEUE: FLOOR_QUEUE, LOG_LEVEL: 'warn' },
    '[floor-worker]',
  );
  try {
    await worker.line(/floor worker started/, 120_000);
    await waitForPollers(client, FLOOR_QUEUE);
    const start = (id: string) =>
      client.workflow.start<typeof floorWorkflow>('floorWorkflow', {
        taskQueue: FLOOR_QUEUE,
        workflowId: id,
        args: [{ id }],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    const completed = () => completedOn(client, FLOOR_QUEUE);
    await startInLanes(WARMUP, (i) => start(`floor-warmup-${i}`));
    await waitFor('floor warm-up', completed, WARMUP);
    say(`floor worker warmed up (${WARMUP} workflows); starting ${int(N)} floor workflows, ${START_LANES} starts in flight`);

    const meter = await cpuMeter({ temporal: () => childPids('temporal'), 'floor worker': () => [worker.pid], 'bench (the starter)': () => [process.pid] }).start();
    const t0 = Date.now();
    await startInLanes(N, (i) => start(`floor-${i}`));
    say(`  ${int(N)} floor workflows started in ${secs(Date.now() - t0)} s`);
    await waitFor('floor workflows completed', completed, WARMUP + N, 250);
    const cpu = await meter();
    const all = await workflowsOf(client, `TaskQueue="${FLOOR_QUEUE}"`);
    if (all.total !== WARMUP + N || all.byStatus.COMPLETED !== WARMUP + N) {
      throw new CheckFailed(`floor: expected ${WARMUP + N} completed workflows, found ${JSON.stringify(all.byStatus)}`);
    }
    const rssMb = peakRssMb(worker.pid);
    const legs = await legsOfAll(client, sample(Array.from({ length: N }, (_, i) => `floor-${i}`), HISTORY_SAMPLE));
    return { ms: all.lastCloseMs - t0, rssMb, cpu, legs: [...legs.values()] };
  } finally {
    await worker.stop();
  }
}

interface Setup {
  db: Db;
  integration: IntegrationRow;
  subscription: SubscriptionRow;
  /** The subscription's signing secret in plaintext (the row holds it encrypted). */
  secret: string;
  receiverUrl: string;
  receiver: Child;
}

async function setUp(databaseUrl: string): Promise<Setup> {
  const receiver = startChild('bench/lib/webhook-receiver.ts', [], {}, '[receiver]');
  const [, port] = await receiver.line(/receiver listening on (\d+)/);
  const receiverUrl = `http://127.0.0.1:${port}`;
  const db = createDb(databaseUrl, { max: 4, applicationName: 'propsync-bench' });
  const org = await createOrganization(db, { name: 'bench-webhooks' });
  // Test mode: deliveries to loopback are allowed (live ones are held to public https addresses).
  // Sealed with the key the worker children get from the same environment.
  const secrets = createKeyring(cfg.ENCRYPTION_KEYS);
  const integration = await createIntegration(
    db,
    { organizationId: org.id, mode: 'test', plan: 'scale', sourceType: 'sandbox', sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' } },
    secrets,
  );
  const { row: subscription, secret } = await createSubscription(
    db,
    { organizationId: org.id, integrationId: integration.id, url: `${receiverUrl}/hooks`, eventTypes: ['*'], description: 'bench:webhooks receiver' },
    secrets,
  );
  return { db, integration, subscription, secret, receiverUrl, receiver };
}

/**
 * Everything the run must have done, or its figures mean nothing: every event at the receiver with a valid
 * signature and its own id, nothing unexpected, every delivery succeeded, every event dispatched, every delivery
 * workflow completed. Throws CheckFailed listing what is wrong.
 */
async function check(s: Setup, client: Client, expected: Set<string>, records: ReceivedRecord[]) {
  const problems: string[] = [];
  const valid = new Map<string, number>();
  const bad: string[] = [];
  const unexpected = new Set<string>();
  for (const r of records) {
    const headers = { 'x-service-signature': r.signature ?? undefined, 'x-service-signature-previous': r.previousSignature ?? undefined };
    let bodyId: unknown;
    try {
      bodyId = (JSON.parse(r.raw) as { id?: unknown }).id;
    } catch {
      bodyId = undefined;
    }
    if (!verifyWebhookSignature(r.raw, headers, s.secret)) bad.push(`${r.eventId}: signature does not verify`);
    else if (!r.eventId || bodyId !== r.eventId) bad.push(`${r.eventId}: body id ${String(bodyId)} differs from the event id header`);
    else if (!expected.has(r.eventId)) unexpected.add(r.eventId);
    else valid.set(r.eventId, (valid.get(r.eventId) ?? 0) + 1);
  }
  const missing = [...expected].filter((id) => !valid.has(id));
  if (bad.length > 0) problems.push(`${bad.length} request(s) with a bad signature or body, e.g. ${bad.slice(0, 3).join('; ')}`);
  if (missing.length > 0) problems.push(`${missing.length} of ${expected.size} events never reached the receiver validly signed, e.g. ${missing.slice(0, 3).join(', ')}`);
  if (unexpected.size > 0) problems.push(`${unexpected.size} event id(s) the bench never recorded reached the receiver`);

  const statuses = await s.db.execute<{ status: string; n: number }>(sql`select status, count(*)::int as n from webhook_deliveries group by status`);
  const byStatus = Object.fromEntries(statuses.map((r) => [r.status, r.n]));
  if (byStatus.succeeded !== expected.size || statuses.length !== 1) {
    problems.push(`delivery rows: expected ${expected.size} succeeded, found ${JSON.stringify(byStatus)}`);
  }
  const [events] = await s.db.execute<{ total: number; undispatched: number }>(
    sql`select count(*)::int as total, (count(*) filter (where dispatched_at is null))::int as undispatched from events`,
  );
  if (events!.total !== expected.size || events!.undispatched !== 0) {
    problems.push(`events: expected ${expected.size} all dispatched, found ${events!.total} with ${events!.undispatched} undispatched`);
  }
  const workflows = await workflowsOf(client, `TaskQueue="${WEBHOOK_QUEUE}" AND WorkflowType="deliverWebhook"`);
  if (workflows.byStatus.COMPLETED !== expected.size || workflows.total !== expected.size) {
    problems.push(`delivery workflows: expected ${expected.size} completed, found ${JSON.stringify(workflows.byStatus)}`);
  }
  if (problems.length > 0) throw new CheckFailed(`the run is broken:\n  - ${problems.join('\n  - ')}`);

  const [extra] = await s.db.execute<{ retried: number }>(sql`select (count(*) filter (where attempts > 1))::int as retried from webhook_deliveries`);
  return { requests: records.length, retried: extra!.retried, duplicates: [...valid.values()].filter((n) => n > 1).length };
}

/** Median legs of a sample of delivery workflows, with the relay's leg and the receiver's view added. */
async function deliveryLegs(s: Setup, client: Client, committed: Map<string, number>, first: Map<string, number>) {
  const ids = sample([...committed.keys()], HISTORY_SAMPLE);
  const rows = await s.db
    .select({ id: webhookDeliveries.id, eventId: webhookDeliveries.eventId })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.eventId, ids));
  const legs = await legsOfAll(
    client,
    rows.map((r) => r.id),
  );
  return rows.map((r) => {
    const l = legs.get(r.id)!;
    const arrived = first.get(r.eventId)!;
    return { ...l, relay: l.startedAt - committed.get(r.eventId)!, toReceiver: arrived - l.activityStartedAt, afterReceiver: l.activityEndedAt - arrived };
  });
}

/**
 * How the burst's first attempts kept the subscription's order (seq), from first_sent_at: how many went out before
 * their predecessor, how many came more than 1 s after it, and the median time between consecutive ones.
 */
async function burstOrder(db: Db, seqsBefore: number) {
  const [row] = await db.execute<{ links: number; overtook: number; slow_links: number; median_link_ms: number }>(sql`
    select count(*)::int as links,
      (count(*) filter (where p.first_sent_at > d.first_sent_at))::int as overtook,
      (count(*) filter (where d.first_sent_at - p.first_sent_at > interval '1 second'))::int as slow_links,
      percentile_cont(0.5) within group (order by extract(epoch from d.first_sent_at - p.first_sent_at) * 1000)
        filter (where d.first_sent_at >= p.first_sent_at) as median_link_ms
    from webhook_deliveries d
    join webhook_deliveries p on p.subscription_id = d.subscription_id and p.seq = d.seq - 1
    where d.seq > ${seqsBefore + 1}`);
  return { links: row!.links, overtook: row!.overtook, slowLinks: row!.slow_links, medianLinkMs: Number(row!.median_link_ms) };
}

/** The 1-minute load average: other work on the machine skews every figure of a CPU-bound run. */
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;

async function main() {
  const began = Date.now();
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  const databaseUrl = await freshDatabase(cfg.DATABASE_URL, 'bench_webhooks');
  say(`bench database ${new URL(databaseUrl).pathname.slice(1)} (fresh); ${int(N)} events, floor of ${int(N)} workflows`);
  const env = await startTemporal();
  atInterrupt(() => env.teardown());
  const temporalAddress = env.connection.options.address;
  const client = env.client;
  let s: Setup | undefined;
  let worker: Child | undefined;
  try {
    // 1. The floor, on a fresh server, before anything else ran on it.
    const floor = await runFloor(client, temporalAddress);
    say(`floor: ${int(N)} workflows in ${secs(floor.ms)} s (${int(N / (floor.ms / 1000))}/s)`);

    // 2. The real worker process and the receiver.
    s = await setUp(databaseUrl);
    worker = startChild(
      'worker/main.ts',
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
      },
      '[worker]',
    );
    await waitForPollers(client, WEBHOOK_QUEUE);
    say(`worker/main.ts polls ${WEBHOOK_QUEUE} (WEBHOOK_MAX_ACTIVITIES ${cfg.WEBHOOK_MAX_ACTIVITIES}); receiver at ${s.receiverUrl}`);
    const rss = rssSampler(worker.pid);
    const { db, integration, receiverUrl } = s;
    const expected = new Set<string>();
    let seen = 0;
    const record = async (drafts: ReturnType<typeof residentUpdates>, committed?: Map<string, number>) => {
      const ids = await recordEvents(db, integration, drafts);
      const at = Date.now();
      for (const id of ids) {
        expected.add(id);
        committed?.set(id, at);
      }
    };
    const allDelivered = () => waitFor('deliveries succeeded', () => succeededDeliveries(db), expected.size);

    await record(residentUpdates(WARMUP, 'warmup'));
    await allDelivered();
    seen = (await receivedSince(receiverUrl)).length;
    say(`webhook worker warmed up (${WARMUP} deliveries)`);

    // 3. Latency at a steady rate, in small transactions.
    const steady = new Map<string, number>();
    const txs = Math.ceil(LATENCY_EVENTS / LATENCY_TX);
    const every = (1000 * LATENCY_TX) / LATENCY_RATE;
    say(`steady phase: ${int(LATENCY_EVENTS)} events, ${LATENCY_TX} per transaction every ${every} ms (${LATENCY_RATE}/s)`);
    const steadyStart = performance.now();
    for (let i = 0; i < txs; i++) {
      await sleep(steadyStart + i * every - performance.now());
      await record(residentUpdates(Math.min(LATENCY_TX, LATENCY_EVENTS - i * LATENCY_TX), `s${i}-`), steady);
    }
    await allDelivered();
    const steadyRecords = await receivedSince(receiverUrl, seen);
    seen += steadyRecords.length;
    const steadyFirst = firstArrivals(steadyRecords);
    const steadyLat = latencies(steady, steadyFirst);
    say(`  steady: p50 ${int(percentile(steadyLat, 50))} ms, p99 ${int(percentile(steadyLat, 99))} ms over ${steadyLat.length} events`);

    // 4. The burst.
    const burst = new Map<string, number>();
    const batches = Array.from({ length: Math.ceil(N / BURST_TX) }, (_, i) => residentUpdates(Math.min(BURST_TX, N - i * BURST_TX), `b${i}-`));
    await sleep(1_000);
    rss.reset();
    const workerPid = worker.pid;
    const receiverPid = s.receiver.pid;
    const meter = await cpuMeter({
      temporal: () => childPids('temporal'),
      worker: () => [workerPid],
      postgres: () => postgresPids(db, databaseUrl),
      receiver: () => [receiverPid],
      bench: () => [process.pid],
    }).start();
    say(`burst: ${int(N)} events in ${batches.length} transaction(s) of up to ${BURST_TX}`);
    const burstStart = Date.now();
    for (const drafts of batches) await record(drafts, burst);
    say(`  burst committed in ${secs(Date.now() - burstStart)} s`);
    await allDelivered();
    await waitFor('delivery workflows completed', () => completedOn(client, WEBHOOK_QUEUE), expected.size, 250);
    const burstCpu = await meter();
    const burstRssMb = rss.peakMb();
    rss.stop();
    const workerPeakMb = peakRssMb(worker.pid);
    const burstWorkflows = await workflowsOf(
      client,
      `TaskQueue="${WEBHOOK_QUEUE}" AND WorkflowType="deliverWebhook" AND StartTime >= "${new Date(burstStart).toISOString()}"`,
    );
    const burstMs = burstWorkflows.lastCloseMs - burstStart;
    const [lastSuccess] = await db.execute<{ at: Date | string }>(sql`select max(updated_at) as at from webhook_deliveries`);
    const burstRecords = await receivedSince(receiverUrl, seen);
    const burstFirst = firstArrivals(burstRecords);
    const burstLat = latencies(burst, burstFirst);

    // 5. Checks, before any figure is printed.
    const checked = await check(s, client, expected, await receivedSince(receiverUrl));

    const order = await burstOrder(db, WARMUP + LATENCY_EVENTS);
    const steadyLegs = await deliveryLegs(s, client, steady, steadyFirst);
    const burstLegs = await deliveryLegs(s, client, burst, burstFirst);

    const deliveriesPerSec = N / (burstMs / 1000);
    const floorPerSec = N / (floor.ms / 1000);
    const ratio = deliveriesPerSec / floorPerSec;
    const p50 = percentile(steadyLat, 50);
    const mark = (ok: boolean) => (ok ? 'meets target' : 'BELOW TARGET');
    console.log('');
    console.log(`  ${'run'.padEnd(50)}${'items'.padStart(9)}${'seconds'.padStart(10)}${'items/s'.padStart(10)}`);
    const line = (name: string, n: number, ms: number) => console.log(`  ${name.padEnd(50)}${int(n).padStart(9)}${secs(ms).padStart(10)}${int(n / (ms / 1000)).padStart(10)}`);
    line('floor: bare workflow + one no-op activity', N, floor.ms);
    line('webhook burst: first commit → last workflow closed', N, burstMs);
    console.log(`  (the burst's last delivery row turned succeeded ${secs(new Date(lastSuccess!.at).getTime() - burstStart)} s after its first commit)`);
    console.log('');
    console.log(`  deliveries/s ÷ floor workflows/s              ${ratio.toFixed(2)}   (target >= 0.7: ${mark(ratio >= 0.7)})`);
    console.log(
      `  commit → first attempt, steady ${LATENCY_RATE}/s          p50 ${int(p50)} ms, p99 ${int(percentile(steadyLat, 99))} ms over ${steadyLat.length} events (target p50 <= 1 s: ${mark(p50 <= 1000)})`,
    );
    console.log(`  commit → first attempt, within the burst      p50 ${int(percentile(burstLat, 50))} ms, p99 ${int(percentile(burstLat, 99))} ms (queueing behind ${int(N)} events; no target)`);
    console.log(`  worker peak RSS                               ${workerPeakMb} MB over the run (VmHWM); ${burstRssMb} MB during the burst (sampled VmRSS)`);
    console.log(`  floor worker peak RSS                         ${floor.rssMb} MB (VmHWM; it bundles its workflow in-process, the worker in a child)`);
    console.log('');
    console.log(`  where the time went: median ms over ${HISTORY_SAMPLE} sampled workflow histories per phase`);
    const legCols = ['relay', 'firstTaskWait', 'firstTask', 'activityWait', 'toReceiver', 'afterReceiver', 'activity', 'close'] as const;
    console.log(`  ${'phase'.padEnd(10)}${legCols.map((c) => c.padStart(14)).join('')}`);
    const legRow = (name: string, rows: Partial<Record<(typeof legCols)[number], number>>[]) =>
      console.log(
        `  ${name.padEnd(10)}${legCols
          .map((c) => {
            const xs = rows.map((r) => r[c]).filter((x): x is number => x !== undefined);
            return (xs.length ? int(median(xs)) : '-').padStart(14);
          })
          .join('')}`,
      );
    legRow('floor', floor.legs);
    legRow('steady', steadyLegs);
    legRow('burst', burstLegs);
    console.log(
      '  (relay: commit → workflow started; firstTaskWait: started → first workflow task picked up; activityWait: activity scheduled → picked up;',
    );
    console.log('   toReceiver / afterReceiver: activity start → request at the receiver → activity end; close: activity end → workflow closed)');
    console.log(
      `  order of first attempts in the burst: ${int(order.overtook)} of ${int(order.links)} went out before their predecessor (the order gate stopped waiting), ` +
        `${int(order.slowLinks)} waited more than 1 s on it; median ${int(order.medianLinkMs)} ms between consecutive first attempts`,
    );
    console.log('');
    console.log(`  CPU ms per item (user + system, from /proc)`);
    console.log(`                   floor: ${cpuLine(floor.cpu, N)}`);
    console.log(`                   burst: ${cpuLine(burstCpu, N)}`);
    console.log('');
    console.log(
      `  checks passed: ${int(expected.size)} events (warm-up ${WARMUP}, steady ${LATENCY_EVENTS}, burst ${int(N)}) each reached the receiver validly signed, ` +
        `${int(checked.requests)} requests in all, ${checked.duplicates} event(s) received more than once, ${checked.retried} deliveries needed more than one attempt; ` +
        `every delivery row succeeded, every event dispatched, every workflow completed`,
    );
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
  } finally {
    await worker?.stop();
    await s?.receiver.stop();
    if (s) await closeDb(s.db);
    await env.teardown();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err instanceof CheckFailed ? `\n[bench:webhooks] FAILED: ${err.message}` : err);
    process.exit(1);
  },
);
