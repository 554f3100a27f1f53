/** GET /v1/units and GET /v1/units/{id}. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Unit, UnitListQuery } from '../schemas';
import { registerResource } from './resource';

export function registerUnits(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
  registerResource(app, deps, {
    entity: 'unit',
    path: 'units',
    tag: 'Units',
    idExample: 'unt_01JH0000000000000000000000',
    listQuery: UnitListQuery,
    item: Unit,
    record: Unit,
    listName: 'UnitList',
  });
}
