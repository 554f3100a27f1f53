/**
 * Admin API (/admin/v1): organizations, integrations, API keys, sync jobs, write Operations, sandbox controls, webhooks,
 * events and automations, for operators, the CLI and the operator console. Behind ADMIN_TOKEN; its OpenAPI document
 * (/admin/v1/openapi.json) is public and separate from the public API's.
 */
import { maxHeaderSize } from 'node:http';
import { OpenAPIHono } from '@hono/zod-openapi';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ApiDeps } from '../deps';
import { ApiError } from '../problem';
import { registerApiKeys } from './api-keys';
import { registerAutomations } from './automations';
import { adminAuth, type AdminTokenGuard } from './auth';
import { registerEvents } from './events';
import { registerHealthFacts } from './health';
import { registerIntegrations } from './integrations';
import { registerOperations } from './operations';
import { registerOrganizations } from './organizations';
import { registerSandbox } from './sandbox';
import { registerSyncs } from './syncs';
import { registerWebhooks } from './webhooks';
import { completeAdminDocument } from './document';
import { utf8JsonBody } from '../middleware/json-body';
import { validationHook } from '../middleware/validation';

const SECURITY = 'adminToken';
const MAX_BODY_BYTES = 64 * 1024;

/** `guard`: the admin-token check (and its throttle) this app shares with the console's sign-in. */
export function createAdminRoutes(deps: ApiDeps, guard: AdminTokenGuard): Hono {
  const api = new OpenAPIHono({ defaultHook: validationHook });
  api.openAPIRegistry.registerComponent('securitySchemes', SECURITY, {
    type: 'http',
    scheme: 'bearer',
    description: 'The ADMIN_TOKEN of the deployment.',
  });
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'Property Data Sync admin API',
      version: '1.0.0',
      description:
        'Operator endpoints: tenants, integrations and their sync schedules, API keys, manual syncs, write Operations, sandbox controls, webhook subscriptions, deliveries and replays, events and their resend, automations (scheduled CSV exports) and their runs. Lists ordered by creation time take `order` (`asc`/`desc`). Errors are problem+json. ' +
        'Any request may also be refused before it reaches an endpoint, with a problem body, an `x-request-id` and the connection closed: ' +
        `431 (\`request_header_fields_too_large\`) when its request line and headers exceed ${maxHeaderSize / 1024} KiB, 400 when it is not HTTP/1.1, 408 (\`request_timeout\`) when it does not arrive in time.`,
    },
    servers: [{ url: `${deps.config.PUBLIC_BASE_URL}/admin/v1` }],
    security: [{ [SECURITY]: [] }],
  };
  api.get('/openapi.json', (c) => c.json(completeAdminDocument(api.getOpenAPI31Document(document))));
  // After the document's route, so the document stays public.
  api.use('*', adminAuth(guard));
  // Every admin body is a few hundred bytes; a huge one is refused before it is buffered and parsed.
  api.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError('payload_too_large', `The request body exceeds ${MAX_BODY_BYTES / 1024} KiB.`);
      },
    }),
    utf8JsonBody,
  );

  registerOrganizations(api, deps);
  registerIntegrations(api, deps);
  registerApiKeys(api, deps);
  registerSyncs(api, deps);
  registerHealthFacts(api, deps);
  registerOperations(api, deps);
  registerSandbox(api, deps);
  registerWebhooks(api, deps);
  registerEvents(api, deps);
  registerAutomations(api, deps);

  // Mounted through a plain Hono so that the parent OpenAPIHono does not fold admin routes into the public document.
  return new Hono().route('/', api);
}
