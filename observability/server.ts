/**
 * The metrics listener: `GET /metrics` in the Prometheus text format on a port of its own (METRICS_PORT for the API,
 * WORKER_METRICS_PORT for the worker), never on the public listener. `extra` appends text exposed elsewhere in the
 * process (the worker: the Temporal SDK's own metrics, served by its native runtime on a loopback port).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  registry: Registry;
  host: string;
  port: number;
  /** More exposition text to append (must not repeat a metric of the registry). */
  extra?: () => Promise<string>;
  onError?: (err: unknown) => void;
}

export async function serveMetrics(opts: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res
        .writeHead(path === '/metrics' ? 405 : 404, { 'content-type': 'text/plain', ...(path === '/metrics' ? { allow: 'GET, HEAD' } : {}) })
        .end(path === '/metrics' ? 'GET or HEAD only\n' : 'not found: the metrics are at /metrics\n');
      return;
    }
    void (async () => {
      try {
        const [own, extra] = await Promise.all([opts.registry.metrics(), opts.extra ? opts.extra().catch(() => '') : Promise.resolve('')]);
        const body = extra ? `${own.endsWith('\n') ? own : `${own}\n`}${extra}` : own;
        res.writeHead(200, { 'content-type': opts.registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      } catch (err) {
        opts.onError?.(err);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n');
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
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
