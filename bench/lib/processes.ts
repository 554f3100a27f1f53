/**
 * What a bench needs around the system under test: a fresh database of its own, a Temporal dev server of its own,
 * child processes started the way the service starts them (`node --import tsx`), and their memory from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import postgres from 'postgres';
import { migrateDatabase } from '../../db/migrate';
import { SEARCH_ATTRIBUTES } from '../../domain/contract';
import { TEMPORAL_CLI } from '../../scripts/tools';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `<service database>_<suffix>`, dropped and migrated from scratch. */
export async function freshDatabase(serviceUrl: string, suffix: string): Promise<string> {
  const url = new URL(serviceUrl);
  url.pathname = `${url.pathname.replace(/\/$/, '')}_${suffix}`;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop database if exists "${url.pathname.slice(1)}" with (force)`);
  } finally {
    await sql.end();
  }
  await migrateDatabase(url.toString());
  return url.toString();
}

/**
 * What a bench that runs workflows starts from: a fresh database `<service database>_<suffix>` (freshDatabase) and a
 * Temporal dev server of its own (the CLI from .tools) with the service's search attributes, as the tests run it,
 * `temporalDynamicConfig` values (`key=value`) on top of the server's defaults. The server is stopped if the bench is
 * interrupted; otherwise the bench tears `env` down itself.
 */
export async function freshStack(serviceUrl: string, suffix: string, temporalDynamicConfig: string[] = []): Promise<FreshStack> {
  const databaseUrl = await freshDatabase(serviceUrl, suffix);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: TEMPORAL_CLI },
      searchAttributes: [...SEARCH_ATTRIBUTES],
      extraArgs: ['--log-level', 'error', ...temporalDynamicConfig.flatMap((v) => ['--dynamic-config-value', v])],
    },
  });
  onInterrupt.push(() => env.teardown());
  return { databaseUrl, env, client: env.client, temporalAddress: env.connection.options.address };
}

interface FreshStack {
  databaseUrl: string;
  env: TestWorkflowEnvironment;
  client: Client;
  temporalAddress: string;
}

export interface Child {
  process: ChildProcess;
  pid: number;
  /** Resolves with the first stdout line matching `pattern` (rejects if the process exits first or `timeoutMs` passes). */
  line(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Writes one line to the child's stdin (only when started with `stdin: true`). */
  send(line: string): void;
  /** SIGTERM, and wait for the exit. */
  stop(): Promise<void>;
}

export interface ChildOptions {
  /** Give the child a stdin pipe (for `send`); otherwise its stdin is /dev/null. */
  stdin?: boolean;
  /** Which stdout lines are echoed with the prefix; all of them by default. */
  echo?: (line: string) => boolean;
  /** Options for node itself, before `--import tsx` (e.g. `--cpu-prof`, which NODE_OPTIONS does not take). */
  nodeArgs?: string[];
  /** Run the script with plain `node`, as production runs a built bundle (dist/…mjs); by default through tsx. */
  plainNode?: boolean;
}

const running = new Set<ChildProcess>();
/** What to run (stopping a Temporal dev server) if the bench is interrupted; children are killed anyway. */
const onInterrupt: (() => Promise<unknown>)[] = [];
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const c of running) c.kill('SIGKILL');
    const cleanUp = Promise.allSettled(onInterrupt.map((fn) => fn()));
    void Promise.race([cleanUp, new Promise((r) => setTimeout(r, 5_000))]).then(() => process.exit(130));
  });
}

/**
 * `npm run build` (dist/: the bundles production runs with plain node, the workflow bundle prebuilt), so that a
 * bench measures the worker its users run: no tsx loader thread, no workflow bundling at start-up.
 */
export async function buildDist(): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`npm run build failed (exit ${code})`))));
  });
}

/**
 * `node --import tsx <script> ...argv` from the project root, with `env` over this process's environment. Its stdout
 * is echoed with `prefix` (and searched by `line`); its stderr is passed through.
 */
export function startChild(script: string, argv: string[], env: Record<string, string>, prefix: string, opts: ChildOptions = {}): Child {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...(opts.plainNode ? [] : ['--import', 'tsx']), script, ...argv], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'inherit'],
  });
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  let buffered = '';
  const lines: string[] = [];
  const listeners = new Set<(line: string) => void>();
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      if (!opts.echo || opts.echo(line)) console.log(`${prefix} ${line}`);
      for (const l of listeners) l(line);
    }
  });
  return {
    process: child,
    pid: child.pid!,
    line(pattern, timeoutMs = 60_000) {
      const seen = lines.map((l) => pattern.exec(l)).find((m) => m);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${script}: no line matching ${pattern} in ${timeoutMs} ms`)), timeoutMs);
        const onLine = (line: string) => {
          const m = pattern.exec(line);
          if (!m) return;
          clearTimeout(timer);
          listeners.delete(onLine);
          resolve(m);
        };
        listeners.add(onLine);
        void exited.then((code) => {
          clearTimeout(timer);
          reject(new Error(`${script} exited with ${code}`));
        });
      });
    },
    send(line) {
      if (!child.stdin) throw new Error(`${script} was started without a stdin pipe`);
      child.stdin.write(`${line}\n`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Node's options for a V8 CPU profile of a process, written into `dir` when it exits (none when `dir` is empty), for
 * diagnosis only: profiling slows what it profiles. `intervalUs`: the sampling interval (Node's default 1,000 µs).
 */
export const cpuProfileArgs = (dir: string, intervalUs?: number): string[] =>
  dir ? ['--cpu-prof', ...(intervalUs ? [`--cpu-prof-interval=${intervalUs}`] : []), `--cpu-prof-dir=${dir}`] : [];

/** How a bench runs a service process: from source through tsx (the default), or `built` (dist/, after buildDist). */
export interface ServiceProcessOptions {
  /** Run the built bundle (dist/api.mjs, dist/worker.mjs) under plain node, as production does (Dockerfile). */
  built?: boolean;
  /** Options for node itself (`--cpu-prof`). */
  nodeArgs?: string[];
}

/**
 * The API (api/main.ts, or dist/api.mjs when `built`) as a process of its own on a free port of 127.0.0.1, serving
 * test keys (serving live would need secrets of its own), logging warnings and above; `env` adds to or overrides
 * that. Not yet healthy on return.
 */
export async function startApi(
  databaseUrl: string,
  env: Record<string, string> = {},
  prefix = '[api]',
  opts: ServiceProcessOptions = {},
): Promise<Child & { url: string }> {
  const port = await freePort();
  const child = startChild(
    opts.built ? 'dist/api.mjs' : 'api/main.ts',
    [],
    { DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: String(port), SERVED_MODES: 'test', LOG_LEVEL: 'warn', LOG_PRETTY: 'false', ...env },
    prefix,
    { nodeArgs: opts.nodeArgs ?? [], plainNode: opts.built === true },
  );
  return Object.assign(child, { url: `http://127.0.0.1:${port}` });
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `<url>/healthz` until it answers 2xx. */
export async function waitHealthy(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The 1-minute load average: other work on the machine skews every figure of a CPU-bound run. */
export const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;

/** Peak resident set size of a live process (VmHWM: the kernel's high-water mark since it started), in MB. */
export function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM for process ${pid}`);
  return Math.round(Number(m[1]) / 1024);
}

/** Samples a process's VmRSS every 100 ms: the peak over a window (reset at its start). */
export function rssSampler(pid: number) {
  let peak = 0;
  const sample = () => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      // the process is gone
    }
  };
  const timer = setInterval(sample, 100);
  return {
    reset: () => (peak = 0),
    peakMb: () => (sample(), Math.round(peak / 1024 / 1024)),
    stop: () => clearInterval(timer),
  };
}

/**
 * Waits until a task queue has both workflow and activity pollers (its worker is running); with `pid`, pollers of
 * that process (the SDK's default identity is `<pid>@<host>`): the server lists a stopped worker's pollers for minutes.
 */
export async function waitForPollers(client: Client, taskQueue: string, timeoutMs = 120_000, pid?: number): Promise<void> {
  const { TASK_QUEUE_TYPE_WORKFLOW, TASK_QUEUE_TYPE_ACTIVITY } = proto.temporal.api.enums.v1.TaskQueueType;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await Promise.all(
      [TASK_QUEUE_TYPE_WORKFLOW, TASK_QUEUE_TYPE_ACTIVITY].map(async (taskQueueType) => {
        const r = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType });
        return (r.pollers ?? []).filter((p) => pid === undefined || (p.identity ?? '').startsWith(`${pid}@`)).length;
      }),
    );
    if (counts.every((n) => n > 0)) return;
    if (Date.now() > deadline) throw new Error(`no worker polls task queue ${taskQueue} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** CPU seconds (user + system) a live process has used; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** Ids of this process's children whose command name starts with `name`. */
export function childPids(name: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && comm.startsWith(name)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * CPU used by groups of processes over a window: `pids` is asked for each group's processes at the start and at the
 * end (processes that came and went in between are missed; those that came are counted from their start).
 */
export function cpuMeter(groups: Record<string, () => number[] | Promise<number[]>>) {
  const snapshot = async () => {
    const out = new Map<string, Map<number, number>>();
    for (const [name, pids] of Object.entries(groups)) out.set(name, new Map((await pids()).map((pid) => [pid, cpuSeconds(pid)])));
    return out;
  };
  return {
    async start() {
      const before = await snapshot();
      return async (): Promise<Record<string, number>> => {
        const after = await snapshot();
        const used: Record<string, number> = {};
        for (const [name, pids] of after) {
          let s = 0;
          for (const [pid, cpu] of pids) s += cpu - (before.get(name)?.get(pid) ?? 0);
          used[name] = s;
        }
        return used;
      };
    },
  };
}
