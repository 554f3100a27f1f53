/**
 * Builders of the admin routes' shapes: retrieve one row, list a page, and POST, PATCH or DELETE. A declaration names
 * only what is its own (path, operationId, tags, summary, description, its path id, body and answers); the builder
 * adds the method, the request's parts and the error responses every admin route can give (errorResponses).
 *
 * The OpenAPI generator keeps a route's key order, so the builders write the keys in the one order every admin route
 * has: method, path, operationId, tags, summary, description, request, responses.
 */
import { createRoute, type RouteConfig, type z } from '@hono/zod-openapi';
import type { SortOrder } from '../../db/order';
import { body, errorResponses, json, orderedDescription, OrderedListQuery } from './schemas';

/** What a route says of itself. */
interface Words<P extends string> {
  path: P;
  operationId?: string;
  tags: string[];
  summary: string;
  description?: string;
}

type Responses = RouteConfig['responses'];
type Links = Parameters<typeof json>[2];

const wordsOf = <P extends string>(w: Words<P>) => ({
  path: w.path,
  ...(w.operationId === undefined ? {} : { operationId: w.operationId }),
  tags: w.tags,
  summary: w.summary,
  ...(w.description === undefined ? {} : { description: w.description }),
});

/** A request of a path id (`params`) and a JSON body (`body`), either of them absent. */
type RequestOf<I, B> = ([I] extends [never] ? object : { params: I }) & ([B] extends [never] ? object : ReturnType<typeof body<B & z.ZodType>>);
const requestOf = <I, B>(params: I | undefined, schema: B | undefined) =>
  ({ ...(params === undefined ? {} : { params }), ...(schema === undefined ? {} : body(schema as z.ZodType)) }) as RequestOf<I, B>;

/** GET the row at the path's id (`params`): `ok` is its 200. */
export const retrieveRoute = <P extends string, I extends z.ZodObject, R extends Responses[number]>(r: Words<P> & { params: I; ok: R }) =>
  createRoute({ method: 'get', ...wordsOf(r), request: { params: r.params }, responses: { 200: r.ok, ...errorResponses } });

/**
 * GET a page of `list` (a listOf). A list ordered by creation time names its default `order`: its query is
 * OrderedListQuery(order) unless `query` extends it with filters, and the 200 says the order (`note` adds to that). A
 * list in another order gives its `query` and the 200's words (`what`).
 */
export const listRoute = <P extends string, L extends z.ZodType, I extends z.ZodObject = never, Q extends z.ZodObject = ReturnType<typeof OrderedListQuery>>(
  r: Words<P> & { params?: I; list: L; links?: Links } & ({ order: SortOrder; note?: string; query?: Q } | { order?: never; query: Q; what: string }),
) =>
  createRoute({
    method: 'get',
    ...wordsOf(r),
    request: { ...requestOf<I, never>(r.params, undefined), query: (r.query ?? OrderedListQuery(r.order!)) as Q },
    responses: { 200: json(r.list, r.order === undefined ? r.what : orderedDescription(r.order, r.note), r.links), ...errorResponses },
  });

/** A change: its path id and JSON body when it has them, and its answers (`responses`) but the errors. */
const changeRoute =
  <M extends 'post' | 'patch' | 'delete'>(method: M) =>
  <P extends string, R extends Responses, I extends z.ZodObject = never, B extends z.ZodType = never>(r: Words<P> & { params?: I; body?: B; responses: R }) =>
    createRoute({ method, ...wordsOf(r), request: requestOf<I, B>(r.params, r.body), responses: { ...r.responses, ...errorResponses } });

export const postRoute = changeRoute('post');
export const patchRoute = changeRoute('patch');
export const deleteRoute = changeRoute('delete');

/** The answer of a delete. */
export const deleted = { 204: { description: 'Deleted.' } } as const;
