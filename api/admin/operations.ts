/**
 * Writes as an operator follows them (the CLI's `operations get --wait` polls here): an Operation in its public
 * shape plus where it belongs and its workflow, and an integration's Operations. The stored request body holds
 * residents' personal data, so it is never even loaded here.
 */
import type { OpenAPIHono, z } from '@hono/zod-openapi';
import { getOperationSummary, operationJson, operationsOfIntegration, type OperationRow } from '../../db/operations';
import { writeWorkflowIdOf } from '../../domain/contract';
import type { ApiDeps } from '../deps';
import { AdminOperation, OperationQuery } from './operations.schemas';
import { listRoute, retrieveRoute } from './routes';
import { IdParam, json, linkTo, listOf, IntegrationId } from './schemas';
import { listPage, loadById, loadIntegration } from './support';

function adminOperationView(row: Omit<OperationRow, 'request'>): z.infer<typeof AdminOperation> {
  return {
    ...operationJson(row),
    organization_id: row.organizationId,
    integration_id: row.integrationId,
    mode: row.mode,
    updated_at: row.updatedAt.toISOString(),
    workflow_id: writeWorkflowIdOf(row.id),
  };
}

const tags = ['Operations'];
const OperationId = IdParam('opr_01JH0000000000000000000000', 'Operation id (`opr_` + ULID).');

export function registerOperations(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    retrieveRoute({
      path: '/operations/{id}',
      operationId: 'getOperation',
      tags,
      summary: 'Retrieve an Operation',
      description:
        'Any organization and mode. Poll until `status` is `succeeded` or `failed`, backing off with `reconcile.attempts` (capped at 30 seconds); ' +
        'on `failed`, `reconcile.last_error` says why.',
      params: OperationId,
      ok: json(AdminOperation, 'The Operation.'),
    }),
    async (c) => {
      const row = await loadById('operation', c.req.valid('param').id, 'operation', (id) => getOperationSummary(deps.db, id));
      return c.json(adminOperationView(row), 200);
    },
  );

  app.openapi(
    listRoute({
      path: '/integrations/{id}/operations',
      tags,
      summary: "List an integration's Operations",
      description: 'Newest first by default (`order=asc`: oldest first). Filter by `status` and `type` (each a comma-separated list matching any).',
      params: IntegrationId,
      query: OperationQuery,
      list: listOf(AdminOperation, 'AdminOperationList'),
      order: 'desc',
      links: linkTo('GetOperation', 'getOperation', 'The first Operation of the page.', '/results/0/id'),
    }),
    async (c) => {
      const integration = await loadIntegration(deps, c.req.valid('param').id);
      const query = c.req.valid('query');
      const filter = { status: query.status, type: query.type };
      return c.json(await listPage(query, (page) => operationsOfIntegration(deps.db, integration, filter, page), adminOperationView), 200);
    },
  );
}
