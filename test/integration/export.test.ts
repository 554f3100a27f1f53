/**
 * The export engine over real Postgres, a real local HTTP server and a temporary export root: the CSV read back
 * equals what the list API serves (row for row, column for column, awkward values included), filters, order and
 * soft-deletes as in the API, batches without repeats or gaps, and how each destination succeeds and fails.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportError, exportAutomation, type ExportDeps, type ExportedAutomation } from '../../activities/export';
import type { Resolver } from '../../activities/address-guard';
import { closeDb, type Db } from '../../db/client';
import { listRecords, retrieveRecord, type CommonListQuery, type FiltersOf } from '../../db/queries';
import { applyRecords, softDeleteUnseen, type ApplyContext } from '../../db/records';
import { createIntegration } from '../../db/tenants';
import { exportFileName, MONEY_FIELDS, RECORD_FIELDS } from '../../domain/automations';
import type { Entity, InputOf } from '../../domain/cdm';
import { LIST_QUERIES } from '../../domain/filters';
import { sealAutomationHeaders } from '../../domain/secrets';
import { makeTenant, testDb, testKeyring, type Tenant } from '../support/context';
import { leaseInput, propertyInput, residentInput, unitInput } from '../support/fixtures';

type Ref = { id: string; organizationId: string; mode: 'test' | 'live' };

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

const people = (...xs: string[]) => xs.map((x_id, i) => ({ x_id, role: i === 0 ? 'primary' : 'responsible' }));

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
      leaseInput('L1', { property: 'P1', unit: 'U1', residents: people('R1', 'R2') }, {
        notes: 'Line1\r\nLine2, "x"',
        concessions: '1 month free; 50% off',
        is_renewal: true,
        rent_amount: { amount: 150000, currency: 'JPY' },
        security_deposit: null,
        balance: { amount: -2550, currency: 'USD' },
        start_date: '2025-01-01',
        end_date: null,
      }),
      leaseInput('L2', { property: 'P1', unit: 'U2', residents: people('R2') }, { status: 'pending', start_date: '2025-03-01', end_date: '2026-02-28' }),
      leaseInput('L3', { property: 'P2', unit: 'U3', residents: people('R3') }, { status: 'active', start_date: '2025-03-01', end_date: null, is_renewal: null }),
    ],
    [
      leaseInput('L4', { property: 'P3', unit: 'U4', residents: people('R4') }, { status: 'ended', start_date: '2024-01-01', end_date: '2024-12-31' }),
      leaseInput('L5', { property: 'P3', unit: 'U5', residents: people('R5', 'R4') }, { status: 'active', start_date: '2025-06-01', end_date: '2025-12-31', is_renewal: false }),
    ],
    [leaseInput('LX', { property: 'P3', unit: 'U4', residents: people('RX') }, { status: 'active', start_date: '2025-05-01' })],
  ],
};

beforeAll(async () => {
  db = testDb(4);
  a = await makeTenant(db);
  A = { id: a.integrationId, organizationId: a.organizationId, mode: 'test' };
  const source = { base_url: 'http://127.0.0.1:1', api_key: 'unused' };
  const more = async () => (await createIntegration(db, { organizationId: a.organizationId, mode: 'test', plan: 'scale', sourceType: 'sandbox', sourceConfig: source }, ring)).id;
  A2 = { id: await more(), organizationId: a.organizationId, mode: 'test' };
  A3 = { id: await more(), organizationId: a.organizationId, mode: 'test' };
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
  await apply(A2, 'lease', [leaseInput('QL', { property: 'QP', unit: 'QU', residents: people('QR') }, { start_date: '2025-03-01' })], at(4));
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
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      received.set(url, { method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      const kind = url.split('/')[1];
      if (kind === 'hang') return void hanging.push(res);
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

const deps = (over: Partial<ExportDeps> = {}): ExportDeps => ({ db, secrets: ring, exportRoot: root, timeoutMs: 10_000, ...over });

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
async function exportRows(entity: Entity, filters: Record<string, string>, opts: { batchSize?: number; integration?: Ref; columns?: string[] } = {}) {
  const atm = automation(entity, { filters, columns: opts.columns ?? null }, opts.integration);
  const result = await exportAutomation(deps({ batchSize: opts.batchSize }), { automation: atm, integration: opts.integration ?? A, fileName: 'x.csv' });
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
    const q = LIST_QUERIES[entity].parse({ ...params, integration_id: integration.id, limit: '100', offset: String(offset) }) as CommonListQuery & FiltersOf[Entity];
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
function expectedRow(entity: Entity, record: Record<string, unknown>): (string | null)[] {
  return RECORD_FIELDS[entity].flatMap((f) => {
    const v = record[f];
    if (MONEY_FIELDS[entity].includes(f)) {
      const m = v as { amount: number; currency: string } | null;
      return m ? [String(m.amount), m.currency] : [null, null];
    }
    if (v === null || v === undefined) return [null];
    return [typeof v === 'object' ? JSON.stringify(v) : String(v)];
  });
}

async function expectSameAsApi(entity: Entity, filters: Record<string, string>, opts: { batchSize?: number } = {}) {
  const { header, rows } = await exportRows(entity, filters, opts);
  const api = await apiRecords(entity, filters);
  expect(header).toEqual(expectedHeader(entity));
  for (const r of api) expect(Object.keys(r).sort()).toEqual([...RECORD_FIELDS[entity]].sort());
  expect(rows).toEqual(api.map((r) => expectedRow(entity, r)));
  return { rows, api };
}

const xIdsOf = (rows: (string | null)[][], entity: Entity) => rows.map((r) => r[RECORD_FIELDS[entity].indexOf('x_id')]);

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
  });

  it('keeps awkward text exactly, tells "" from null, splits Money and writes nested values as JSON', async () => {
    const { header, rows } = await exportRows('property', { x_id: 'P1' });
    const p1 = Object.fromEntries(header.map((h, i) => [h, rows[0]![i]]));
    expect(p1).toMatchObject({
      name: AWKWARD,
      description: '  padded both sides  ',
      tax_id: '00123',
      website_url: '',
      email: '=1+2',
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
    expect(JSON.parse(byX.get('L1')!.residents!)).toEqual([expect.objectContaining({ x_id: 'R1', role: 'primary' }), expect.objectContaining({ x_id: 'R2', role: 'responsible' })]);
  });

  it('is UTF-8 with a byte order mark and CRLF line endings', async () => {
    const { body } = await exportRows('unit', { x_id: 'U1' });
    expect([...body.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const text = body.subarray(3).toString('utf8');
    expect(text.startsWith(`${expectedHeader('unit').join(',')}\r\n`)).toBe(true);
    expect(text.endsWith('\r\n')).toBe(true);
    // The note's own line breaks stay inside its quoted cell, as they were.
    expect(text).toContain('"He said ""hi"",\nthen left\r\n"');
    // An empty string is quoted; a null is nothing at all.
    expect(text).toMatch(/,"",/);
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
  ] as const)('%s order-by=%s (NULLs and ties) in the order the API lists, across batches', async (entity, order) => {
    for (const batchSize of [1, 2, 3, 100]) {
      const { rows, api } = await expectSameAsApi(entity, { 'order-by': order }, { batchSize });
      expect(xIdsOf(rows, entity)).toEqual(api.map((r) => r.x_id));
    }
  });

  it('puts NULLs last ascending and first descending, ties by id', async () => {
    const { rows } = await exportRows('property', { 'order-by': 'name:asc' }, { batchSize: 2 });
    const names = rows.map((r) => r[RECORD_FIELDS.property.indexOf('name')]);
    expect(names).toEqual(['  Alpha  ', AWKWARD, 'Same', 'Same', null, null]);
    const ids = rows.map((r) => r[0]!);
    expect(ids[2]! < ids[3]!).toBe(true);
    expect(ids[4]! < ids[5]!).toBe(true);
    const desc = await exportRows('property', { 'order-by': 'name:desc' }, { batchSize: 2 });
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
    const err = await failure(
      exportAutomation(deps(), { automation: automation('lease', {}, A2), integration: { ...A, mode: 'live' }, fileName: 'x.csv' }),
    );
    expect(err.permanent).toBe(true);
  });

  it('streams more rows than a batch without repeats or gaps, in every order', async () => {
    const progress: number[] = [];
    for (const order of ['created_at:asc', 'created_at:desc', 'last_name:asc', 'last_name:desc', 'updated_at:desc']) {
      const atm = automation('resident', { filters: { 'order-by': order } }, A3);
      progress.length = 0;
      const r = await exportAutomation(deps({ batchSize: 5 }), { automation: atm, integration: A3, fileName: 'x.csv', onProgress: (n) => progress.push(n) });
      const body = received.get(new URL((atm.destination as { url: string }).url).pathname)!.body;
      const [, ...rows] = parseCsv(body);
      const api = await apiRecords('resident', { 'order-by': order }, A3);
      expect(api).toHaveLength(57);
      expect(rows.map((row) => row[0])).toEqual(api.map((x) => x.id));
      expect(new Set(rows.map((row) => row[0])).size).toBe(57);
      expect(r.records).toBe(57);
      // After each batch: never more than a batch at a time, up to all of them.
      expect(progress.at(-1)).toBe(57);
      expect(progress.every((n, i) => n - (progress[i - 1] ?? 0) > 0 && n - (progress[i - 1] ?? 0) <= 5)).toBe(true);
    }
  });
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
    [429, false],
    [500, false],
    [503, false],
  ])('HTTP %i: permanent %s', async (status, permanent) => {
    const atm = automation('lease', { destination: { type: 'http', url: `${base}/e${status}/${randomUUID()}` } });
    const err = await failure(exportAutomation(deps(), { automation: atm, integration: A, fileName: 'x.csv' }));
    expect(err).toMatchObject({ permanent, status, message: expect.stringContaining(`HTTP ${status}: nope: ${status} from the destination`) });
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
// Directory destination
// ---------------------------------------------------------------------------------------------------------------

describe('directory destination', () => {
  it('the file appears complete under its name, and no temporary file is left', async () => {
    const dir = `out/${randomUUID()}`;
    await mkdir(path.join(root, dir));
    const atm = automation('lease', { destination: { type: 'directory', path: dir } });
    const r = await exportAutomation(deps({ batchSize: 2 }), { automation: atm, integration: A, fileName: 'leases-arun_1.csv' });
    expect(await readdir(path.join(root, dir))).toEqual(['leases-arun_1.csv']);
    const body = await readFile(path.join(root, dir, 'leases-arun_1.csv'));
    expect(body.length).toBe(r.bytes);
    const [header, ...rows] = parseCsv(body);
    expect(header).toEqual(expectedHeader('lease'));
    expect(rows).toEqual((await apiRecords('lease', {})).map((x) => expectedRow('lease', x)));
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
    const dir = `out/${randomUUID()}`;
    await mkdir(path.join(root, dir));
    await exportAutomation(deps(), { automation: automation('unit', { destination: { type: 'directory', path: dir } }), integration: A, fileName: 'f.csv' });
    const file = automation('unit', { destination: { type: 'directory', path: `${dir}/f.csv` } });
    expect(await failure(exportAutomation(deps(), { automation: file, integration: A, fileName: 'u.csv' }))).toMatchObject({ permanent: true });
  });

  it('an aborted export stops and leaves no file behind', async () => {
    const dir = `out/${randomUUID()}`;
    await mkdir(path.join(root, dir));
    const stop = new AbortController();
    const atm = automation('resident', { destination: { type: 'directory', path: dir } }, A3);
    const reason = new Error('cancelled by the test');
    const seen: number[] = [];
    const err = await exportAutomation(deps({ batchSize: 5 }), {
      automation: atm,
      integration: A3,
      fileName: 'r.csv',
      signal: stop.signal,
      onProgress: (n) => {
        seen.push(n);
        if (n === 10) stop.abort(reason);
      },
    }).catch((e: unknown) => e);
    expect(err).toBe(reason);
    expect(seen.at(-1)!).toBeLessThan(57);
    expect(await readdir(path.join(root, dir))).toEqual([]);
  });
});
