/**
 * `npm run bench:read`: the public read API against a bare node:http baseline, measured in one run, with auth and
 * the rate limiter as in production.
 *
 * Seeds (or reuses) a 100k-lease organization in a dedicated bench database through applyRecords; the organization
 * has an enterprise integration and no override, so its limit is the enterprise plan's (1,200 requests a minute,
 * shared by every key and process), and `--keys` read keys of its own. The real API (dist/api.mjs under plain node,
 * built first, as production runs it; `--from-source`: api/main.ts through tsx), the baseline
 * (bench/lib/baseline.ts) and the load generator (bench/lib/load.ts, autocannon) each run as a process of their own.
 * It checks that both answer the same JSON and that the API reports the enterprise limit, then alternates rounds of
 *   (a) GET /v1/leases?limit=100&status=active&updated_after=…   and   (b) GET /v1/leases/{id}
 * against each target at one fixed rate (`--rate` requests/s over all connections), which must stay within the
 * limit: the requests of the API rounds rotate over the keys. Since one organization cannot be driven past its
 * limit, the figures are latency at that rate and CPU per request (the target process plus its Postgres backends,
 * from /proc). At 15 requests a second that CPU is mostly what waking the processes costs (1.3-2 ms a request, against
 * under 0.6 ms under load on the same host), so it is a poor estimate of capacity and moves by 0.3 between runs.
 *
 * Any non-2xx answer, connection error or timeout, or a load generator that fell short of the rate, fails the run
 * (exit 1, no figures). Timings are printed against their targets, never asserted. The same run measures the cost of
 * observability: a second API process with its metrics listener (scraped every 15 s, as Prometheus would) and
 * tracing on (OTLP/HTTP to bench/lib/span-sink.ts, a process of its own that takes and drops every export) takes the
 * same rounds, interleaved with the plain API's (which has neither). The observed API must answer the same bodies,
 * and its metrics must have counted every request answered, with one root span each at the sink: tracing and metrics
 * were truly on.
 * Then the saturated rounds measure throughput directly: the same requests to each target as fast as `--connections`
 * go for `--saturated-seconds` (0 skips them), alternating, with the organization's limit lifted by an override for
 * their length (the limiter still runs on every request; the override is removed afterwards). They print requests/s,
 * service over baseline, the observability cost as a share of throughput, and CPU per request under that load.
 * The last line of the output is one JSON object: `{"bench": "read", "ratios": {"list", "retrieve", "list_cost_pct",
 * "retrieve_cost_pct"}, "ratios_from", "paced", "saturated", "rss_mb": {...}, "ok"}`: each ratio service over baseline
 * requests/s and each cost 100 × (1 - observed over plain requests/s), from the saturated rounds (`ratios_from`
 * "saturated"; with `--saturated-seconds 0`, the paced rounds' CPU estimates, "paced"); `paced` the paced estimates
 * whatever the case; `ok` whether every check passed (ratios null if not).
 * Usage: npm run bench:read [-- --rounds 3 --seconds 20 --rate 15 --connections 4 --keys 4 --saturated-seconds 10]   (`--leases 2000`: a small data set, to try it;
 * `--profile-api <dir>`: CPU profiles of both APIs, for diagnosis only; `--from-source`: the APIs through tsx)
 */
import { availableParallelism } from 'node:os';
import type autocannon from 'autocannon';
import postgres from 'postgres';
import { loadConfigOrExit } from '../config';
import { PLAN_RULES } from '../domain/plans';
import { benchArgs } from './lib/args';
import type { LoadSpec } from './lib/load';
import { sampleOf, startSpanSink } from './lib/observed';
import { buildDist, cpuMeter, cpuProfileArgs, freePort, loadAverage, rssSampler, startApi, startChild, waitHealthy } from './lib/processes';
import { CheckFailed, endBench } from './lib/report';
import { DEFAULT_LEASES, ensureBenchData } from './lib/seed';
import { median } from './lib/stats';

