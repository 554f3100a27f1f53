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
import { SourcePermanentError, SourceTransientError, type SkippedRecord, type SourceSettings } from '../source';
import readHashedPage, { type PageReply, type PageTask, type TaskConnectorOptions } from './page-task';

export interface HashedPage<E extends Entity> {
  records: HashedRecord<InputOf[E]>[];
  /** Records the mapping could not read (quarantined by the run). */
  skipped: SkippedRecord[];
  page: number;
  hasMore: boolean;
}

export interface PageReader {
  /** One page of an entity, mapped and hashed; rejects with SourcePermanentError or SourceTransientError. */
  read<E extends Entity>(settings: SourceSettings, entity: E, page: number, size: number): Promise<HashedPage<E>>;
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
}

/**
 * What each thread loads: page-task.ts beside this file when run from source, through tsx; compiled, this code is part
 * of dist/worker.mjs and the build wrote page-task.mjs beside it, plain JavaScript.
 */
const COMPILED = !import.meta.url.endsWith('.ts');
const TASK_FILE = fileURLToPath(new URL(COMPILED ? './page-task.mjs' : './page-task.ts', import.meta.url));
const TASK_EXEC_ARGV = COMPILED ? [] : ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];

export function createPageReader(opts: PageReaderOptions): PageReader {
  const pool =
    opts.threads > 0
      ? new Piscina<PageTask, PageReply>({
          filename: TASK_FILE,
          minThreads: 0,
          maxThreads: opts.threads,
          idleTimeout: opts.idleTimeoutMs ?? 30_000,
          // A read mostly waits on the source: one thread keeps several in flight.
          concurrentTasksPerWorker: 4,
          // From source the task is TypeScript: each thread loads it through tsx, whatever the parent was started with.
          execArgv: TASK_EXEC_ARGV,
        })
      : undefined;
  async function run<E extends Entity>(task: PageTask): Promise<HashedPage<E>> {
    const reply = pool ? await pool.run(task) : await readHashedPage(task);
    if (!reply.ok) {
      throw reply.permanent ? new SourcePermanentError(reply.message) : new SourceTransientError(reply.message, undefined, reply.retryAfterMs);
    }
    const records = reply.xIds.map((x_id, i) => ({ x_id, hash: reply.hashes[i]!, json: reply.jsons[i]! }));
    return { records, skipped: reply.skipped, page: reply.page, hasMore: reply.hasMore };
  }
  return {
    read: (settings, entity, page, size) => run({ settings, entity, page, size, connector: opts.connector }),
    lookup: (settings, entity, ids) => run({ settings, entity, page: 0, size: ids.length, ids, connector: opts.connector }),
    async close() {
      await pool?.close();
    },
  };
}
