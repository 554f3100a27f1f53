/**
 * The OpenAPI 3.1 document against the running API: every read endpoint and error is documented, and real
 * responses (records of every entity, list envelopes, problems) validate against the documented schemas with ajv's
 * 2020-12 dialect, which is the dialect of OpenAPI 3.1. Field sets must match exactly in both directions, so a
 * field added to a serializer but not to the schema (or the reverse) fails here.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDb, type Db } from '../../db/client';
import { applyRecords } from '../../db/apply';
import { organizations } from '../../db/schema';
import { startApi, type TestServer } from '../support/api-server';
import { makeTenant, testConfig, testDb, type Tenant } from '../support/context';
import { leaseInput, leaseResidents, propertyInput, residentInput, unitInput } from '../support/fixtures';

type Json = Record<string, any>;
let db: Db;
let api: TestServer;
let t: Tenant;
let doc: Json;
let ajv: InstanceType<typeof Ajv2020>;
const ids: Record<string, string> = {};

beforeAll(async () => {
  db = testDb(3);
  api = await startApi(db, testConfig());
  t = await makeTenant(db);
  await db.update(organizations).set({ rateLimitPerMinute: 100_000, rateLimitBurst: 10_000 }).where(eq(organizations.id, t.organizationId));
  const ctx = { integration: { id: t.integrationId, organizationId: t.organizationId, mode: t.mode }, emitEvents: false };
  await db.transaction(async (tx) => {
    ids.property = (
      await applyRecords(tx, ctx, 'property', [
        propertyInput('P1', { custom_data: { amenity: 'pool', floors: [1, 2] } }),
        propertyInput('P2', { address: null, phones: null, name: null }),
      ])
    ).ids.get('P1')!;
    ids.unit = (
      await applyRecords(tx, ctx, 'unit', [unitInput('U1', 'P1'), unitInput('U2', 'P1', { market_rent: null, address: null, bedrooms: null })])
    ).ids.get('U1')!;
    ids.resident = (
      await applyRecords(tx, ctx, 'resident', [residentInput('R1', 'P1'), residentInput('R2', 'P1', { email: null, date_of_birth: null })])
    ).ids.get('R1')!;
    ids.lease = (
      await applyRecords(tx, ctx, 'lease', [
        leaseInput('L1', {
          property: 'P1',
          unit: 'U1',
          residents: leaseResidents('R1', 'R2'),
        }),
        leaseInput('L2', { property: 'P1', unit: 'U2', residents: [] }, { balance: null, start_date: null, is_renewal: null, previous_lease_x_id: 'L1' }),
      ])
    ).ids.get('L1')!;
  });
  const res = await api.get('/v1/openapi.json');
  doc = (await res.json()) as Json;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
});
afterAll(async () => {
  await api?.close();
  await closeDb(db);
});

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function resolve(schema: Json): Json {
  return schema.$ref
    ? resolve(
        schema.$ref
          .split('/')
          .slice(1)
          .reduce((node: Json, part: string) => node[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc),
      )
    : schema;
}

/** Validate a real response against the document's schema for that path, method and status. */
async function conforms(res: Response, path: string, method = 'get'): Promise<Json> {
  const op = doc.paths[path]?.[method];
  expect(op, `${method} ${path} is documented`).toBeDefined();
  const response = op.responses[String(res.status)];
  expect(response, `${method} ${path} documents status ${res.status}`).toBeDefined();
  const mediaType = res.headers.get('content-type')!.split(';')[0]!;
  expect(Object.keys(response.content), `${path} ${res.status} media type`).toContain(mediaType);
  const body = (await res.json()) as Json;
  const ref = `openapi.json#/paths/${escape(path)}/${method}/responses/${res.status}/content/${escape(mediaType)}/schema`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
  return body;
}

/** Every documented property is in the record and every record field is documented. */
function sameFields(record: Json, schemaName: string) {
  const schema = resolve(doc.components.schemas[schemaName]);
  expect(Object.keys(record).sort()).toEqual(Object.keys(schema.properties).sort());
  expect([...schema.required].sort()).toEqual(Object.keys(schema.properties).sort());
}

