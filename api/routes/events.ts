/**
 * GET /v1/events and GET /v1/events/{id}: the key's organization's events of the last 30 days, in production order,
 * each the envelope exactly as webhooks deliver it (the stored bytes), so a receiver catches up after downtime with
 * the handler it uses for webhooks. Production order is the order the outbox relay numbered the events in
 * (db/events.ts markDispatched): a page never shows an event while one before it is uncommitted, so paging with
 * `after` = the last id seen never skips or repeats one.
 */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { feedEvent, feedPage } from '../../db/events';
import { CATALOG_CATEGORIES, CATALOG_EVENT_TYPES as ALL_EVENT_TYPES } from '../../domain/events';
import { datetimeParam, intParam, RULE, splitList, uuidListParam } from '../../domain/filters';
import { idPattern, isId } from '../../domain/ids';
import { SPACE_CLASS } from '../../domain/scalars';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { wellEncodedQuery } from '../middleware/query-encoding';
import { READ, scopeGuard } from '../middleware/scopes';
import { validationError } from '../middleware/validation';
import { okHeaders, problemResponses } from '../openapi';
import { ApiError } from '../problem';

const EXAMPLE_ID = 'evt_01JH0000000000000000000000';
const TYPE_ALTERNATIVES = `(${ALL_EVENT_TYPES.join('|')})`;
const S = `[${SPACE_CLASS}]*`;
const TYPES_PATTERN = `^(${S}${TYPE_ALTERNATIVES}?${S})(,${S}${TYPE_ALTERNATIVES}?${S})*$`;

const typesParam = z
  .string()
  .transform((s, ctx) => {
    const values = [...new Set(splitList(s))];
    const unknown = values.filter((v) => !(ALL_EVENT_TYPES as string[]).includes(v));
    if (unknown.length > 0)
      ctx.addIssue({ code: 'custom', message: `not an event type: ${unknown.join(', ')}; one of ${ALL_EVENT_TYPES.join(', ')}`, params: RULE });
    return values;
  })
  .optional()
  .openapi({
    type: 'string',
    pattern: TYPES_PATTERN,
    example: 'LEASE_SIGNED,LEASE_UPDATED',
    description: 'Only events of these types. Comma-separated list matches any; an unknown type is a 422.',
  } as never) as unknown as z.ZodType<string[] | undefined, string | undefined>;

const afterParam = z
  .string()
  .regex(new RegExp(idPattern('event')), 'must be an event id (evt_ followed by a ULID)')
  .optional()
  .openapi({
    pattern: idPattern('event'),
    example: EXAMPLE_ID,
    description:
      'An event id: the page starts just after it in production order. Any of your events of the last 30 days will do, ' +
      'whether or not it matches the other filters: the last id you processed, from this list or from a webhook. ' +
      'Without it the page starts at the oldest event kept. An id that is not one of your events of the last 30 days is a 404: ' +
      'start over without `after` (and re-read the records, since events older than 30 days are gone).',
  });

const EventListQuery = z.object({
  after: afterParam,
  limit: intParam({ min: 1, max: 100, default: 25, description: 'Page size, 1 to 100.' }),
  types: typesParam,
  integration_id: uuidListParam('Integration (UUID), exact.'),
  created_after: datetimeParam('Only events with `created_at` >= this value.', 'lower'),
  created_before: datetimeParam('Only events with `created_at` <= this value.', 'upper'),
});

const EXAMPLE_EVENT = {
  id: EXAMPLE_ID,
  type: 'LEASE_UPDATED',
  category: 'data_change',
  created_at: '2025-01-31T17:04:05.123Z',
  organization_id: '0b6f8f5e-5d3c-4b8e-9a39-2a4f3c1e7d10',
  integration_id: '6f1d2c3b-8a7e-4f60-b5d4-3c2b1a0f9e8d',
  data: {
    id: 'lse_01JH0000000000000000000000',
    x_id: '10452',
    rent_amount: { amount: 185000, currency: 'USD' },
    updated_at: '2025-01-31T17:04:05.100Z',
    changed: ['rent_amount'],
  },
};

const EventEnvelope = z
  .object({
    id: z.string().openapi({ pattern: idPattern('event'), example: EXAMPLE_ID }),
    type: z.enum(ALL_EVENT_TYPES as [string, ...string[]]),
    category: z.enum(CATALOG_CATEGORIES),
    created_at: z.iso.datetime().openapi({ example: '2025-01-31T17:04:05.123Z' }),
    organization_id: z.string().openapi({ format: 'uuid' }),
    integration_id: z.string().openapi({ format: 'uuid' }),
    data: z.record(z.string(), z.unknown()).openapi({ description: 'Shape depends on the type (the event catalog and its payload rules).' }),
  })
  .openapi('Event', { description: 'An event, exactly as webhooks deliver it (the same bytes, parsed).', example: EXAMPLE_EVENT });

