/**
 * `sync run --wait`: polls the job and shows where it stands on stderr (a live bar on a terminal, one plain line per
 * change otherwise), then returns the final job. `operations get --wait`: polls an Operation with the backoff the
 * spec recommends until it is terminal or the time-out passes. `automation run --wait`: polls a run until it ends.
 * A poll that fails for a while (no answer in time, no connection, a 502, 503 or 504) is said on stderr and tried
 * again until the time-out; any other failure ends the wait.
 */
import { SingleBar } from 'cli-progress';
import { CliError, oneLine, type AdminClient } from './client';

export interface SyncJob {
  id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  records_seen: number;
  records_new: number;
  records_updated: number;
  records_soft_deleted: number;
  records_skipped: number;
  error: string | null;
  /** While a step is retried: its attempt, why the last one failed, and when the next starts. */
  attempt?: number;
  last_error?: string | null;
  next_attempt_at?: string | null;
  progress?: Record<string, { pages: number; done: boolean }>;
  [more: string]: unknown;
}

const TERMINAL = new Set(['succeeded', 'failed']);

function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Entities complete, and the one under way with its page count. */
function stage(job: SyncJob): { done: number; total: number; current: string } {
  const entries = Object.entries(job.progress ?? {});
  const done = entries.filter(([, p]) => p.done).length;
  const next = entries.find(([, p]) => !p.done);
  const current = TERMINAL.has(job.status) ? job.status : next ? `${next[0]} p.${next[1].pages}` : job.status;
  return { done, total: Math.max(entries.length, 1), current: `${current}${retrying(job)}` };
}

/** `, retrying: attempt 3 at 12:01:05 after: <why>` while a step waits for its next attempt. */
function retrying(job: SyncJob): string {
  if (TERMINAL.has(job.status) || !job.last_error || (job.attempt ?? 1) < 2) return '';
  const at = job.next_attempt_at ? ` at ${job.next_attempt_at.slice(11, 19)}Z` : ' (running)';
  return `, retrying: attempt ${job.attempt}${at} after: ${oneLine(job.last_error).slice(0, 200)}`;
}

function payload(job: SyncJob, startedAt: number) {
  const s = stage(job);
  return {
    status: job.status,
    current: s.current,
    seen: job.records_seen,
    created: job.records_new,
    updated: job.records_updated,
    deleted: job.records_soft_deleted,
    elapsed: elapsed(Date.now() - startedAt),
  };
}

/** The exit code of a CLI a signal stopped while it drew a live bar: 128 + the signal's number, as a shell reports it. */
const INTERRUPTS = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * While a live bar is drawn, SIGINT (Ctrl-C) or SIGTERM first stops it (`stop`: the cursor shown again, line wrap
 * back on), then says on `stream` the line `said()` gives and exits 130 or 143. Returns what removes the handlers, for
 * when the bar stops of itself. `signals` and `exit`: the process's, unless a test gives its own.
 */
export function stopOnInterrupt(
  stop: () => void,
  said: () => string,
  opts: { stream?: NodeJS.WritableStream; signals?: NodeJS.EventEmitter; exit?: (code: number) => void } = {},
): () => void {
  const signals = opts.signals ?? process;
  const stream = opts.stream ?? process.stderr;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const handlers = Object.entries(INTERRUPTS).map(([signal, code]) => {
    const handler = () => {
      remove();
      stop();
      stream.write(`${said()}\n`);
      exit(code);
    };
    signals.on(signal, handler);
    return [signal, handler] as const;
  });
  const remove = () => {
    for (const [signal, handler] of handlers) signals.removeListener(signal, handler);
  };
  return remove;
}

/**
 * Follows a sync job, reading it every `pollMs`, until it is terminal or `timeoutMs` has passed (`timedOut`, with the
 * last state seen); where it stands goes to `stream` as it changes.
 */
