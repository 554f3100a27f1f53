/**
 * An export's CSV, written by Postgres: one `COPY (SELECT …) TO STDOUT WITH (FORMAT csv, HEADER …)` over the rows,
 * filters and order of the entity's list endpoint (db/queries.ts listWhere and orderColumn), whose SELECT spells out
 * the file format of docs/decisions.md (Automations) column by column, so no row is decoded or encoded in JavaScript:
 *
 * - the header is the CDM field names, Money split into `<field>_amount` (integer minor units) and `<field>_currency`;
 * - NULL is an empty field and an empty string `""` (COPY's CSV rules), text is written as it is, quoted when it
 *   holds a comma, a double quote (doubled), CR or LF;
 * - timestamps are ISO 8601 in UTC at millisecond precision (`2025-06-01T00:00:30.000Z`), dates `YYYY-MM-DD`,
 *   booleans `true`/`false`, numbers as Postgres prints them (doubles shortest-exact);
 * - objects and arrays (address, phones, media, custom_data, a lease's residents and resident_ids) are JSON text,
 *   as Postgres prints jsonb (`{"a": 1}`), keys in jsonb's order; a lease's residents in their source order with
 *   the API's keys (resident_id, x_id, role);
 * - with `escapeFormulas` (on by default, per automation), a text cell that starts with `=`, `+`, `-`, `@`, tab or CR
 *   gets a leading `'` and every non-NULL value of a text column is quoted (OWASP, CSV injection), so a spreadsheet
 *   shows it as text instead of running it. Numbers, dates and our own ids are never escaped (a negative balance
 *   stays a number).
 *
 * COPY takes no parameters: the filters' values are written into the statement as literals (`literal`), on a
 * connection whose settings make the output and the literals mean one thing whatever the server's defaults
 * (EXPORT_SESSION).
 */
import type { Readable } from 'node:stream';
import { getTableColumns, getTableName, sql, type SQL } from 'drizzle-orm';
import { PgDialect, type PgColumn } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { csvColumns, MONEY_FIELDS, RECORD_FIELDS } from '../domain/automations';
import type { Entity } from '../domain/cdm';
import { Bindings, DEFAULT_ORDER, listWhere, orderColumn, type ListFilters, type Principal } from './queries';
import { leaseResidents } from './schema';
import { tableOf } from './records';

/**
 * Session settings of an export's connection, sent at start-up. One REPEATABLE READ, read-only transaction per
 * export (the COPY is its only statement, so it also reads one snapshot). UTC, ISO dates, shortest-exact doubles
 * and standard strings (a literal's backslash is a backslash) make the output and the literals independent of the
 * server's configuration.
 */
export const EXPORT_SESSION = {
  default_transaction_isolation: 'repeatable read',
  default_transaction_read_only: true,
  TimeZone: 'UTC',
  DateStyle: 'ISO, YMD',
  IntervalStyle: 'postgres',
  extra_float_digits: '1',
  standard_conforming_strings: 'on',
  client_encoding: 'UTF8',
} as const;

/** Which characters open a cell a spreadsheet would read as a formula (OWASP CSV injection): = + - @ TAB CR. */
const FORMULA_STARTS = ['=', '+', '-', '@', '\t', '\r'] as const;
const FORMULA_CODES = FORMULA_STARTS.map((ch) => ch.charCodeAt(0)).join(', ');

/** Fields holding ids this service made (prefixed ULIDs, UUIDs): never formulas, never escaped. */
const OWN_IDS = new Set(['id', 'organization_id', 'integration_id', 'property_id', 'unit_id', 'previous_lease_id']);

/** The amount and currency columns of each Money field. */
const MONEY_COLUMNS: Record<string, [string, string]> = {
  market_rent: ['market_rent_amount', 'market_rent_currency'],
  rent_amount: ['rent_amount', 'rent_currency'],
  security_deposit: ['security_deposit_amount', 'security_deposit_currency'],
  balance: ['balance_amount', 'balance_currency'],
};

const dialect = new PgDialect();
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface ExportStatementOptions {
  /** Fields to export, in order (RECORD_FIELDS names); default all of the entity's. */
  fields?: readonly string[];
  /** OWASP CSV-injection escaping of text cells (see above). */
  escapeFormulas: boolean;
}

