/**
 * The HTTP application: request ids, problem+json errors (including 404/405 and framework failures), health,
 * the OpenAPI document, the public read API under /v1 behind key auth and the org-wide rate limit, and the admin API
 * under /admin/v1 and the console behind the admin token, whose guessing is throttled (admin/auth.ts). Built per
 * process by api/main.ts and by tests, over the dependencies they hand in.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Hono, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { createAdminRoutes } from './admin';
import { createAdminTokenGuard } from './admin/auth';
import { createConsole } from './console';
import type { ApiDeps } from './deps';
import { createFastReads, type FastReads } from './fast-reads';
import { createOperationWaits } from './operation-waits';
import type { AppEnv } from './middleware/env';
import { createApiKeyAuth, type ApiKeyAuth } from './middleware/auth';
import { errorHandler, notFoundHandler } from './middleware/errors';
import { requestMetrics } from './middleware/metrics';
import { requestTracing } from './middleware/tracing';
import { createRateLimiter } from './middleware/rate-limit';
import { requestId } from './middleware/request-id';
import { utf8JsonBody } from './middleware/json-body';
import { validationHook } from './middleware/validation';
import { ApiError } from './problem';
import { registerDocs } from './openapi';
import { registerErrorDocs } from './routes/errors';
import { registerEvents } from './routes/events';
import { registerHealth } from './routes/health';
import { registerLeases } from './routes/leases';
import { registerOperations } from './routes/operations';
import { registerProperties } from './routes/properties';
import { registerResidents } from './routes/residents';
import { registerUnits } from './routes/units';
import { registerWriteOptions } from './routes/write-options';
import { createWriteOptions } from './write-options';
import { readHealthFacts } from '../db/health';
import { cachedHealthFacts, createApiMetrics, type ApiMetrics, type HealthFactsSource } from '../observability/metrics';

export type App = OpenAPIHono<AppEnv> & {
  /** The API-key authenticator of this app (its cache and revocation feed). */
  readonly auth: ApiKeyAuth;
  /** This app's Prometheus registry and recorders (served on METRICS_PORT by api/main.ts, off the public listener). */
  readonly metrics: ApiMetrics;
  /** The database health facts (metrics gauges and the console's home), cached for a few seconds. */
  readonly health: HealthFactsSource;
  /** The read fast path (api/fast-reads.ts), which api/server.ts runs before the app on every request. */
  readonly reads: FastReads;
  /** Answers every held poll of an Operation now, and holds none from here on: the first step of a shutdown. */
  releaseHeldPolls(): Promise<void>;
  /** Whether held polls hear Operations end (api/operation-waits.ts; its feed opens at the first held poll). */
  readonly waitsListening: boolean;
  /**
   * Stops what the app holds besides the injected dependencies: the key-revocation and Operation-end LISTEN
   * connections (held polls answer at once), and the rate limiter's connections once it has given back the tokens
   * this process held.
   */
  close(): Promise<void>;
};

/** Largest /v1 request body: a write is a few hundred bytes; a huge one is refused (413) before it is read. */
const MAX_BODY_BYTES = 256 * 1024;
const limitBody = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    // The rest of the body is never read: the connection cannot carry another request.
    throw new ApiError('payload_too_large', `The request body exceeds ${MAX_BODY_BYTES / 1024} KiB.`, { headers: { connection: 'close' } });
  },
});
/**
 * Reads carry no body: they skip the check, which would otherwise make the Node adapter build a full web Request
 * (stream, abort signal, headers) on every GET only to find no body in it.
 */
const writeBodyLimit: MiddlewareHandler = (c, next) => (c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limitBody(c, next));

export function createApp(deps: ApiDeps): App {
  const auth = createApiKeyAuth(deps);
  const rateLimit = createRateLimiter(deps);
  const health = cachedHealthFacts(() => readHealthFacts(deps.db));
  const observed = deps.config.METRICS_PORT !== undefined;
  const metrics = createApiMetrics(health, { processMetrics: observed });
  const tracing = Boolean(deps.config.OTEL_EXPORTER_OTLP_ENDPOINT);
  const waits = createOperationWaits(deps);
  const reads = createFastReads(deps, { auth, rateLimit, waits, metrics: observed ? metrics : undefined, tracing });
  const app = Object.assign(new OpenAPIHono<AppEnv>({ defaultHook: validationHook }), {
    auth,
    metrics,
    health,
    reads,
    releaseHeldPolls: () => waits.close(),
    close: async () => void (await Promise.all([auth.close(), rateLimit.close(), waits.close()])),
  });
  // A getter (Object.assign would copy its value at this moment).
  Object.defineProperty(app, 'waitsListening', { get: () => waits.listening, enumerable: true });

  app.use('*', requestId());
  // Requests are observed only where the metrics are served (METRICS_PORT): off, the hot path carries nothing.
  if (observed) app.use('*', requestMetrics(metrics));
  if (tracing) app.use('*', requestTracing());
  app.onError(errorHandler(deps.config, deps.logger));
  app.notFound(notFoundHandler(app as unknown as Hono, deps.config));

  registerHealth(app, deps);
  // Registered before the /v1 auth middleware so the document is public.
  registerDocs(app, deps.config);
  registerErrorDocs(app);

  app.use('/v1/*', auth.middleware, rateLimit.middleware, writeBodyLimit, utf8JsonBody);
  registerProperties(app, deps);
  // The write routes register their bodies with the write options, which then serve them (and check every write).
  const writeOptions = createWriteOptions(deps);
  registerUnits(app, deps, writeOptions);
  registerResidents(app, deps, writeOptions);
  registerLeases(app, deps, writeOptions);
  registerOperations(app, deps, waits);
  registerWriteOptions(app, deps, writeOptions);
  registerEvents(app, deps);

  // One admin-token guard: wrong bearers and wrong console sign-ins are counted together.
  const adminToken = createAdminTokenGuard(deps);
  // The admin API's /health and the console's home read the same cached facts as the metrics.
  const admin = createAdminRoutes({ ...deps, health }, adminToken);
  app.route('/admin/v1', admin);
  app.route('/console', createConsole({ ...deps, health }, admin, adminToken));
  return app as App;
}
