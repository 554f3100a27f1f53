/**
 * `npm run bench:sync-memory`: the worker's peak memory against the size of the source. For each size (leases;
 * units ≈ size/2, residents ≈ size) one first sync on a fresh worker process (worker/main.ts, as the service runs
 * it), from empty cache tables, its resident set sampled every 100 ms from /proc while the sync runs.
 *
 * A worker holds at most a few pages per running activity, so its peak must not grow with the source: the run
 * fails when the peak at the largest size exceeds `--max-growth` (default 1.5) times the peak at the smallest. It
 * also fails unless every sync cached exactly the records the source served. Sandbox companies are generated once
 * and kept (database `<service db>_bench_sandbox`); a later run reuses them.
 * Usage: npm run bench:sync-memory [-- --sizes 10000,100000,250000 --max-growth 1.5 --seed 1]
 */
import { availableParallelism } from 'node:os';
import { ENTITIES } from '../domain/cdm';
import { benchArgs } from './lib/args';
import { loadAverage, peakRssMb, rssSampler, type Child } from './lib/processes';
import { CheckFailed, endBench, int, secs } from './lib/report';
import { checkInitial, ensureCompany, newIntegration, resetCache, runSync, startSyncBench, startWorker, total, type Counts } from './lib/sync-harness';

const args = benchArgs({ seed: 1, maxGrowth: 1.5 }, { sizes: '10000,100000,250000' });
const SIZES = args.sizes
  .split(',')
  .map((s) => Number(s.trim()))
  .sort((a, b) => a - b);
const TASK_QUEUE = 'bench-sync-memory';

const say = (msg: string) => console.log(`[bench:sync-memory] ${msg}`);

interface Point {
  size: number;
  served: Counts;
  ms: number;
  /** Sampled VmRSS while the sync ran. */
  peakMb: number;
  /** VmHWM over the worker's life (start-up included). */
  hwmMb: number;
  /** RSS once the worker was polling, just before the sync. */
  beforeMb: number;
}

async function main() {
  const began = Date.now();
  if (SIZES.length < 2 || SIZES.some((s) => !(s >= 1))) throw new Error('--sizes takes at least two sizes (leases), e.g. 10000,100000,250000');
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start; sizes ${SIZES.map(int).join(', ')} leases`);
  const b = await startSyncBench('bench_sync_memory', say);
  let worker: Child | undefined;
  try {
    say(`page size ${b.cfg.SYNC_PAGE_SIZE}, ${b.cfg.WORKER_READ_THREADS} page-reading thread(s), WORKER_MAX_ACTIVITIES ${b.cfg.WORKER_MAX_ACTIVITIES}`);
    const points: Point[] = [];
    for (const size of SIZES) {
      const companyId = `bench-mem-${size}-${args.seed}`;
      const { apiKey, counts: served } = await ensureCompany(b, companyId, size, args.seed, say);
      await resetCache(b.db);
      worker = await startWorker(b, TASK_QUEUE);
      // Let its start-up settle (the workflow bundle is loaded, the pollers are up) before the reference reading.
      await new Promise((r) => setTimeout(r, 2_000));
      const rss = rssSampler(worker.pid);
      const beforeMb = rss.peakMb();
      rss.reset();
      const integration = await newIntegration(b, { base_url: b.sandboxUrl, api_key: apiKey });
      const s = await runSync(b, TASK_QUEUE, integration);
      const peakMb = rss.peakMb();
      rss.stop();
      const hwmMb = peakRssMb(worker.pid);
      await worker.stop();
      worker = undefined;
      if (s.job.records_seen !== total(served))
        throw new CheckFailed(`${int(size)} leases: job saw ${s.job.records_seen} records, the source served ${total(served)}`);
      await checkInitial(b.db, `${int(size)} leases`, integration.id, served);
      points.push({ size, served, ms: s.ms, peakMb, hwmMb, beforeMb });
      say(
        `${int(size)} leases: ${int(total(served))} records in ${secs(s.ms)} s; worker RSS ${beforeMb} MB before, peak ${peakMb} MB during the sync, VmHWM ${hwmMb} MB`,
      );
    }

    const first = points[0]!;
    const last = points[points.length - 1]!;
    const growth = last.peakMb / first.peakMb;
    console.log('');
    console.log(`  one first sync per size, each on a fresh worker process; peak = sampled VmRSS while the sync ran`);
    console.log(
      `  ${'leases'.padStart(9)}${'records'.padStart(10)}${'seconds'.padStart(10)}${'records/s'.padStart(11)}${'before MB'.padStart(11)}${'peak MB'.padStart(9)}${'VmHWM MB'.padStart(10)}`,
    );
    for (const p of points) {
      console.log(
        `  ${int(p.size).padStart(9)}${int(total(p.served)).padStart(10)}${secs(p.ms).padStart(10)}${int(total(p.served) / (p.ms / 1000)).padStart(11)}` +
          `${String(p.beforeMb).padStart(11)}${String(p.peakMb).padStart(9)}${String(p.hwmMb).padStart(10)}`,
      );
    }
    console.log('');
    const grows = growth > args.maxGrowth;
    console.log(
      `  peak RSS at ${int(last.size)} leases / at ${int(first.size)} leases: ${growth.toFixed(2)} (limit ${args.maxGrowth}): ` +
        (grows ? "the worker's memory GROWS with the size of the source" : "the worker's memory does not grow with the size of the source"),
    );
    console.log(
      `  checks passed: every sync cached exactly the records served (${points.map((p) => `${int(p.size)}: ${ENTITIES.map((e) => int(p.served[e])).join('/')}`).join('; ')} property/unit/resident/lease)`,
    );
    console.log(`  load average ${loadAverage()} at the end; the whole bench took ${secs(Date.now() - began)} s`);
    if (grows) throw new CheckFailed(`peak RSS grew ${growth.toFixed(2)}x from ${int(first.size)} to ${int(last.size)} leases (limit ${args.maxGrowth}x)`);
  } finally {
    await worker?.stop();
    await b.close();
  }
}

endBench('sync-memory', main);