/** One output column of the SELECT: its header name, its SQL, and whether it is source text (escaped, and quoted, with escapeFormulas). */
interface Cell {
  name: string;
  expr: string;
  text: boolean;
}

/**
 * The COPY statement of an export: the list's rows (the principal's, its filters, live unless include_deleted) in the
 * list's order (the order column, then id, in one direction; NULLs last ascending, first descending), as CSV with a
 * header. Its values are literals: the statement is complete as it stands.
 */
export function exportCopyStatement<E extends Entity>(entity: E, principal: Principal, filters: ListFilters<E>, opts: ExportStatementOptions): string {
  const fields = opts.fields ?? RECORD_FIELDS[entity];
  const t = tableOf(entity);
  const table = ident(getTableName(t));
  const columns = new Map(Object.values(getTableColumns(t)).map((c) => [c.name, c as PgColumn]));
  const money = new Set(MONEY_FIELDS[entity]);
  const col = (name: string) => {
    if (!columns.has(name)) throw new Error(`no column ${name} on ${entity}`);
    return `${table}.${ident(name)}`;
  };

  // Text from the source is escaped where it is read, so a wrapped expression (Money's currency) escapes once.
  const text = (expr: string) => (opts.escapeFormulas ? escaped(expr) : expr);
  const cells: Cell[] = [];
  let people = false;
  for (const field of fields) {
    if (money.has(field)) {
      const [amount, currency] = MONEY_COLUMNS[field]!;
      // The API shows Money only when both halves are there.
      const both = `${col(amount)} is not null and ${col(currency)} is not null`;
      cells.push({ name: `${field}_amount`, expr: `case when ${both} then ${col(amount)}::text end`, text: false });
      cells.push({ name: `${field}_currency`, expr: `case when ${both} then ${text(col(currency))} end`, text: true });
    } else if (entity === 'lease' && (field === 'resident_ids' || field === 'residents')) {
      people = true;
      cells.push({ name: field, expr: `coalesce(lr.${field}, '[]')`, text: false });
    } else if (field === 'custom_data') {
      cells.push({ name: field, expr: `coalesce(nullif(${col(field)}, 'null'::jsonb)::text, '{}')`, text: false });
    } else {
      cells.push(cellOf(field, columns.get(field), col, text));
    }
  }
  if (csvColumns(entity, fields).join() !== cells.map((c) => c.name).join()) throw new Error(`the export's columns of ${entity} do not follow its header`);

  const select = cells.map((c) => `${c.expr} as ${ident(c.name)}`).join(', ');
  // A lease's residents in their source order, as the API nests them: one index lookup per lease.
  const join = people
    ? ` left join lateral (select '[' || string_agg(to_json(p.resident_id)::text, ', ' order by p.position) || ']' as resident_ids, ` +
      `'[' || string_agg('{"resident_id": ' || to_json(p.resident_id)::text || ', "x_id": ' || to_json(p.x_id)::text || ', "role": ' || to_json(p.role)::text || '}', ', ' order by p.position) || ']' as residents ` +
      `from ${ident(getTableName(leaseResidents))} p where p.lease_id = ${col('id')}) lr on true`
    : '';

  const b = new Bindings();
  const where = listWhere(b, entity, principal, filters);
  const order = filters['order-by'] ?? DEFAULT_ORDER;
  const dir = order.dir === 'asc' ? 'asc' : 'desc';
  const orderBy = `${col(orderColumn(entity, order.field).name)} ${dir}, ${col('id')} ${dir}`;
  const whereText = where ? ` where ${inline(where, b)}` : '';
  const query = `select ${select} from ${table}${join}${whereText} order by ${orderBy}`;

  const quoted = opts.escapeFormulas ? cells.filter((c) => c.text).map((c) => ident(c.name)) : [];
  const options = ['format csv', 'header true', ...(quoted.length > 0 ? [`force_quote (${quoted.join(', ')})`] : [])];
  return `copy (${query}) to stdout with (${options.join(', ')})`;
}

