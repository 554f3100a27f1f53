/**
 * GET /v1/write_options/{operation_type}?property_id=…: every field of a write body (from the schema its route
 * validates with) and, for coded fields, the values the source accepts at that property (api/write-options.ts).
 * A read: any key of the organization's mode, 404 for a property of another organization or mode.
 */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { idPattern, isId } from '../../domain/ids';
import { OPERATION_TYPES, type OperationType } from '../../domain/operations';
import type { ApiDeps } from '../deps';
import type { AppEnv, Principal } from '../middleware/env';
import { READ_OR_WRITE, scopeGuard } from '../middleware/scopes';
import { validationError } from '../middleware/validation';
import { okHeaders, problemResponses, requestIdHeader } from '../openapi';
import { ApiError } from '../problem';
import { WriteOptions } from '../schemas';
import type { WriteFieldJson, WriteOptions as WriteOptionsService, WriteOptionsJson } from '../write-options';
import { visibleRecord } from '../writes';
import { integrationsHoldingProperty, liveIntegrationIdsOf } from '../../db/write-options';

/** What the example of the document shows for each coded field. */
const EXAMPLE_OPTIONS: Record<string, { value: string; label: string; floorplan_id?: string | null }[]> = {
  lease_term_id: [
    { value: '1', label: '6 Months' },
    { value: '2', label: '12 Months' },
    { value: '4', label: '24 Months' },
  ],
  floorplan_id: [
    { value: '3', label: 'A1 - Studio' },
    { value: '4', label: 'B2 - 1 Bed' },
  ],
  unit_space_id: [
    { value: '100001', label: 'A-101', floorplan_id: '4' },
    { value: '100002', label: 'A-102', floorplan_id: '3' },
  ],
  customer_relationship_type_id: [
    { value: '1', label: 'Primary' },
    { value: '2', label: 'Responsible' },
    { value: '3', label: 'Non-Responsible Occupant' },
    { value: '4', label: 'Guarantor' },
  ],
  phone_number_type_id: [
    { value: '1', label: 'Home' },
    { value: '2', label: 'Office' },
    { value: '3', label: 'Mobile' },
    { value: '4', label: 'Fax' },
  ],
  address_type_id: [
    { value: '1', label: 'Current' },
    { value: '2', label: 'Mailing' },
    { value: '3', label: 'Previous' },
  ],
};

/** The lease create's answer as the document's example: the registered fields, with options of a sandbox property. */
function exampleOf(fields: WriteFieldJson[]): WriteOptionsJson {
  return {
    object: 'write_options',
    operation_type: 'lease.create',
    property_id: 'prp_01JH0000000000000000000000',
    options_read_at: '2025-01-31T17:04:05.123Z',
    fields: fields.map((f) => ({ ...f, options: f.options === null ? null : (EXAMPLE_OPTIONS[f.name] ?? []) })),
  };
}

/** `property_id` is the one query parameter: any other (a misspelt `propertyid`) is a 400 naming it, as on the lists. */
const onlyPropertyId: MiddlewareHandler = async (c, next) => {
  const issues = Object.keys(c.req.queries())
    .filter((name) => name !== 'property_id')
    .map((name) => ({
      code: 'custom' as const,
      path: [name],
      message: 'is not a parameter of this endpoint; its one query parameter is `property_id`',
      input: undefined,
    }));
  if (issues.length > 0) throw validationError(new z.ZodError(issues), 'query');
  await next();
};

