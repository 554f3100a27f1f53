/**
 * `npm run bench:read`: the public read API against a bare node:http baseline, measured in one run.
 *
 * Seeds (or reuses) a 100k-lease organization in a dedicated bench database through applyRecords, starts the real
 * API (api/main.ts) and the baseline (bench/lib/baseline.ts) as child processes, checks that both answer the same
 * JSON, then with autocannon alternates rounds of
 *   (a) GET /v1/leases?limit=100&status=active&updated_after=…   and   (b) GET /v1/leases/{id}
 * against each. Prints requests/s, p50 and p99 of each, the ratio service/baseline and the API process's RSS under
 * load. A benchmark, not a test: it prints figures and asserts nothing.
 * Usage: npm run bench:read [-- --rounds 3 --seconds 5 --connections 10]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { loadConfigOrExit } from '../config';
import { ensureBenchData } from './lib/seed';

const { values: args } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
  },
});
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const CONNECTIONS = Number(args.connections);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const log = (msg: string) => console.log(`[bench:read] ${msg}`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const children: ChildProcess[] = [];
function start(script: string, argv: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...argv], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  return child;
}
function stopAll() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}
process.on('exit', stopAll);
process.on('SIGINT', () => {
  stopAll();
  process.exit(130);
});

async function waitHealthy(url: string) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** Resident set size of a process, from /proc (Linux). */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

interface Figures {
  rps: number[];
  p50: number[];
  p99: number[];
  errors: number;
}

async function load(url: string, paths: () => string, headers: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    headers,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: paths() }) }],
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const config = loadConfigOrExit();
const data = await ensureBenchData(config.DATABASE_URL, log);
const [apiPort, basePort] = [await freePort(), await freePort()];
const api = start('api/main.ts', [], {
  DATABASE_URL: data.databaseUrl,
  HOST: '127.0.0.1',
  PORT: String(apiPort),
  LOG_LEVEL: 'warn',
  LOG_PRETTY: 'false',
});
start('bench/lib/baseline.ts', [data.databaseUrl, String(basePort), data.organizationId, data.mode], {});
const targets = { service: `http://127.0.0.1:${apiPort}`, baseline: `http://127.0.0.1:${basePort}` };
await Promise.all(Object.values(targets).map(waitHealthy));

const listPath = `/v1/leases?limit=100&status=active&updated_after=${encodeURIComponent(data.updatedAfter)}`;
let next = 0;
const scenarios = {
  '(a) list leases': () => listPath,
  '(b) retrieve lease': () => `/v1/leases/${data.leaseIds[next++ % data.leaseIds.length]}`,
};
const auth = { authorization: `Bearer ${data.key}` };

// Both must answer the same thing, or the comparison means nothing.
for (const path of [listPath, `/v1/leases/${data.leaseIds[0]}`]) {
  const [s, b] = await Promise.all([fetch(targets.service + path, { headers: auth }), fetch(targets.baseline + path)]);
  const [sj, bj] = [await s.text(), await b.text()];
  if (s.status !== 200 || sj !== bj) throw new Error(`service and baseline disagree on ${path}: ${s.status} ${sj.slice(0, 200)} vs ${bj.slice(0, 200)}`);
}
const sampleList = (await (await fetch(targets.service + listPath, { headers: auth })).json()) as { results: unknown[]; meta: unknown };
log(`list page: ${sampleList.results.length} leases, meta ${JSON.stringify(sampleList.meta)}; service and baseline bodies are byte-identical`);

log(`warming up (${CONNECTIONS} connections)`);
for (const [name, paths] of Object.entries(scenarios)) {
  await load(targets.service, paths, auth, 2);
  await load(targets.baseline, paths, {}, 2);
  void name;
}

const results: Record<string, Record<'service' | 'baseline', Figures>> = {};
const rss: number[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, paths] of Object.entries(scenarios)) {
    results[name] ??= { service: { rps: [], p50: [], p99: [], errors: 0 }, baseline: { rps: [], p50: [], p99: [], errors: 0 } };
    for (const target of ['service', 'baseline'] as const) {
      const sampler = target === 'service' ? setInterval(() => rss.push(rssMb(api.pid!)), 250) : undefined;
      const r = await load(targets[target], paths, target === 'service' ? auth : {}, SECONDS);
      clearInterval(sampler);
      const f = results[name]![target];
      f.rps.push(r.requests.average);
      f.p50.push(r.latency.p50);
      f.p99.push(r.latency.p99);
      f.errors += r.errors + r.non2xx;
    }
  }
  log(`round ${round}/${ROUNDS} done`);
}

console.log(`\nRead API vs bare node:http baseline (${ROUNDS} alternating rounds x ${SECONDS} s, ${CONNECTIONS} connections, 100k leases)\n`);
console.log('scenario              target      req/s     p50 ms   p99 ms   errors');
for (const [name, r] of Object.entries(results)) {
  for (const target of ['service', 'baseline'] as const) {
    const f = r[target];
    console.log(
      `${name.padEnd(21)} ${target.padEnd(9)} ${median(f.rps).toFixed(0).padStart(8)} ${median(f.p50).toFixed(1).padStart(9)} ${median(f.p99).toFixed(1).padStart(8)} ${String(f.errors).padStart(8)}`,
    );
  }
  const ratio = median(r.service.rps) / median(r.baseline.rps);
  console.log(`${name.padEnd(21)} ratio service/baseline: ${ratio.toFixed(2)} (target >= 0.70)\n`);
}
console.log(`API process RSS under load: max ${Math.max(...rss).toFixed(0)} MB, median ${median(rss).toFixed(0)} MB (target <= 200 MB)`);
stopAll();
process.exit(0);
