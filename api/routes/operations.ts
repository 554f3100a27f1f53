/** GET /v1/operations/{id}: a write's Operation, 200 in every state (404 across organizations and modes). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { getVisibleOperation, operationJson } from '../../db/operations';
import { isId } from '../../domain/ids';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { okHeaders, problemResponses } from '../openapi';
import { ApiError } from '../problem';
import { IdParam, Operation } from '../schemas';

export function registerOperations(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/operations/{id}',
      tags: ['Operations'],
      operationId: 'retrieve_operation',
      summary: 'Retrieve an Operation',
      description:
        'Poll until `status` is `succeeded` or `failed`, backing off exponentially with `reconcile.attempts`, capped at 30 seconds. ' +
        'Always 200, whatever the state: a failed write is a `failed` Operation whose `reconcile.last_error` says why.',
      request: { params: IdParam('opr_01JH0000000000000000000000') },
      responses: {
        200: { description: 'The Operation.', headers: okHeaders, content: { 'application/json': { schema: Operation } } },
        ...problemResponses(401, 404, 429, 500),
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const p = c.get('principal');
      const row = isId('operation', id) ? await getVisibleOperation(deps.db, id, p.organizationId, p.mode) : undefined;
      if (!row) throw new ApiError('not_found', `No operation with id ${id}.`);
      return c.json(operationJson(row) as never, 200);
    },
  );
}
