/**
 * The HTTP application: request ids, problem+json errors (including 404/405 and framework failures), health,
 * the OpenAPI document, the public read API under /v1 behind key auth and the org-wide rate limit, and the admin API
 * under /admin/v1. Built per process by api/main.ts and by tests, over the dependencies they hand in.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Hono } from 'hono';
import { createAdminRoutes } from './admin';
import type { ApiDeps } from './deps';
import type { AppEnv } from './middleware/env';
import { createApiKeyAuth, type ApiKeyAuth } from './middleware/auth';
import { errorHandler, notFoundHandler } from './middleware/errors';
import { createRateLimiter } from './middleware/rate-limit';
import { requestId } from './middleware/request-id';
import { validationHook } from './middleware/validation';
import { registerDocs } from './openapi';
import { registerErrorDocs } from './routes/errors';
import { registerHealth } from './routes/health';
import { registerLeases } from './routes/leases';
import { registerProperties } from './routes/properties';
import { registerResidents } from './routes/residents';
import { registerUnits } from './routes/units';

export type App = OpenAPIHono<AppEnv> & {
  /** The API-key authenticator of this app (its cache and revocation feed). */
  readonly auth: ApiKeyAuth;
  /** Stops what the app holds besides the injected dependencies (the key-revocation LISTEN connection). */
  close(): Promise<void>;
};

export function createApp(deps: ApiDeps): App {
  const auth = createApiKeyAuth(deps);
  const rateLimit = createRateLimiter(deps.db);
  const app = Object.assign(new OpenAPIHono<AppEnv>({ defaultHook: validationHook }), { auth, close: () => auth.close() });

  app.use('*', requestId());
  app.onError(errorHandler(deps.config, deps.logger));
  app.notFound(notFoundHandler(app as unknown as Hono, deps.config));

  registerHealth(app, deps);
  // Registered before the /v1 auth middleware so the document is public.
  registerDocs(app, deps.config);
  registerErrorDocs(app);

  app.use('/v1/*', auth.middleware, rateLimit.middleware);
  registerProperties(app, deps);
  registerUnits(app, deps);
  registerResidents(app, deps);
  registerLeases(app, deps);

  app.route('/admin/v1', createAdminRoutes(deps));
  return app;
}
