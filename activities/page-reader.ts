/**
 * Reads sync pages off the activity's event loop. Parsing a source page, mapping it and hashing its records is most
 * of a sync's CPU time, and on the event loop it would hold up the database work of every other page in flight:
 * a small pool of threads (piscina) does it instead, one page per task, several reads in flight per thread.
 *
 * `threads: 0` reads on the event loop itself, with the same code (for a machine with a single core).
 */
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import type { Entity, InputOf } from '../domain/cdm';
import type { HashedRecord } from '../domain/content';
import { SourcePermanentError, SourceTransientError, type ChangeWindow, type SkippedRecord, type SourceSettings } from '../source';
import readHashedPage, { type PageReply, type PageTask, type TaskConnectorOptions } from './page-task';

export interface HashedPage<E extends Entity> {
  records: HashedRecord<InputOf[E]>[];
  /** Records the mapping could not read (quarantined by the run). */
  skipped: SkippedRecord[];
  page: number;
  hasMore: boolean;
  /** How many records the listing held, when the source says (SourcePage). */
  total?: number;
}

export interface PageReader {
  /** One page of an entity, mapped and hashed; rejects with SourcePermanentError or SourceTransientError. */
  read<E extends Entity>(settings: SourceSettings, entity: E, page: number, size: number): Promise<HashedPage<E>>;
  /** One page of the records of an entity changed in the window (a delta run), mapped and hashed; rejects as `read`. */
  readChanged<E extends Entity>(settings: SourceSettings, entity: E, window: ChangeWindow, page: number, size: number): Promise<HashedPage<E>>;
  /** The records of these x_ids the source still has, mapped and hashed (`page` 0, `hasMore` false). */
  lookup<E extends Entity>(settings: SourceSettings, entity: E, xIds: string[]): Promise<HashedPage<E>>;
  close(): Promise<void>;
}

export interface PageReaderOptions {
  /** Threads that read pages; 0 reads on the event loop. */
  threads: number;
  /** Idle threads exit after this long (a worker with no sync running keeps none). */
  idleTimeoutMs?: number;
  /** The connector's retry policy; its defaults otherwise. */
  connector?: TaskConnectorOptions;
  /** Told of a thread that failed outside any page (it could not load its code, or crashed between pages). */
  onThreadError?: (err: Error) => void;
  /** What each thread loads instead of page-task (tests). */
  taskFile?: string;
}

/**
 * A page-reading thread failed: its code did not load or it died. Not the source's doing, and not a page's: the
 * activity fails with this (retried as any other failure), and the worker carries on.
 */
export class PageReaderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PageReaderError';
  }
}

/**
 * What each thread loads: page-task.ts beside this file when run from source, through tsx; compiled, this code is part
 * of dist/worker.mjs and the build wrote page-task.mjs beside it, plain JavaScript.
 */
const COMPILED = !import.meta.url.endsWith('.ts');
const TASK_FILE = fileURLToPath(new URL(COMPILED ? './page-task.mjs' : './page-task.ts', import.meta.url));
const TASK_EXEC_ARGV = COMPILED ? [] : ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];

export function createPageReader(opts: PageReaderOptions): PageReader {
  const taskFile = opts.taskFile ?? TASK_FILE;
  const newPool = () => {
    const p = new Piscina<PageTask, PageReply>({
      filename: taskFile,
      minThreads: 0,
      maxThreads: opts.threads,
      idleTimeout: opts.idleTimeoutMs ?? 30_000,
      // A read mostly waits on the source: one thread keeps several in flight. Piscina runs a task given an abort
      // signal alone on its thread (aborting one ends the thread), so the tasks are given none: with one, a read
      // waiting on a slow source held up every other integration's read on the thread until it ended.
      concurrentTasksPerWorker: 4,
      // From source the task is TypeScript: each thread loads it through tsx, whatever the parent was started with.
      execArgv: TASK_EXEC_ARGV,
    });
    p.on('error', (err: unknown) => onPoolError(p, err));
    return p;
  };
  let pool = opts.threads > 0 ? newPool() : undefined;
  // A thread that fails while it holds no task (its code did not load) is reported by the pool as an 'error' event,
  // which would end the process unheard, and the pool starts no thread after one that failed to load, so the tasks
  // waiting for one would wait forever: every task in flight fails with the error instead, the pool is replaced (the
  // next read starts a thread afresh), and so does each later one whose thread fails the same way.
  const inFlight = new Set<(err: Error) => void>();
  function onPoolError(failed: Piscina<PageTask, PageReply>, err: unknown): void {
    const failure = new PageReaderError(`a page-reading thread failed (${taskFile}): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    opts.onThreadError?.(failure);
    for (const fail of inFlight) fail(failure);
    if (pool === failed) pool = newPool();
    failed.destroy().catch(() => {});
  }
  function onThread(task: PageTask): Promise<PageReply> {
    return new Promise<PageReply>((resolve, reject) => {
      inFlight.add(reject);
      pool!
        .run(task)
        .then(resolve, reject)
        .finally(() => inFlight.delete(reject));
    });
  }
  async function run<E extends Entity>(task: PageTask): Promise<HashedPage<E>> {
    const reply = pool ? await onThread(task) : await readHashedPage(task);
    if (!reply.ok) {
      throw reply.permanent ? new SourcePermanentError(reply.message) : new SourceTransientError(reply.message, undefined, reply.retryAfterMs);
    }
    const records = reply.xIds.map((x_id, i) => ({ x_id, hash: reply.hashes[i]!, json: reply.jsons[i]! }));
    return { records, skipped: reply.skipped, page: reply.page, hasMore: reply.hasMore, ...(reply.total === undefined ? {} : { total: reply.total }) };
  }
  return {
    read: (settings, entity, page, size) => run({ settings, entity, page, size, connector: opts.connector }),
    readChanged: (settings, entity, window, page, size) =>
      run({ settings, entity, page, size, window: { from: window.from.toISOString(), to: window.to.toISOString() }, connector: opts.connector }),
    lookup: (settings, entity, ids) => run({ settings, entity, page: 0, size: ids.length, ids, connector: opts.connector }),
    async close() {
      await pool?.close();
    },
  };
}