export function registerWriteOptions(app: OpenAPIHono<AppEnv>, deps: ApiDeps, options: WriteOptionsService): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/write_options/{operation_type}',
      tags: ['Write options'],
      operationId: 'retrieve_write_options',
      summary: 'Retrieve what a write accepts',
      description:
        'Every field of the body of a write (`lease.create` is `POST /v1/leases`, `unit.update` is `PATCH /v1/units/{id}`, …), whether it is ' +
        'required, its type, and for a coded field (`lease_term_id`, `floorplan_id`, `unit_space_id`, `customer_relationship_type_id`, ' +
        '`phone_number_type_id`, `address_type_id`) the values the source accepts at the property: `value` is what to send, `label` what the ' +
        'source calls it, and a unit space also names its `floorplan_id`. `options` is null for a field that is not coded. The values are read ' +
        "from the source and reused for up to a minute. A write that sends a value not listed is answered 422 at the field's pointer. " +
        '`property_id` is the one query parameter: any other is a 400 naming it.',
      middleware: [scopeGuard(READ_OR_WRITE), onlyPropertyId] as const,
      request: {
        params: z.object({
          operation_type: z.string().openapi({
            param: { name: 'operation_type', in: 'path' },
            enum: [...OPERATION_TYPES],
            description: 'The write: the Operation `type` it makes. Any other value is a 404.',
            example: 'lease.create',
          } as never),
        }),
        query: z.object({
          property_id: z
            .string()
            .optional()
            .openapi({
              param: { required: true },
              // The shape of a property id: anything else (NUL included) is refused, 422 at `property_id`.
              pattern: idPattern('property'),
              description:
                "The property (`prp_…`) whose accepted values to list: the unit's or resident's property, or the one a lease is at. Missing or not a property id: 422 at `property_id`.",
              example: 'prp_01JH0000000000000000000000',
            } as never),
        }),
      },
      responses: {
        200: {
          description: 'The fields of the write, with the values the source accepts for the coded ones.',
          headers: okHeaders,
          content: { 'application/json': { schema: WriteOptions, example: exampleOf(options.fields('lease.create')) } },
        },
        ...problemResponses(400, 401, 404, 422, 429, 500),
        503: {
          ...problemResponses(503)[503]!,
          description:
            'The source could not be asked for the values it accepts (down, slow past the time-out, or refusing). `Retry-After` when it may answer ' +
            'soon. Writes are still accepted meanwhile, and judged by the source.',
          headers: { ...requestIdHeader, 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' as const } } },
        },
      },
    }),
    async (c) => {
      const type = c.req.valid('param').operation_type;
      if (!(OPERATION_TYPES as readonly string[]).includes(type)) {
        throw new ApiError('not_found', `No write operation type ${JSON.stringify(type)}; the types are ${OPERATION_TYPES.join(', ')}.`);
      }
      const { property_id } = c.req.valid('query');
      if (property_id === undefined || property_id.trim() === '') {
        const detail = 'is required: the id of the property (prp_…) whose accepted values to list';
        throw new ApiError('validation_error', `Invalid query parameter \`property_id\`: ${detail}`, { errors: [{ pointer: 'property_id', detail }] });
      }
      if (!isId('property', property_id)) {
        const detail = 'must be a property id (prp_…)';
        throw new ApiError('validation_error', `Invalid query parameter \`property_id\`: ${detail}`, { errors: [{ pointer: 'property_id', detail }] });
      }
      const principal = c.get('principal');
      const property = await visibleRecord(deps, principal, 'property', property_id, 'property_id');
      const answer = await options.describe(type as OperationType, property);
      return c.json((await withIntegrationChoice(deps, principal, answer, property)) as never, 200);
    },
  );
}

/**
 * A body's `integration_id` at this property: its one option the property's integration; required for a lease create
 * (which names its property by x_id) when that x_id is held by more than one of the caller's integrations, as the
 * write then refuses a body without it.
 */
async function withIntegrationChoice(
  deps: ApiDeps,
  p: Principal,
  answer: WriteOptionsJson,
  property: { id: string; xId: string; integrationId: string },
): Promise<WriteOptionsJson> {
  if (!answer.fields.some((f) => f.name === 'integration_id')) return answer;
  let required = false;
  if (answer.operation_type === 'lease.create') {
    const own = await liveIntegrationIdsOf(deps.db, p.organizationId, p.mode);
    required = (await integrationsHoldingProperty(deps.db, p.organizationId, p.mode, property.xId)).filter((id) => own.includes(id)).length > 1;
  }
  const options = [{ value: property.integrationId, label: `the integration of property ${property.id}` }];
  return { ...answer, fields: answer.fields.map((f) => (f.name === 'integration_id' ? { ...f, required: f.required || required, options } : f)) };
}
