/**
 * `sync run --wait`: polls the job and shows where it stands on stderr (a live bar on a terminal, one plain line per
 * change otherwise), then returns the final job. `operations get --wait`: polls an Operation with the backoff the
 * spec recommends until it is terminal or the time-out passes. `automation run --wait`: polls a run until it ends.
 */
import { SingleBar } from 'cli-progress';
import type { AdminClient } from './client';

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
      read: (id) => client.request<SyncJob>('GET', `/sync_jobs/${id}`),
      delayMs: () => opts.pollMs,
      report: (seen) => {
        job = seen;
        report();
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

/** A stored error on one line: stderr gets exactly one line per failure. */
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Where a followed Operation or automation run ended up, and whether the time-out passed first. */
interface Followed<T> {
  last: T;
  timedOut: boolean;
}

/**
 * Polls `first` until it is terminal or `timeoutMs` has passed (`timedOut`, with the last state seen), waiting
 * `delayMs` between reads (never past the deadline: each sleep is at most the time left, and the deadline is checked
 * after each read), and hands every state seen to `report`.
 */
async function follow<T extends { id: string; status: string }>(
  first: T,
  how: { read: (id: string) => Promise<T>; delayMs: (t: T) => number; report: (t: T) => void; timeoutMs?: number },
): Promise<Followed<T>> {
  const deadline = how.timeoutMs === undefined ? Infinity : Date.now() + how.timeoutMs;
  let last = first;
  how.report(last);
  while (!TERMINAL.has(last.status)) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return { last, timedOut: true };
    await new Promise((r) => setTimeout(r, Math.min(how.delayMs(last), remaining)));
    last = await how.read(last.id);
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
    timeoutMs: opts.timeoutMs,
    read: (id) => client.request<Operation>('GET', `/operations/${encodeURIComponent(id)}`),
    delayMs: (op) => operationPollDelayMs(op.reconcile.attempts, opts.polling),
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
    timeoutMs: opts.timeoutMs,
    read: (id) => client.request<AutomationRun>('GET', `/automation_runs/${encodeURIComponent(id)}`),
    delayMs: () => opts.pollMs,
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
 * out (`goesOn`: that the work itself goes on) or it failed (`why`).
 */
export function waited<T extends { id: string; status: string }>(
  name: string,
  { last, timedOut }: Followed<T>,
  timeout: number | undefined,
  goesOn: string,
  why: (t: T) => string,
): { output: T; exitCode?: number } {
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