describe('the document', () => {
  it('is valid against the OpenAPI 3.1 schema, and so is the admin document', async () => {
    for (const path of ['/v1/openapi.json', '/admin/v1/openapi.json']) {
      const validator = new Validator();
      const result = await validator.validate((await (await api.get(path)).json()) as Json);
      expect(result.errors, path).toBeUndefined();
      expect(result.valid, path).toBe(true);
      expect(validator.version, path).toBe('3.1');
    }
  });

  it('is OpenAPI 3.1 with a bearer security scheme applied to the API', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });

  it('allows null exactly where SPEC does: rent_amount is a Money object, security_deposit, balance, market_rent and address may be null', () => {
    const accepts = (pointer: string, value: unknown) => ajv.validate({ $ref: `openapi.json#/components/schemas/${pointer}` }, value);
    const money = { amount: 125_000, currency: 'USD' };
    for (const pointer of ['Money', 'Lease/properties/rent_amount']) {
      expect(accepts(pointer, null), pointer).toBe(false);
      expect(accepts(pointer, money), pointer).toBe(true);
    }
    for (const pointer of ['Lease/properties/security_deposit', 'Lease/properties/balance', 'Unit/properties/market_rent']) {
      expect(accepts(pointer, null), pointer).toBe(true);
      expect(accepts(pointer, money), pointer).toBe(true);
    }
    for (const pointer of ['Address', 'Property/properties/address', 'Unit/properties/address', 'Resident/properties/address']) {
      expect(accepts(pointer, null), pointer).toBe(pointer !== 'Address');
    }
  });

  it('closes the status sets DECISIONS.md fixes for units, residents and leases (null allowed)', () => {
    const accepts = (pointer: string, value: unknown) => ajv.validate({ $ref: `openapi.json#/components/schemas/${pointer}` }, value);
    const sets = {
      'Unit/properties/status': ['vacant', 'occupied', 'notice'],
      'Resident/properties/status': ['applicant', 'current', 'notice', 'past'],
      'Lease/properties/status': ['pending', 'active', 'notice', 'ended', 'terminated', 'evicted', 'cancelled'],
    };
    for (const [pointer, values] of Object.entries(sets)) {
      for (const v of [...values, null]) expect(accepts(pointer, v), `${pointer} ${v}`).toBe(true);
      for (const v of ['Active', 'inactive', '']) expect(accepts(pointer, v), `${pointer} ${v}`).toBe(false);
    }
  });

  it('gives every response of both documents a JSON Schema (a $ref or a type), never a zod object', async () => {
    const admin = (await (await api.get('/admin/v1/openapi.json')).json()) as Json;
    for (const d of [doc, admin]) {
      let checked = 0;
      for (const [path, item] of Object.entries<Json>(d.paths)) {
        for (const [method, op] of Object.entries<Json>(item)) {
          for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
            for (const media of Object.values<Json>(response.content ?? {})) {
              const schema = media.schema;
              expect(schema.$ref ?? schema.type ?? schema.anyOf ?? schema.oneOf, `${method} ${path} ${status}`).toBeDefined();
              expect(JSON.stringify(schema), `${method} ${path} ${status}`).not.toMatch(/"def":|"shape":/);
              checked++;
            }
          }
        }
      }
      expect(checked).toBeGreaterThan(50);
    }
  });

  it('documents the Prefer header of an Operation poll', () => {
    const prefer = doc.paths['/v1/operations/{id}'].get.parameters.find((p: Json) => p.in === 'header' && p.name === 'prefer');
    expect(prefer).toMatchObject({ required: false, schema: { type: 'string' } });
    expect(prefer.description).toMatch(/wait=N/);
  });

  it("gives every path id an example of its own kind's prefix, on every method", () => {
    const prefix: Record<string, string> = { properties: 'prp_', units: 'unt_', residents: 'res_', leases: 'lse_', operations: 'opr_', events: 'evt_' };
    let checked = 0;
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      const kind = /^\/v1\/([a-z_]+)\/\{id\}$/.exec(path)?.[1];
      if (!kind) continue;
      for (const [method, op] of Object.entries<Json>(item)) {
        const id = (op.parameters ?? []).find((p: Json) => p.in === 'path' && p.name === 'id');
        expect(id?.schema?.example ?? id?.example, `${method} ${path}`).toMatch(new RegExp(`^${prefix[kind]}`));
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(8);
  });

  it('documents every read endpoint with its errors as problem+json', () => {
    for (const name of ['properties', 'units', 'residents', 'leases']) {
      const list = doc.paths[`/v1/${name}`].get;
      const one = doc.paths[`/v1/${name}/{id}`].get;
      for (const s of ['200', '400', '401', '422', '429', '500']) expect(list.responses[s], `${name} list ${s}`).toBeDefined();
      for (const s of ['200', '400', '401', '404', '429', '500']) expect(one.responses[s], `${name} retrieve ${s}`).toBeDefined();
      expect(list.responses['400'].content['application/problem+json'].schema.$ref).toBe('#/components/schemas/Problem');
      expect(list.responses['429'].headers['Retry-After']).toBeDefined();
      const params = Object.fromEntries(list.parameters.map((p: Json) => [p.name, p]));
      expect(params.limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 25 });
      for (const p of ['offset', 'include_deleted', 'updated_after', 'created_after', 'created_before', 'x_id', 'integration_id', 'order-by']) {
        expect(params[p], `${name} documents ${p}`).toBeDefined();
      }
      expect(params.include_deleted.schema.type).toBe('boolean');
      // A datetime, or a date alone (midnight UTC): both are documented, as both are accepted.
      expect(params.updated_after.schema.type).toBeUndefined();
      expect(params.updated_after.schema.anyOf).toMatchObject([
        { type: 'string', format: 'date-time' },
        { type: 'string', format: 'date' },
      ]);
      expect(params['order-by'].schema.enum).toContain('created_at:desc');
    }
    const leaseParams = doc.paths['/v1/leases'].get.parameters.map((p: Json) => p.name);
    expect(leaseParams).toEqual(
      expect.arrayContaining(['property_id', 'unit_id', 'resident_id', 'status', 'type', 'start_date_gte', 'start_date_lte', 'end_date_gte', 'end_date_lte']),
    );
    expect(doc.paths['/v1/properties'].get.parameters.map((p: Json) => p.name)).toEqual(expect.arrayContaining(['status', 'type', 'name']));
    expect(doc.paths['/v1/units'].get.parameters.map((p: Json) => p.name)).toEqual(expect.arrayContaining(['property_id', 'status']));
    expect(doc.paths['/v1/residents'].get.parameters.map((p: Json) => p.name)).toEqual(expect.arrayContaining(['property_id', 'email', 'status']));
    // Unknown query parameters are refused (400), not ignored: each list says so.
    expect(doc.paths['/v1/residents'].get.description).toMatch(/any other .* is a 400/);
  });

  it('says, in both documents, which values a request may not carry: NUL in text, datetimes and dates outside years 0001 to 9999', async () => {
    const admin = (await (await api.get('/admin/v1/openapi.json')).json()) as Json;
    const NUL = ['\u0000', 'a\u0000', '\u0000a', 'Bearer x\u0000', '2025-01-01\u0000'];
    const DATETIME_PATTERN = '^(?!0000-)(?!(?:0001-01-01|9999-12-31)T.*[+-](?!00:00)[0-9]{2}:[0-9]{2}$)';
    for (const d of [doc, admin]) {
      const deref = (schema: Json): Json =>
        schema.$ref
          ? deref(
              schema.$ref
                .split('/')
                .slice(1)
                .reduce((n: Json, k: string) => n[k], d),
            )
          : schema;
      const unsaid: string[] = [];
      const dates: string[] = [];
      const walk = (raw: Json | undefined, where: string, seen: Set<Json>) => {
        if (!raw || typeof raw !== 'object' || seen.has(raw)) return;
        const schema = deref(raw);
        seen = new Set(seen).add(raw);
        const types = ([] as unknown[]).concat(schema.type);
        if (types.includes('string') && schema.enum === undefined && schema.const === undefined) {
          // A format that cannot hold NUL (a UUID, a URI, a date or datetime), or a pattern that refuses it.
          const byFormat = ['uuid', 'uri', 'date', 'date-time'].includes(schema.format);
          const byPattern = schema.pattern !== undefined && NUL.every((v) => !new RegExp(schema.pattern, 'u').test(v));
          if (!byFormat && !byPattern) unsaid.push(where);
          if (schema.format === 'date-time' && schema.pattern !== DATETIME_PATTERN) dates.push(where);
          if (schema.format === 'date' && schema.pattern !== '^(?!0000-)') dates.push(where);
        }
        for (const k of ['items', 'additionalProperties', 'propertyNames']) walk(schema[k], `${where}.${k}`, seen);
        for (const [n, v] of Object.entries(schema.properties ?? {})) walk(v as Json, `${where}.${n}`, seen);
        for (const k of ['oneOf', 'anyOf', 'allOf']) (schema[k] ?? []).forEach((v: Json, i: number) => walk(v, `${where}.${k}[${i}]`, seen));
      };
      let strings = 0;
      for (const [path, ops] of Object.entries(d.paths as Json)) {
        for (const [method, op] of Object.entries(ops as Json)) {
          // Path ids are left to their routes: a malformed one is a 404, like an unknown one.
          for (const p of (op as Json).parameters ?? []) if (p.in !== 'path') walk(p.schema, `${method} ${path} ${p.in} ${p.name}`, new Set());
          for (const c of Object.values(((op as Json).requestBody?.content ?? {}) as Json)) walk((c as Json).schema, `${method} ${path} body`, new Set());
          strings += 1;
        }
      }
      expect(strings).toBeGreaterThan(10);
      expect(unsaid, 'strings that do not say NUL is refused').toEqual([]);
      expect(dates, 'datetimes and dates without their bounds').toEqual([]);
    }
    // What can be said of the state-dependent rules is said: the fastest cadence of any plan, the header names.
    const create = admin.components.schemas.IntegrationCreate.properties.sync_interval_seconds;
    expect(create).toMatchObject({ minimum: 300 });
    const headers = admin.components.schemas.HttpDestinationInput.properties.headers;
    expect(headers).toMatchObject({ maxProperties: 20, propertyNames: { pattern: expect.any(String) } });
    const name = new RegExp(headers.propertyNames.pattern, 'u');
    expect(['Authorization', 'X-Api-Key', 'content-type'].every((n) => name.test(n))).toBe(true);
    expect(['Host', 'content-LENGTH', 'Bad Name', 'x\u0000', ''].some((n) => name.test(n))).toBe(false);
  });
});

