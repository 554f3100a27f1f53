/**
 * The reads (db/queries.ts) and an Operation's poll (db/operations.ts getVisibleOperation) hand the driver's rows to
 * the serializer as they come (db/wire.ts), while the write path (events, write-backs) and the other views of an
 * Operation hand it Drizzle's decoded rows: the two must show a record identically, byte for byte. Each row is
 * written with every column set (values made per column type, so a column added later is covered too, and a column
 * type this test does not know fails it) and with every nullable column null, then read both ways.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, getTableColumns } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import { closeDb, type Db } from '../../db/client';
import { newId } from '../../db/ids';
import { listRecords, retrieveRecord } from '../../db/queries';
import { TABLES } from '../../db/records';
import { getOperation, getVisibleOperation, operationJson } from '../../db/operations';
import { leaseResidents, operations } from '../../db/schema';
import { propertySummary, toRecords } from '../../db/serialize';
import type { Entity } from '../../domain/cdm';
import { makeTenant, testDb, type Tenant } from '../support/context';

let db: Db;
let t: Tenant;
const ENTITIES: Entity[] = ['property', 'unit', 'resident', 'lease'];

beforeAll(async () => {
  db = testDb(2);
  t = await makeTenant(db);
});
afterAll(async () => closeDb(db));

/**
 * A value of every column, by its type; `i` varies them between rows. Timestamps carry each number of decimals
 * Postgres may print (none, one, two, three), money amounts beyond 32 bits and negative.
 */
function fullRow(entity: Entity | 'operation', i: number): Record<string, unknown> {
  const times = ['2025-06-01T00:00:30.000Z', '2025-06-01T12:34:56.500Z', '1999-12-31T23:59:59.050Z', '2031-02-28T08:09:10.123Z'];
  const row: Record<string, unknown> = {};
  let n = 0;
  for (const [key, col] of Object.entries(getTableColumns(tableOf(entity))) as [string, PgColumn][]) {
    n++;
    if (key === 'id') row[key] = newId(entity);
    else if (key === 'organizationId') row[key] = t.organizationId;
    else if (key === 'integrationId') row[key] = t.integrationId;
    else if (key === 'mode') row[key] = t.mode;
    else if (key === 'deletedAt')
      row[key] = null; // the reads show live records; deleted ones are covered by include_deleted below
    else {
      switch (col.columnType) {
        case 'PgText':
          row[key] = col.enumValues?.length ? col.enumValues[i % col.enumValues.length] : `${key} ${i} "quoted" ünïcödé`;
          break;
        case 'PgInteger':
          row[key] = 1000 * i + n;
          break;
        case 'PgBigInt53':
          row[key] = (i % 2 === 0 ? 1 : -1) * (2 ** 40 + n);
          break;
        case 'PgDoublePrecision':
          row[key] = 30.123456789012 + i + n / 7;
          break;
        case 'PgBoolean':
          row[key] = i % 2 === 0;
          break;
        case 'PgDateString':
          row[key] = `20${10 + i}-0${1 + (n % 9)}-2${n % 9}`;
          break;
        case 'PgJsonb':
          row[key] = key === 'phones' || key === 'media' ? [{ n, nested: { a: [1, 'two', null] } }] : { n, z: 1, a: { 'b c': true }, s: '"123"' };
          break;
        case 'PgTimestamp':
          // The serializer reads a timestamp's text as UTC with an offset: only timestamptz columns can be read so.
          expect((col as unknown as { withTimezone: boolean }).withTimezone, key).toBe(true);
          row[key] = new Date(times[(i + n) % times.length]!);
          break;
        default:
          throw new Error(`${entity}.${key}: a column of type ${col.columnType} this test does not know: does the serializer read its driver value right?`);
      }
    }
  }
  return row;
}

/** The same row with every nullable column null (what a NOT NULL column holds stays). */
function nullRow(entity: Entity | 'operation', i: number): Record<string, unknown> {
  const row = fullRow(entity, i);
  for (const [key, col] of Object.entries(getTableColumns(tableOf(entity)))) if (!col.notNull) row[key] = null;
  return row;
}

const tableOf = (entity: Entity | 'operation') => (entity === 'operation' ? operations : TABLES[entity]);

describe("the reads' records", () => {
  it('are those the write path serializes, with every column set and with every nullable one null', async () => {
    for (const entity of ENTITIES) {
      const table = TABLES[entity];
      const rows = [fullRow(entity, 1), fullRow(entity, 2), nullRow(entity, 3)];
      await db.insert(table).values(rows as never);
      if (entity === 'lease') {
        await db.insert(leaseResidents).values([
          { leaseId: rows[0]!.id as string, residentId: 'res_b', xId: 'RB', role: 'primary', position: 0 },
          { leaseId: rows[0]!.id as string, residentId: 'res_a', xId: 'RA', role: 'occupant', position: 1 },
        ]);
      }
      for (const r of rows) {
        const id = r.id as string;
        const decoded = await db.select().from(table).where(eq(table.id, id));
        const [expected] = await toRecords(db, entity, decoded as never);
        const read = await retrieveRecord(db, entity, t, id, false);
        expect(JSON.stringify(read), `${entity} ${id}`).toBe(JSON.stringify(expected));
      }
      const page = await listRecords(db, entity, t, { limit: 10, offset: 0 } as never);
      const decoded = await db.select().from(table).where(eq(table.integrationId, t.integrationId)).orderBy(table.createdAt, table.id);
      const expected = entity === 'property' ? decoded.map((r) => propertySummary(r as never)) : await toRecords(db, entity, decoded as never);
      expect(page.results).toHaveLength(3);
      expect(JSON.stringify(page.results), entity).toBe(JSON.stringify(expected));
    }
  });

  it('show a deleted record, and times of every precision, as the write path does', async () => {
    const table = TABLES.unit;
    const row = fullRow('unit', 4);
    row.deletedAt = new Date('2025-07-04T01:02:03.040Z');
    row.psSyncedAt = new Date('0999-01-02T03:04:05.006Z');
    await db.insert(table).values(row as never);
    const [expected] = await toRecords(
      db,
      'unit',
      (await db
        .select()
        .from(table)
        .where(eq(table.id, row.id as string))) as never,
    );
    const read = await retrieveRecord(db, 'unit', t, row.id as string, true);
    expect(read).toMatchObject({ deleted_at: '2025-07-04T01:02:03.040Z', ps_synced_at: '0999-01-02T03:04:05.006Z' });
    expect(JSON.stringify(read)).toBe(JSON.stringify(expected));
  });

  it("of an Operation (a write's poll) are those its other views show, with every column set and with every nullable one null", async () => {
    const rows = [fullRow('operation', 1), fullRow('operation', 2), nullRow('operation', 3)];
    for (const r of rows) r.type = 'lease.update';
    rows[1]!.status = 'succeeded';
    await db.insert(operations).values(rows as never);
    for (const r of rows) {
      const polled = await getVisibleOperation(db, r.id as string, t.organizationId, t.mode);
      const decoded = await getOperation(db, r.id as string);
      expect(polled, r.id as string).toBeDefined();
      expect(JSON.stringify(operationJson(polled!))).toBe(JSON.stringify(operationJson(decoded!)));
    }
    expect(operationJson((await getVisibleOperation(db, rows[1]!.id as string, t.organizationId, t.mode))!)).toMatchObject({
      status: 'succeeded',
      result: { id: rows[1]!.resourceId },
      source: { applied_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) },
    });
    expect(await getVisibleOperation(db, rows[0]!.id as string, t.organizationId, t.mode === 'test' ? 'live' : 'test')).toBeUndefined();
  });
});
