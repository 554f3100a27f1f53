/**
 * `npm run bench:sync`: the sync engine against floors measured in the same run, each figure the median of
 * `--runs` (default 3) with its spread. The sandbox PMS, the worker (worker/main.ts) and the floor
 * (bench/lib/sync-floor.ts) are processes of their own; this one only orchestrates and checks.
 *
 *   initial, `--runs` times, each from empty cache tables (truncated, analyzed, checkpointed) and a cold source:
 *     floor: every source page read through the worker's own page reader (same page size, same threads, the
 *            workflow's stages) and the same mapped rows written with COPY into the same tables, under a shadow
 *            integration;
 *     sync:  the real workflow on the real worker, a new integration each run.
 *   incremental, `--runs` times, on the last initial run's integration: `--changes` % of each entity's records
 *   updated in the source (updates only, so the expected counts are exact), then
 *     floor: a read-only pass through the worker's page reader over the changed, cold source;
 *     sync:  the real incremental run.
 *
 *   delta (a company of the buildium flavour, which can list what changed, `--size` leases), on one integration
 *   after its first (full) run: `--changes` % of the leases updated, then a full run asked for; `--changes` % more,
 *   then the scheduled kind of run, a delta run (from the full run's start less the overlap). full_over_delta is
 *   the full run's time over the delta run's (target >= 10, a delta run at most a tenth of a full one).
 *
 * "Cold source": the sandbox keeps page cursors per company version (sandbox/store.ts PageCursors); an empty change
 * request moves the version, so the floor and the sync each start without cursors (see coldSource).
 *
 * Checks (a failure exits 1 and prints no ratio): after every initial floor and sync, the cache holds exactly the
 * records the source served, per entity, live, and the floor and the sync wrote the same content (x_ids, content
 * hashes, lease residents); after every incremental sync, records_updated equals the records the change updated,
 * the records whose updated_at moved are exactly those, nothing is new, nothing is soft-deleted; after the full
 * and the delta run of the buildium company, the same, and the cache holds what the source served, each changed
 * record announced by exactly one event.
 * Timings are printed against their targets, never asserted. The last line is one JSON object:
 * {"bench": "sync", "ratios": {...}, "rss_mb": {...}, "ok": <every check passed>}.
 * Usage: npm run bench:sync [-- --size 100000 --runs 3 --changes 1 --seed 1]   (size = leases; units ≈ size/2, residents ≈ size)
 */
import { availableParallelism } from 'node:os';
import { sql } from 'drizzle-orm';
import type { IntegrationRow } from '../db/tenants';
import { ENTITIES, type Entity } from '../domain/cdm';
import { benchArgs } from './lib/args';
import { loadAverage, peakRssMb, rssSampler, type Child } from './lib/processes';
import { CheckFailed, endBench, int, secs } from './lib/report';
import { spread } from './lib/stats';
import {
  cacheCounts,
  checkInitial,
  coldSource,
  contentDigest,
  ensureCompany,
  newIntegration,
  resetCache,
  runSync,
  settle,
  startFloor,
  startSyncBench,
  startWorker,
  total,
  type Counts,
  type Floor,
  type SyncBench,
} from './lib/sync-harness';

const args = benchArgs({ size: 100000, seed: 1, runs: 3, changes: 1 });
const TASK_QUEUE = 'bench-sync';
const COMPANY = `bench-sync-${args.size}-${args.seed}`;
const DELTA_COMPANY = `bench-sync-buildium-${args.size}-${args.seed}`;

const say = (msg: string) => console.log(`[bench:sync] ${msg}`);

interface Run {
  ms: number;
  records: number;
}

