/** GET /v1/properties (reduced records) and GET /v1/properties/{id} (full record). Read-only. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Property, PropertyListQuery, PropertySummary } from '../schemas';
import { registerResource } from './resource';

export function registerProperties(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
  registerResource(app, deps, {
    entity: 'property',
    path: 'properties',
    tag: 'Properties',
    idExample: 'prp_01JH0000000000000000000000',
    listQuery: PropertyListQuery,
    item: PropertySummary,
    record: Property,
    listName: 'PropertyList',
  });
}
