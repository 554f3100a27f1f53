/**
 * Real infrastructure faults for the outage tests: a Temporal dev server of a test's own that can be SIGKILLed and
 * restarted on its state file, a TCP proxy in front of Postgres that can be cut, and worker child processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { TypedSearchAttributes } from '@temporalio/common';
import { SEARCH_ATTRIBUTES } from '../../domain/contract';
import { startDevServer } from '../../scripts/temporal-dev';
import { TEMPORAL_CLI } from '../../scripts/tools';
import { until } from './until';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** How much of a child's stderr is kept: its first lines (where a start-up panic says why) and its last. */
const STDERR_HEAD = 3_000;
const STDERR_TAIL = 4_000;

/** `kept` (a head and tail of what came before) with `more` written after it, bounded to the head and the tail. */
function headAndTail(kept: { head: string; tail: string; dropped: number }, more: string): void {
  if (kept.head.length < STDERR_HEAD) {
    const room = STDERR_HEAD - kept.head.length;
    kept.head += more.slice(0, room);
    more = more.slice(room);
  }
  const tail = kept.tail + more;
  kept.dropped += Math.max(0, tail.length - STDERR_TAIL);
  kept.tail = tail.slice(-STDERR_TAIL);
}

/** Child processes a test file started, with the head and tail of their stderr, so afterAll can kill whatever is left. */
export class Processes {
  readonly running = new Set<ChildProcess>();
  readonly stderr = new Map<ChildProcess, string>();

  spawn(command: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    const kept = { head: '', tail: '', dropped: 0 };
    this.stderr.set(child, '');
    child.stderr!.on('data', (d: Buffer) => {
      headAndTail(kept, d.toString());
      this.stderr.set(child, kept.dropped > 0 ? `${kept.head}\n… ${kept.dropped} characters left out …\n${kept.tail}` : kept.head + kept.tail);
    });
    this.running.add(child);
    child.on('exit', () => this.running.delete(child));
    return child;
  }

  /** Like spawn, but keeps everything the child writes to stdout and stderr (its logs), in order, for the test to read. */
  spawnLogged(command: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
    const chunks: Buffer[] = [];
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (d: Buffer) => chunks.push(d));
    this.stderr.set(child, '');
    this.running.add(child);
    child.on('exit', () => this.running.delete(child));
    return { child, output: () => Buffer.concat(chunks).toString('utf8') };
  }

  /** Waits until `url` answers with a 2xx, failing with `child`'s stderr should it exit first. */
  async answering(url: string, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
    await until(
      `${url} to answer`,
      async () => {
        if (!this.running.has(child)) throw new Error(`the process exited: ${this.stderr.get(child)}`);
        return (
          (await fetch(url)
            .then((r) => r.ok)
            .catch(() => false)) || undefined
        );
      },
      timeoutMs,
    );
  }

  async kill(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  async killAll(): Promise<void> {
    await Promise.all([...this.running].map((c) => this.kill(c)));
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * `temporal server start-dev` on a fixed port and state file, so that a restart finds every workflow where it was,
 * once it answers (a start that loses a port the server picked at random is made again: scripts/temporal-dev.ts).
 */
export async function startTemporal(procs: Processes, port: number, dbFile: string, timeoutMs = 30_000): Promise<ChildProcess> {
  const args = ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', dbFile];
  for (const { name, type } of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${name}=${TypedSearchAttributes.toMetadataType(type)}`);
  args.push('--log-level', 'error');
  const launch = () => {
    const child = procs.spawn(TEMPORAL_CLI, args, process.env);
    return { child, output: () => procs.stderr.get(child) ?? '' };
  };
  return startDevServer(launch, `127.0.0.1:${port}`, { timeoutMs });
}

/** The environment of a worker process of a test (over `env`, which wins). */
export function workerEnv(env: { DATABASE_URL: string; TEMPORAL_ADDRESS: string; TEMPORAL_TASK_QUEUE: string } & Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...env,
    // The test database is shared with other files whose schedules point at their own task queues.
    WORKER_RECONCILE_SCHEDULES: 'false',
    // Every role but the relay: an unscoped relay would dispatch other files' events onto this worker's webhook queue.
    WORKER_ROLES: 'sync,webhooks,writes,automations',
    // Test keys only: serving live would need secrets of its own.
    SERVED_MODES: 'test',
    SYNC_PAGE_SIZE: '25',
    DB_POOL_MAX: '3',
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
    ...env,
  };
}

/** What starts a worker process from source (`npm run worker`). */
export const WORKER_COMMAND = [process.execPath, ['--import', 'tsx', 'worker/main.ts']] as const;

/** `npm run worker` as a child process. */
export function spawnWorker(
  procs: Processes,
  env: { DATABASE_URL: string; TEMPORAL_ADDRESS: string; TEMPORAL_TASK_QUEUE: string } & Record<string, string>,
): ChildProcess {
  return procs.spawn(WORKER_COMMAND[0], [...WORKER_COMMAND[1]], workerEnv(env));
}

/** Every live process below `pid` (Linux /proc), at any depth. */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    for (const [child, parent] of parentOf) {
      if (parent !== p) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** A TCP proxy to `target` that can be cut (every socket destroyed, nothing accepted) and restored on the same port. */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private holding = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        // A reset on one side ends the pair; the error itself is the point of the test, not a crash of it.
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
      if (this.holding) for (const s of [client, upstream]) s.pause();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Drop every open connection and refuse new ones until start() again. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }

  /**
   * Keep every connection open, and accept new ones, but pass nothing either way until release(): a server that
   * accepts and never answers (stopped with SIGSTOP, overloaded, cut off behind a proxy).
   */
  hold(): void {
    this.holding = true;
    for (const s of this.sockets) s.pause();
  }

  release(): void {
    this.holding = false;
    for (const s of this.sockets) s.resume();
  }

  get connections(): number {
    return this.sockets.size;
  }
}
