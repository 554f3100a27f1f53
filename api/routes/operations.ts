/** GET /v1/operations/{id}: a write's Operation, 200 in every state (404 across organizations and modes). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Db } from '../../db/client';
import { getVisibleOperation, operationJson, type OperationJson } from '../../db/operations';
import { isId } from '../../domain/ids';
import type { ApiDeps } from '../deps';
import type { AppEnv, Principal } from '../middleware/env';
import { okHeaders, problemResponses } from '../openapi';
import { ApiError } from '../problem';
import { IdParam, Operation } from '../schemas';

/** The Operation `id` as the caller's key sees it, or the 404: the route's answer, and the read fast path's (api/fast-reads.ts). */
export async function visibleOperation(db: Db, principal: Principal, id: string): Promise<OperationJson> {
  const row = isId('operation', id) ? await getVisibleOperation(db, id, principal.organizationId, principal.mode) : undefined;
  if (!row) throw new ApiError('not_found', `No operation with id ${id}.`);
  return operationJson(row);
}

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
      return c.json((await visibleOperation(deps.db, c.get('principal'), id)) as never, 200);
    },
  );
}