const args = benchArgs(
  { rounds: 3, seconds: 20, rate: 15, connections: 4, keys: 4, warmup: 5, leases: DEFAULT_LEASES, saturatedSeconds: 10 },
  { profileApi: '', fromSource: false },
);
/** The API production runs (Dockerfile): the built bundle under plain node; `--from-source`: api/main.ts through tsx. */
const built = !args.fromSource;
/** `--profile-api <dir>`: V8 CPU profiles of the plain and the observed API, sampled every 250 µs (a request is short). */
const profile = cpuProfileArgs(args.profileApi, 250);
const LIMIT_PER_MINUTE = PLAN_RULES.enterprise.rateLimitPerMinute;
/** The saturated rounds' limit (requests a minute), far above what 4 connections reach. */
const SATURATED_LIMIT = 10_000_000;
/** A load generator that sent fewer than this share of rate × seconds did not offer the load it was asked to. */
const MIN_SENT_SHARE = 0.9;
/** Targets of the estimated throughput ratio (baseline's CPU per request over the service's), per scenario. */
const TARGETS: Record<string, { key: 'list' | 'retrieve'; target: number }> = {
  '(a) list leases': { key: 'list', target: 0.95 },
  '(b) retrieve lease': { key: 'retrieve', target: 0.9 },
};

interface Summary {
  bench: 'read';
  /**
   * Service over baseline, and the observability cost in per cent, as measured by the saturated rounds (requests per
   * second as fast as each target answers): the throughput ratio itself. With `--saturated-seconds 0`, the paced
   * rounds' estimate instead (CPU per request, baseline over service; observed over plain, minus 100), and
   * `ratios_from` says which.
   */
  ratios: { list: number | null; retrieve: number | null; list_cost_pct: number | null; retrieve_cost_pct: number | null };
  ratios_from: 'saturated' | 'paced';
  /** The paced rounds' estimates: CPU per request, baseline over service (`list`, `retrieve`). */
  paced: { list: number | null; retrieve: number | null };
  /** CPU per request of the API with metrics and tracing on over the plain API's, minus 1 (0.03: 3 % more), paced. */
  observability_cost: { list: number | null; retrieve: number | null };
  /**
   * The saturated rounds (`--saturated-seconds`, 0 to skip): requests per second as fast as the connections go, the
   * organization's limit lifted for them. `ratio`: service over baseline; `cost`: 1 - observed over service.
   */
  saturated: { list: SaturatedFigures | null; retrieve: SaturatedFigures | null };
  rss_mb: { api_max: number | null; api_median: number | null };
  ok: boolean;
}
interface SaturatedFigures {
  rps: Record<Target, number>;
  /** CPU ms per request (the target process plus its Postgres backends) over the saturated rounds. */
  cpu_ms: Record<Target, number>;
  ratio: number;
  cost: number;
}
const NO_RATIOS = { list: null, retrieve: null, list_cost_pct: null, retrieve_cost_pct: null };
const summary: Summary = {
  bench: 'read',
  ratios: { ...NO_RATIOS },
  ratios_from: 'paced',
  paced: { list: null, retrieve: null },
  observability_cost: { list: null, retrieve: null },
  saturated: { list: null, retrieve: null },
  rss_mb: { api_max: null, api_median: null },
  ok: false,
};

const say = (msg: string) => console.log(`[bench:read] ${msg}`);

type Target = 'service' | 'observed' | 'baseline';
const TARGETS_IN_ORDER = ['service', 'observed', 'baseline'] as const;
/** Most the CPU per request may grow with metrics and tracing on. */
const OBSERVABILITY_COST_TARGET = 0.05;

interface Figures {
  p50: number[];
  p90: number[];
  p99: number[];
  max: number[];
  requests: number;
  /** CPU seconds of the target process and of its Postgres backends over the measured windows. */
  cpuProcess: number;
  cpuPostgres: number;
}