async function main() {
  const began = Date.now();
  if (!(args.size >= 1 && args.runs >= 1 && args.changes > 0 && args.changes <= 100)) throw new Error('--size and --runs must be >= 1, --changes in (0, 100]');
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start; ${args.runs} run(s) of each figure`);
  const b = await startSyncBench('bench_sync', say);
  let worker: Child | undefined;
  let floor: Floor | undefined;
  try {
    const { apiKey, counts: served } = await ensureCompany(b, COMPANY, args.size, args.seed, say);
    const settings = { base_url: b.sandboxUrl, api_key: apiKey };
    const { cfg } = b;
    say(`page size ${cfg.SYNC_PAGE_SIZE}, ${cfg.WORKER_READ_THREADS} page-reading thread(s), DB_POOL_MAX ${cfg.DB_POOL_MAX} (worker and floor alike)`);

    floor = await startFloor(b);
    worker = await startWorker(b, TASK_QUEUE);
    const workerPid = worker.pid;
    const floorPid = floor.pid;
    say(`worker pid ${workerPid} polls ${TASK_QUEUE}; floor pid ${floorPid}`);
    const rss = rssSampler(workerPid);
    const floorRss = rssSampler(floorPid);

    // ---- initial: floor and sync alternately, each from empty tables and a cold source
    const initialFloor: Run[] = [];
    const initialSync: Run[] = [];
    const initialRss: number[] = [];
    let synced: IntegrationRow | undefined;
    for (let i = 1; i <= args.runs; i++) {
      await resetCache(b.db);
      await coldSource(b, COMPANY);
      const shadow = await newIntegration(b, settings);
      floorRss.reset();
      const f = await floor.run({ kind: 'initial', settings, integration: { id: shadow.id, organizationId: shadow.organizationId, mode: shadow.mode } });
      checkServed(`initial floor ${i}`, f.served, served);
      const floorLinks = await checkInitial(b.db, `initial floor ${i}`, shadow.id, served);
      if (f.written.lease_residents !== floorLinks.leaseResidents) {
        throw new CheckFailed(`initial floor ${i}: wrote ${f.written.lease_residents} lease_residents rows, ${floorLinks.leaseResidents} are there`);
      }
      const floorDigest = await contentDigest(b.db, shadow.id);
      initialFloor.push({ ms: f.ms, records: total(f.served) });
      say(
        `initial floor ${i}/${args.runs}: ${int(total(f.served))} records read and COPYed in ${secs(f.ms)} s (${f.pages} pages; summed over entities: ` +
          `${secs(f.waitMs)} s waiting for pages, ${secs(f.mapMs)} s mapping, ${secs(f.copyMs)} s in COPY; floor peak RSS ${floorRss.peakMb()} MB)`,
      );

      await resetCache(b.db);
      await coldSource(b, COMPANY);
      const integration = await newIntegration(b, settings);
      rss.reset();
      const s = await runSync(b, TASK_QUEUE, integration);
      initialRss.push(rss.peakMb());
      if (!s.job.initial) throw new CheckFailed(`initial sync ${i}: job ${s.job.id} is not marked initial`);
      if (s.job.records_seen !== total(served) || s.job.records_new !== total(served)) {
        throw new CheckFailed(`initial sync ${i}: job counted ${s.job.records_seen} seen, ${s.job.records_new} new; the source served ${total(served)}`);
      }
      const links = await checkInitial(b.db, `initial sync ${i}`, integration.id, served);
      const digest = await contentDigest(b.db, integration.id);
      const differs = Object.keys(floorDigest).filter((k) => floorDigest[k] !== digest[k]);
      if (differs.length > 0 || links.leaseResidents !== floorLinks.leaseResidents) {
        throw new CheckFailed(`initial sync ${i}: the sync and the floor wrote different content (${differs.join(', ') || 'lease_residents count'})`);
      }
      initialSync.push({ ms: s.ms, records: s.job.records_seen });
      say(`initial sync ${i}/${args.runs}: ${int(s.job.records_seen)} records in ${secs(s.ms)} s (job ${s.job.id}; worker peak RSS ${initialRss.at(-1)} MB)`);
      synced = integration;
    }

    // ---- incremental: the same integration, a new change each run
    const incFloor: Run[] = [];
    const incSync: Run[] = [];
    const incRss: number[] = [];
    const incChecks: string[] = [];
    const integration = synced!;
    for (let i = 1; i <= args.runs; i++) {
      const before = await cacheCounts(b.db, integration.id);
      const pct = (n: number) => Math.max(1, Math.round((n * args.changes) / 100));
      const change = await b.control.applyChanges(COMPANY, {
        update: { property: pct(before.live.property), unit: pct(before.live.unit), resident: pct(before.live.resident), lease: pct(before.live.lease) },
      });
      const updated = Object.fromEntries(ENTITIES.map((e) => [e, change.updated[e].length])) as Counts;
      // Creates, deletes, lease transitions (and renewals) count differently in a run's counters: the request asks for
      // updates only, and anything else it did fails the run rather than blur the expected counts.
      const corrupted = (change as { corrupted?: Partial<Record<Entity, string[]>> }).corrupted ?? {};
      const others =
        ENTITIES.reduce((n, e) => n + change.created[e].length + change.deleted[e].length + (corrupted[e]?.length ?? 0), 0) + change.lease_transitions.length;
      if (others !== 0) throw new CheckFailed(`incremental ${i}: an update-only change request also created, deleted, corrupted or moved ${others} record(s)`);
      // The change moved the company's version: the source is cold for the floor.
      await settle(b.db);
      floorRss.reset();
      const f = await floor.run({
        kind: 'incremental',
        settings,
        integration: { id: integration.id, organizationId: integration.organizationId, mode: integration.mode },
      });
      checkServed(`incremental floor ${i}`, f.served, served);
      incFloor.push({ ms: f.ms, records: total(f.served) });
      say(
        `incremental floor ${i}/${args.runs}: read-only pass over ${int(total(f.served))} records in ${secs(f.ms)} s (floor peak RSS ${floorRss.peakMb()} MB)`,
      );

      await coldSource(b, COMPANY);
      await settle(b.db);
      rss.reset();
      const s = await runSync(b, TASK_QUEUE, integration);
      incRss.push(rss.peakMb());
      await checkIncremental(b, i, integration.id, s.job, updated, change.updated, served, before);
      const [{ n: eventCount } = { n: 0 }] = await b.db.execute<{ n: number }>(sql`select count(*)::int as n from events where sync_job_id = ${s.job.id}`);
      incChecks.push(`${int(total(updated))} updated`);
      incSync.push({ ms: s.ms, records: s.job.records_seen });
      say(
        `incremental sync ${i}/${args.runs}: ${int(s.job.records_updated)} updated of ${int(s.job.records_seen)} seen (the change updated ${int(total(updated))}), ` +
          `${int(eventCount)} events, in ${secs(s.ms)} s (worker peak RSS ${incRss.at(-1)} MB)`,
      );
    }
    // ---- delta: a buildium company, a full run and a delta run side by side, each after the same share of leases changed
    const { credentials, counts: deltaServed } = await ensureCompany(b, DELTA_COMPANY, args.size, args.seed, say, 'buildium');
    await resetCache(b.db);
    const deltaIntegration = await newIntegration(b, {
      dialect: 'buildium',
      base_url: b.sandboxUrl,
      client_id: credentials.client_id!,
      client_secret: credentials.client_secret!,
    });
    const warm = await runSync(b, TASK_QUEUE, deltaIntegration);
    if (warm.job.kind !== 'full') throw new CheckFailed(`buildium first run: job ${warm.job.id} is ${String(warm.job.kind)}, not full`);
    await checkInitial(b.db, 'buildium first run', deltaIntegration.id, deltaServed);
    say(`buildium first (full) run: ${int(warm.job.records_seen)} records in ${secs(warm.ms)} s`);
    const changeLeases = async () => {
      const live = (await cacheCounts(b.db, deltaIntegration.id)).live.lease;
      const change = await b.control.applyChanges(DELTA_COMPANY, { update: { lease: Math.max(1, Math.round((live * args.changes) / 100)) } });
      return change.updated.lease;
    };
    const measured: Record<'full' | 'delta', Run> = { full: { ms: 0, records: 0 }, delta: { ms: 0, records: 0 } };
    const deltaRss: number[] = [];
    for (const kind of ['full', 'delta'] as const) {
      const changed = await changeLeases();
      await settle(b.db);
      rss.reset();
      // The full run is asked for; the delta run is what the cadence decides a day within a full run.
      const r = await runSync(b, TASK_QUEUE, deltaIntegration, kind === 'full' ? 'full' : undefined);
      deltaRss.push(rss.peakMb());
      if (r.job.kind !== kind) throw new CheckFailed(`buildium ${kind} run: job ${r.job.id} ran as ${String(r.job.kind)}`);
      await checkChangedLeases(b, `buildium ${kind} run`, deltaIntegration.id, r.job, changed, deltaServed);
      measured[kind] = { ms: r.ms, records: r.job.records_seen };
      say(
        `buildium ${kind} run: ${int(r.job.records_updated)} updated of ${int(r.job.records_seen)} read (${changed.length} leases changed) in ${secs(r.ms)} s (worker peak RSS ${deltaRss.at(-1)} MB)`,
      );
    }
    rss.stop();
    floorRss.stop();
    const workerHwm = peakRssMb(workerPid);
    const floorHwm = peakRssMb(floorPid);

    // ---- figures (every check above passed)
    const fig = (runs: Run[]) => ({ ...spread(runs.map((r) => r.ms)), records: runs[0]!.records });
    const rows = [
      ['initial floor: read + COPY', fig(initialFloor)],
      ['initial sync', fig(initialSync)],
      [`incremental floor: read-only pass`, fig(incFloor)],
      [`incremental sync (${args.changes} % updated)`, fig(incSync)],
    ] as const;
    const initialRatio = fig(initialSync).median / fig(initialFloor).median;
    const incRatio = fig(incSync).median / fig(incFloor).median;
    const fullOverDelta = measured.full.ms / measured.delta.ms;
    const peak = Math.max(...initialRss, ...incRss, ...deltaRss);
    const mark = (ok: boolean) => (ok ? 'meets target' : 'BELOW TARGET');
    console.log('');
    console.log(`  ${args.size.toLocaleString('en-US')} leases; median of ${args.runs} run(s), spread min–max`);
    console.log(`  ${'figure'.padEnd(34)}${'records'.padStart(10)}${'median s'.padStart(10)}${'min–max s'.padStart(16)}${'records/s'.padStart(12)}`);
    for (const [name, f] of rows) {
      console.log(
        `  ${name.padEnd(34)}${int(f.records).padStart(10)}${secs(f.median).padStart(10)}${`${secs(f.min)}–${secs(f.max)}`.padStart(16)}${int(f.records / (f.median / 1000)).padStart(12)}`,
      );
    }
    console.log('');
    console.log(`  initial sync time / floor time        ${initialRatio.toFixed(2)}x  (target <= 2.0x: ${mark(initialRatio <= 2)})`);
    console.log(`  incremental sync time / floor time    ${incRatio.toFixed(2)}x  (target <= 1.5x: ${mark(incRatio <= 1.5)})`);
    console.log(
      `  buildium full run / delta run         ${fullOverDelta.toFixed(1)}x  (${secs(measured.full.ms)} s over ${int(measured.full.records)} records / ${secs(measured.delta.ms)} s over ${int(measured.delta.records)}; target >= 10x: ${mark(fullOverDelta >= 10)})`,
    );
    console.log(
      `  worker peak RSS during syncs          ${peak} MB (target <= 512 MB: ${mark(peak <= 512)}); initial ${initialRss.join('/')} MB, incremental ${incRss.join('/')} MB; ` +
        `${workerHwm} MB over its life (VmHWM)`,
    );
    console.log(`  floor process peak RSS                ${floorHwm} MB (VmHWM; it keeps every x_id → id of a run in memory)`);
    console.log('');
    console.log(
      `  checks passed: every initial floor and sync cached exactly the ${int(total(served))} records served (${ENTITIES.map((e) => `${int(served[e])} ${e}`).join(', ')}), ` +
        `floor and sync wrote the same content; every incremental sync updated exactly what the change updated (${incChecks.join(', ')}), ` +
        `created nothing and soft-deleted nothing`,
    );
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
    const round = (x: number) => Math.round(x * 100) / 100;
    console.log(
      JSON.stringify({
        bench: 'sync',
        ratios: { full_over_delta: round(fullOverDelta), initial_over_floor: round(initialRatio), incremental_over_floor: round(incRatio) },
        rss_mb: { peak, initial: initialRss, incremental: incRss, delta: deltaRss, worker_hwm: workerHwm, floor_hwm: floorHwm },
        ok: true,
      }),
    );
  } finally {
    await worker?.stop();
    await floor?.stop();
    await b.close();
  }
}

/**
 * A run of the buildium company after `changed` leases were updated in the source: it updated exactly those (one
 * event each, no other), created and soft-deleted nothing, and the cache holds what the source serves.
 */
async function checkChangedLeases(
  b: SyncBench,
  label: string,
  integrationId: string,
  job: Awaited<ReturnType<typeof runSync>>['job'],
  changed: string[],
  served: Counts,
) {
  const problems: string[] = [];
  if (job.records_updated !== changed.length) problems.push(`records_updated ${job.records_updated}, the change updated ${changed.length} leases`);
  if (job.records_new !== 0) problems.push(`records_new ${job.records_new}, the change created nothing`);
  if (job.records_soft_deleted !== 0) problems.push(`records_soft_deleted ${job.records_soft_deleted}, the change deleted nothing`);
  const after = await cacheCounts(b.db, integrationId);
  for (const e of ENTITIES)
    if (after.live[e] !== served[e] || after.deleted[e] !== 0)
      problems.push(`${e}: ${after.live[e]} live and ${after.deleted[e]} deleted rows, the source serves ${served[e]}`);
  const moved = await b.db.execute<{ x_id: string }>(
    sql`select x_id from leases where integration_id = ${integrationId} and updated_at >= (select started_at from sync_jobs where id = ${job.id})`,
  );
  const got = new Set(moved.map((r) => r.x_id));
  const missing = changed.filter((x) => !got.has(x));
  if (missing.length > 0 || got.size !== changed.length)
    problems.push(`${missing.length} changed lease(s) not written, ${got.size - (changed.length - missing.length)} written that did not change`);
  const [ev] = await b.db.execute<{ n: number; records: number; other: number }>(
    sql`select count(*) filter (where category = 'data_change')::int as n, count(distinct record_id) filter (where category = 'data_change')::int as records,
          count(*) filter (where category <> 'data_change' and type <> 'SYNC_COMPLETE')::int as other from events where sync_job_id = ${job.id}`,
  );
  if (ev?.n !== changed.length || ev.records !== changed.length)
    problems.push(`${ev?.n} data events over ${ev?.records} records, the change updated ${changed.length} leases (one event each)`);
  if (problems.length > 0) throw new CheckFailed(`${label}:\n  - ${problems.join('\n  - ')}`);
}

function checkServed(label: string, got: Counts, want: Counts) {
  const off = ENTITIES.filter((e) => got[e] !== want[e]);
  if (off.length > 0)
    throw new CheckFailed(`${label}: read ${off.map((e) => `${got[e]} ${e}`).join(', ')}; the sandbox holds ${off.map((e) => want[e]).join(', ')}`);
}

/** An incremental run changed exactly what the source changed: counters, which rows moved, no new or deleted rows. */
async function checkIncremental(
  b: SyncBench,
  i: number,
  integrationId: string,
  job: Awaited<ReturnType<typeof runSync>>['job'],
  updated: Counts,
  updatedIds: Record<Entity, string[]>,
  served: Counts,
  before: Awaited<ReturnType<typeof cacheCounts>>,
) {
  const problems: string[] = [];
  if (job.initial) problems.push(`job ${job.id} is marked initial`);
  if (job.records_updated !== total(updated)) problems.push(`records_updated ${job.records_updated}, the change updated ${total(updated)}`);
  if (job.records_new !== 0) problems.push(`records_new ${job.records_new}, the change created nothing`);
  if (job.records_soft_deleted !== 0) problems.push(`records_soft_deleted ${job.records_soft_deleted}, the change deleted nothing`);
  if (job.records_seen !== total(served)) problems.push(`records_seen ${job.records_seen}, the source served ${total(served)}`);
  const after = await cacheCounts(b.db, integrationId);
  for (const e of ENTITIES) {
    if (after.live[e] !== before.live[e]) problems.push(`${e}: ${after.live[e]} live rows, ${before.live[e]} before`);
    if (after.deleted[e] !== 0) problems.push(`${e}: ${after.deleted[e]} rows soft-deleted`);
    // The rows whose content the run wrote are exactly those the change updated.
    const t = e === 'property' ? 'properties' : `${e}s`;
    const moved = await b.db.execute<{ x_id: string }>(
      sql`select x_id from ${sql.identifier(t)} where integration_id = ${integrationId} and updated_at >= (select started_at from sync_jobs where id = ${job.id})`,
    );
    const want = new Set(updatedIds[e]);
    const got = new Set(moved.map((r) => r.x_id));
    const missing = [...want].filter((x) => !got.has(x));
    const extra = [...got].filter((x) => !want.has(x));
    if (missing.length > 0 || extra.length > 0) {
      problems.push(
        `${e}: ${missing.length} updated record(s) not written (e.g. ${missing.slice(0, 3).join(', ')}), ${extra.length} written that did not change (e.g. ${extra.slice(0, 3).join(', ')})`,
      );
    }
  }
  if (problems.length > 0) throw new CheckFailed(`incremental sync ${i}:\n  - ${problems.join('\n  - ')}`);
}

endBench('sync', main, (passed) => (passed ? undefined : { bench: 'sync', ratios: null, rss_mb: null, ok: false }));
