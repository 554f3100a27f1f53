/** Controls of the sandbox PMS behind a sandbox integration: scripted changes and faults, for tests and demos. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import { conflictResponse, SandboxChangeResult, SandboxChanges, SandboxFault, SandboxFaultSet } from './sandbox.schemas';
import { deleteRoute, postRoute } from './routes';
import { IdParam, json, unavailableResponse } from './schemas';
import { loadIntegration, requireSandbox, viaSandbox } from './support';

const tags = ['Sandbox'];
const IntegrationId = IdParam('5f0c2d7e-1b8a-4c3e-9d2f-6a7b8c9d0e1f', 'Integration id (UUID) of a sandbox integration.');
/** What every sandbox control may answer besides errorResponses: not a sandbox integration (409), sandbox down (503). */
const refusals = { ...conflictResponse, ...unavailableResponse };

export function registerSandbox(app: OpenAPIHono, deps: ApiDeps): void {
  const sandboxIntegration = async (id: string) => {
    const row = await loadIntegration(deps, id);
    requireSandbox(row);
    return row;
  };

  app.openapi(
    postRoute({
      path: '/integrations/{id}/sandbox/changes',
      tags,
      summary: 'Change data in the sandbox PMS',
      description:
        'Counts of records to update, create and delete (a total or per entity) and of lease status transitions. The next sync picks the changes up.',
      params: IntegrationId,
      body: SandboxChanges,
      responses: { 200: json(SandboxChangeResult, 'The x_ids touched, per kind and entity.'), ...refusals },
    }),
    async (c) => {
      const row = await sandboxIntegration(c.req.valid('param').id);
      const result = await viaSandbox(deps, 'apply the sandbox changes', (s) => s.applyChanges(row.id, c.req.valid('json')));
      return c.json(result, 200);
    },
  );

  app.openapi(
    postRoute({
      path: '/integrations/{id}/sandbox/faults',
      tags,
      summary: 'Inject a fault into the sandbox PMS',
      description:
        '`unavailable` (503s), `rate_limited` (429 with Retry-After), `slow` replies (after `delay_ms`) or `reject_writes`, for `count` requests or until cleared, on every request or only reads or writes (`methods`). One fault per kind: setting a kind again replaces it.',
      params: IntegrationId,
      body: SandboxFault,
      responses: { 200: json(SandboxFaultSet, 'The fault now in force.'), ...refusals },
    }),
    async (c) => {
      const row = await sandboxIntegration(c.req.valid('param').id);
      const fault = c.req.valid('json');
      await viaSandbox(deps, 'set the sandbox fault', (s) => s.setFault(row.id, fault));
      return c.json(
        { integration_id: row.id, kind: fault.kind, count: fault.count ?? null, delay_ms: fault.delay_ms ?? null, methods: fault.methods ?? 'all' },
        200,
      );
    },
  );

  app.openapi(
    deleteRoute({
      path: '/integrations/{id}/sandbox/faults',
      tags,
      summary: 'Clear every fault of the sandbox company',
      params: IntegrationId,
      responses: { 204: { description: 'Cleared.' }, ...refusals },
    }),
    async (c) => {
      const row = await sandboxIntegration(c.req.valid('param').id);
      await viaSandbox(deps, 'clear the sandbox faults', (s) => s.clearFaults(row.id));
      return c.body(null, 204);
    },
  );
}
