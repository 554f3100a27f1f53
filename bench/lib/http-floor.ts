/**
 * bench:webhooks's floor: a bare Node HTTP client POSTing signed webhook bodies, a process of its own:
 * `node --import tsx bench/lib/http-floor.ts` with a FloorSpec as JSON on stdin. The bench hands it the very bodies
 * and headers the deliveries carried (the events' stored envelopes, signed with the subscription's secret as an
 * attempt signs them); this process sends them in order with `concurrency` requests open at once over keep-alive
 * connections (node:http, as the worker's sender), each response read whole. First the first `warmup` requests,
 * untimed, then all of them, timed.
 *
 * Prints `floor-timed-start` just before the timed run and `floor-result <json>` (FloorResult) when done: epoch ms of
 * the first timed request's start and of the last timed response, the statuses, its CPU over the timed run and its
 * own peak RSS.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';

export interface FloorRequest {
  body: string;
  headers: Record<string, string>;
}

export interface FloorSpec {
  /** Where every request goes (the healthy receiver, a path of its own). */
  url: string;
  concurrency: number;
  /** Requests (from the start of `requests`) sent once before the timed run, to open and warm the connections. */
  warmup: number;
  requests: FloorRequest[];
}

export interface FloorResult {
  /** Epoch ms: the first timed request was started; the last timed response had been read. */
  startedAt: number;
  endedAt: number;
  sent: number;
  /** Timed requests answered 2xx. */
  ok: number;
  /** The first few that were not, with why. */
  failures: string[];
  /** CPU the client used over the timed run (user + system), ms. */
  cpuMs: number;
  /** The client's peak RSS (VmHWM), MB. */
  rssMb: number;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const spec = JSON.parse(await readStdin()) as FloorSpec;
if (!spec.url || !Array.isArray(spec.requests) || !(spec.concurrency >= 1)) {
  console.error('http-floor.ts: expected {url, concurrency, warmup, requests: [{body, headers}]} on stdin');
  process.exit(2);
}
const url = new URL(spec.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });

/** One POST; resolves with the status (0 when the exchange failed) once the response has been read whole. */
function post(r: FloorRequest): Promise<{ status: number; error: string | null }> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) } });
    req.once('error', (err) => resolve({ status: 0, error: err.message }));
    req.once('response', (res) => {
      res.on('data', () => {});
      res.once('end', () => resolve({ status: res.statusCode ?? 0, error: null }));
      res.once('error', (err) => resolve({ status: 0, error: err.message }));
    });
    req.end(r.body);
  });
}

/** Sends `requests` in order, `concurrency` at once. */
async function sendAll(requests: FloorRequest[]): Promise<{ ok: number; failures: string[] }> {
  let next = 0;
  let ok = 0;
  const failures: string[] = [];
  await Promise.all(
    Array.from({ length: Math.min(spec.concurrency, requests.length) }, async () => {
      while (next < requests.length) {
        const i = next++;
        const { status, error } = await post(requests[i]!);
        if (status >= 200 && status < 300) ok++;
        else if (failures.length < 5) failures.push(`request ${i}: ${error ?? `HTTP ${status}`}`);
      }
    }),
  );
  return { ok, failures };
}

await sendAll(spec.requests.slice(0, spec.warmup));
console.log('floor-timed-start');
const cpuBefore = process.cpuUsage();
const startedAt = Date.now();
const { ok, failures } = await sendAll(spec.requests);
const endedAt = Date.now();
const cpu = process.cpuUsage(cpuBefore);
agent.destroy();
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
const result: FloorResult = {
  startedAt,
  endedAt,
  sent: spec.requests.length,
  ok,
  failures,
  cpuMs: (cpu.user + cpu.system) / 1000,
  rssMb: hwm ? Math.round(Number(hwm[1]) / 1024) : 0,
};
console.log(`floor-result ${JSON.stringify(result)}`);
process.exit(0);
