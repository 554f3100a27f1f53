/** List and retrieve routes of one read-only resource: schemas, documentation and handlers in one place. */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { Entity } from '../../domain/cdm';
import { unknownParameter } from '../../domain/filters';
import { isId } from '../../domain/ids';
import type { ApiDeps } from '../deps';
import type { AppEnv, Principal } from '../middleware/env';
import { wellEncodedQuery } from '../middleware/query-encoding';
import { READ, scopeGuard } from '../middleware/scopes';
import { validationError } from '../middleware/validation';
import { okHeaders, problemResponses } from '../openapi';
import { ApiError } from '../problem';
import { listRecords, retrieveRecord, type CommonListQuery, type FiltersOf } from '../../db/queries';
import { IdParam, listOf, RetrieveQuery } from '../schemas';

export interface ResourceSpec<E extends Entity> {
  entity: E;
  /** Path segment and OpenAPI tag, e.g. `leases`, `Leases`. */
  path: string;
  tag: string;
  idExample: string;
  listQuery: z.ZodType<CommonListQuery & FiltersOf[E], any>;
  /** Schema of a list item (the reduced record for properties) and of a retrieved record. */
  item: z.ZodTypeAny;
  record: z.ZodTypeAny;
  listName: string;
}

/** OpenAPI links from a response holding a record's id to what can be done with it (stateful clients follow them). */
function recordLinks(entity: Entity, id: string) {
  const links: Record<string, { operationId: string; parameters: Record<string, string>; description: string }> = {
    [`Retrieve${capital(entity)}`]: { operationId: `retrieve_${entity}`, parameters: { id }, description: `The ${entity} by its id.` },
  };
  if (entity !== 'property')
    links[`Update${capital(entity)}`] = {
      operationId: `update_${entity}`,
      parameters: { id },
      description: `Change the ${entity} (a write: 202 with an Operation).`,
    };
  return links;
}
const capital = (s: string) => s[0]!.toUpperCase() + s.slice(1);

/**
 * A list refuses a query parameter it does not know with a 400 naming it (what automation filters say too, as a
 * 422 of their body): a misspelt filter (`propertyid=`) would otherwise be ignored and list everything.
 */
function knownParametersOnly(entity: Entity): MiddlewareHandler {
  return async (c, next) => {
    const issues = Object.keys(c.req.queries()).flatMap((name) => {
      const detail = unknownParameter(entity, name);
      return detail ? [{ code: 'custom' as const, path: [name], message: detail, input: undefined }] : [];
    });
    if (issues.length > 0) throw validationError(new z.ZodError(issues), 'query');
    await next();
  };
}

/** The 404 of a retrieve (also the read fast path's, api/fast-reads.ts). */
export function notFoundError(entity: Entity, id: string, includeDeleted: boolean): ApiError {
  return new ApiError(
    'not_found',
    includeDeleted ? `No ${entity} with id ${id}.` : `No ${entity} with id ${id}. If it was deleted at the source, retry with include_deleted=true.`,
  );
}

export function registerResource<E extends Entity>(app: OpenAPIHono<AppEnv>, deps: ApiDeps, spec: ResourceSpec<E>): void {
  const { entity, path, tag } = spec;
  app.openapi(
    createRoute({
      method: 'get',
      path: `/v1/${path}`,
      tags: [tag],
      operationId: `list_${path}`,
      summary: `List ${path}`,
      description: `Only the query parameters below are known: any other (a misspelt filter such as \`propertyid\`) is a 400 naming it, rather than being ignored. So is a name or value that is not percent-encoded UTF-8 (\`%FF\`).`,
      middleware: [scopeGuard(READ), wellEncodedQuery, knownParametersOnly(entity)],
      request: { query: spec.listQuery as never },
      responses: {
        200: {
          description: `A page of ${path}, oldest first unless \`order-by\` says otherwise.`,
          headers: okHeaders,
          content: { 'application/json': { schema: listOf(spec.item, spec.listName) } },
          links: recordLinks(entity, '$response.body#/results/0/id'),
        },
        ...problemResponses(400, 401, 403, 422, 429, 500, 503),
      },
    }),
    async (c) => {
      const q = c.req.valid('query' as never) as CommonListQuery & FiltersOf[E];
      const page = await listRecords(deps.db, entity, c.get('principal') as Principal, q);
      return c.json(page as never, 200);
    },
  );
  app.openapi(
    createRoute({
      method: 'get',
      path: `/v1/${path}/{id}`,
      tags: [tag],
      operationId: `retrieve_${entity}`,
      summary: `Retrieve a ${entity}`,
      middleware: [scopeGuard(READ), wellEncodedQuery],
      request: { params: IdParam(spec.idExample), query: RetrieveQuery },
      responses: {
        200: {
          description: `The ${entity}.`,
          headers: okHeaders,
          content: { 'application/json': { schema: spec.record } },
          links: recordLinks(entity, '$response.body#/id'),
        },
        ...problemResponses(400, 401, 403, 404, 429, 500, 503),
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const { include_deleted } = c.req.valid('query');
      // An id that is not even of this entity's form cannot exist: no query (and no NUL byte reaches Postgres).
      const record = isId(entity, id) ? await retrieveRecord(deps.db, entity, c.get('principal') as Principal, id, include_deleted ?? false) : undefined;
      if (!record) throw notFoundError(entity, id, include_deleted ?? false);
      return c.json(record as never, 200);
    },
  );
}
