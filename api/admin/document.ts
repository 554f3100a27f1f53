/**
 * The admin OpenAPI document as served: what each route declares, completed with what every admin answer has in
 * common, so the document says exactly what the service does. Every response carries `x-request-id` and a 429 its
 * `Retry-After`; any operation may fail with a 500; an operation with a JSON body answers 415 to another content
 * type; a GET never answers 413 (its body is never read), a GET without query parameters never 400 or 422 (its path
 * id, malformed, is a 404), nor a GET without a path id 404.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';

type Document = ReturnType<OpenAPIHono['getOpenAPI31Document']>;
type Operation = NonNullable<NonNullable<Document['paths']>[string]['get']>;

const REQUEST_ID = { description: 'Correlation id; echoes a valid caller-supplied one.', schema: { type: 'string' as const } };
const RETRY_AFTER = { description: 'Seconds to wait.', schema: { type: 'integer' as const } };
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** A problem response added to the built document: its schema by reference (a zod schema is not JSON Schema). */
const problemRef = (description: string) => ({ content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }, description });
const UNSUPPORTED = problemRef('The request body must be JSON (`Content-Type: application/json`, UTF-8).');
const FAULT = problemRef('Server fault; nothing is left half-done. Safe to retry with exponential backoff.');

function complete(method: (typeof METHODS)[number], op: Operation): void {
  const responses = (op.responses ??= {});
  const parameters = (op.parameters ?? []) as { in?: string }[];
  const drop = (...statuses: string[]) => statuses.forEach((s) => delete responses[s]);
  if (op.requestBody) responses['415'] ??= UNSUPPORTED;
  // A GET's body is never read (nor measured).
  if (method === 'get') drop('413', '415');
  if (method === 'get' && !parameters.some((p) => p.in === 'query')) drop('400', '422');
  if (method === 'get' && !parameters.some((p) => p.in === 'path')) drop('404');
  responses['500'] ??= FAULT;
  for (const [status, response] of Object.entries(responses)) {
    if (!response || '$ref' in response) continue;
    const headers = { ...response.headers, 'x-request-id': REQUEST_ID };
    if (status === '429') headers['Retry-After'] = RETRY_AFTER;
    response.headers = headers;
  }
}

export function completeAdminDocument(doc: Document): Document {
  for (const item of Object.values(doc.paths ?? {})) for (const method of METHODS) if (item[method]) complete(method, item[method]);
  return doc;
}