const EventList = z
  .object({
    meta: z.object({ limit: z.number().int(), hasMore: z.boolean() }),
    results: z.array(EventEnvelope),
  })
  .openapi('EventList', { example: { meta: { limit: 25, hasMore: true }, results: [EXAMPLE_EVENT] } });

const KNOWN = Object.keys(EventListQuery.shape);

/** An unknown query parameter is a 400 naming it (as on every list): a misspelt `type=` would list everything. */
const knownParametersOnly: MiddlewareHandler = async (c, next) => {
  const issues = Object.keys(c.req.queries())
    .filter((name) => !KNOWN.includes(name))
    .map((name) => ({
      code: 'custom' as const,
      path: [name],
      message: `not a query parameter of GET /v1/events; one of ${KNOWN.join(', ')}`,
      input: undefined,
    }));
  if (issues.length > 0) throw validationError(new z.ZodError(issues), 'query');
  await next();
};

export function registerEvents(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/events',
      tags: ['Events'],
      operationId: 'list_events',
      summary: 'List events',
      description:
        "Your organization's events of the last 30 days (of the key's mode), in production order: the order in which they were handed to webhook delivery, " +
        "which is also the order a subscription's first attempts go out in. Each result is the event exactly as a webhook delivers it. " +
        'Page with `after` = the `id` of the last result: every later event is on a later page exactly once, also while new events are being recorded ' +
        '(an event appears only once every event before it has been committed, so a page never skips one that commits late). ' +
        '`hasMore: false` means you have caught up for now; poll again later with the same `after`. ' +
        'An event appears here within about a second of being recorded. `created_at` is when the event was recorded; it can go backwards by a little between neighbours, production order does not.',
      middleware: [scopeGuard(READ), wellEncodedQuery, knownParametersOnly],
      request: { query: EventListQuery as never },
      responses: {
        200: {
          description: 'A page of events in production order.',
          headers: okHeaders,
          content: { 'application/json': { schema: EventList } },
          links: {
            // A link cannot name the last result: to page on, `after` is the last result's id (the description).
            EventsAfterFirst: {
              operationId: 'list_events',
              parameters: { after: '$response.body#/results/0/id' },
              description: 'The events after the first of this page (the next page is `after` the last result).',
            },
            RetrieveEvent: { operationId: 'retrieve_event', parameters: { id: '$response.body#/results/0/id' }, description: 'The event by its id.' },
          },
        },
        ...problemResponses(400, 401, 403, 404, 422, 429, 500, 503),
      },
    }),
    async (c) => {
      const q = c.req.valid('query' as never) as z.output<typeof EventListQuery>;
      const p = c.get('principal');
      const page = await feedPage(deps.db, p, {
        after: q.after,
        limit: q.limit,
        types: q.types,
        integrationIds: q.integration_id,
        createdAfter: q.created_after,
        createdBefore: q.created_before,
      });
      if (!page) throw new ApiError('not_found', `No event ${q.after} of the last 30 days for this key: start over without \`after\`.`);
      // The stored envelopes go out as they are: the bytes a webhook carries.
      return c.body(`{"meta":{"limit":${q.limit},"hasMore":${page.hasMore}},"results":[${page.bodies.join(',')}]}`, 200, {
        'content-type': 'application/json',
      }) as never;
    },
  );
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/events/{id}',
      tags: ['Events'],
      operationId: 'retrieve_event',
      summary: 'Retrieve an event',
      description:
        "One of your events of the last 30 days, exactly as a webhook delivers it. Another organization's or mode's event, and one older than 30 days, is a 404.",
      middleware: [scopeGuard(READ), wellEncodedQuery],
      request: { params: z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: EXAMPLE_ID }) }) },
      responses: {
        200: { description: 'The event.', headers: okHeaders, content: { 'application/json': { schema: EventEnvelope } } },
        ...problemResponses(401, 403, 404, 429, 500, 503),
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = isId('event', id) ? await feedEvent(deps.db, c.get('principal'), id) : undefined;
      if (body === undefined) throw new ApiError('not_found', `No event with id ${id} in the last 30 days.`);
      return c.body(body, 200, { 'content-type': 'application/json' }) as never;
    },
  );
}
