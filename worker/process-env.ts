/**
 * What a worker process is started with, by `npm start` and the sync bench (the Dockerfile sets the same for every
 * role). glibc's malloc keeps an arena per thread that allocates, and a worker has many threads (Temporal's core,
 * libuv, the page readers): with two arenas its resident memory stays about 40 MB lower under a sync. A value the
 * operator set is kept.
 */
export function workerProcessEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return env.MALLOC_ARENA_MAX ? {} : { MALLOC_ARENA_MAX: '2' };
}

/**
 * V8 options a webhook worker runs with (docker-compose.yml's `worker-webhooks` sets them in NODE_OPTIONS, the
 * webhooks bench passes them to its worker): semi-spaces of at most 8 MB instead of 16. A burst of deliveries
 * allocates fast and briefly (bodies, requests, rows), and a young generation grown to its largest was some 40 MB of
 * the worker's peak resident memory (418 MB; 358 with this), for no CPU per delivery that the bench could measure.
 */
export const WEBHOOK_WORKER_V8_OPTIONS = ['--max-semi-space-size=8'];
