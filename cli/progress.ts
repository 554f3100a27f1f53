/**
 * `sync run --wait`: polls the job and shows where it stands on stderr (a live bar on a terminal, one plain line per
 * change otherwise), then returns the final job.
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
  return { done, total: Math.max(entries.length, 1), current };
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

export async function waitForJob(
  client: AdminClient,
  first: SyncJob,
  opts: { pollMs: number; stream?: NodeJS.WriteStream; timeoutMs?: number },
): Promise<SyncJob> {
  const stream = opts.stream ?? process.stderr;
  const startedAt = Date.now();
  let job = first;
  const live = stream.isTTY === true;
  const bar = live
    ? new SingleBar(
        {
          stream,
          format: `sync ${job.id} [{bar}] {value}/{total} entities | {current} | seen {seen} new {created} updated {updated} soft-deleted {deleted} | {elapsed}`,
          barsize: 20,
          hideCursor: true,
          clearOnComplete: false,
          fps: 10,
          barCompleteChar: '█',
          barIncompleteChar: '░',
        },
      )
    : undefined;
  bar?.start(stage(job).total, stage(job).done, payload(job, startedAt));
  let lastLine = '';
  const report = () => {
    const p = payload(job, startedAt);
    if (bar) {
      bar.setTotal(stage(job).total);
      bar.update(stage(job).done, p);
      return;
    }
    const line = `sync ${job.id} ${p.status}: ${stage(job).done}/${stage(job).total} entities, seen=${p.seen} new=${p.created} updated=${p.updated} soft_deleted=${p.deleted}`;
    if (line !== lastLine) stream.write(`${line} (${p.elapsed})\n`);
    lastLine = line;
  };
  try {
    report();
    while (!TERMINAL.has(job.status)) {
      if (opts.timeoutMs !== undefined && Date.now() - startedAt > opts.timeoutMs) break;
      await new Promise((r) => setTimeout(r, opts.pollMs));
      job = await client.request<SyncJob>('GET', `/sync_jobs/${job.id}`);
      report();
    }
  } finally {
    bar?.stop();
  }
  return job;
}
