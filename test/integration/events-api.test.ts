/**
 * The public events feed (GET /v1/events, GET /v1/events/{id}) as a receiver catching up sees it: over real HTTP,
 * with the outbox relay of this file numbering events in production order. Events are recorded by the sync's own
 * write path (applyRecords, one transaction per page) from several transactions at once that commit out of id
 * order, while a reader pages with `after`: it must see every event exactly once.
 */
import { randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../db/client';
import { newId } from '../../db/ids';
import { applyRecords } from '../../db/apply';
import { events } from '../../db/schema';
import { createApiKey, createIntegration, type IntegrationRow } from '../../db/tenants';
import { RETENTION_MS } from '../../domain/webhooks';
import type { TestServer } from '../support/api-server';
import { makeTenant, SERVE_LIVE, testKeyring, type Tenant } from '../support/context';
import { propertyInput, unsyncedIntegration } from '../support/fixtures';
import { onServices } from '../support/services';
import { recordEvents, residentUpdates, type WebhookStack } from '../support/webhooks';
import { until } from '../support/until';

let db: Db;
let api: TestServer;
let stack: WebhookStack;

onServices({ pool: 12, settings: SERVE_LIVE, api: true, webhooks: true }, (s) => ({ db, api, webhooks: stack } = s));

async function tenant(opts: { mode?: 'test' | 'live' } = {}): Promise<Tenant> {
  const t = await makeTenant(db, { plan: 'scale', ...opts });
  stack.orgs.add(t.organizationId);
  return t;
}

async function getJson(path: string, key: string): Promise<{ status: number; body: any; raw: string; headers: Headers }> {
  const res = await api.get(path, { key });
  const raw = await res.text();
  return { status: res.status, body: raw ? JSON.parse(raw) : null, raw, headers: res.headers };
}

/** Pages from `after` until hasMore is false; returns the events seen. */
async function drain(key: string, after: string | undefined, query = '', limit = 7): Promise<any[]> {
  const seen: any[] = [];
  for (;;) {
    const r = await getJson(`/v1/events?limit=${limit}${after ? `&after=${after}` : ''}${query}`, key);
    expect(r.status, r.raw).toBe(200);
    seen.push(...r.body.results);
    if (r.body.results.length > 0) after = r.body.results.at(-1).id;
    if (!r.body.meta.hasMore) return seen;
  }
}

/** Waits until the relay has numbered every event of the organization. */
async function relayed(organizationId: string): Promise<void> {
  await until(
    'the relay to number every event',
    async () => {
      const [row] = await db.execute<{ n: number }>(
        sql`select count(*)::int as n from ${events} where organization_id = ${organizationId} and position is null`,
      );
      return row!.n;
    },
    (unnumbered) => unnumbered === 0,
    { timeoutMs: 20_000, intervalMs: 50 },
  );
}

async function positionOf(id: string): Promise<number | null> {
  const [row] = await db.select({ p: events.position }).from(events).where(eq(events.id, id));
  return row?.p ?? null;
}

describe('GET /v1/events', () => {
  it('serves each event exactly as webhooks deliver it, in production order, with the list envelope', async () => {
    const t = await tenant();
    const integ = { id: t.integrationId, organizationId: t.organizationId, mode: t.mode } as IntegrationRow;
    const ids = await recordEvents(db, integ, residentUpdates(3, 'a'));
    await relayed(t.organizationId);
    const r = await getJson('/v1/events', t.key);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    expect(r.headers.get('ratelimit-limit')).toBeTruthy();
    expect(r.body.meta).toEqual({ limit: 25, hasMore: false });
    expect(r.body.results.map((e: any) => e.id)).toEqual(ids);
    // The stored bytes, as a webhook carries them.
    const stored = await db.select({ id: events.id, body: events.body }).from(events).where(eq(events.organizationId, t.organizationId));
    for (const e of r.body.results) {
      const body = stored.find((s) => s.id === e.id)!.body!;
      expect(r.raw).toContain(body);
      expect(e).toEqual(JSON.parse(body));
      expect(Object.keys(e)).toEqual(['id', 'type', 'category', 'created_at', 'organization_id', 'integration_id', 'data']);
    }
    const one = await getJson(`/v1/events/${ids[1]}`, t.key);
    expect(one.status).toBe(200);
    expect(one.raw).toBe(stored.find((s) => s.id === ids[1])!.body);
  });

  it('pages with after and limit, filters by types, integration_id and created_at bounds', async () => {
    const t = await tenant();
    const other = await unsyncedIntegration(db, t.organizationId, { plan: 'scale' });
    const integ = { id: t.integrationId, organizationId: t.organizationId, mode: t.mode } as IntegrationRow;
    const a = await recordEvents(db, integ, residentUpdates(5, 'p'));
    const b = await recordEvents(db, other, [{ type: 'SYNC_COMPLETE', data: { sync_job_id: 'syj_x' } }]);
    const c = await recordEvents(db, integ, [{ type: 'LEASE_SIGNED', data: { id: 'lse_1' } }]);
    await relayed(t.organizationId);
    const all = [...a, ...b, ...c];

    const first = await getJson('/v1/events?limit=2', t.key);
    expect(first.body.meta).toEqual({ limit: 2, hasMore: true });
    expect(first.body.results.map((e: any) => e.id)).toEqual(all.slice(0, 2));
    expect((await drain(t.key, undefined, '', 2)).map((e) => e.id)).toEqual(all);
    expect((await drain(t.key, a[2])).map((e) => e.id)).toEqual(all.slice(3));
    // `after` may name an event the filters leave out.
    expect((await drain(t.key, a[0], '&types=LEASE_SIGNED,SYNC_COMPLETE')).map((e) => e.id)).toEqual([...b, ...c]);
    expect((await drain(t.key, undefined, `&integration_id=${other.id}`)).map((e) => e.id)).toEqual(b);
    expect((await drain(t.key, undefined, '&types=RESIDENT_UPDATED', 100)).length).toBe(5);
    const last = await getJson(`/v1/events/${c[0]}`, t.key);
    expect((await drain(t.key, undefined, `&created_after=${encodeURIComponent(last.body.created_at)}`)).map((e) => e.id)).toContain(c[0]);
    expect(await drain(t.key, undefined, '&created_before=2000-01-01')).toEqual([]);
    // Caught up: the same `after` again is an empty page until something new is recorded.
    const caughtUp = await getJson(`/v1/events?after=${c[0]}`, t.key);
    expect(caughtUp.body).toEqual({ meta: { limit: 25, hasMore: false }, results: [] });
  });

  it('refuses what it cannot read: unknown parameters and types, malformed ids, limits out of range', async () => {
    const t = await tenant();
    const bad = async (query: string, status: number, pointer?: string) => {
      const r = await getJson(`/v1/events?${query}`, t.key);
      expect(r.status, `${query}: ${r.raw}`).toBe(status);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      if (pointer) expect(r.body.errors.map((e: any) => e.pointer)).toEqual([pointer]);
      return r.body;
    };
    expect((await bad('type=LEASE_SIGNED', 400)).detail).toContain('`type`');
    await bad('types=LEASE_SIGNED,NOPE', 422, 'types');
    await bad('after=nope', 400);
    await bad('limit=0', 422, 'limit');
    await bad('limit=101', 422, 'limit');
    await bad('integration_id=not-a-uuid', 400);
    await bad('created_after=yesterday', 400);
    // Percent-encoding that does not decode is malformed, never read as the literal text.
    expect((await bad('types=%FF', 400)).detail).toContain('`types`');
    await bad('integration_id=%E2%82', 400);
    const unknown = await bad(`after=${newId('event')}`, 404);
    expect(unknown.detail).toContain('start over without `after`');
    expect((await getJson('/v1/events/evt_nope', t.key)).status).toBe(404);
    expect((await api.get('/v1/events')).status).toBe(401);
  });

  it('shows nothing across organizations and modes: lists leave them out, retrieves and cursors are 404', async () => {
    const t = await tenant();
    const stranger = await tenant();
    const live = await unsyncedIntegration(db, t.organizationId, { mode: 'live', plan: 'scale', source: 'entrata' });
    const { key: liveKey } = await createApiKey(db, { organizationId: t.organizationId, mode: 'live' });
    const mine = await recordEvents(db, { id: t.integrationId, organizationId: t.organizationId, mode: 'test' } as IntegrationRow, residentUpdates(2, 'm'));
    const theirs = await recordEvents(
      db,
      { id: stranger.integrationId, organizationId: stranger.organizationId, mode: 'test' } as IntegrationRow,
      residentUpdates(2, 's'),
    );
    const liveOnes = await recordEvents(db, live, residentUpdates(2, 'l'));
    await relayed(t.organizationId);
    await relayed(stranger.organizationId);

    expect((await drain(t.key, undefined)).map((e) => e.id)).toEqual(mine);
    expect((await drain(liveKey, undefined)).map((e) => e.id)).toEqual(liveOnes);
    expect((await drain(stranger.key, undefined)).map((e) => e.id)).toEqual(theirs);
    for (const id of [...theirs, ...liveOnes]) {
      expect((await getJson(`/v1/events/${id}`, t.key)).status).toBe(404);
      expect((await getJson(`/v1/events?after=${id}`, t.key)).status).toBe(404);
    }
    expect((await getJson(`/v1/events/${mine[0]}`, liveKey)).status).toBe(404);
    expect((await getJson(`/v1/events/${mine[0]}`, stranger.key)).status).toBe(404);
    expect((await getJson(`/v1/events/${mine[0]}`, t.key)).status).toBe(200);
  });

  it('an event the relay has not numbered yet is a cursor with nothing after it yet, not a 404', async () => {
    // An organization the test relay does not serve: its events stay unnumbered.
    const t = await makeTenant(db, { plan: 'scale' });
    const integ = { id: t.integrationId, organizationId: t.organizationId, mode: t.mode } as IntegrationRow;
    const [id] = await recordEvents(db, integ, residentUpdates(1, 'unnumbered'));
    expect(await positionOf(id!)).toBeNull();
    expect((await getJson(`/v1/events/${id}`, t.key)).status).toBe(200);
    const page = await getJson(`/v1/events?after=${id}`, t.key);
    expect(page.status, page.raw).toBe(200);
    expect(page.body.results).toEqual([]);
    expect(page.body.meta.hasMore).toBe(false);
  });

  it('keeps 30 days: an older event is neither listed, retrieved nor a cursor', async () => {
    const t = await tenant();
    const integ = { id: t.integrationId, organizationId: t.organizationId, mode: t.mode } as IntegrationRow;
    const old = newId('event');
    await db.insert(events).values({
      id: old,
      organizationId: t.organizationId,
      integrationId: t.integrationId,
      mode: 'test',
      type: 'SYNC_COMPLETE',
      category: 'sync_lifecycle',
      data: { sync_job_id: 'syj_old' },
      createdAt: new Date(Date.now() - RETENTION_MS - 60_000),
    });
    const recent = await recordEvents(db, integ, residentUpdates(1, 'r'));
    await relayed(t.organizationId);
    expect(await positionOf(old)).not.toBeNull();
    expect((await drain(t.key, undefined)).map((e) => e.id)).toEqual(recent);
    expect((await getJson(`/v1/events/${old}`, t.key)).status).toBe(404);
    expect((await getJson(`/v1/events?after=${old}`, t.key)).status).toBe(404);
    expect((await getJson(`/v1/events/${recent[0]}`, t.key)).status).toBe(200);
  });
});

describe('the OpenAPI document', () => {
  it('describes both operations with their parameters, constraints and examples', async () => {
    const doc = (await (await api.get('/v1/openapi.json')).json()) as any;
    const list = doc.paths['/v1/events'].get;
    expect(list.operationId).toBe('list_events');
    const params = Object.fromEntries(list.parameters.map((p: any) => [p.name, p.schema]));
    expect(Object.keys(params).sort()).toEqual(['after', 'created_after', 'created_before', 'integration_id', 'limit', 'types']);
    expect(params.after.pattern).toBe('^evt_[0-9A-HJKMNP-TV-Z]{26}$');
    expect(params.limit).toMatchObject({ minimum: 1, maximum: 100, default: 25 });
    expect(params.types.pattern).toContain('LEASE_SIGNED');
    expect(params.types.pattern).not.toContain('SUBSCRIPTION_DISABLED');
    expect(Object.keys(list.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '422', '429']));
    expect(doc.paths['/v1/events/{id}'].get.operationId).toBe('retrieve_event');
    expect(doc.components.schemas.Event.example).toMatchObject({ id: expect.stringMatching(/^evt_/), type: 'LEASE_UPDATED' });
    expect(doc.components.schemas.EventList.example.meta).toEqual({ limit: 25, hasMore: true });
  });
});

