/** Serves the real app over real HTTP on port 0, through api/server.ts as api/main.ts serves it, for a test file. */
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { ServerType } from '@hono/node-server';
import { createApp, type App } from '../../api/app';
import { serveApi } from '../../api/server';
import { lazyTemporalClient } from '../../api/temporal';
import type { Config } from '../../config';
import { createLogger, type Logger } from '../../config/logger';
import type { Db } from '../../db/client';
import { createKeyring } from '../../domain/secrets';

export interface TestServer {
  url: string;
  app: App;
  /** fetch against the server; `key` sets the bearer credential. */
  get(path: string, opts?: { key?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

/** `configure` may add routes before the server starts (Hono freezes its router on the first request). */
export async function startApi(db: Db, config: Config, configure?: (app: App) => void, opts: { logger?: Logger } = {}): Promise<TestServer> {
  const temporal = lazyTemporalClient(config, { connectTimeoutMs: 1_000 });
  const app = createApp({
    config,
    db,
    temporal,
    logger: opts.logger ?? createLogger('api-test', { level: 'silent' }),
    secrets: createKeyring(config.ENCRYPTION_KEYS),
  });
  configure?.(app);
  const server: ServerType = await new Promise((resolve) => {
    const s = serveApi({ fetch: app.fetch, reads: app.reads, port: 0, hostname: '127.0.0.1', bases: config }, () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    app,
    get: (path, opts = {}) =>
      fetch(url + path, {
        headers: { ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}), ...opts.headers },
      }),
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      await temporal.close();
    },
  };
}

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

/**
 * A caller of a served app's admin API with the admin token: JSON in (or `raw` bytes sent as JSON), the parsed body
 * out (null when empty).
 */
export function adminCaller(server: Pick<TestServer, 'url'>, token: string) {
  return async (method: string, path: string, body?: unknown, raw?: string): Promise<Reply> => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${server.url}/admin/v1${path}`, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
}

/** A problem+json answer of `status` whose `type` is the documented one of `slug` under `docsBase`. */
export function expectProblem(r: Reply, status: number, slug: string, docsBase: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body.type).toBe(`${docsBase}/errors/${slug}`);
}
