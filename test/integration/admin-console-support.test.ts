/**
 * The admin endpoints the operator console reads, as an operator sees them over real HTTP: the organization list, an
 * integration's events of the retention window with their deliveries, one event with its payload, an event's resend
 * (on the real Temporal dev server, with this file's delivery worker and outbox relay and a local receiver), and the
 * `order` parameter of the lists ordered by creation time.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { newId } from '../../db/ids';
import { events, webhookDeliveries } from '../../db/schema';
import type { IntegrationRow } from '../../db/tenants';
import { eventBody } from '../../db/webhooks';
import { categoryOf, type EventType } from '../../domain/events';
import { RETENTION_MS } from '../../domain/webhooks';
import { adminCaller, expectProblem as expectProblemOf, startApi, type Reply, type TestServer } from '../support/api-server';
import { testConfig } from '../support/context';
import { unsyncedIntegration } from '../support/fixtures';
import { onServices } from '../support/services';
import { until } from '../support/until';
import { recordEvents, residentUpdates, webhookIntegration, type Receiver, type WebhookStack } from '../support/webhooks';

/** 7 attempts, 150 ms apart: the real schedule's shape, shrunk. */
const SCHEDULE = '0,150,150,150,150,150,150';
const DAY = 86_400_000;

let db: Db;
let config: Config;
let api: TestServer;
let stack: WebhookStack;
let receiver: Receiver;

onServices({ pool: 6, settings: { WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE }, api: true, webhooks: true, receiver: true }, (s) => {
  ({ db, config, api, webhooks: stack, receiver } = s);
});

const admin = (method: string, path: string, body?: unknown, raw?: string): Promise<Reply> => adminCaller(api, config.ADMIN_TOKEN)(method, path, body, raw);
const expectProblem = (r: Reply, status: number, slug: string) => expectProblemOf(r, status, slug, config.DOCS_BASE_URL);
const pointers = (r: Reply) => (r.body.errors as { pointer: string }[]).map((e) => e.pointer);