/** A field stored in a column of its own name, by the column's type. */
function cellOf(field: string, column: PgColumn | undefined, col: (name: string) => string, text: (expr: string) => string): Cell {
  if (!column) throw new Error(`no column for the field ${field}`);
  const c = col(field);
  switch (column.columnType) {
    case 'PgTimestamp':
      return { name: field, expr: `to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`, text: false };
    case 'PgJsonb':
      // A JSON null stored in the column reads as null, as in the API.
      return { name: field, expr: `nullif(${c}, 'null'::jsonb)::text`, text: false };
    case 'PgText':
      return OWN_IDS.has(field) ? { name: field, expr: c, text: false } : { name: field, expr: text(c), text: true };
    case 'PgUUID':
    case 'PgInteger':
    case 'PgBigInt53':
    case 'PgDoublePrecision':
    case 'PgBoolean':
    case 'PgDateString':
      return { name: field, expr: `${c}::text`, text: false };
    default:
      throw new Error(`no CSV form for the column type ${column.columnType} of ${field}`);
  }
}

/** OWASP: a cell that a spreadsheet would read as a formula gets a leading single quote (its column is quoted too). */
function escaped(expr: string): string {
  return `case when ascii(${expr}) in (${FORMULA_CODES}) then '''' || ${expr} else ${expr} end`;
}

/** A condition's SQL with its values written in as literals. */
function inline(condition: SQL, b: Bindings): string {
  const q = dialect.sqlToQuery(sql`${condition}`);
  return q.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const p = q.params[Number(n) - 1] as unknown;
    const value = p !== null && typeof p === 'object' && 'name' in p && !Array.isArray(p) ? b.values.get((p as { name: string }).name) : p;
    return literal(value);
  });
}

/**
 * A SQL literal of a filter's value (with standard_conforming_strings on): text in single quotes (doubled inside),
 * a list as an array literal (its elements double-quoted, `"` and `\` backslash-escaped), a finite number, a boolean,
 * NULL. Text cannot hold NUL in Postgres; the list schemas refuse it before this.
 */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') {
    if (v.includes('\0')) throw new Error('a filter value holds a NUL character');
    return `'${v.replace(/'/g, "''")}'`;
  }
  if (Array.isArray(v)) return literal(`{${v.map((x) => `"${String(x).replace(/["\\]/g, (ch) => `\\${ch}`)}"`).join(',')}}`);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  throw new Error(`no SQL literal for a filter value of type ${typeof v}`);
}

/** An export's COPY under way on a connection of its own. */
export interface ExportCopy {
  /** The CSV as Postgres writes it, header first; Postgres waits while the reader does. */
  rows: Readable;
  /** Records (the header not counted) that have come off the connection so far. */
  records(): number;
  /** Ends the connection: a COPY still running stops with it. Idempotent. */
  close(): Promise<void>;
}

/**
 * Opens an export's connection: its own (a COPY that ends early leaves its connection unusable, and a long one would
 * hold a slot of the worker's pool), with EXPORT_SESSION's settings and `timeoutMs` as its statement time-out.
 * `copy` then starts the statement; nothing is read until the caller reads.
 */
export async function openExportConnection(
  databaseUrl: string,
  opts: { timeoutMs: number; applicationName?: string },
): Promise<{ copy(statement: string): Promise<ExportCopy>; close(): Promise<void> }> {
  const client = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: opts.applicationName ?? 'propsync-export', statement_timeout: Math.max(1, Math.ceil(opts.timeoutMs)), ...EXPORT_SESSION },
  });
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= client.end({ timeout: 0 }).catch(() => {}));
  try {
    // Connected now, so that the caller opens its destination with the database ready.
    const reserved = await client.reserve();
    return {
      async copy(statement) {
        const rows = await reserved.unsafe(statement, [], { prepare: false }).readable();
        // Postgres sends each row of a COPY TO as one CopyData message ("messages sent from the backend will always
        // correspond to single data rows", Frontend/Backend Protocol, COPY Operations), which postgres.js, as patched
        // here (patches/postgres+3.4.9.patch), counts on the stream: the rows exactly, the header first.
        const counted = rows as Readable & { copyRows?: number };
        return { rows, records: () => Math.max(0, (counted.copyRows ?? 0) - 1), close };
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
