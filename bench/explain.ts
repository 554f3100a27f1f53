/**
 * `npm run bench:explain`: EXPLAIN ANALYZE of exactly the SQL the read API sends (api/queries.ts listQuery) for
 * every list filter and every allowed order-by of every entity, on the read benchmark's 100k-lease organization.
 *
 * For each query it prints the plan's access path and time, and checks that an index path exists: the query is
 * planned again with sequential scans disabled, and a Seq Scan that remains on an entity table means no index can
 * serve it. (On a small table the planner rightly prefers a Seq Scan; at 1M rows per organization it must not have to.)
 */
import { createDb, closeDb } from '../db/client';
import { loadConfigOrExit } from '../config';
import { listQuery, sqlOf, type CommonListQuery, type FiltersOf } from '../db/queries';
import type { Principal } from '../api/middleware/env';
import type { Entity } from '../domain/cdm';
import { ORDER_FIELDS } from '../domain/filters';
import { ensureBenchData } from './lib/seed';

const ENTITY_TABLES = new Set(['properties', 'units', 'residents', 'leases', 'lease_residents']);
const log = (msg: string) => console.log(`[bench:explain] ${msg}`);

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}
function walk(node: PlanNode, out: PlanNode[] = []): PlanNode[] {
  out.push(node);
  for (const p of node.Plans ?? []) walk(p, out);
  return out;
}
const seqScans = (nodes: PlanNode[]) => nodes.filter((n) => n['Node Type'] === 'Seq Scan' && ENTITY_TABLES.has(n['Relation Name'] ?? ''));
const describe = (nodes: PlanNode[]) =>
  nodes
    .filter((n) => n['Index Name'] || n['Node Type'] === 'Seq Scan' || n['Node Type'] === 'Sort')
    .map((n) => (n['Index Name'] ? `${n['Node Type']} ${n['Index Name']}` : n['Node Type'] === 'Sort' ? 'Sort' : `Seq Scan ${n['Relation Name']}`))
    .join(' > ');

const config = loadConfigOrExit();
const data = await ensureBenchData(config.DATABASE_URL, log);
const db = createDb(data.databaseUrl, { max: 1, applicationName: 'propsync-bench-explain' });
const principal: Principal = { keyId: 'bench', organizationId: data.organizationId, mode: 'test', scopes: ['read'] };

const pick = async (table: string, column: string) =>
  String(
    (
      (await db.$client.unsafe(`select ${column} as v from ${table} where organization_id = $1 and ${column} is not null limit 1 offset 37`, [
        data.organizationId,
      ])) as { v: unknown }[]
    )[0]!.v,
  );
const propertyId = await pick('properties', 'id');
const unitId = await pick('units', 'id');
const residentId = await pick('residents', 'id');
const email = await pick('residents', 'email');
const updatedAfter = new Date(data.updatedAfter);

const common: [string, Partial<CommonListQuery>][] = [
  ['default', {}],
  ['include_deleted', { include_deleted: true }],
  ['updated_after', { updated_after: updatedAfter }],
  ['created_after', { created_after: updatedAfter }],
  ['created_before', { created_before: updatedAfter }],
  ['x_id', { x_id: ['L5', 'U5', 'R5', 'P5', 'L77'] }],
  ['integration_id', { integration_id: [data.integrationId] }],
];
const own: { [E in Entity]: [string, FiltersOf[E]][] } = {
  property: [
    ['status', { status: ['active'] }],
    ['type', { type: ['townhome', 'condo'] }],
    ['name', { name: 'dences 12' }],
  ],
  unit: [
    ['property_id', { property_id: [propertyId] }],
    ['status', { status: ['vacant'] }],
  ],
  resident: [
    ['property_id', { property_id: [propertyId] }],
    ['email', { email: email.toUpperCase() }],
    ['status', { status: ['notice'] }],
  ],
  lease: [
    ['property_id', { property_id: [propertyId] }],
    ['unit_id', { unit_id: [unitId] }],
    ['resident_id', { resident_id: [residentId] }],
    ['status', { status: ['active'] }],
    ['status list', { status: ['notice', 'pending'] }],
    ['type', { type: ['month_to_month'] }],
    ['start_date_gte', { start_date_gte: '2024-11-01' }],
    ['start_date_lte', { start_date_lte: '2022-02-01' }],
    ['end_date_gte', { end_date_gte: '2025-12-01' }],
    ['end_date_lte', { end_date_lte: '2023-02-01' }],
    ['bench (a): status + updated_after, limit 100', { status: ['active'], ...({ updated_after: updatedAfter, limit: 100 } as object) }],
  ],
};

let missing = 0;
console.log('\nentity    case                                        natural plan (actual ms)                                         index path');
for (const entity of ['property', 'unit', 'resident', 'lease'] as const) {
  const cases: [string, CommonListQuery & FiltersOf[typeof entity]][] = [];
  for (const [name, q] of [...common, ...own[entity]]) cases.push([name, { limit: 25, offset: 0, ...q } as never]);
  for (const field of ORDER_FIELDS[entity]) {
    for (const dir of ['asc', 'desc'] as const) cases.push([`order-by ${field}:${dir}`, { limit: 25, offset: 0, 'order-by': { field, dir } } as never]);
  }
  for (const [name, q] of cases) {
    const { text, params } = sqlOf(listQuery(db, entity, principal, q as never));
    const natural = await db.$client.begin(async (tx) => {
      const [row] = await tx.unsafe(`explain (analyze, format json) ${text}`, params as never[]);
      return (row as unknown as { 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] })['QUERY PLAN'][0];
    });
    const forced = await db.$client.begin(async (tx) => {
      await tx.unsafe('set local enable_seqscan = off');
      const [row] = await tx.unsafe(`explain (format json) ${text}`, params as never[]);
      return (row as unknown as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
    });
    const noIndex = seqScans(walk(forced));
    if (noIndex.length > 0) missing++;
    console.log(
      `${entity.padEnd(9)} ${name.padEnd(43)} ${`${describe(walk(natural.Plan)) || natural.Plan['Node Type']} (${natural['Execution Time'].toFixed(2)})`.padEnd(64)} ${noIndex.length ? `NONE: ${describe(noIndex)}` : describe(walk(forced)) === describe(walk(natural.Plan)) ? 'same' : describe(walk(forced))}`,
    );
  }
}
console.log(missing === 0 ? '\nEvery list filter and order-by has an index path.' : `\n${missing} queries have no index path.`);
await closeDb(db);
