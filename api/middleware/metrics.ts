/**
 * Request metrics: every answer is observed under its route template (`/v1/leases/{id}`, as the OpenAPI document
 * writes it), never the raw path, so ids and query strings never become label values; a request no route matched is
 * `unmatched`. A 429 of the /v1 rate limit is also counted under the plan its budget comes from.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { isDatabaseUnavailable } from '../../db/errors';
import type { ApiMetrics } from '../../observability/metrics';
import { RateLimitedError } from './rate-limit';

/**
 * Templates of the registered route paths, made once each: the paths are the app's own (a few dozen), never a
 * request's, so the map stays as small as the route table.
 */
const templates = new Map<string, string>();

/** `/v1/leases/:id{[a-z]+}` → `/v1/leases/{id}`. */
function templateOf(path: string): string {
  let template = templates.get(path);
  if (template === undefined) templates.set(path, (template = path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, '{$1}')));
  return template;
}

/** The template of the route that answered: the last matched handler that is not middleware (`use` registers ALL). */
export function routeTemplateOf(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i]!;
    if (r.method !== 'ALL') return templateOf(r.path);
  }
  return 'unmatched';
}

export function requestMetrics(metrics: ApiMetrics): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const status = c.res.status;
      metrics.request(c.req.method, routeTemplateOf(c), status, (performance.now() - started) / 1000);
      if (status === 503 && c.error && isDatabaseUnavailable(c.error)) metrics.databaseUnavailable();
      if (status === 429 && c.error instanceof RateLimitedError) metrics.rateLimited(c.error.plan);
    }
  };
}