describe('real responses match it', () => {
  it.each([
    ['properties', 'PropertySummary', 'Property'],
    ['units', 'Unit', 'Unit'],
    ['residents', 'Resident', 'Resident'],
    ['leases', 'Lease', 'Lease'],
  ])('%s: list and retrieve', async (name, itemSchema, recordSchema) => {
    const list = await conforms(await api.get(`/v1/${name}?limit=10`, { key: t.key }), `/v1/${name}`);
    expect(list.results.length).toBe(2);
    for (const r of list.results) sameFields(r, itemSchema);
    const entity = { properties: 'property', units: 'unit', residents: 'resident', leases: 'lease' }[name]!;
    const record = await conforms(await api.get(`/v1/${name}/${ids[entity]}`, { key: t.key }), `/v1/${name}/{id}`);
    sameFields(record, recordSchema);
  });

  it('problems of every class the read API answers', async () => {
    await conforms(await api.get('/v1/leases?limit=abc', { key: t.key }), '/v1/leases');
    const v = await conforms(await api.get('/v1/leases?limit=500', { key: t.key }), '/v1/leases');
    expect(v.errors).toHaveLength(1);
    await conforms(await api.get('/v1/leases'), '/v1/leases');
    await conforms(await api.get('/v1/leases/lse_nope', { key: t.key }), '/v1/leases/{id}');
    await conforms(await api.get('/healthz'), '/healthz');
    const ready = await api.get('/readyz');
    expect(ready.status).toBe(200);
    await conforms(ready, '/readyz');
  });

  it('a 429 matches too', async () => {
    const limited = await makeTenant(db);
    await db.update(organizations).set({ rateLimitPerMinute: 1, rateLimitBurst: 1 }).where(eq(organizations.id, limited.organizationId));
    expect((await api.get('/v1/units', { key: limited.key })).status).toBe(200);
    const res = await api.get('/v1/units', { key: limited.key });
    expect(res.status).toBe(429);
    await conforms(res, '/v1/units');
  });
});

