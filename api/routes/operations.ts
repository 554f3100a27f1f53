/** GET /v1/operations/{id}: a write's Operation, 200 in every state (404 across organizations and modes). */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { Db } from '../../db/client';
import { getVisibleOperation, operationJson, type OperationJson } from '../../db/operations';
import { isId } from '../../domain/ids';
import type { ApiDeps } from '../deps';
import type { AppEnv, Principal } from '../middleware/env';
import { READ_OR_WRITE, scopeGuard } from '../middleware/scopes';
import { okHeaders, problemResponses } from '../openapi';
import { heldOperation, MAX_WAIT_S, preferredWaitS, type OperationWaits } from '../operation-waits';
import { ApiError } from '../problem';
import { IdParam, Operation } from '../schemas';

/** The Operation `id` as the caller's key sees it, or the 404: the route's answer, and the read fast path's (api/fast-reads.ts). */
async function visibleOperation(db: Db, principal: Principal, id: string): Promise<OperationJson> {
  const row = isId('operation', id) ? await getVisibleOperation(db, id, principal.organizationId, principal.mode) : undefined;
  if (!row) throw new ApiError('not_found', `No operation with id ${id}.`);
  return operationJson(row);
}

/** What a held poll's answer says of the wait it applied (RFC 7240 Preference-Applied), when it asked for one. */
const preferenceApplied = (waitS: number): Record<string, string> => (waitS > 0 ? { 'preference-applied': `wait=${waitS}` } : {});

/**
 * The Operation `id`, held up to the `Prefer: wait=N` of the request while it has not ended (api/operation-waits.ts),
 * and the headers its answer adds: Preference-Applied when the wait was honoured.
 */
export async function answerOperation(
  db: Db,
  waits: OperationWaits,
  principal: Principal,
  id: string,
  waitS: number,
): Promise<{ op: OperationJson; headers: Record<string, string> }> {
  const read = () => visibleOperation(db, principal, id);
  if (waitS <= 0) return { op: await read(), headers: {} };
  const { op, held } = await heldOperation(waits, id, waitS, read);
  return { op, headers: held ? preferenceApplied(waitS) : {} };
}

export function registerOperations(app: OpenAPIHono<AppEnv>, deps: ApiDeps, waits: OperationWaits): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/operations/{id}',
      tags: ['Operations'],
      operationId: 'retrieve_operation',
      summary: 'Retrieve an Operation',
      description:
        'Poll until `status` is `succeeded` or `failed`, backing off exponentially with `reconcile.attempts`, capped at 30 seconds. ' +
        'Always 200, whatever the state: a failed write is a `failed` Operation whose `reconcile.last_error` says why. ' +
        `With \`Prefer: wait=N\` (RFC 7240; N seconds, at most ${MAX_WAIT_S}) the answer is held until the Operation ends or N seconds pass, ` +
        'whichever comes first, and says `Preference-Applied: wait=N`: one request instead of a poll loop.',
      middleware: [scopeGuard(READ_OR_WRITE)],
      request: {
        params: IdParam('opr_01JH0000000000000000000000'),
        headers: z.object({
          prefer: z
            .string()
            .optional()
            .openapi({
              description: `\`wait=N\`: hold the answer until the Operation ends or N seconds pass (at most ${MAX_WAIT_S}; more is ${MAX_WAIT_S}). Other preferences are ignored.`,
              example: 'wait=10',
              pattern: '^[\\t\\x20-\\x7e]*$',
            }),
        }),
      },
      responses: {
        200: {
          description: 'The Operation.',
          headers: {
            ...okHeaders,
            'Preference-Applied': { description: '`wait=N` when the request asked to wait (`Prefer: wait=N`).', schema: { type: 'string' as const } },
          },
          content: { 'application/json': { schema: Operation } },
        },
        ...problemResponses(401, 404, 429, 500, 503),
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const waitS = preferredWaitS(c.req.header('prefer'));
      const { op, headers } = await answerOperation(deps.db, waits, c.get('principal'), id, waitS);
      for (const [name, value] of Object.entries(headers)) c.header(name, value);
      return c.json(op as never, 200);
    },
  );
}
