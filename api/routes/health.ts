/** Liveness and readiness, unauthenticated: /healthz says the process is up, /readyz that its dependencies answer. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { problemResponses, requestIdHeader } from '../openapi';
import { ApiError } from '../problem';
import { Health } from '../schemas';

const CHECK_TIMEOUT_MS = 2_000;

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Drizzle wraps driver errors ("Failed query: …"); the driver's own message says what is down. */
function reasonOf(err: unknown): string {
  const e = err as { message?: string; cause?: { message?: string } };
  return e.cause?.message ?? e.message ?? String(err);
}

const ok = { 200: { description: 'Up.', headers: requestIdHeader, content: { 'application/json': { schema: Health } } } };

export function registerHealth(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
  app.openapi(
    createRoute({ method: 'get', path: '/healthz', tags: ['Health'], summary: 'The process is up', security: [], responses: ok }),
    (c) => c.json({ status: 'ok' as const }, 200),
  );
  app.openapi(
    createRoute({
      method: 'get',
      path: '/readyz',
      tags: ['Health'],
      summary: 'The database and Temporal answer',
      security: [],
      responses: { ...ok, ...problemResponses(503) },
    }),
    async (c) => {
      const [database, temporal] = await Promise.allSettled([
        withTimeout(deps.db.execute(sql`select 1`), 'the database'),
        withTimeout(
          deps.temporal().then((client) => client.connection.workflowService.getSystemInfo({})),
          'Temporal',
        ),
      ]);
      const down = [
        ...(database.status === 'rejected' ? [`database (${reasonOf(database.reason)})`] : []),
        ...(temporal.status === 'rejected' ? [`temporal (${reasonOf(temporal.reason)})`] : []),
      ];
      if (down.length > 0) {
        throw new ApiError('service_unavailable', `Not ready: ${down.join('; ')}.`, {
          extra: { checks: { database: database.status === 'fulfilled' ? 'ok' : 'down', temporal: temporal.status === 'fulfilled' ? 'ok' : 'down' } },
        });
      }
      return c.json({ status: 'ok' as const }, 200);
    },
  );
}
