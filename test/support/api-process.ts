/**
 * The API as a process of its own (api/main.ts, as deployed), on a free port of 127.0.0.1 against the test database,
 * for tests of what several API processes share: the rate limit's buckets and the key-revocation feed.
 */
import { inject } from 'vitest';
import { freePort, type Processes } from './faults';
import { until } from './until';

export interface ApiProcess {
  url: string;
  pid: number;
  get(path: string, key?: string): Promise<Response>;
  /** SIGTERM: the process finishes its requests, gives its rate-limit tokens back and exits. */
  stop(): Promise<void>;
}

export async function startApiProcess(procs: Processes, env: Record<string, string> = {}): Promise<ApiProcess> {
  const port = await freePort();
  const child = procs.spawn(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
    ...process.env,
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    HOST: '127.0.0.1',
    PORT: String(port),
    SERVED_MODES: 'test',
    DB_POOL_MAX: '3',
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await until(
    'the API process to answer /healthz',
    async () => {
      if (!procs.running.has(child)) throw new Error(`the API process exited: ${procs.stderr.get(child)}`);
      return fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
    },
    { timeoutMs: 60_000, detail: () => `its stderr: ${procs.stderr.get(child)}` },
  );
  return {
    url,
    pid: child.pid!,
    get: (path, key) => fetch(url + path, { headers: key ? { authorization: `Bearer ${key}` } : {} }),
    stop: () => procs.kill(child, 'SIGTERM'),
  };
}
