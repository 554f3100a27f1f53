/** GET /v1/residents and GET /v1/residents/{id}, and the writes POST /v1/residents and PATCH /v1/residents/{id} (202 Operation). */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Resident, ResidentCreateBody, ResidentListQuery, ResidentUpdateBody } from '../schemas';
import type { WriteOptions } from '../write-options';
import { atProperty, ofRecord, registerWrite } from '../writes';
import { registerResource } from './resource';

export function registerResidents(app: OpenAPIHono<AppEnv>, deps: ApiDeps, options: WriteOptions): void {
  registerResource(app, deps, {
    entity: 'resident',
    path: 'residents',
    tag: 'Residents',
    idExample: 'res_01JH0000000000000000000000',
    listQuery: ResidentListQuery,
    item: Resident,
    record: Resident,
    listName: 'ResidentList',
  });
  registerWrite(app, deps, options, {
    method: 'post',
    path: 'residents',
    tag: 'Residents',
    entity: 'resident',
    body: ResidentCreateBody,
    record: Resident,
    summary: 'Create a resident',
    description: "Creates a resident at a property, in the source of the property's integration.",
    build: atProperty(deps),
  });
  registerWrite(app, deps, options, {
    method: 'patch',
    path: 'residents',
    tag: 'Residents',
    entity: 'resident',
    body: ResidentUpdateBody,
    record: Resident,
    summary: 'Update a resident',
    description: 'Changes the fields sent of a resident in its source; the others stay as they are. `null` clears a field that may be empty.',
    build: ofRecord(deps, 'resident'),
  });
}
