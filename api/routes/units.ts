/** GET /v1/units and GET /v1/units/{id}, and the writes POST /v1/units and PATCH /v1/units/{id} (202 Operation). */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import type { AppEnv } from '../middleware/env';
import { Unit, UnitCreateBody, UnitListQuery, UnitUpdateBody } from '../schemas';
import type { WriteOptions } from '../write-options';
import { atProperty, ofRecord, registerWrite } from '../writes';
import { registerResource } from './resource';

export function registerUnits(app: OpenAPIHono<AppEnv>, deps: ApiDeps, options: WriteOptions): void {
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
  registerWrite(app, deps, options, {
    method: 'post',
    path: 'units',
    tag: 'Units',
    entity: 'unit',
    body: UnitCreateBody,
    record: Unit,
    summary: 'Create a unit',
    description:
      "Creates a unit at a property, in the source of the property's integration. `floorplan_id` takes one of the property's floor plans " +
      '(`GET /v1/write_options/unit.create`); another value is a 422 at `floorplan_id`.',
    coded: { floorplan_id: 'floorplans' },
    build: atProperty(deps),
  });
  registerWrite(app, deps, options, {
    method: 'patch',
    path: 'units',
    tag: 'Units',
    entity: 'unit',
    body: UnitUpdateBody,
    record: Unit,
    summary: 'Update a unit',
    description:
      'Changes the fields sent of a unit in its source; the others stay as they are. `floorplan_id` takes one of the floor plans of the ' +
      "unit's property (`GET /v1/write_options/unit.update`); another value is a 422 at `floorplan_id`.",
    coded: { floorplan_id: 'floorplans' },
    build: ofRecord(deps, 'unit'),
  });
}