export async function waitForJob(
  client: AdminClient,
  first: SyncJob,
  opts: { pollMs: number; stream?: NodeJS.WriteStream; timeoutMs?: number },
): Promise<Followed<SyncJob>> {
  const stream = opts.stream ?? process.stderr;
  const startedAt = Date.now();
  let job = first;
  const live = stream.isTTY === true;
  const bar = live
    ? new SingleBar({
        stream,
        format: `sync ${job.id} [{bar}] {value}/{total} entities | {current} | seen {seen} new {created} updated {updated} soft-deleted {deleted} | {elapsed}`,
        barsize: 20,
        hideCursor: true,
        clearOnComplete: false,
        fps: 10,
        barCompleteChar: '█',
        barIncompleteChar: '░',
      })
    : undefined;
  bar?.start(stage(job).total, stage(job).done, payload(job, startedAt));
  // The bar hides the cursor and turns line wrap off until it stops: an interrupt must stop it too.
  const unhook = bar
    ? stopOnInterrupt(
        () => bar.stop(),
        () => `stopped waiting: sync job ${job.id} goes on (${job.status}; see: sync get ${job.id})`,
        { stream },
      )
    : undefined;
  let lastLine = '';
  const report = () => {
    const p = payload(job, startedAt);
    if (bar?.isActive === false) {
      // Stopped for a failed poll's line (below): drawn again under it.
      bar.start(stage(job).total, stage(job).done, p);
      return;
    }
    if (bar) {
      bar.setTotal(stage(job).total);
      bar.update(stage(job).done, p);
      return;
    }
    const line = `sync ${job.id} ${p.status}: ${stage(job).done}/${stage(job).total} entities, seen=${p.seen} new=${p.created} updated=${p.updated} soft_deleted=${p.deleted}${retrying(job)}`;
    if (line !== lastLine) stream.write(`${line} (${p.elapsed})\n`);
    lastLine = line;
  };
  try {
    return await follow(first, {
      name: 'sync job',
      see: (id) => `sync get ${id}`,
      read: (id, timeoutMs) => client.request<SyncJob>('GET', `/sync_jobs/${id}`, undefined, { timeoutMs }),
      delayMs: () => opts.pollMs,
      report: (seen) => {
        job = seen;
        report();
      },
      // A line written under a live bar would be overwritten where the bar puts the cursor back when it stops: the
      // bar stops first (as it stood), and report() starts it again below with the next state read.
      warn: (line) => {
        bar?.stop();
        stream.write(`${line}\n`);
      },
      timeoutMs: opts.timeoutMs,
    });
  } finally {
    unhook?.();
    bar?.stop();
  }
}

/** An Operation as the admin API shows it (`GET /admin/v1/operations/{id}`): what `operations get --wait` reads. */
export interface Operation {
  id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  reconcile: { state: string; attempts: number; next_attempt_at: string | null; last_error: string | null };
  [more: string]: unknown;
}

/** How `operations get --wait` backs off: `baseMs` × 2^attempts, never longer than `capMs`. */
export interface OperationPolling {
  baseMs: number;
  capMs: number;
}

/** docs/api.md Operations rule 5: exponential in the attempts, capped at 30 s; 1 s while no attempt has failed. */
const OPERATION_POLLING: OperationPolling = { baseMs: 1_000, capMs: 30_000 };

export function operationPollDelayMs(attempts: number, polling: OperationPolling = OPERATION_POLLING): number {
  return Math.min(polling.capMs, polling.baseMs * 2 ** Math.max(0, attempts));
}

/**
 * Where a followed job, Operation or automation run ended up, and whether the time-out passed first; `failing`: the
 * wait ended at its time-out on a failed poll (why, and the command that shows the thing later).
 */
interface Followed<T> {
  last: T;
  timedOut: boolean;
  failing?: { error: string; see: string };
}

/**
 * How long the read at the time-out may take when less is left: it still gets a chance to find the thing ended, at
 * the cost of a wait this much longer than `--timeout` at most.
 */
const LAST_READ_MS = 1_000;
/** Time left below which a wait counts as over: a timer may fire this much before the clock says so. */
const DEADLINE_SLACK_MS = 50;

/**
 * Polls `first` until it is terminal or `timeoutMs` has passed (`timedOut`, with the last state seen), waiting
 * `delayMs` between reads (never past the deadline: each sleep is at most the time left, and the deadline is checked
 * after each read), and hands every state seen to `report`. Each read may take the time left (`LAST_READ_MS` at the
 * least; the client's own request time-out when shorter). A read that fails for a while (CliError.transient) is said
 * to `warn` as one line and tried again after the same delay; at the deadline the wait ends on it (`failing`). Any
 * other failure ends the wait.
 */
async function follow<T extends { id: string; status: string }>(
  first: T,
  how: {
    /** What is followed (`sync job`) and the command that shows it (`sync get <id>`), for the lines said of it. */
    name: string;
    see: (id: string) => string;
    read: (id: string, timeoutMs: number | undefined) => Promise<T>;
    delayMs: (t: T) => number;
    report: (t: T) => void;
    /** Says one line on stderr (a failed poll). */
    warn: (line: string) => void;
    timeoutMs?: number;
  },
): Promise<Followed<T>> {
  const deadline = how.timeoutMs === undefined ? Infinity : Date.now() + how.timeoutMs;
  let last = first;
  how.report(last);
  while (!TERMINAL.has(last.status)) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return { last, timedOut: true };
    await new Promise((r) => setTimeout(r, Math.min(how.delayMs(last), remaining)));
    try {
      last = await how.read(last.id, deadline === Infinity ? undefined : Math.max(deadline - Date.now(), LAST_READ_MS));
    } catch (err) {
      if (!(err instanceof CliError && err.transient)) throw err;
      const left = deadline - Date.now();
      // A read cut short by the deadline's own timer, which may fire a few ms before the clock reaches it.
      if (left <= DEADLINE_SLACK_MS) return { last, timedOut: true, failing: { error: err.message, see: how.see(last.id) } };
      const retryIn = Math.min(how.delayMs(last), left);
      how.warn(`warning: reading ${how.name} ${last.id} failed: ${oneLine(err.message)}; trying again in ${Number((retryIn / 1000).toFixed(1))} s`);
      continue;
    }
    how.report(last);
  }
  return { last, timedOut: false };
}

