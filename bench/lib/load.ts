/**
 * bench:read's load generator, run as a process of its own so that neither the API nor the bench's orchestration
 * shares its event loop: `node --import tsx bench/lib/load.ts` with a LoadSpec as JSON on stdin. Runs autocannon
 * against `url`, cycling through `paths` and, when `keys` are given, through them as `Authorization: Bearer`
 * (one key per request in turn). Prints `load-start` just before the load begins and the autocannon result as one
 * JSON line `load-result {...}` when it ends.
 */
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  paths: string[];
  keys?: string[];
  connections: number;
  /** Seconds. */
  duration: number;
  /** Requests per second over all connections; unset: as fast as the target answers. */
  rate?: number;
  /** Headers sent with every request (e.g. a session cookie). */
  headers?: Record<string, string>;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const spec = JSON.parse(await readStdin()) as LoadSpec;
if (!spec.url || !Array.isArray(spec.paths) || spec.paths.length === 0) {
  console.error('load.ts: expected {url, paths: [...], connections, duration, rate?, keys?} on stdin');
  process.exit(2);
}
let nextPath = 0;
let nextKey = 0;
const keys = spec.keys ?? [];
console.log('load-start');
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.duration,
  ...(spec.rate ? { overallRate: spec.rate } : {}),
  requests: [
    {
      method: 'GET',
      setupRequest: (req) => ({
        ...req,
        path: spec.paths[nextPath++ % spec.paths.length]!,
        headers: {
          ...req.headers,
          ...spec.headers,
          ...(keys.length > 0 ? { authorization: `Bearer ${keys[nextKey++ % keys.length]}` } : {}),
        },
      }),
    },
  ],
});
console.log(`load-result ${JSON.stringify(result)}`);
process.exit(0);