describe('writes', () => {
  const send = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(api.url + path, {
      method,
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID(), ...headers },
      body: JSON.stringify(body),
    });

  it('documents every write with the Idempotency-Key header, its body schema, the 202 Operation and its errors', () => {
    const writes = [
      ['/v1/leases', 'post', 'LeaseCreate'],
      ['/v1/leases/{id}', 'patch', 'LeaseUpdate'],
      ['/v1/units', 'post', 'UnitCreate'],
      ['/v1/units/{id}', 'patch', 'UnitUpdate'],
      ['/v1/residents', 'post', 'ResidentCreate'],
      ['/v1/residents/{id}', 'patch', 'ResidentUpdate'],
    ] as const;
    for (const [path, method, schema] of writes) {
      const op = doc.paths[path][method];
      expect(op, `${method} ${path}`).toBeDefined();
      const header = op.parameters.find((p: Json) => p.name === 'idempotency-key');
      expect(header).toMatchObject({ in: 'header', required: true });
      expect(op.requestBody.content['application/json'].schema.$ref).toBe(`#/components/schemas/${schema}`);
      expect(op.responses['202'].content['application/json'].schema.$ref).toBe('#/components/schemas/Operation');
      for (const s of ['400', '401', '403', '404', '409', '413', '422', '429', '502']) expect(op.responses[s], `${method} ${path} ${s}`).toBeDefined();
    }
    const lease = resolve(doc.components.schemas.LeaseCreate);
    expect([...lease.required].sort()).toEqual(
      Object.keys(lease.properties)
        .filter((k) => k !== 'integration_id')
        .sort(),
    );
    expect(lease.additionalProperties).toBe(false);
    expect(doc.paths['/v1/operations/{id}'].get.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/Operation');
  });

  it('a 202, the Operation polled, and the write problems match it', async () => {
    const accepted = await conforms(await send('PATCH', `/v1/leases/${ids.lease}`, { occupants: 2 }), '/v1/leases/{id}', 'patch');
    sameFields(accepted, 'Operation');
    const polled = await conforms(await api.get(`/v1/operations/${accepted.id}`, { key: t.key }), '/v1/operations/{id}');
    expect(polled.id).toBe(accepted.id);
    await conforms(await api.get('/v1/operations/opr_01JH0000000000000000000000', { key: t.key }), '/v1/operations/{id}');
    await conforms(await send('PATCH', `/v1/leases/${ids.lease}`, { status: 'ended' }), '/v1/leases/{id}', 'patch');
    await conforms(await send('POST', '/v1/units', { unit_number: '1' }, { 'idempotency-key': '' }), '/v1/units', 'post');
    const key = crypto.randomUUID();
    await send('POST', '/v1/residents', { property_id: ids.property, first_name: 'A', last_name: 'B' }, { 'idempotency-key': key });
    const conflict = await conforms(
      await send('POST', '/v1/residents', { property_id: ids.property, first_name: 'A', last_name: 'C' }, { 'idempotency-key': key }),
      '/v1/residents',
      'post',
    );
    expect(conflict.status).toBe(409);
  });
});
