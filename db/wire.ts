/**
 * Rows as postgres.js hands them over, for the hot reads (db/queries.ts, an Operation's poll in db/operations.ts):
 * each column selected under its key in Drizzle's row (`"x_id" as "xId"`), so a row arrives keyed as Drizzle's would
 * be and goes to the serializer as it comes, without Drizzle decoding it into a second object. Its values are
 * Drizzle's but for a timestamp (Postgres's text: isoOf reads both) and a bigint (a BigInt).
 */
import { getTableColumns, sql, type Column, type SQL, type Table } from 'drizzle-orm';

type ColumnsOf<T extends Table> = T['_']['columns'];
/** What postgres.js hands over for a column, before Drizzle decodes it: a timestamp as Postgres's text, a bigint as a BigInt. */
type WireValue<C extends Column> = C['_']['columnType'] extends 'PgTimestamp' ? string : C['_']['columnType'] extends 'PgBigInt53' ? bigint : C['_']['data'];
/** A row of `T` selected by keyedColumns(T), as the driver hands it over. */
export type WireRow<T extends Table> = {
  [K in keyof ColumnsOf<T>]: WireValue<ColumnsOf<T>[K]> | (ColumnsOf<T>[K]['_']['notNull'] extends true ? never : null);
};

const keyed = new WeakMap<object, Record<string, SQL.Aliased>>();
/** A selection of these columns (a table's: getTableColumns), each under its key: `db.select(keyedColumns(cols))`. */
export function keyedColumns(columns: Record<string, Column>): Record<string, SQL.Aliased> {
  let s = keyed.get(columns);
  if (!s) {
    s = Object.fromEntries(Object.entries(columns).map(([key, col]) => [key, sql`${col}`.as(key)]));
    keyed.set(columns, s);
  }
  return s;
}

/** A table's columns, once per table (getTableColumns makes a new object on every call). */
const columnsOfTables = new WeakMap<Table, Record<string, Column>>();
export function columnsOf(table: Table): Record<string, Column> {
  let c = columnsOfTables.get(table);
  if (!c) columnsOfTables.set(table, (c = getTableColumns(table)));
  return c;
}

/**
 * A timestamptz's text as Postgres writes it in UTC with the ISO DateStyle (`2025-06-01 00:00:30.5+00`), as
 * Date.toISOString() would write it (`2025-06-01T00:00:30.500Z`), by moving characters: parsing it into a Date
 * first cost more than the rest of a lease's record. Any other text (another time zone or DateStyle, a year past
 * 9999 or BC, more than three decimals) goes through a Date, as Drizzle's decoder does.
 */
export function isoOfText(s: string): string {
  const n = s.length;
  if (
    n >= 22 &&
    n <= 26 &&
    n !== 23 &&
    s.charCodeAt(10) === 32 && // ' '
    s.charCodeAt(n - 3) === 43 && // '+'
    s.charCodeAt(n - 2) === 48 && // '0'
    s.charCodeAt(n - 1) === 48 &&
    (n === 22 || s.charCodeAt(19) === 46) // '.'
  ) {
    const fraction = n === 22 ? '000' : n === 26 ? s.slice(20, 23) : s.slice(20, n - 3).padEnd(3, '0');
    return `${s.slice(0, 10)}T${s.slice(11, 19)}.${fraction}Z`;
  }
  return new Date(s).toISOString();
}

/** A timestamp as the API shows it, from Drizzle's Date or the driver's text. */
export const isoOf = (t: Date | string): string => (typeof t === 'string' ? isoOfText(t) : t.toISOString());
export const isoOrNull = (t: Date | string | null | undefined): string | null => (t === null || t === undefined ? null : isoOf(t));
