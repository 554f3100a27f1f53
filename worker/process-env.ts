/**
 * What a worker process is started with, by `npm start` and the sync bench (the Dockerfile sets the same for every
 * role). glibc's malloc keeps an arena per thread that allocates, and a worker has many threads (Temporal's core,
 * libuv, the page readers): with two arenas its resident memory stays about 40 MB lower under a sync. A value the
 * operator set is kept.
 */
export function workerProcessEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return env.MALLOC_ARENA_MAX ? {} : { MALLOC_ARENA_MAX: '2' };
}
