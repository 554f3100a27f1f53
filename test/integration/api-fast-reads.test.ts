/**
 * The read fast path (api/fast-reads.ts) answers exactly as the app does: the same requests are sent over real HTTP
 * to one app served twice, with the fast path in front and without it, and the two answers compared byte for byte
 * (status line, headers in their order, body), but for the Date header, a generated request id and the rate-limit
 * figures, which move between the two requests. Each request also says which path answered it, so both are covered.
 */
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import type { ServerType } from '@hono/node-server';
import { createApp, type App } from '../../api/app';
import { serveApi } from '../../api/server';
import { lazyTemporalClient } from '../../api/temporal';
import type { Config } from '../../config';
import { createLogger } from '../../config/logger';
import { closeDb, type Db } from '../../db/client';
import { applyRecords, type ApplyContext } from '../../db/apply';
import { moveOperation, requestHashOf } from '../../db/operations';
import { organizations } from '../../db/schema';
import { createApiKey } from '../../db/tenants';
import { softDeleteUnseen } from '../../db/seen';
import type { Entity, InputOf } from '../../domain/cdm';
import { createKeyring } from '../../domain/secrets';
import { makeTenant, testConfig, testDb, type Tenant } from '../support/context';
import { leaseInput, leaseResidents, propertyInput, residentInput, unitInput } from '../support/fixtures';
import { acceptDriven } from '../support/writes';

let db: Db;
let config: Config;
let app: App;
let temporal: ReturnType<typeof lazyTemporalClient>;
let fast: ServerType;
let plain: ServerType;
let a: Tenant;
let b: Tenant;
/** Keys of A with one scope each. */
let readOnly: string;
let writeOnly: string;
const ids = new Map<string, string>();
/** Operations of A by status, and one of B. */
const operationIds: Record<'queued' | 'running' | 'succeeded' | 'failed' | 'other', string> = { queued: '', running: '', succeeded: '', failed: '', other: '' };
/** Whether the fast path took each request sent to the fast server, in order. */
const taken: boolean[] = [];

const portOf = (s: ServerType) => (s.address() as AddressInfo).port;
const listen = (s: ServerType) => new Promise<void>((resolve) => (s.listening ? resolve() : s.once('listening', () => resolve())));