describe('production order under concurrent transactions', () => {
  it('never shows an event while one before it is uncommitted: a late commit comes after, not in a gap', async () => {
    const t = await tenant();
    const integ = { id: t.integrationId, organizationId: t.organizationId, mode: t.mode } as IntegrationRow;
    const ctx = { integration: { id: t.integrationId, organizationId: t.organizationId, mode: t.mode }, emitEvents: true };
    const before = await recordEvents(db, integ, residentUpdates(1, 'b'));
    await relayed(t.organizationId);

    // A page of a sync that records its event first and commits last.
    let commit!: () => void;
    const held = new Promise<void>((resolve) => (commit = resolve));
    let slowIds: string[] = [];
    const slow = db.transaction(async (tx) => {
      await applyRecords(tx, ctx, 'property', [propertyInput(`SLOW-${randomUUID().slice(0, 6)}`)]);
      slowIds = (await tx.select({ id: events.id }).from(events).where(eq(events.organizationId, t.organizationId)))
        .map((r) => r.id)
        .filter((id) => !before.includes(id));
      await held;
    });
    await until('the slow page to record its event', () => slowIds.length > 0);
    const fast = await recordEvents(db, integ, residentUpdates(1, 'f'));
    await relayed(t.organizationId); // (the slow one's event is invisible until it commits)
    expect(await positionOf(fast[0]!)).not.toBeNull();

    // The reader sees the committed one and goes on from it...
    const page = await drain(t.key, before[0]);
    expect(page.map((e) => e.id)).toEqual(fast);
    // ...and the one committed late is after it, not behind the reader's cursor.
    commit();
    await slow;
    expect(slowIds).toHaveLength(1);
    await relayed(t.organizationId);
    expect(slowIds[0]! < fast[0]!).toBe(true); // recorded first (ULID order), produced later
    expect((await drain(t.key, fast[0])).map((e) => e.id)).toEqual(slowIds);
  });

  it('a reader paging while sync pages commit concurrently sees every event exactly once', async () => {
    const t = await tenant();
    const integrations = [
      { id: t.integrationId, organizationId: t.organizationId, mode: t.mode },
      ...(
        await Promise.all(
          [1, 2].map(() =>
            createIntegration(
              db,
              {
                organizationId: t.organizationId,
                mode: 'test',
                plan: 'scale',
                sourceType: 'sandbox',
                sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' },
              },
              testKeyring(),
            ),
          ),
        )
      ).map((i) => ({ id: i.id, organizationId: i.organizationId, mode: i.mode })),
    ];
    let writing = true;
    // Three writers (one per integration, as syncs run), each page a transaction that records its events and then
    // waits a random while before committing, so commits land out of id order.
    const writers = integrations.map(async (integration, w) => {
      for (let page = 0; page < 12; page++) {
        await db.transaction(async (tx) => {
          await applyRecords(
            tx,
            { integration, emitEvents: true },
            'property',
            [1, 2, 3].map((i) => propertyInput(`W${w}-${page}-${i}`)),
          );
          await tx.execute(sql`select pg_sleep(${Math.random() * 0.08})`);
        });
      }
    });
    const all = Promise.all(writers).finally(() => (writing = false));

    const seen: string[] = [];
    let after: string | undefined;
    while (writing) {
      const got = await drain(t.key, after, '', 5);
      seen.push(...got.map((e) => e.id));
      if (got.length > 0) after = got.at(-1).id;
      // Paces the reader (not an absence proof): what it saw is checked once every writer has committed.
      await new Promise((r) => setTimeout(r, 20));
    }
    await all;
    await relayed(t.organizationId);
    const rest = await drain(t.key, after, '', 5);
    seen.push(...rest.map((e) => e.id));

    const recorded = (await db.select({ id: events.id }).from(events).where(eq(events.organizationId, t.organizationId))).map((r) => r.id);
    expect(recorded).toHaveLength(3 * 12 * 3);
    expect(new Set(seen).size).toBe(seen.length); // no repeat
    expect([...seen].sort()).toEqual([...recorded].sort()); // no gap
    // What was seen is production order: strictly increasing positions.
    const positions = await db.execute<{ id: string; position: number }>(
      sql`select id, position::float8 as position from ${events} where organization_id = ${t.organizationId}`,
    );
    const pos = new Map(positions.map((r) => [r.id, Number(r.position)]));
    for (let i = 1; i < seen.length; i++) expect(pos.get(seen[i]!)!).toBeGreaterThan(pos.get(seen[i - 1]!)!);
  });
});