/** A report of `line` per change of state, to `stream` when it is a terminal (a pipe or file gets nothing). */
function changedLines<T>(line: (t: T) => string, stream: NodeJS.WriteStream = process.stderr): (t: T) => void {
  const startedAt = Date.now();
  let lastLine = '';
  return (t) => {
    if (stream.isTTY !== true) return;
    const now = line(t);
    if (now !== lastLine) stream.write(`${now} (${elapsed(Date.now() - startedAt)})\n`);
    lastLine = now;
  };
}

/** Follows an Operation, backing off with its attempts (`polling`), until it is terminal or `timeoutMs` has passed. */
export function waitForOperation(
  client: AdminClient,
  first: Operation,
  opts: { timeoutMs?: number; stream?: NodeJS.WriteStream; polling?: OperationPolling },
): Promise<Followed<Operation>> {
  return follow(first, {
    name: 'operation',
    see: (id) => `operations get ${id}`,
    timeoutMs: opts.timeoutMs,
    read: (id, timeoutMs) => client.request<Operation>('GET', `/operations/${encodeURIComponent(id)}`, undefined, { timeoutMs }),
    delayMs: (op) => operationPollDelayMs(op.reconcile.attempts, opts.polling),
    warn: (line) => (opts.stream ?? process.stderr).write(`${line}\n`),
    report: changedLines(
      (op) =>
        [
          `operation ${op.id} ${op.status}: ${op.reconcile.attempts} failed attempt(s)`,
          ...(op.reconcile.next_attempt_at && !TERMINAL.has(op.status) ? [`next attempt at ${op.reconcile.next_attempt_at}`] : []),
          ...(op.reconcile.last_error ? [`last error: ${oneLine(op.reconcile.last_error)}`] : []),
        ].join(', '),
      opts.stream,
    ),
  });
}

/** An automation run as the admin API shows it (`GET /admin/v1/automation_runs/{id}`): what `automation run --wait` reads. */
export interface AutomationRun {
  id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  attempts: number;
  next_attempt_at: string | null;
  error: string | null;
  records_exported: number | null;
  [more: string]: unknown;
}

/** Follows an automation run, reading it every `pollMs`, until it is terminal or `timeoutMs` has passed. */
export function waitForAutomationRun(
  client: AdminClient,
  first: AutomationRun,
  opts: { pollMs: number; timeoutMs?: number; stream?: NodeJS.WriteStream },
): Promise<Followed<AutomationRun>> {
  return follow(first, {
    name: 'automation run',
    see: (id) => `automation run-get ${id}`,
    timeoutMs: opts.timeoutMs,
    read: (id, timeoutMs) => client.request<AutomationRun>('GET', `/automation_runs/${encodeURIComponent(id)}`, undefined, { timeoutMs }),
    delayMs: () => opts.pollMs,
    warn: (line) => (opts.stream ?? process.stderr).write(`${line}\n`),
    report: changedLines(
      (run) =>
        [
          `automation run ${run.id} ${run.status}: ${run.attempts} attempt(s)`,
          ...(run.next_attempt_at && !TERMINAL.has(run.status) ? [`next attempt at ${run.next_attempt_at}`] : []),
          ...(run.error ? [`last error: ${oneLine(run.error)}`] : []),
          ...(run.records_exported !== null ? [`${run.records_exported} record(s) exported`] : []),
        ].join(', '),
      opts.stream,
    ),
  });
}

/**
 * What a verb prints when its `--wait` is over: the last state seen; exit 1 and one line on stderr when the wait timed
 * out (`goesOn`: that the work itself goes on), did so on a failed poll, or it failed (`why`).
 */
export function waited<T extends { id: string; status: string }>(
  name: string,
  { last, timedOut, failing }: Followed<T>,
  timeout: number | undefined,
  goesOn: string,
  why: (t: T) => string,
): { output: T; exitCode?: number } {
  if (failing) {
    process.stderr.write(`error: ${oneLine(failing.error)}; stopped waiting: ${name} ${last.id} goes on (see: ${failing.see})\n`);
    return { output: last, exitCode: 1 };
  }
  if (timedOut) {
    process.stderr.write(`error: ${name} ${last.id} is still ${last.status} after ${timeout} s; stopped waiting (${goesOn})\n`);
    return { output: last, exitCode: 1 };
  }
  if (last.status === 'failed') {
    process.stderr.write(`error: ${name} ${last.id} failed${why(last)}\n`);
    return { output: last, exitCode: 1 };
  }
  return { output: last };
}

/** A stored error on one line, or that there is none. */
export const errorLine = (error: string | null) => oneLine(error ?? '') || 'no error recorded';