/** One GET over a fresh connection, the whole answer as sent. */
function raw(port: number, path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n${lines.join('')}\r\n`);
  });
}

/** What may differ between two answers to the same request: the date, a generated request id, the bucket's figures. */
const comparable = (answer: string) =>
  answer
    .replace(/^date: .*$/im, 'date: -')
    .replace(/req_[0-9A-HJKMNP-TV-Z]{26}/g, 'req_-')
    .replace(/^(ratelimit: "burst";r=)\d+;t=\d+/im, '$1-;t=-')
    .replace(/^(ratelimit-(?:remaining|reset)): \d+/gim, '$1: -');

async function both(path: string, headers: Record<string, string>): Promise<{ fast: string; plain: string; took: boolean }> {
  const before = taken.length;
  const f = await raw(portOf(fast), path, headers);
  const took = taken[before] ?? false;
  const p = await raw(portOf(plain), path, headers);
  return { fast: comparable(f), plain: comparable(p), took };
}

async function apply<E extends Entity>(t: Tenant, entity: E, inputs: InputOf[E][], now: Date) {
  const ctx: ApplyContext = { integration: { id: t.integrationId, organizationId: t.organizationId, mode: t.mode }, emitEvents: false, now };
  const r = await db.transaction((tx) => applyRecords(tx, ctx, entity, inputs));
  for (const [x, id] of r.ids) ids.set(`${t.organizationId}:${x}`, id);
}

beforeAll(async () => {
  db = testDb(4);
  config = testConfig();
  temporal = lazyTemporalClient(config, { connectTimeoutMs: 1_000 });
  app = createApp({ config, db, temporal, logger: createLogger('api-test', { level: 'silent' }), secrets: createKeyring(config.ENCRYPTION_KEYS) });
  const reads = app.reads;
  fast = serveApi({
    fetch: app.fetch,
    reads: (req, res) => {
      const took = reads(req, res);
      taken.push(took);
      return took;
    },
    port: 0,
    hostname: '127.0.0.1',
    bases: config,
  });
  plain = serveApi({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', bases: config });
  await Promise.all([listen(fast), listen(plain)]);

  a = await makeTenant(db);
  b = await makeTenant(db);
  readOnly = (await createApiKey(db, { organizationId: a.organizationId, mode: a.mode, scopes: ['read'] })).key;
  writeOnly = (await createApiKey(db, { organizationId: a.organizationId, mode: a.mode, scopes: ['write'] })).key;
  await db.update(organizations).set({ rateLimitPerMinute: 1_000_000, rateLimitBurst: 100_000 }).where(eq(organizations.id, a.organizationId));
  const t0 = new Date('2025-06-01T00:00:00.000Z');
  const leases = [
    leaseInput('L1', { property: 'P1', unit: 'U1', residents: leaseResidents('R1', 'R2') }),
    leaseInput('L2', { property: 'P1', unit: 'U2', residents: leaseResidents('R2') }, { status: 'pending' }),
  ];
  for (const t of [a, b]) {
    await apply(t, 'property', [propertyInput('P1', { name: 'Sunset 100%_Towers' }), propertyInput('P2')], t0);
    await apply(t, 'unit', [unitInput('U1', 'P1'), unitInput('U2', 'P1')], t0);
    await apply(t, 'resident', [residentInput('R1', 'P1'), residentInput('R2', 'P1')], t0);
    await apply(t, 'lease', leases, t0);
  }
  // A later sync run of A sees L1 only: L2 is deleted at the source, hidden unless asked for.
  const integration = { id: a.integrationId, organizationId: a.organizationId, mode: a.mode };
  const job = 'syj_01JH00000000000000000000FR';
  await db.transaction(async (tx) => {
    await applyRecords(tx, { integration, emitEvents: false, syncJobId: job, now: new Date('2025-06-02T00:00:00.000Z') }, 'lease', [leases[0]!]);
    await softDeleteUnseen(tx, { integration, emitEvents: false, syncJobId: job, now: new Date('2025-06-02T00:00:01.000Z') }, 'lease');
  });

  // Writes in each state an Operation can be polled in (db/operations.ts moves them as the write workflow does).
  const accept = async (t: Tenant, key: string, now: Date) => {
    const request = { x_id: key };
    const r = await acceptDriven(
      db,
      {
        organizationId: t.organizationId,
        integrationId: t.integrationId,
        mode: t.mode,
        type: 'lease.update',
        request,
        targetId: ids.get(`${t.organizationId}:L1`),
        targetXId: 'L1',
        idempotencyKey: key,
        requestHash: requestHashOf('PATCH', '/v1/leases/x', request),
      },
      now,
    );
    if (r.outcome !== 'created') throw new Error(`operation ${key} not created`);
    return r.operation.id;
  };
  const at = new Date('2025-06-03T10:00:00.250Z');
  operationIds.queued = await accept(a, 'op-queued', at);
  operationIds.running = await accept(a, 'op-running', at);
  await moveOperation(
    db,
    operationIds.running,
    'running',
    { attempts: 2, nextAttemptAt: new Date('2025-06-03T10:00:07.5Z'), lastError: 'source timed out' },
    at,
  );
  operationIds.succeeded = await accept(a, 'op-succeeded', at);
  await moveOperation(
    db,
    operationIds.succeeded,
    'succeeded',
    {
      sourceState: 'applied',
      appliedAt: new Date('2025-06-03T10:00:01.001Z'),
      reconcileState: 'reconciled',
      attempts: 1,
      resourceId: ids.get(`${a.organizationId}:L1`),
      resourceXId: 'L1',
    },
    at,
  );
  operationIds.failed = await accept(a, 'op-failed', at);
  await moveOperation(
    db,
    operationIds.failed,
    'failed',
    { sourceState: 'rejected', reconcileState: 'failed', attempts: 1, lastError: 'the source rejected the "end_date"' },
    at,
  );
  operationIds.other = await accept(b, 'op-other', at);
});

afterAll(async () => {
  await Promise.all([fast, plain].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await app?.close();
  await temporal?.close();
  await closeDb(db);
});

describe('the read fast path', () => {
  const key = () => ({ authorization: `Bearer ${a.key}`, 'x-request-id': 'caller-id-1' });

  it('answers the hot reads exactly as the app does, with or without a request id of the caller', async () => {
    const cases: [string, Record<string, string>][] = [
      [`/v1/leases/${ids.get(`${a.organizationId}:L1`)}`, key()],
      [`/v1/leases/${ids.get(`${a.organizationId}:L1`)}`, { authorization: `Bearer ${a.key}` }],
      [`/v1/units/${ids.get(`${a.organizationId}:U1`)}`, key()],
      [`/v1/residents/${ids.get(`${a.organizationId}:R2`)}`, key()],
      [`/v1/properties/${ids.get(`${a.organizationId}:P1`)}`, key()],
      ['/v1/leases', key()],
      ['/v1/leases?limit=1&status=active,pending&updated_after=2025-01-01', key()],
      ['/v1/leases?limit=1&offset=1&include_deleted=true&order-by=created_at:desc', key()],
      [`/v1/leases?resident_id=${ids.get(`${a.organizationId}:R2`)},res_x`, key()],
      ['/v1/properties?name=100%25_&limit=5', key()],
      ['/v1/units?status=', key()],
      ['/v1/residents?email=NOBODY@example.com', key()],
    ];
    for (const [path, headers] of cases) {
      const r = await both(path, headers);
      expect(r.took, path).toBe(true);
      expect(r.fast, path).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(r.fast, path).toBe(r.plain);
    }
  });

  it("answers a record of another organization, a deleted one, an unknown id, a missing or bad key the app's way", async () => {
    const cases: [string, Record<string, string>, number][] = [
      [`/v1/leases/${ids.get(`${b.organizationId}:L1`)}`, key(), 404],
      [`/v1/leases/${ids.get(`${a.organizationId}:L2`)}`, key(), 404],
      [`/v1/units/unt_${'0'.repeat(26)}`, key(), 404],
      [`/v1/leases/${ids.get(`${a.organizationId}:L1`)}`, { 'x-request-id': 'caller-id-2' }, 401],
      ['/v1/leases', { authorization: `Bearer sk_test_${'a'.repeat(40)}`, 'x-request-id': 'caller-id-3' }, 401],
      ['/v1/leases', { authorization: 'Basic abc' }, 401],
    ];
    for (const [path, headers, status] of cases) {
      const r = await both(path, headers);
      expect(r.took, path).toBe(true);
      expect(r.fast, path).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(r.fast, path).toBe(r.plain);
    }
  });

  it("answers an Operation's polls exactly as the app does, in every state and for an id it does not show", async () => {
    const cases: [string, Record<string, string>, number][] = [
      [`/v1/operations/${operationIds.queued}`, key(), 200],
      [`/v1/operations/${operationIds.running}`, key(), 200],
      [`/v1/operations/${operationIds.succeeded}`, key(), 200],
      [`/v1/operations/${operationIds.failed}`, { authorization: `Bearer ${a.key}` }, 200],
      // A held poll of an ended Operation: answered at once, saying the wait applies (Preference-Applied).
      [`/v1/operations/${operationIds.succeeded}`, { ...key(), prefer: 'wait=5' }, 200],
      [`/v1/operations/${operationIds.other}`, key(), 404],
      ['/v1/operations/opr_01JH0000000000000000000000', key(), 404],
      ['/v1/operations/not_an_id', key(), 404],
      [`/v1/operations/${operationIds.queued}`, { 'x-request-id': 'caller-id-4' }, 401],
      [`/v1/operations/${operationIds.queued}`, { authorization: `Bearer sk_test_${'b'.repeat(40)}` }, 401],
    ];
    const statuses: string[] = [];
    for (const [path, headers, status] of cases) {
      const r = await both(path, headers);
      expect(r.took, path).toBe(true);
      expect(r.fast, path).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(r.fast, path).toBe(r.plain);
      if (status === 200) statuses.push((JSON.parse(r.fast.slice(r.fast.indexOf('\r\n\r\n') + 4)) as { status: string }).status);
    }
    expect(statuses).toEqual(['queued', 'running', 'succeeded', 'failed', 'succeeded']);
  });

  it("answers a key without the scope a read needs the app's way (403), and an Operation's poll to a key of either scope", async () => {
    const as = (k: string) => ({ authorization: `Bearer ${k}`, 'x-request-id': 'caller-id-5' });
    const cases: [string, Record<string, string>, number][] = [
      [`/v1/leases/${ids.get(`${a.organizationId}:L1`)}`, as(writeOnly), 403],
      ['/v1/leases?limit=1', as(writeOnly), 403],
      ['/v1/properties', as(writeOnly), 403],
      [`/v1/operations/${operationIds.succeeded}`, as(writeOnly), 200],
      [`/v1/leases/${ids.get(`${a.organizationId}:L1`)}`, as(readOnly), 200],
      [`/v1/operations/${operationIds.failed}`, as(readOnly), 200],
    ];
    for (const [path, headers, status] of cases) {
      const r = await both(path, headers);
      expect(r.took, path).toBe(true);
      expect(r.fast, path).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(r.fast, path).toBe(r.plain);
      if (status === 403) expect(r.fast, path).toContain('"detail":"Insufficient permissions"');
    }
  });

  it('leaves to the app what it would answer otherwise, which then answers as it always has', async () => {
    const lease = ids.get(`${a.organizationId}:L2`)!;
    const cases: [string, Record<string, string>, number][] = [
      [`/v1/leases/${lease}?include_deleted=true`, key(), 200],
      [`/v1/leases/${lease}?include_deleted=maybe`, key(), 400],
      ['/v1/leases/not-an-id', key(), 404],
      ['/v1/leases/', key(), 404],
      ['/v1/leases?statuz=active', key(), 400],
      ['/v1/leases?limit=1000', key(), 422],
      ['/v1/leases?limit=abc', key(), 400],
      ['/v1/leases?x_id=L1&x_id=L2', key(), 400],
      ['/v1/leases?x_id=a%00b', key(), 400],
      // Percent-encoding that does not decode as UTF-8 (Hono's parser would keep it as the literal text).
      ['/v1/properties?name=%FF', key(), 400],
      ['/v1/leases?x_id=%E2%82', key(), 400],
      ['/v1/properties?name=%', key(), 400],
      ['/v1/units?%FF=x', key(), 400],
      [`/v1/leases/${lease}?include_deleted=true&q=%FF`, key(), 400],
      ['/v1/leases?updated_after=2025-13-45', key(), 400],
      ['/v1/events', key(), 200],
      [`/v1/operations/${operationIds.queued}?wait=1`, key(), 200],
      [`/v1/operations/${operationIds.queued}/`, key(), 404],
      ['/v1/operations/opr%5F01JH0000000000000000000000', key(), 404],
    ];
    for (const [path, headers, status] of cases) {
      const r = await both(path, headers);
      expect(r.took, path).toBe(false);
      expect(r.fast, path).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(r.fast, path).toBe(r.plain);
    }
    // Two Authorization headers: Node keeps the first, the app's web Headers joins both; the app decides.
    const twice = await new Promise<string>((resolve, reject) => {
      const socket = connect(portOf(fast), '127.0.0.1');
      let out = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (out += d));
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
      socket.write(`GET /v1/leases HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${a.key}\r\nauthorization: Bearer ${b.key}\r\n\r\n`);
    });
    expect(taken.at(-1)).toBe(false);
    expect(twice).toMatch(/^HTTP\/1\.1 401 /);
  });
});
