/** GET /v1/residents and GET /v1/residents/{id}. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Resident, ResidentListQuery } from '../schemas';
import { registerResource } from './resource';

export function registerResidents(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
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
}
