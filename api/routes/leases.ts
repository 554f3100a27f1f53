/** GET /v1/leases and GET /v1/leases/{id}; each lease carries `resident_ids` and the nested `residents`. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Lease, LeaseListQuery } from '../schemas';
import { registerResource } from './resource';

export function registerLeases(app: OpenAPIHono<AppEnv>, deps: ApiDeps): void {
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
}