/** Every page of a list, following `hasMore`. */
async function everything(path: string, query = ''): Promise<any[]> {
  const out: any[] = [];
  for (let offset = 0; ; offset += 100) {
    const r = await admin('GET', `${path}?limit=100&offset=${offset}${query}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...r.body.results);
    if (!r.body.meta.hasMore) return out;
  }
}

/** Sorted by (created_at, id) in `dir`: the order every list of creation time promises, ties included. */
function expectOrdered(rows: { created_at: string; id: string }[], dir: 'asc' | 'desc') {
  const key = (r: { created_at: string; id: string }) => `${r.created_at}|${r.id}`;
  const sorted = [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  expect(rows.map(key)).toEqual((dir === 'asc' ? sorted : sorted.reverse()).map(key));
}

/** One event recorded at `createdAt` (as the sync records it, but back-dated). */
async function eventAt(integration: IntegrationRow, type: EventType, createdAt: Date, extra: Partial<typeof events.$inferInsert> = {}): Promise<string> {
  const id = newId('event');
  await db.insert(events).values({
    id,
    organizationId: integration.organizationId,
    integrationId: integration.id,
    mode: integration.mode,
    type,
    category: categoryOf(type),
    data: { id: `rec_${id}`, changed: ['status'] },
    createdAt,
    ...extra,
  });
  return id;
}

const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
const at = (path: string) => receiver.received.filter((r) => r.path === path);

async function subscribe(integrationId: string, url: string, eventTypes: string[] = ['*']): Promise<{ id: string }> {
  const r = await admin('POST', `/integrations/${integrationId}/webhook_subscriptions`, { url, event_types: eventTypes });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}
const deliveriesOf = async (subscriptionId: string): Promise<any[]> =>
  (await admin('GET', `/webhook_subscriptions/${subscriptionId}/deliveries?limit=100`)).body.results;

const NO_DELIVERIES = { total: 0, pending: 0, retrying: 0, succeeded: 0, dead_lettered: 0, cancelled: 0, expired: 0 };

describe('GET /organizations', () => {
  it('pages every organization, oldest first by default and newest first with order=desc', async () => {
    const mine: string[] = [];
    for (const name of ['console-a', 'console-b', 'console-c']) mine.push((await admin('POST', '/organizations', { name })).body.id);

    const asc = await everything('/organizations');
    expectOrdered(asc, 'asc');
    const positions = mine.map((id) => asc.findIndex((o) => o.id === id));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(asc[positions[0]!]).toMatchObject({ name: 'console-a', rate_limit_per_minute: null, rate_limit_burst: null });
    // Organizations made meanwhile (by other test files) can only come after these.
    expect((await everything('/organizations', '&order=asc')).slice(0, asc.length)).toEqual(asc);

    const desc = await everything('/organizations', '&order=desc');
    expectOrdered(desc, 'desc');
    const descPositions = mine.map((id) => desc.findIndex((o) => o.id === id));
    expect([...descPositions].sort((a, b) => b - a)).toEqual(descPositions);

    // A page is the slice of the whole list at its offset, and says whether more follow.
    const page = await admin('GET', `/organizations?limit=2&offset=${positions[0]}`);
    expect(page.status).toBe(200);
    expect(page.body.meta).toEqual({ limit: 2, offset: positions[0], hasMore: true });
    expect(page.body.results).toEqual(asc.slice(positions[0], positions[0]! + 2));
    const beyond = await admin('GET', `/organizations?offset=${asc.length + 1000}`);
    expect(beyond.body).toEqual({ meta: { limit: 25, offset: asc.length + 1000, hasMore: false }, results: [] });
  });

  it('refuses an unknown order or an out-of-range limit with 422 naming the parameter', async () => {
    let r = await admin('GET', '/organizations?order=sideways');
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['order']);
    r = await admin('GET', '/organizations?limit=0');
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['limit']);
  });

  it('refuses paging that is not an integer as written with 400, as /v1 does (the document says integer)', async () => {
    // A number coercion would read each of these as some number (`offset=` as 0) and serve a page.
    for (const query of ['offset=', 'offset=%20', 'limit=1e1', 'offset=0x10', 'limit=2.0', 'limit=abc']) {
      const r = await admin('GET', `/organizations?${query}`);
      expectProblem(r, 400, 'bad_request');
      expect(r.body.detail).toContain(query.split('=')[0]);
    }
    const orgId = (await admin('POST', '/organizations', { name: 'Paging Inc' })).body.id;
    const r = await admin('GET', `/organizations/${orgId}/integrations?offset=`);
    expectProblem(r, 400, 'bad_request');
    expect((await admin('GET', `/organizations/${orgId}/integrations?offset=0&limit=%2B5`)).body.meta).toEqual({ limit: 5, offset: 0, hasMore: false });
  });
});

describe('events', () => {
  it("lists an integration's events of the last 30 days, newest first, filtered by type, with their deliveries", async () => {
    const integ = await webhookIntegration(db, null);
    const other = await webhookIntegration(db, null);
    const now = Date.now();
    const expired = await eventAt(integ, 'RESIDENT_UPDATED', new Date(now - RETENTION_MS - 60_000));
    const e2 = await eventAt(integ, 'LEASE_UPDATED', new Date(now - 10 * DAY), { recordId: 'lse_x' });
    const e3 = await eventAt(integ, 'RESIDENT_UPDATED', new Date(now - 5 * DAY), { syncJobId: 'syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8' });
    const e4 = await eventAt(integ, 'LEASE_UPDATED', new Date(now - 60_000), { operationId: 'opr_01JH0000000000000000000000' });
    await eventAt(other, 'LEASE_UPDATED', new Date(now - 30_000));
    const delivery = { eventId: e3, organizationId: integ.organizationId, integrationId: integ.id, eventType: 'RESIDENT_UPDATED' };
    await db.insert(webhookDeliveries).values([
      { id: newId('webhookDelivery'), subscriptionId: newId('webhookSubscription'), status: 'succeeded', ...delivery },
      { id: newId('webhookDelivery'), subscriptionId: newId('webhookSubscription'), status: 'dead_lettered', ...delivery },
    ]);

    const list = await admin('GET', `/integrations/${integ.id}/events`);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.meta).toEqual({ limit: 25, offset: 0, hasMore: false });
    expect(list.body.results.map((e: any) => e.id)).toEqual([e4, e3, e2]);
    expect(list.body.results.map((e: any) => e.id)).not.toContain(expired);
    expect(list.body.results[1]).toEqual({
      id: e3,
      integration_id: integ.id,
      type: 'RESIDENT_UPDATED',
      category: 'data_change',
      created_at: new Date(now - 5 * DAY).toISOString(),
      sync_job_id: 'syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8',
      operation_id: null,
      automation_run_id: null,
      record_id: null,
      dispatched_at: null,
      deliveries: { ...NO_DELIVERIES, total: 2, succeeded: 1, dead_lettered: 1 },
    });
    expect(list.body.results[0]).toMatchObject({ operation_id: 'opr_01JH0000000000000000000000', deliveries: NO_DELIVERIES });
    expect(list.body.results[2]).toMatchObject({ record_id: 'lse_x' });

    expect((await admin('GET', `/integrations/${integ.id}/events?order=asc`)).body.results.map((e: any) => e.id)).toEqual([e2, e3, e4]);
    expect((await admin('GET', `/integrations/${integ.id}/events?type=LEASE_UPDATED`)).body.results.map((e: any) => e.id)).toEqual([e4, e2]);
    expect((await admin('GET', `/integrations/${integ.id}/events?type=LEASE_UPDATED,RESIDENT_UPDATED&order=asc`)).body.results.map((e: any) => e.id)).toEqual([
      e2,
      e3,
      e4,
    ]);
    expect((await admin('GET', `/integrations/${integ.id}/events?type=LEASE_SIGNED`)).body.results).toEqual([]);
    const first = await admin('GET', `/integrations/${integ.id}/events?limit=2`);
    expect(first.body.meta.hasMore).toBe(true);
    expect(first.body.results.map((e: any) => e.id)).toEqual([e4, e3]);
    const second = await admin('GET', `/integrations/${integ.id}/events?limit=2&offset=2`);
    expect(second.body).toMatchObject({ meta: { limit: 2, offset: 2, hasMore: false } });
    expect(second.body.results.map((e: any) => e.id)).toEqual([e2]);

    const unknownType = await admin('GET', `/integrations/${integ.id}/events?type=LEASE_EXPLODED`);
    expectProblem(unknownType, 422, 'validation_error');
    expect(pointers(unknownType)).toEqual(['type']);
    expectProblem(await admin('GET', `/integrations/${integ.id}/events?order=up`), 422, 'validation_error');
    expectProblem(await admin('GET', `/integrations/${randomUUID()}/events`), 404, 'not_found');
    expectProblem(await admin('GET', '/integrations/not-a-uuid/events'), 404, 'not_found');
  });

  it('retrieves one event with its payload, and 404s for malformed, unknown and expired ids', async () => {
    const integ = await webhookIntegration(db, null);
    const [id] = await recordEvents(db, integ, residentUpdates(1, 'detail'));
    const before = await admin('GET', `/events/${id}`);
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    // Not serialized yet: nothing was sent, so there are no bytes to show.
    expect(before.body).toMatchObject({ id, type: 'RESIDENT_UPDATED', category: 'data_change', deliveries: NO_DELIVERIES, payload: null });
    const listed = (await admin('GET', `/integrations/${integ.id}/events`)).body.results[0];
    const { payload: _payload, ...view } = before.body;
    expect(view).toEqual(listed);

    const body = await eventBody(db, id!);
    const after = await admin('GET', `/events/${id}`);
    expect(after.body.payload).toEqual(JSON.parse(body!));
    expect(after.body.payload).toMatchObject({ id, type: 'RESIDENT_UPDATED', integration_id: integ.id, organization_id: integ.organizationId });

    const old = await eventAt(integ, 'LEASE_UPDATED', new Date(Date.now() - RETENTION_MS - 1_000));
    for (const bad of [old, 'evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'evt_nope', 'whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8', randomUUID()]) {
      expectProblem(await admin('GET', `/events/${bad}`), 404, 'not_found');
      expectProblem(await admin('POST', `/events/${bad}/resend`), 404, 'not_found');
    }
  });
});

describe('POST /events/{id}/resend', () => {
  it('gives a subscription that had the event one more attempt, and sends it to one created since as a new delivery', async () => {
    const integ = await webhookIntegration(db, stack);
    const had = await subscribe(integ.id, hookUrl('/resend-had'), ['RESIDENT_UPDATED']);
    const uninterested = await subscribe(integ.id, hookUrl('/resend-other'), ['LEASE_SIGNED']);
    const [id] = await recordEvents(db, integ, residentUpdates(1, 'resend'));
    await receiver.waitFor(() => at('/resend-had').length >= 1);
    const [first] = await until(
      () => deliveriesOf(had.id),
      (d) => d[0]?.status === 'succeeded',
    );
    expect(first).toMatchObject({ event_id: id, attempt_count: 1 });

    const later = await subscribe(integ.id, hookUrl('/resend-later'));
    const disabled = await subscribe(integ.id, hookUrl('/resend-disabled'));
    expect((await admin('PATCH', `/webhook_subscriptions/${disabled.id}`, { status: 'disabled' })).status).toBe(200);

    const r = await admin('POST', `/events/${id}/resend`);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.resent).toBe(2);
    expect(r.body.delivery_ids).toHaveLength(2);
    expect(r.body.delivery_ids).toContain(first.id);

    await receiver.waitFor(() => at('/resend-had').length >= 2 && at('/resend-later').length >= 1);
    // The same event, byte for byte, on the same delivery record: one more attempt recorded on it.
    expect(at('/resend-had')[1]!.raw.equals(at('/resend-had')[0]!.raw)).toBe(true);
    expect(at('/resend-later')[0]!.body.id).toBe(id);
    expect(at('/resend-later')[0]!.raw.equals(at('/resend-had')[0]!.raw)).toBe(true);
    const [again] = await until(
      () => deliveriesOf(had.id),
      (d) => d[0]?.attempt_count === 2 && d[0]?.status === 'succeeded',
    );
    expect(again!.id).toBe(first.id);
    expect(again!.attempts.map((a: any) => a.response_status)).toEqual([200, 200]);
    const [fresh] = await until(
      () => deliveriesOf(later.id),
      (d) => d[0]?.status === 'succeeded',
    );
    expect(fresh).toMatchObject({ event_id: id, attempt_count: 1 });
    expect(r.body.delivery_ids).toContain(fresh.id);

    expect(await deliveriesOf(uninterested.id)).toEqual([]);
    expect(await deliveriesOf(disabled.id)).toEqual([]);
    expect(at('/resend-other')).toEqual([]);
    expect(at('/resend-disabled')).toEqual([]);
    const detail = await until(
      () => admin('GET', `/events/${id}`),
      (d) => d.body.deliveries.succeeded === 2,
    );
    expect(detail.body.deliveries).toEqual({ ...NO_DELIVERIES, total: 2, succeeded: 2 });
    expect(detail.body.dispatched_at).not.toBeNull();
  });

  it('answers 202 with resent 0 when no active subscription wants the event', async () => {
    const integ = await webhookIntegration(db, null);
    await subscribe(integ.id, hookUrl('/resend-none'), ['LEASE_SIGNED']);
    const id = await eventAt(integ, 'RESIDENT_UPDATED', new Date());
    const r = await admin('POST', `/events/${id}/resend`);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toEqual({ resent: 0, delivery_ids: [] });
  });

  it('refuses an event of an integration on a plan without webhooks with 403', async () => {
    const integ = await webhookIntegration(db, null, { plan: 'growth' });
    const id = await eventAt(integ, 'LEASE_UPDATED', new Date());
    const r = await admin('POST', `/events/${id}/resend`);
    expectProblem(r, 403, 'forbidden');
    expect(r.body.detail).toMatch(/growth plan/);
    // Its events stay readable.
    expect((await admin('GET', `/events/${id}`)).status).toBe(200);
  });

  it('answers 503 when Temporal is unreachable', async () => {
    const unreachable = await startApi(db, testConfig({ TEMPORAL_ADDRESS: '127.0.0.1:1' }));
    try {
      const integ = await webhookIntegration(db, null);
      await subscribe(integ.id, hookUrl('/resend-503'));
      const id = await eventAt(integ, 'RESIDENT_UPDATED', new Date());
      const res = await fetch(`${unreachable.url}/admin/v1/events/${id}/resend`, {
        method: 'POST',
        headers: { authorization: `Bearer ${config.ADMIN_TOKEN}` },
      });
      const r: Reply = { status: res.status, headers: res.headers, body: await res.json() };
      expectProblem(r, 503, 'internal_error');
      expect(r.body.detail).toMatch(/^Could not resend the event: Temporal is unreachable/);
    } finally {
      await unreachable.close();
    }
  });
});

describe('order on the admin lists', () => {
  it('API keys and integrations: oldest first by default, the exact reverse with order=desc', async () => {
    const org = (await admin('POST', '/organizations', { name: 'console-order' })).body.id;
    for (let i = 0; i < 3; i++) expect((await admin('POST', `/organizations/${org}/api_keys`, { mode: 'test' })).status).toBe(201);
    for (let i = 0; i < 3; i++) await unsyncedIntegration(db, org, { plan: 'scale' });
    for (const list of [`/organizations/${org}/api_keys`, `/organizations/${org}/integrations`]) {
      const byDefault = (await admin('GET', list)).body.results;
      expect(byDefault).toHaveLength(3);
      expectOrdered(byDefault, 'asc');
      expect((await admin('GET', `${list}?order=asc`)).body.results).toEqual(byDefault);
      expect((await admin('GET', `${list}?order=desc`)).body.results).toEqual([...byDefault].reverse());
      const page = await admin('GET', `${list}?order=desc&limit=1&offset=1`);
      expect(page.body).toEqual({ meta: { limit: 1, offset: 1, hasMore: true }, results: [byDefault[1]] });
      expectProblem(await admin('GET', `${list}?order=DESC`), 422, 'validation_error');
    }
  });

  it('a replay range outside years 0001 to 9999 (in UTC) is a 422 at since or until, never a query that fails', async () => {
    const integ = await webhookIntegration(db, null);
    const sub = await subscribe(integ.id, hookUrl('/bounds'));
    const replay = (since: string, until: string) => admin('POST', `/webhook_subscriptions/${sub.id}/replay`, { since, until });
    let r = await replay('0001-01-01T01:04:22+04:05', new Date().toISOString());
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['since']);
    r = await replay(new Date(Date.now() - 60_000).toISOString(), '9999-12-31T23:59:59-00:01');
    expectProblem(r, 422, 'validation_error');
    expect(pointers(r)).toEqual(['until']);
    // The edges themselves are fine: nothing in that range to replay.
    r = await replay('0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z');
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toMatchObject({ replayed: 0 });
  });

  it("a subscription's deliveries: newest first by default, oldest first with order=asc, ties broken by id in the same direction", async () => {
    const integ = await webhookIntegration(db, null);
    const sub = await subscribe(integ.id, hookUrl('/order'));
    const ids = await recordEvents(db, integ, residentUpdates(4, 'order'));
    const t = Date.now();
    // Two deliveries share a creation time: the id decides, in the list's direction.
    const times = [t - 3_000, t - 2_000, t - 2_000, t - 1_000];
    await db.insert(webhookDeliveries).values(
      ids.map((eventId, i) => ({
        id: newId('webhookDelivery'),
        eventId,
        subscriptionId: sub.id,
        organizationId: integ.organizationId,
        integrationId: integ.id,
        eventType: 'RESIDENT_UPDATED',
        status: 'dead_lettered' as const,
        createdAt: new Date(times[i]!),
      })),
    );
    const byDefault = (await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries`)).body.results;
    expect(byDefault).toHaveLength(4);
    expectOrdered(byDefault, 'desc');
    expect(byDefault[0].event_id).toBe(ids[3]);
    expect((await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?order=desc`)).body.results).toEqual(byDefault);
    const asc = (await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?order=asc`)).body.results;
    expect(asc).toEqual([...byDefault].reverse());
    const filtered = await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?order=asc&status=dead_lettered&limit=2&offset=1`);
    expect(filtered.body.results).toEqual(asc.slice(1, 3));
    expect(filtered.body.meta.hasMore).toBe(true);
  });

  it("a subscription's deliveries in every state make one list in time order, paged, with and without an event type", async () => {
    const integ = await webhookIntegration(db, null);
    const sub = await subscribe(integ.id, hookUrl('/states'));
    const ids = await recordEvents(db, integ, residentUpdates(9, 'states'));
    const t = Date.now();
    // States interleaved in time, two pairs sharing a creation time across states (the id decides).
    const made = (
      [
        ['succeeded', 9_000, 'RESIDENT_UPDATED'],
        ['dead_lettered', 8_000, 'LEASE_UPDATED'],
        ['succeeded', 7_000, 'LEASE_UPDATED'],
        ['retrying', 7_000, 'RESIDENT_UPDATED'],
        ['pending', 6_000, 'RESIDENT_UPDATED'],
        ['cancelled', 5_000, 'LEASE_UPDATED'],
        ['succeeded', 4_000, 'LEASE_UPDATED'],
        ['expired', 4_000, 'RESIDENT_UPDATED'],
        ['succeeded', 3_000, 'RESIDENT_UPDATED'],
      ] as const
    ).map(([status, ago, eventType], i) => ({
      id: newId('webhookDelivery'),
      eventId: ids[i]!,
      subscriptionId: sub.id,
      organizationId: integ.organizationId,
      integrationId: integ.id,
      eventType,
      status,
      createdAt: new Date(t - ago),
    }));
    await db.insert(webhookDeliveries).values(made);
    const inOrder = (rows: typeof made, dir: 'asc' | 'desc') => {
      const ids = [...rows].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1)).map((d) => d.id);
      return dir === 'asc' ? ids : ids.reverse();
    };
    const listed = async (query: string) => {
      const pages: string[] = [];
      for (let offset = 0; ; offset += 2) {
        const r = await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?limit=2&offset=${offset}${query}`);
        pages.push(...r.body.results.map((d: { id: string }) => d.id));
        if (!r.body.meta.hasMore) return pages;
      }
    };
    for (const dir of ['asc', 'desc'] as const) {
      expect(await listed(`&order=${dir}`)).toEqual(inOrder(made, dir));
      expect(await listed(`&order=${dir}&event_type=LEASE_UPDATED`)).toEqual(
        inOrder(
          made.filter((d) => d.eventType === 'LEASE_UPDATED'),
          dir,
        ),
      );
      expect(await listed(`&order=${dir}&status=succeeded`)).toEqual(
        inOrder(
          made.filter((d) => d.status === 'succeeded'),
          dir,
        ),
      );
      // Comma-separated lists match any of their values, as the other admin lists' filters do.
      expect(await listed(`&order=${dir}&status=succeeded,pending&event_type=LEASE_UPDATED,RESIDENT_UPDATED`)).toEqual(
        inOrder(
          made.filter((d) => d.status === 'succeeded' || d.status === 'pending'),
          dir,
        ),
      );
    }
    // A value outside its list names nothing: a 422 at the parameter, not an empty page.
    for (const query of ['event_type=NOPE', 'status=succeeded,bogus']) {
      const r = await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?${query}`);
      expectProblem(r, 422, 'validation_error');
      expect(pointers(r)).toEqual([query.split('=')[0]]);
    }
  });

  it('a replay body that fits neither shape names the field to mend, not the whole body', async () => {
    const integ = await webhookIntegration(db, null);
    const sub = await subscribe(integ.id, hookUrl('/replay-shape'));
    const cases: [unknown, string[]][] = [
      [{ since: new Date().toISOString() }, ['until']],
      [{ status: 'retrying' }, ['status']],
      [{}, ['status']],
      [{ status: 'dead_lettered', since: new Date().toISOString(), until: new Date().toISOString() }, ['status']],
    ];
    for (const [body, expected] of cases) {
      const r = await admin('POST', `/webhook_subscriptions/${sub.id}/replay`, body);
      expectProblem(r, 422, 'validation_error');
      expect(pointers(r), JSON.stringify(body)).toEqual(expected);
    }
  });
});
