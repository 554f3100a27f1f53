/**
 * What the admin API's schemas share: its scalars (modes, plans, times, ids), paging and ordering, the error
 * responses, and the helpers that pair a route with its schemas. Each resource's own schemas are beside its routes
 * (api/admin/<resource>.schemas.ts); together they generate /admin/v1/openapi.json.
 */
import { z } from '@hono/zod-openapi';
import { intParam } from '../../domain/filters';
import { SORT_ORDERS, type SortOrder } from '../../db/order';
import { MODES, PLANS } from '../../domain/plans';
import { SPACE_CLASS } from '../../domain/scalars';
import { RULE } from '../middleware/validation';
import { Problem } from '../schemas';

export const Mode = z.enum(MODES);
export const Plan = z.enum(PLANS);
export const DateTime = z.iso.datetime().openapi({ example: '2025-01-31T17:04:05.123Z' });
export const Uuid = z.uuid();

export const IdParam = (name: string, description: string) =>
  z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, description, example: name }) });

/** The path ids of an organization's and an integration's routes. */
export const OrganizationId = IdParam('0b6f3c1e-8a3d-4d0e-9a47-0c6e2f7c1a11', 'Organization id (UUID).');
export const IntegrationId = IdParam('5f0c2d7e-1b8a-4c3e-9d2f-6a7b8c9d0e1f', 'Integration id (UUID).');

/** Paging, parsed as on /v1: an integer written as one (an empty `offset=` is not 0), else 400; out of range 422. */
export const ListQuery = z.object({
  limit: intParam({ min: 1, max: 100, default: 25, description: 'Page size, 1 to 100.' }),
  offset: intParam({ min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: 'Zero-based offset.' }),
});

const ORDER_WORDS: Record<SortOrder, string> = { asc: 'Oldest first', desc: 'Newest first' };

/**
 * ListQuery plus `order`, for a list ordered by creation time (ties by id, in the same direction); `dflt` is the order
 * the list has always had. A value other than `asc`/`desc` is a 422 naming the parameter, like an unknown sort field.
 */
export const OrderedListQuery = (dflt: SortOrder) =>
  ListQuery.extend({
    order: z
      .string()
      .default(dflt)
      .transform((s, ctx) => {
        if ((SORT_ORDERS as readonly string[]).includes(s)) return s as SortOrder;
        ctx.addIssue({ code: 'custom', message: 'must be asc or desc', params: RULE });
        return z.NEVER;
      })
      .openapi({
        type: 'string',
        enum: SORT_ORDERS,
        default: dflt,
        description: `By creation time: \`asc\` oldest first, \`desc\` newest first (ties by id, in the same direction). Default: \`${dflt}\` (${ORDER_WORDS[dflt].toLowerCase()}).`,
      } as never) as unknown as z.ZodType<SortOrder, string | undefined>,
  });

/** The description of a list's 200 response: its default order, and that `order` turns it. */
export const orderedDescription = (dflt: SortOrder, rest = '') => `${ORDER_WORDS[dflt]} unless \`order\` says otherwise${rest}.`;

export const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z
    .object({
      meta: z.object({ limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() }),
      results: z.array(item),
    })
    .openapi(name);

export const problemResponse = (description: string) => ({ content: { 'application/problem+json': { schema: Problem } }, description });
/** Error responses every admin route can give. */
export const errorResponses = {
  400: problemResponse('Malformed request: bad JSON or an unparseable query parameter.'),
  401: problemResponse('Missing or wrong admin token.'),
  404: problemResponse('Unknown or malformed id.'),
  413: problemResponse('The request body exceeds 64 KiB.'),
  422: problemResponse('A rule violation; `errors[]` names each field.'),
  429: problemResponse('Too many wrong admin tokens from this address, or beginning like this one: every token is refused for `Retry-After` seconds.'),
} as const;
export const unavailableResponse = {
  503: problemResponse('Temporal or the sandbox PMS is unreachable; nothing was changed. Safe to retry.'),
} as const;

export const json = <T extends z.ZodType>(
  schema: T,
  description: string,
  links?: Record<string, { operationId: string; parameters: Record<string, string>; description: string }>,
) => ({
  content: { 'application/json': { schema } },
  description,
  ...(links ? { links } : {}),
});

/** An OpenAPI link from a response with an `id` (or an `id` at `pointer`) to the operation that reads it. */
export const linkTo = (name: string, operationId: string, what: string, pointer = '/id') => ({
  [name]: { operationId, parameters: { id: `$response.body#${pointer}` }, description: what },
});
export const body = <T extends z.ZodType>(schema: T) => ({ body: { content: { 'application/json': { schema } }, required: true } });

/** A PATCH body: at least one field (a request without a body, or `{}`, changes nothing and is refused with 422). */
export function someField<T extends z.ZodObject>(schema: T): T {
  return schema
    .refine((b) => Object.values(b as Record<string, unknown>).some((v) => v !== undefined), {
      message: `send at least one of ${Object.keys(schema.shape).join(', ')}`,
      // Only a body that is otherwise valid is checked: an unknown field is its own error.
      when: (payload) => payload.issues.length === 0,
    })
    .openapi({ minProperties: 1 }) as unknown as T;
}

/**
 * A comma-separated list of enum values, matching any. A value outside the enum parses but names nothing: 422 with
 * the parameter as pointer, like an unknown sort field on /v1.
 */
/** A comma-separated list of `item` (a regex alternation), items padded with spaces, empty items ignored. */
const S = `[${SPACE_CLASS}]*`;
const listPattern = (item: string) => `^${S}(${item})?${S}(,${S}(${item})?${S})*$`;

export const enumListParam = <T extends string>(values: readonly T[], description: string) =>
  z
    .string()
    .transform((s, ctx) => {
      const list = [
        ...new Set(
          s
            .split(',')
            .map((v) => v.trim())
            .filter(Boolean),
        ),
      ];
      // Empty means no filter, as on /v1 (`status=`).
      if (list.length === 0) return undefined;
      const unknown = list.filter((v) => !values.includes(v as T));
      if (unknown.length > 0) {
        ctx.addIssue({ code: 'custom', message: `must be one or more of ${values.join(', ')} (comma-separated)`, params: RULE });
        return z.NEVER;
      }
      return list as T[];
    })
    .optional()
    .openapi({
      type: 'string',
      pattern: listPattern(values.map((v) => v.replace(/[.]/g, '\\.')).join('|')),
      description: `${description} One of ${values.map((v) => `\`${v}\``).join(', ')}, or a comma-separated list matching any.`,
    } as never) as unknown as z.ZodType<T[] | undefined, string | undefined>;
