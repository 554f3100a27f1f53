/**
 * GET /v1/leases and GET /v1/leases/{id} (each lease carries `resident_ids` and the nested `residents`), and the
 * writes POST /v1/leases and PATCH /v1/leases/{id}, which answer 202 with an Operation.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Lease, LeaseCreateBody, LeaseListQuery, LeaseUpdateBody } from '../schemas';
import type { WriteOptions } from '../write-options';
import { integrationForPropertyXId, ofRecord, registerWrite } from '../writes';
import { registerResource } from './resource';

export function registerLeases(app: OpenAPIHono<AppEnv>, deps: ApiDeps, options: WriteOptions): void {
  registerResource(app, deps, {
    entity: 'lease',
    path: 'leases',
    tag: 'Leases',
    idExample: 'lse_01JH0000000000000000000000',
    listQuery: LeaseListQuery,
    item: Lease,
    record: Lease,
    listName: 'LeaseList',
  });
  registerWrite(app, deps, options, {
    method: 'post',
    path: 'leases',
    tag: 'Leases',
    entity: 'lease',
    body: LeaseCreateBody,
    record: Lease,
    summary: 'Create a lease',
    description:
      'Creates a lease, with its applicant as a new resident, in the source of the integration holding `property_x_id`. ' +
      'The coded fields (`lease_term_id`, `floorplan_id`, `unit_space_id`, `customer_relationship_type_id`, `phone_number_type_id`, ' +
      '`address_type_id`) take the values `GET /v1/write_options/lease.create` lists for the property; a value the source does not ' +
      'accept there is a 422 naming the field, and nothing is stored (the `Idempotency-Key` stays free). When the source cannot be ' +
      'asked, and for a property the cache does not know yet, the write is accepted and the source decides: its rejection fails the Operation.',
    coded: {
      lease_term_id: 'lease_terms',
      floorplan_id: 'floorplans',
      unit_space_id: 'unit_spaces',
      customer_relationship_type_id: 'customer_relationship_types',
      phone_number_type_id: 'phone_number_types',
      address_type_id: 'address_types',
    },
    build: async (c, body) => {
      const { integration_id, ...request } = body;
      const integrationId = await integrationForPropertyXId(deps, c.get('principal'), body.property_x_id, integration_id);
      return { integrationId, request, targetLabel: `property x_id ${body.property_x_id}`, optionsAt: async () => body.property_x_id };
    },
  });
  registerWrite(app, deps, options, {
    method: 'patch',
    path: 'leases',
    tag: 'Leases',
    entity: 'lease',
    body: LeaseUpdateBody,
    record: Lease,
    summary: 'Update a lease',
    description: 'Changes `move_in_date`, `occupants` or `rent_amount` of a lease in its source; the fields not sent stay as they are.',
    build: ofRecord(deps, 'lease'),
  });
}