async function main() {
  const began = Date.now();
  if (!(args.rate > 0 && args.seconds > 0 && args.rounds >= 1 && args.keys >= 1 && args.connections >= 1))
    throw new Error('--rate, --seconds, --rounds, --keys and --connections must be positive');
  // The limit's bucket holds 10 % of a minute and refills at the limit's rate: a steady rate below it never runs dry.
  if (args.rate >= LIMIT_PER_MINUTE / 60) {
    throw new CheckFailed(
      `--rate ${args.rate}/s is not within the enterprise limit of ${LIMIT_PER_MINUTE}/min (${LIMIT_PER_MINUTE / 60}/s): the API would answer 429`,
    );
  }
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  const config = loadConfigOrExit();
  const data = await ensureBenchData(config.DATABASE_URL, say, { keys: args.keys, leases: args.leases });
  if (built) {
    say('building dist/ (npm run build), to run the API as production does');
    await buildDist();
  }
  const api = await startApi(data.databaseUrl, {}, '[api]', { nodeArgs: profile, built });
  const sink = await startSpanSink();
  const metricsPort = await freePort();
  const observedApi = await startApi(data.databaseUrl, { METRICS_PORT: String(metricsPort), OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }, '[api+obs]', {
    nodeArgs: profile,
    built,
  });
  let scrapes = 0;
  const scraper = setInterval(() => {
    fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      .then((r) => r.text())
      .then(
        () => scrapes++,
        () => {},
      );
  }, 15_000);
  const basePort = await freePort();
  const baseline = startChild('bench/lib/baseline.ts', [data.databaseUrl, String(basePort), data.organizationId, data.mode], {}, '[baseline]');
  const pg = postgres(data.databaseUrl, { max: 1, onnotice: () => {} });
  /** The saturated rounds' override is on the organization (the seeded data is kept between runs: it must go). */
  let overridden = false;
  try {
    const targets: Record<Target, string> = { service: api.url, observed: observedApi.url, baseline: `http://127.0.0.1:${basePort}` };
    await Promise.all(Object.values(targets).map((u) => waitHealthy(u)));

    const listPath = `/v1/leases?limit=100&status=active&updated_after=${encodeURIComponent(data.updatedAfter)}`;
    const scenarios: Record<string, string[]> = {
      '(a) list leases': [listPath],
      '(b) retrieve lease': data.leaseIds.map((id) => `/v1/leases/${id}`),
    };

    // Both must answer the same thing, or the comparison means nothing; the API must run on the enterprise limit.
    for (const [i, path] of [listPath, `/v1/leases/${data.leaseIds[0]}`].entries()) {
      const key = data.keys[i % data.keys.length]!;
      const [s, o, b] = await Promise.all([
        fetch(targets.service + path, { headers: { authorization: `Bearer ${key}` } }),
        fetch(targets.observed + path, { headers: { authorization: `Bearer ${key}` } }),
        fetch(targets.baseline + path),
      ]);
      const [sj, oj, bj] = [await s.text(), await o.text(), await b.text()];
      if (s.status !== 200 || sj !== bj)
        throw new CheckFailed(`service and baseline disagree on ${path}: ${s.status} ${sj.slice(0, 200)} vs ${bj.slice(0, 200)}`);
      if (o.status !== 200 || oj !== bj) throw new CheckFailed(`the observed service and baseline disagree on ${path}: ${o.status} ${oj.slice(0, 200)}`);
      const policy = s.headers.get('ratelimit-policy');
      if (!policy?.includes(`"minute";q=${LIMIT_PER_MINUTE};w=60`))
        throw new CheckFailed(`the API reports RateLimit-Policy ${policy}, not the enterprise plan's ${LIMIT_PER_MINUTE} a minute`);
    }
    const sampleList = (await (await fetch(targets.service + listPath, { headers: { authorization: `Bearer ${data.keys[0]}` } })).json()) as {
      results: unknown[];
      meta: unknown;
    };
    say(`list page: ${sampleList.results.length} leases, meta ${JSON.stringify(sampleList.meta)}; service and baseline bodies are byte-identical`);
    say(
      `the API answers with RateLimit-Policy "minute";q=${LIMIT_PER_MINUTE};w=60 (enterprise plan, no override); ${data.keys.length} keys; offered rate ${args.rate}/s, ${args.connections} connections`,
    );

    /** Postgres backends serving one target: the API's pools (queries, the key cache's LISTEN) or the baseline's. */
    const backends = (appPrefix: string) => async () =>
      (await pg<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() and application_name like ${`${appPrefix}%`}`).map(
        (r) => r.pid,
      );
    // Both APIs' backends count for each (both name themselves propsync-api); the idle one's add next to nothing.
    const groups = {
      service: { process: () => [api.pid], postgres: backends('propsync-api') },
      observed: { process: () => [observedApi.pid], postgres: backends('propsync-api') },
      baseline: { process: () => [baseline.pid], postgres: backends('propsync-bench-baseline') },
    };

    /** Requests each target answered (the load generator's count; a window's last few in flight may reach it uncounted). */
    const answered: Record<Target, { list: number; retrieve: number }> = {
      service: { list: 0, retrieve: 0 },
      observed: { list: 1, retrieve: 1 },
      baseline: { list: 0, retrieve: 0 },
    };
    let windows = 0;

    /** One measured window: the load generator in its own process; any non-2xx or error fails the run. */
    /** `paced` false: as fast as the target answers (the saturated rounds). */
    async function load(
      target: Target,
      paths: string[],
      seconds: number,
      label: string,
      paced = true,
    ): Promise<{ result: autocannon.Result; cpu: Record<string, number> }> {
      const spec: LoadSpec = {
        url: targets[target],
        paths,
        keys: target === 'baseline' ? undefined : data.keys,
        connections: args.connections,
        duration: seconds,
        ...(paced ? { rate: args.rate } : {}),
      };
      const gen = startChild('bench/lib/load.ts', [], {}, '[load]', { stdin: true, echo: () => false });
      gen.process.stdin!.end(JSON.stringify(spec));
      await gen.line(/^load-start$/, 60_000);
      const stop = await cpuMeter(groups[target]).start();
      const [, json] = await gen.line(/^load-result (.*)$/, (seconds + 60) * 1000);
      const cpu = await stop();
      await gen.stop();
      const result = JSON.parse(json!) as autocannon.Result;
      const codes = Object.entries(result.statusCodeStats ?? {})
        .filter(([code]) => !code.startsWith('2'))
        .map(([code, s]) => `${s.count ?? 0} × ${code}`);
      if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0 || codes.length > 0) {
        throw new CheckFailed(
          `${label} against the ${target}: ${result.non2xx} non-2xx (${codes.join(', ') || 'none'}), ${result.errors} errors, ${result.timeouts} timeouts ` +
            `at ${args.rate}/s${codes.some((c) => c.endsWith('429')) ? ' (429: the rate limit refused requests)' : ''}`,
        );
      }
      const want = args.rate * seconds * MIN_SENT_SHARE;
      if (paced && result.requests.total < want) {
        throw new CheckFailed(
          `${label} against the ${target}: ${result.requests.total} requests answered in ${seconds} s, fewer than ${Math.ceil(want)} (${args.rate}/s offered)`,
        );
      }
      answered[target][paths[0]!.startsWith('/v1/leases?') ? 'list' : 'retrieve'] += result.requests.total;
      windows++;
      return { result, cpu };
    }

    say(`warming up: ${args.warmup} s of each scenario against each target`);
    for (const [name, paths] of Object.entries(scenarios)) for (const target of TARGETS_IN_ORDER) await load(target, paths, args.warmup, `warm-up ${name}`);

    const results: Record<string, Record<Target, Figures>> = {};
    const empty = (): Figures => ({ p50: [], p90: [], p99: [], max: [], requests: 0, cpuProcess: 0, cpuPostgres: 0 });
    const rss: number[] = [];
    for (let round = 1; round <= args.rounds; round++) {
      for (const [name, paths] of Object.entries(scenarios)) {
        results[name] ??= { service: empty(), observed: empty(), baseline: empty() };
        // The plain and the observed API take turns going first, so neither always runs right after the other.
        for (const target of round % 2 === 1 ? TARGETS_IN_ORDER : (['observed', 'service', 'baseline'] as const)) {
          const sampler = target === 'service' ? rssSampler(api.pid) : undefined;
          const { result: r, cpu } = await load(target, paths, args.seconds, `round ${round} ${name}`);
          if (sampler) {
            rss.push(sampler.peakMb());
            sampler.stop();
          }
          const f = results[name]![target];
          f.p50.push(r.latency.p50);
          f.p90.push(r.latency.p90);
          f.p99.push(r.latency.p99);
          f.max.push(r.latency.max);
          f.requests += r.requests.total;
          f.cpuProcess += cpu.process ?? 0;
          f.cpuPostgres += cpu.postgres ?? 0;
        }
      }
      say(`round ${round}/${args.rounds} done`);
    }

    console.log(
      `\nRead API vs bare node:http baseline: ${args.rounds} alternating rounds x ${args.seconds} s at ${args.rate} requests/s, ${args.connections} connections, ` +
        `${args.leases.toLocaleString('en-US')} leases, enterprise limit ${LIMIT_PER_MINUTE}/min, ${data.keys.length} keys; median over rounds\n`,
    );
    console.log('scenario              target     requests  p50 ms  p90 ms  p99 ms  max ms   CPU ms/req (process + postgres)');
    for (const [name, r] of Object.entries(results)) {
      const perReq = (f: Figures) => ((f.cpuProcess + f.cpuPostgres) * 1000) / f.requests;
      for (const target of TARGETS_IN_ORDER) {
        const f = r[target];
        console.log(
          `${name.padEnd(21)} ${target.padEnd(9)} ${String(f.requests).padStart(9)} ${median(f.p50).toFixed(1).padStart(7)} ${median(f.p90).toFixed(1).padStart(7)} ` +
            `${median(f.p99).toFixed(1).padStart(7)} ${median(f.max).toFixed(0).padStart(7)}   ${perReq(f).toFixed(2)} (${((f.cpuProcess * 1000) / f.requests).toFixed(2)} + ${((f.cpuPostgres * 1000) / f.requests).toFixed(2)})`,
        );
      }
      const capacity = perReq(r.baseline) / perReq(r.service);
      const { key, target } = TARGETS[name]!;
      summary.paced[key] = Number(capacity.toFixed(3));
      summary.ratios[key] = summary.paced[key];
      console.log(
        `${name.padEnd(21)} p50 service/baseline ${(median(r.service.p50) / median(r.baseline.p50)).toFixed(2)}, p99 ${(median(r.service.p99) / median(r.baseline.p99)).toFixed(2)}; ` +
          `CPU per request baseline/service ${capacity.toFixed(2)} ` +
          (args.saturatedSeconds > 0
            ? '(an estimate at this rate; the saturated rounds below measure the throughput ratio)'
            : `(estimated throughput ratio, target >= ${target}: ${capacity >= target ? 'meets target' : 'BELOW TARGET'})`),
      );
      const cost = perReq(r.observed) / perReq(r.service) - 1;
      summary.observability_cost[key] = Number(cost.toFixed(3));
      summary.ratios[`${key}_cost_pct`] = Number((cost * 100).toFixed(1));
      console.log(
        `${name.padEnd(21)} metrics + tracing on: CPU per request ${(cost * 100).toFixed(1)} % over the plain API's, p50 ${(median(r.observed.p50) / median(r.service.p50)).toFixed(2)}x ` +
          (args.saturatedSeconds > 0
            ? '(at this rate; the saturated rounds below measure the cost as a share of throughput)\n'
            : `(target <= ${OBSERVABILITY_COST_TARGET * 100} %: ${cost <= OBSERVABILITY_COST_TARGET ? 'meets target' : 'ABOVE TARGET'})\n`),
      );
    }
    summary.rss_mb = { api_max: Math.max(...rss), api_median: median(rss) };
    console.log(`API process RSS under load: max ${Math.max(...rss)} MB, median ${median(rss)} MB (target <= 200 MB)`);

    if (args.saturatedSeconds > 0) {
      // Throughput measured directly: the same requests as fast as the connections go. One organization cannot be
      // driven past its limit, so these rounds lift it (an override on the organization, which the limiter reads at
      // its next claim; the limiter still runs on every request) and put it back afterwards.
      await pg`update organizations set rate_limit_per_minute = ${SATURATED_LIMIT}, rate_limit_burst = ${SATURATED_LIMIT / 10} where id = ${data.organizationId}`;
      overridden = true;
      await new Promise((r) => setTimeout(r, 2_000)); // every lease taken under the plan's limit has expired
      say(`saturated rounds: ${args.rounds} x ${args.saturatedSeconds} s per scenario and target, ${args.connections} connections, no pacing`);
      for (const [name, paths] of Object.entries(scenarios)) {
        const rps: Record<Target, number[]> = { service: [], observed: [], baseline: [] };
        /** CPU seconds (process + Postgres) and requests answered, per target, over the rounds. */
        const spent: Record<Target, { cpu: number; requests: number }> = {
          service: { cpu: 0, requests: 0 },
          observed: { cpu: 0, requests: 0 },
          baseline: { cpu: 0, requests: 0 },
        };
        const msPerRequest = (t: Target) => Number(((spent[t].cpu * 1000) / spent[t].requests).toFixed(3));
        for (const target of TARGETS_IN_ORDER) await load(target, paths, 2, `saturated warm-up ${name}`, false);
        for (let round = 1; round <= args.rounds; round++) {
          for (const target of round % 2 === 1 ? TARGETS_IN_ORDER : (['observed', 'service', 'baseline'] as const)) {
            const { result, cpu } = await load(target, paths, args.saturatedSeconds, `saturated round ${round} ${name}`, false);
            rps[target].push(result.requests.total / args.saturatedSeconds);
            spent[target].cpu += (cpu.process ?? 0) + (cpu.postgres ?? 0);
            spent[target].requests += result.requests.total;
          }
        }
        const m = { service: median(rps.service), observed: median(rps.observed), baseline: median(rps.baseline) };
        const { key, target } = TARGETS[name]!;
        const figures: SaturatedFigures = {
          rps: { service: Math.round(m.service), observed: Math.round(m.observed), baseline: Math.round(m.baseline) },
          cpu_ms: { service: msPerRequest('service'), observed: msPerRequest('observed'), baseline: msPerRequest('baseline') },
          ratio: Number((m.service / m.baseline).toFixed(3)),
          cost: Number((1 - m.observed / m.service).toFixed(3)),
        };
        summary.saturated[key] = figures;
        // The measured throughput ratio stands for the scenario, in place of the paced rounds' estimate of it.
        summary.ratios[key] = figures.ratio;
        summary.ratios[`${key}_cost_pct`] = Number((figures.cost * 100).toFixed(1));
        summary.ratios_from = 'saturated';
        console.log(
          `${name.padEnd(21)} saturated: service ${figures.rps.service}/s, observed ${figures.rps.observed}/s, baseline ${figures.rps.baseline}/s (medians of ${args.rounds}); ` +
            `service/baseline ${figures.ratio} (target >= ${target}: ${figures.ratio >= target ? 'meets target' : 'BELOW TARGET'}), ` +
            `metrics + tracing cost ${(figures.cost * 100).toFixed(1)} % of throughput (target <= ${OBSERVABILITY_COST_TARGET * 100} %: ${figures.cost <= OBSERVABILITY_COST_TARGET ? 'meets target' : 'ABOVE TARGET'}); ` +
            `CPU ms per request service ${figures.cpu_ms.service}, observed ${figures.cpu_ms.observed}, baseline ${figures.cpu_ms.baseline}`,
        );
      }
      await pg`update organizations set rate_limit_per_minute = null, rate_limit_burst = null where id = ${data.organizationId}`;
      overridden = false;
    }
    // Metrics and tracing were on, and saw every request: the observed API counted each request answered (and at
    // most the few in flight when a window ended), and exported one root span per request it counted.
    const exposition = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const counted = {
      list: sampleOf(exposition, 'propsync_http_request_duration_seconds_count', { method: 'GET', route: '/v1/leases', status_class: '2xx' }),
      retrieve: sampleOf(exposition, 'propsync_http_request_duration_seconds_count', { method: 'GET', route: '/v1/leases/{id}', status_class: '2xx' }),
    };
    await observedApi.stop(); // its tracer provider exports what it still holds on the way out
    const sunk = await sink.stats();
    const rootSpans = { list: sunk.spans['GET /v1/leases'] ?? 0, retrieve: sunk.spans['GET /v1/leases/{id}'] ?? 0 };
    console.log(
      `observed API: ${scrapes} scrapes of its /metrics; it counted ${counted.list} list and ${counted.retrieve} retrieve requests (${answered.observed.list} and ${answered.observed.retrieve} answered to the load generator); ` +
        `the sink received ${sunk.exports} exports, ${rootSpans.list} and ${rootSpans.retrieve} root spans of those routes`,
    );
    for (const k of ['list', 'retrieve'] as const) {
      if (counted[k] < answered.observed[k] || counted[k] > answered.observed[k] + args.connections * windows) {
        throw new CheckFailed(
          `the observed API's metrics counted ${counted[k]} ${k} requests, but ${answered.observed[k]} were answered: metrics were not on, or miscount`,
        );
      }
      if (rootSpans[k] !== counted[k])
        throw new CheckFailed(`the sink received ${rootSpans[k]} ${k} root spans for ${counted[k]} requests counted: tracing dropped or was not on`);
    }
    if (sunk.unparsed > 0) throw new CheckFailed(`the sink could not read ${sunk.unparsed} exports`);
    console.log(
      `checks passed: every request of every round answered 2xx (no 429, no error, no timeout) at the offered rate; service and baseline bodies identical; ` +
        `load average ${loadAverage()} at the end; the whole bench took ${((Date.now() - began) / 1000).toFixed(1)} s`,
    );
  } finally {
    clearInterval(scraper);
    if (overridden) await pg`update organizations set rate_limit_per_minute = null, rate_limit_burst = null where id = ${data.organizationId}`;
    await pg.end({ timeout: 2 });
    await api.stop();
    await observedApi.stop();
    await sink.stop();
    await baseline.stop();
  }
}

// No figure of a run that failed a check stands: the line says so, with no ratios.
endBench('read', main, (passed) =>
  passed
    ? { ...summary, ok: true }
    : {
        ...summary,
        ratios: { ...NO_RATIOS },
        paced: { list: null, retrieve: null },
        observability_cost: { list: null, retrieve: null },
        saturated: { list: null, retrieve: null },
        ok: false,
      },
);
