/**
 * The metrics listener: `GET /metrics` in the Prometheus text format on a port of its own (METRICS_PORT for the API,
 * WORKER_METRICS_PORT for the worker), never on the public listener. `extraUrl` names more exposition text to append,
 * read over HTTP at each scrape (the worker: the Temporal SDK's own metrics, served by its native runtime on a
 * loopback port).
 *
 * The listener runs on a thread of its own; the process's thread only renders its registry when asked. A worker is an
 * HTTP client all day (webhook attempts, source calls). In the webhooks bench, one scrape every 15 s answered on the
 * worker's thread made every delivery cost about 10 % more CPU from then on (bench/README.md); answered here, nothing
 * measurable. The likely cause: Node's HTTP internals are shared by clients and servers, and once one thread runs
 * both, its optimized code sees more kinds of objects and runs slower.
 */
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { Worker } from 'node:worker_threads';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  registry: Registry;
  host: string;
  port: number;
  /** More exposition text to append, read from this URL at each scrape (must not repeat a metric of the registry). */
  extraUrl?: string;
  onError?: (err: unknown) => void;
}

/** What the listener's thread asks for, and what it is answered. */
type Ask = { id: number };
type Answer = { id: number; text: string; contentType: string } | { id: number; error: true };
type Said = { listening: number } | { failed: string } | Ask;

/**
 * The listener's thread, as source (a string, so that it runs the same from source and from the bundle): plain
 * JavaScript with Node's built-in modules only. It answers `GET`/`HEAD /metrics` with what the process's thread
 * renders, then what `extraUrl` serves (nothing when that cannot be read within 2 s).
 */
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { host, port, extraUrl } = workerData;
let next = 0;
const waiting = new Map();
parentPort.on('message', (m) => {
  const done = waiting.get(m.id);
  waiting.delete(m.id);
  if (done) done(m);
});
const own = () => new Promise((resolve) => {
  const id = ++next;
  waiting.set(id, resolve);
  parentPort.postMessage({ id });
});
const extra = () => new Promise((resolve) => {
  if (!extraUrl) return resolve('');
  const req = http.get(extraUrl, { timeout: 2000 }, (res) => {
    if (res.statusCode !== 200) {
      res.resume();
      return resolve('');
    }
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk) => (text += chunk));
    res.on('end', () => resolve(text));
    res.on('error', () => resolve(''));
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', () => resolve(''));
});
const server = http.createServer((req, res) => {
  const path = (req.url || '/').split('?')[0];
  if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
    const metrics = path === '/metrics';
    res
      .writeHead(metrics ? 405 : 404, { 'content-type': 'text/plain', ...(metrics ? { allow: 'GET, HEAD' } : {}) })
      .end(metrics ? 'GET or HEAD only\\n' : 'not found: the metrics are at /metrics\\n');
    return;
  }
  Promise.all([own(), extra()]).then(([answer, more]) => {
    if (answer.error) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\\n');
      return;
    }
    const body = more ? (answer.text.endsWith('\\n') ? answer.text : answer.text + '\\n') + more : answer.text;
    res.writeHead(200, { 'content-type': answer.contentType });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
});
server.once('error', (err) => parentPort.postMessage({ failed: err.message }));
server.listen(port, host, () => parentPort.postMessage({ listening: server.address().port }));
`;

export async function serveMetrics(opts: MetricsServerOptions): Promise<MetricsServer> {
  const thread = new Worker(THREAD, { eval: true, workerData: { host: opts.host, port: opts.port, extraUrl: opts.extraUrl } });
  // The listener never keeps the process alive.
  thread.unref();
  const port = await new Promise<number>((resolve, reject) => {
    thread.once('error', reject);
    thread.on('message', (m: Said) => {
      if ('listening' in m) resolve(m.listening);
      else if ('failed' in m) reject(new Error(`the metrics listener could not listen on ${opts.host}:${opts.port}: ${m.failed}`));
      else
        void opts.registry.metrics().then(
          (text) => thread.postMessage({ id: m.id, text, contentType: opts.registry.contentType } satisfies Answer),
          (err: unknown) => {
            opts.onError?.(err);
            thread.postMessage({ id: m.id, error: true } satisfies Answer);
          },
        );
    });
  }).catch(async (err: unknown) => {
    await thread.terminate();
    throw err;
  });
  return {
    port,
    close: async () => {
      await thread.terminate();
    },
  };
}

/** A port free on 127.0.0.1 now (for a listener that cannot report the port it got, like the SDK's exporter). */
export async function freeLoopbackPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
