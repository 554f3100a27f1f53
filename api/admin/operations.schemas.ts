/** The admin API's schemas of operations (writes), as an operator reads them, beside their routes (operations.ts). */
import { z } from '@hono/zod-openapi';
import { OPERATION_STATUSES, OPERATION_TYPES } from '../../domain/operations';
import { Operation as PublicOperation } from '../schemas';
import { Mode, DateTime, Uuid, OrderedListQuery, enumListParam } from './schemas';

export const AdminOperation = PublicOperation.extend({
  organization_id: Uuid,
  integration_id: Uuid,
  mode: Mode,
  updated_at: DateTime,
  workflow_id: z.string().openapi({
    description: 'The Temporal workflow that runs the write (its id is the Operation id): find its history in the Temporal UI.',
    example: 'opr_01JH0000000000000000000000',
  }),
}).openapi('AdminOperation', {
  description: 'The Operation as `GET /v1/operations/{id}` shows it, plus where it belongs and its workflow. The request body (personal data) is never shown.',
});

export const OperationQuery = OrderedListQuery('desc').extend({
  status: enumListParam(OPERATION_STATUSES, 'Only Operations in this status.'),
  type: enumListParam(OPERATION_TYPES, 'Only Operations of this type.'),
});
