/**
 * Liveness and readiness, unauthenticated: /healthz says the process is up, /readyz that its dependencies answer.
 * /readyz reports each dependency as up or down with a short, stable reason (`timeout`, `unreachable`, `error`)
 * and is a 503 when any is down. Its body never carries the underlying error (messages name hosts, users,
 * databases): that goes to the log, for operators.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { TIMEOUT_CODES, UNREACHABLE_CODES } from '../../db/errors';
import { pingDatabase } from '../../db/health';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { requestIdHeader } from '../openapi';
import { ApiError } from '../problem';
import { Health, NotReady, Readiness, type DependencyCheck } from '../schemas';

const CHECK_TIMEOUT_MS = 2_000;

type Reason = 'timeout' | 'unreachable' | 'error';

class CheckTimeout extends Error {}
/** The dependency could not be connected to at all. */
class Unreachable extends Error {}

/**
 * The probe's outcome, or a CheckTimeout when it has none after `ms`. When the timer fires, the probe's own outcome
 * may already be waiting to be read (a refused connection's error, behind an event loop that a busy process held up
 * for longer than `ms`): the timeout gives way to it by rejecting only after the loop's I/O phase has run once.
 */
export function withTimeout<T>(p: Promise<T>, ms = CHECK_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(new CheckTimeout())), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** gRPC status codes (Temporal): UNAVAILABLE, DEADLINE_EXCEEDED. */
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

/** The stable reason of a failed check, looking through wrappers (Drizzle's "Failed query", the SDK's ServiceError). */
function reasonOf(err: unknown): Reason {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e instanceof CheckTimeout) return 'timeout';
    if (e instanceof Unreachable) return 'unreachable';
    if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return 'unreachable';
    if (typeof e.code === 'string' && TIMEOUT_CODES.has(e.code)) return 'timeout';
    if (e.code === GRPC_UNAVAILABLE) return 'unreachable';
    if (e.code === GRPC_DEADLINE_EXCEEDED) return 'timeout';
  }
  return 'error';
}

async function check(deps: ApiDeps, name: string, probe: () => Promise<unknown>): Promise<DependencyCheck> {
  try {
    await withTimeout(probe());
    return { status: 'up' };
  } catch (err) {
    const reason = reasonOf(err);
    deps.logger.warn({ err, dependency: name, reason }, 'readiness check failed');
    return { status: 'down', reason };
  }
}

const ok = { 200: { description: 'Up.', headers: requestIdHeader, content: { 'application/json': { schema: Health } } } };

export function registerHealth(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
  app.openapi(createRoute({ method: 'get', path: '/healthz', tags: ['Health'], summary: 'The process is up', security: [], responses: ok }), (c) =>
    c.json({ status: 'ok' as const }, 200),
  );
  app.openapi(
    createRoute({
      method: 'get',
      path: '/readyz',
      tags: ['Health'],
      summary: 'The database and Temporal answer',
      security: [],
      responses: {
        200: { description: 'Every dependency is up.', headers: requestIdHeader, content: { 'application/json': { schema: Readiness } } },
        503: {
          description: 'A dependency is down; `checks` says which and why, in a word.',
          headers: requestIdHeader,
          content: { 'application/problem+json': { schema: NotReady } },
        },
      },
    }),
    async (c) => {
      const [database, temporal] = await Promise.all([
        check(deps, 'database', () => pingDatabase(deps.db)),
        check(deps, 'temporal', async () => {
          const client = await deps.temporal().catch((err: unknown) => {
            throw reasonOf(err) === 'timeout' ? err : new Unreachable('could not connect', { cause: err });
          });
          return client.connection.workflowService.getSystemInfo({});
        }),
      ]);
      const checks = { database, temporal };
      const down = Object.entries(checks).flatMap(([name, r]) => (r.status === 'down' ? [`${name} is down (${r.reason})`] : []));
      if (down.length > 0) throw new ApiError('service_unavailable', `Not ready: ${down.join('; ')}.`, { extra: { checks } });
      return c.json({ status: 'ok' as const, checks: checks as { database: { status: 'up' }; temporal: { status: 'up' } } }, 200);
    },
  );
}
