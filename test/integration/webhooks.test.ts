/**
 * Webhooks end to end, as a receiver and an operator see them: subscriptions through the admin API over real HTTP,
 * events recorded in the outbox, the relay and the delivery worker on a real Temporal server, and a real local
 * receiver that records every byte. The retry schedule is shrunk (schedule is data); the 10 s limit is the real one.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { lookup } from 'node:dns';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createWebhookActivities } from '../../activities/webhooks';
import { eq } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import type { Resolver } from '../../activities/webhook-http';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { events, integrations, webhookAttempts, webhookDeliveries, webhookSubscriptions } from '../../db/schema';
import { applyRecords } from '../../db/apply';
import { createSubscription } from '../../db/webhooks';
import { createKeyring, openSigningSecret } from '../../domain/secrets';
import { SA_DELIVERY_STATUS } from '../../domain/contract';
import { verifyWebhookSignature } from '../../domain/signature';
import { adminCaller, expectProblem as expectProblemOf, type Reply, type TestServer } from '../support/api-server';
import { testKeyring } from '../support/context';
import { leaseInput, propertyInput } from '../support/fixtures';
import { onServices } from '../support/services';
import { until } from '../support/until';
import { recordEvents, residentUpdates, webhookIntegration, type Receiver, type WebhookStack } from '../support/webhooks';

/** 7 attempts, 150 ms apart: the real schedule's shape, shrunk. */
const SCHEDULE = '0,150,150,150,150,150,150';

let db: Db;
let config: Config;
let api: TestServer;
let stack: WebhookStack;
let receiver: Receiver;

/** A name that resolves to loopback, as a DNS rebinding attack would make it. */
const rebinding: Resolver = (host, cb) => (host === 'rebind.example.test' ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : lookup(host, { all: true }, cb));
onServices({ pool: 6, settings: { WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE }, api: true, webhooks: { resolver: rebinding }, receiver: true }, (s) => {
  ({ db, config, api, webhooks: stack, receiver } = s);
});

const admin = (method: string, path: string, body?: unknown, raw?: string): Promise<Reply> => adminCaller(api, config.ADMIN_TOKEN)(method, path, body, raw);
const expectProblem = (r: Reply, status: number, slug: string) => expectProblemOf(r, status, slug, config.DOCS_BASE_URL);

async function subscribe(integrationId: string, url: string, eventTypes: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const r = await admin('POST', `/integrations/${integrationId}/webhook_subscriptions`, { url, event_types: eventTypes });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

/** The receiver's requests for one subscription (each test subscribes under its own path). */
const at = (path: string) => receiver.received.filter((r) => r.path === path);
const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;

async function deliveriesOf(subscriptionId: string, query = ''): Promise<any[]> {
  const r = await admin('GET', `/webhook_subscriptions/${subscriptionId}/deliveries?limit=100${query}`);
  expect(r.status).toBe(200);
  return r.body.results;
}

/** Waits until the relay has fanned event `id` out to the subscriptions of its time. */
const dispatched = (id: string) =>
  until(
    () => db.select().from(events).where(eq(events.id, id)),
    (rows) => rows[0]?.dispatchedAt != null,
  );

/** Once the last of `ids` has reached `path`, nothing but `ids` has, in order, and they are all subscription `subId` delivers. */
async function expectOnlyDelivered(path: string, subId: string, ids: string[]): Promise<void> {
  await receiver.waitFor(() => at(path).some((r) => r.body.id === ids.at(-1)));
  expect(at(path).map((r) => r.body.id)).toEqual(ids);
  expect((await deliveriesOf(subId, '&order=asc')).map((d) => d.event_id)).toEqual(ids);
}

describe('subscriptions', () => {
  it('creates one with a secret shown once, lists, retrieves, updates and deletes it', async () => {
    const integ = await webhookIntegration(db, stack);
    const r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, {
      url: 'https://hooks.example.com/in',
      event_types: ['LEASE_SIGNED', 'LEASE_UPDATED', 'LEASE_SIGNED'],
      description: 'leases',
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^whs_[0-9A-HJKMNP-TV-Z]{26}$/),
      integration_id: integ.id,
      url: 'https://hooks.example.com/in',
      event_types: ['LEASE_SIGNED', 'LEASE_UPDATED'],
      description: 'leases',
      status: 'active',
      // The Standard Webhooks form: whsec_ and the base64 of 32 random bytes.
      secret: expect.stringMatching(/^whsec_[0-9A-Za-z+/]{43}=$/),
      max_in_flight: null,
      standard_webhooks: true,
      previous_secret_expires_at: null,
      disabled: null,
      health: { success_rate: null, attempts: 0, last_success_at: null, last_failure_at: null, failing_since: null, pending: 0, retrying: 0, dead_lettered: 0 },
      circuit: { state: 'closed', opened_at: null, next_probe_at: null },
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    const id = r.body.id;
    const { secret: _secret, ...view } = r.body;
    expect((await admin('GET', `/webhook_subscriptions/${id}`)).body).toEqual(view);
    const list = await admin('GET', `/integrations/${integ.id}/webhook_subscriptions`);
    expect(list.body).toEqual({ meta: { limit: 25, offset: 0, hasMore: false }, results: [view] });
    expect(JSON.stringify(list.body)).not.toContain('whsec_');

    const patched = await admin('PATCH', `/webhook_subscriptions/${id}`, { status: 'disabled', event_types: ['*'], description: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'disabled', event_types: ['*'], description: null, url: 'https://hooks.example.com/in' });
    expect(patched.body.disabled).toEqual({ at: expect.stringMatching(/Z$/), by: 'operator', reason: 'disabled by an operator' });

    expect((await admin('DELETE', `/webhook_subscriptions/${id}`)).status).toBe(204);
    expectProblem(await admin('GET', `/webhook_subscriptions/${id}`), 404, 'not_found');
    expect((await admin('GET', `/integrations/${integ.id}/webhook_subscriptions`)).body.results).toEqual([]);
  });

  it("goes with its integration: a deleted integration's subscriptions read 404, their history stays readable", async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/integration-deleted'));
    const sent = await recordEvents(db, integ, residentUpdates(1, 'intdel'));
    await expectOnlyDelivered('/integration-deleted', sub.id, sent);
    expect((await admin('DELETE', `/integrations/${integ.id}`)).status).toBe(204);
    expectProblem(await admin('GET', `/webhook_subscriptions/${sub.id}`), 404, 'not_found');
    expectProblem(await admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, {}), 404, 'not_found');
    expect((await deliveriesOf(sub.id)).map((d) => [d.event_id, d.status])).toEqual([[sent[0], 'succeeded']]);
  });

  it('refuses starter and growth integrations with 403 and the reason', async () => {
    for (const plan of ['starter', 'growth'] as const) {
      const integ = await webhookIntegration(db, stack, { plan });
      const r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, { url: 'https://hooks.example.com/in', event_types: ['*'] });
      expectProblem(r, 403, 'forbidden');
      expect(r.body.detail).toContain(plan);
      expect(r.body.detail).toMatch(/scale and enterprise/);
    }
  });

  it('refuses non-HTTPS, loopback and private URLs for live integrations; test integrations may use loopback', async () => {
    const live = await webhookIntegration(db, stack, { mode: 'live' });
    for (const url of [
      'http://hooks.example.com/in',
      'https://127.0.0.1/in',
      'https://localhost:8443/in',
      'https://10.1.2.3/in',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/in',
      // IPv4 embedded in IPv6: compatible, translated, mapped, 6to4 and NAT64.
      'https://[::127.0.0.1]/',
      'https://[::ffff:0:7f00:1]/',
      'https://[::ffff:7f00:1]/in',
      'https://[2002:7f00:1::]/in',
      'https://[64:ff9b::a9fe:a9fe]/latest/meta-data',
      'ftp://hooks.example.com/in',
      'not a url',
    ]) {
      const r = await admin('POST', `/integrations/${live.id}/webhook_subscriptions`, { url, event_types: ['*'] });
      expectProblem(r, 422, 'validation_error');
      expect(r.body.errors.map((e: any) => e.pointer)).toEqual(['url']);
      if (url.includes('['))
        expect(r.body.errors[0].detail, url).toMatch(/^[0-9a-f:]+ is a special-purpose address \(.+\); a live integration delivers to public hosts only\.$/);
    }
    expect((await admin('GET', `/integrations/${live.id}/webhook_subscriptions`)).body.results).toEqual([]);
    expect((await admin('POST', `/integrations/${live.id}/webhook_subscriptions`, { url: 'https://hooks.example.com/in', event_types: ['*'] })).status).toBe(
      201,
    );
    const test = await webhookIntegration(db, stack, { mode: 'test' });
    expect((await admin('POST', `/integrations/${test.id}/webhook_subscriptions`, { url: 'http://127.0.0.1:9/in', event_types: ['*'] })).status).toBe(201);
    // A test integration may use loopback and private addresses (a receiver on the developer's network), never a
    // link-local one (cloud metadata) or an IPv6 form spelling IPv4.
    expect((await admin('POST', `/integrations/${test.id}/webhook_subscriptions`, { url: 'http://10.0.0.1/in', event_types: ['*'] })).status).toBe(201);
    for (const [url, why] of [
      ['http://169.254.169.254/latest/meta-data/', 'is a link-local address, where cloud metadata services answer'],
      ['http://[fe80::1]/h', 'is a link-local address, where cloud metadata services answer'],
      ['https://[::ffff:169.254.169.254]/h', 'is an IPv6 address embedding an IPv4 one (IPv4-mapped), which may spell any IPv4 host, cloud metadata included'],
      ['http://[::ffff:127.0.0.1]/h', 'is an IPv6 address embedding an IPv4 one (IPv4-mapped), which may spell any IPv4 host, cloud metadata included'],
      [
        'http://[4000::1]/h',
        'is an IPv6 address outside the global unicast range 2000::/3 (unallocated, or an IPv4-compatible form that may spell any IPv4 host)',
      ],
    ]) {
      const r = await admin('POST', `/integrations/${test.id}/webhook_subscriptions`, { url, event_types: ['*'] });
      expectProblem(r, 422, 'validation_error');
      expect(r.body.errors[0].detail, url).toBe(`${new URL(url!).hostname.replace(/^\[|\]$/g, '')} ${why}; no integration delivers there.`);
    }
    // A scheme other than http(s) is refused in words that fit the mode.
    const ftp = await admin('POST', `/integrations/${test.id}/webhook_subscriptions`, { url: 'ftp://127.0.0.1/x', event_types: ['*'] });
    expect(ftp.body.errors[0].detail).toBe('Use an http:// or https:// URL.');
  });

  it('answers 422 for unknown event types and fields, 400 for bad JSON, 404 for unknown ids, and creates nothing', async () => {
    const integ = await webhookIntegration(db, stack);
    let r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, { url: 'https://h.example.com', event_types: ['LEASE_CREATED'] });
    expectProblem(r, 422, 'validation_error');
    r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, { url: 'https://h.example.com', event_types: [] });
    expectProblem(r, 422, 'validation_error');
    r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, { url: 'https://h.example.com', event_types: ['*'], secret: 'mine' });
    expectProblem(r, 422, 'validation_error');
    expect(r.body.errors.map((e: any) => e.pointer)).toEqual(['secret']);
    expectProblem(await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, undefined, '{"url":'), 400, 'bad_request');
    expect((await admin('GET', `/integrations/${integ.id}/webhook_subscriptions`)).body.results).toEqual([]);
    expectProblem(await admin('GET', '/webhook_subscriptions/whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8'), 404, 'not_found');
    expectProblem(await admin('GET', '/webhook_subscriptions/nope'), 404, 'not_found');
    expectProblem(await admin('GET', '/webhook_deliveries/whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8'), 404, 'not_found');
    expectProblem(await admin('POST', '/webhook_deliveries/whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8/replay'), 404, 'not_found');
    expectProblem(
      await admin('POST', '/integrations/5f0c2d7e-1b8a-4c3e-9d2f-6a7b8c9d0e1f/webhook_subscriptions', { url: 'https://h.example.com', event_types: ['*'] }),
      404,
      'not_found',
    );
  });
});

describe('delivery', () => {
  it('posts the stored bytes, signed with the secret as shown, with the event headers', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/bytes'));
    const ids = await recordEvents(db, integ, residentUpdates(3, 'bytes'));
    await receiver.waitFor(() => at('/bytes').length >= 3);
    const got = at('/bytes');
    expect(got.map((r) => r.body.id)).toEqual(ids);
    for (const [i, r] of got.entries()) {
      const [stored] = await db.select().from(events).where(eq(events.id, ids[i]!));
      expect(r.raw.toString('utf8')).toBe(stored!.body);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-service-signature']).toBe(createHmac('sha256', sub.secret).update(r.raw).digest('hex'));
      expect(r.headers['x-service-signature-previous']).toBeUndefined();
      expect(r.headers['x-service-event-id']).toBe(ids[i]);
      expect(r.headers['x-service-event-type']).toBe('RESIDENT_UPDATED');
      expect(r.headers['x-service-delivery-attempt']).toBe('1');
      expect(verifyWebhookSignature(r.raw, r.headers, [sub.secret])).toBe(true);
      expect(verifyWebhookSignature(r.raw, r.headers, ['whsec_wrong'])).toBe(false);
      expect(r.body).toEqual({
        id: ids[i],
        type: 'RESIDENT_UPDATED',
        category: 'data_change',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        organization_id: integ.organizationId,
        integration_id: integ.id,
        data: expect.objectContaining({ id: `res_bytes${i}`, changed: ['phones'] }),
      });
    }
    // Outcomes are recorded in batches just after the requests: wait until all three are.
    const [delivery] = await until(
      'the outcomes to be recorded',
      () => deliveriesOf(sub.id, '&status=succeeded'),
      (ds) => ds.length === ids.length,
    );
    expect(delivery).toMatchObject({
      status: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      attempts: [{ number: 1, response_status: 200, error: null, response_body: 'ok' }],
    });
    const one = await admin('GET', `/webhook_deliveries/${delivery.id}`);
    expect(one.body.payload).toEqual(JSON.parse(got.find((r) => r.body.id === delivery.event_id)!.raw.toString()));
  });

  it('sends first attempts in production order, and each event only to the subscriptions that want its type and existed when it was recorded', async () => {
    const integ = await webhookIntegration(db, stack);
    // One request at a time: they arrive in production order too. With the default 16 they go out in that order.
    const serial = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, { url: hookUrl('/order'), event_types: ['*'], max_in_flight: 1 });
    expect(serial.body.max_in_flight).toBe(1);
    const parallel = await subscribe(integ.id, hookUrl('/order16'));
    const leasesOnly = await subscribe(integ.id, hookUrl('/leases'), ['LEASE_SIGNED']);
    const drafts = residentUpdates(40, 'ord');
    drafts.splice(10, 0, { type: 'LEASE_SIGNED', data: { id: 'lse_1', x_id: '1', status: 'active' } });
    const ids = await recordEvents(db, integ, drafts);
    const more = await recordEvents(db, integ, residentUpdates(5, 'ord2'));
    await receiver.waitFor(() => at('/order').length >= 46 && at('/order16').length >= 46 && at('/leases').length >= 1);
    const all = [...ids, ...more];
    expect(at('/order').map((r) => r.body.id)).toEqual(all);
    expect(at('/leases').map((r) => r.body.type)).toEqual(['LEASE_SIGNED']);
    // Handed to the network in production order: the time each went out never goes back.
    // (Outcomes are recorded in batches just after the requests: wait until every one is.)
    const sent = await until(
      () =>
        db
          .select({ eventId: webhookDeliveries.eventId, seq: webhookDeliveries.seq, firstSentAt: webhookDeliveries.firstSentAt })
          .from(webhookDeliveries)
          .where(eq(webhookDeliveries.subscriptionId, parallel.id))
          .orderBy(webhookDeliveries.seq),
      (rows) => rows.length === all.length && rows.every((r) => r.firstSentAt !== null),
    );
    expect(sent.map((d) => d.eventId)).toEqual(all);
    for (let i = 1; i < sent.length; i++) expect(sent[i]!.firstSentAt!.getTime()).toBeGreaterThanOrEqual(sent[i - 1]!.firstSentAt!.getTime());
    // Each arrives once; with 16 in flight the receiver's server may see neighbours swap places (how far depends on
    // how its connections are scheduled), so their arrival order is not asserted.
    const arrived = at('/order16').map((r) => r.body.id as string);
    expect([...arrived].sort()).toEqual([...all].sort());

    // A subscription made after an event does not get it.
    const late = await subscribe(integ.id, hookUrl('/late'));
    const after = await recordEvents(db, integ, residentUpdates(1, 'late'));
    // The earlier events were fanned out before it existed: once this one has arrived, its deliveries are all there are.
    await expectOnlyDelivered('/late', late.id, after);
    expect((await deliveriesOf(leasesOnly.id)).map((d) => d.event_type)).toEqual(['LEASE_SIGNED']);
  });

  it('a disabled subscription gets nothing, and enabling it again does not send what it missed', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/disabled'));
    await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { status: 'disabled' });
    const missed = await recordEvents(db, integ, residentUpdates(2, 'dis'));
    await dispatched(missed[1]!);
    await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { status: 'active' });
    const after = await recordEvents(db, integ, residentUpdates(1, 'dis2'));
    // The missed events were fanned out before it was enabled: once the later one has arrived, nothing else is owed.
    await expectOnlyDelivered('/disabled', sub.id, after);
  });

  it('a relay that lags queues what a subscription was active for when each event was recorded, across a disable and an enable', async () => {
    // An organization this file's relay does not serve yet: its events wait, as behind a relay that lags.
    const integ = await webhookIntegration(db, null);
    const sub = await subscribe(integ.id, hookUrl('/disabled-late'));
    const pause = () => new Promise((r) => setTimeout(r, 5));
    // The API's clock an hour behind the database's: when it was disabled and enabled is the database's time, which
    // the events' times are compared with.
    const skewed = async (status: string) => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 3_600_000 });
      try {
        expect((await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { status })).status).toBe(200);
      } finally {
        vi.useRealTimers();
      }
    };
    const before = await recordEvents(db, integ, residentUpdates(2, 'dlate'));
    await pause();
    await skewed('disabled');
    await pause();
    const whileDisabled = await recordEvents(db, integ, residentUpdates(1, 'dlate2'));
    stack.orgs.add(integ.organizationId);
    await dispatched(whileDisabled[0]!);
    // Recorded while it was active: queued, pending in the paused queue; recorded while disabled: not queued.
    expect((await deliveriesOf(sub.id, '&order=asc')).map((d) => [d.event_id, d.status])).toEqual(before.map((id) => [id, 'pending']));
    stack.orgs.delete(integ.organizationId);
    const stillDisabled = await recordEvents(db, integ, residentUpdates(1, 'dlate3'));
    await pause();
    await skewed('active');
    await pause();
    const after = await recordEvents(db, integ, residentUpdates(1, 'dlate4'));
    stack.orgs.add(integ.organizationId);
    // Relayed only now, after the enable: the event of the disabled time is still not queued, the later one is.
    await dispatched(after[0]!);
    await dispatched(stillDisabled[0]!);
    await expectOnlyDelivered('/disabled-late', sub.id, [...before, ...after]);
  });

  it('a retry that waited for a permit while an earlier attempt was recorded as succeeded sends nothing', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/permit'));
    receiver.reply((r) => (r.path === '/permit' ? 500 : 200));
    const [eventId] = await recordEvents(db, integ, residentUpdates(1, 'permit'));
    const delivery = await until('its first attempt to fail', async () =>
      (await deliveriesOf(sub.id)).find((d) => d.event_id === eventId && d.status !== 'pending'),
    );
    receiver.reply(() => 200);
    let sends = 0;
    const acts = createWebhookActivities({
      db,
      secrets: testKeyring(),
      maxInFlight: 16,
      sender: { send: async () => (sends++, { ok: true, status: 200, error: null, excerpt: null, durationMs: 1 }) } as never,
      // While this attempt waits for its permit, an earlier one (given up as lost while it waited) records its success.
      inFlight: {
        acquire: async () => {
          await db.update(webhookDeliveries).set({ status: 'succeeded' }).where(eq(webhookDeliveries.id, delivery.id));
          return () => {};
        },
      } as never,
    });
    const out = await new MockActivityEnvironment().run(acts.attemptDelivery, { deliveryId: delivery.id, attempt: 9, nextDelayMs: null, replay: false });
    expect(out).toMatchObject({ outcome: 'succeeded' });
    expect(sends).toBe(0);
  });

  it("keeps a deleted subscription's delivery history readable, and sends it nothing more", async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/deleted-later'));
    const sent = await recordEvents(db, integ, residentUpdates(2, 'del'));
    await expectOnlyDelivered('/deleted-later', sub.id, sent);
    expect((await admin('DELETE', `/webhook_subscriptions/${sub.id}`)).status).toBe(204);
    expectProblem(await admin('GET', `/webhook_subscriptions/${sub.id}`), 404, 'not_found');
    const history = await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?order=asc`);
    expect(history.status).toBe(200);
    expect(history.body.results.map((d: any) => [d.event_id, d.status])).toEqual(sent.map((id) => [id, 'succeeded']));
    expect((await admin('GET', `/webhook_deliveries/${history.body.results[0].id}`)).status).toBe(200);
    // Later events are not its: once another subscription of the integration has one, it has none.
    const other = await subscribe(integ.id, hookUrl('/still-here'));
    const later = await recordEvents(db, integ, residentUpdates(1, 'del2'));
    await expectOnlyDelivered('/still-here', other.id, later);
    expect(at('/deleted-later').map((r) => r.body.id)).toEqual(sent);
    expectProblem(await admin('GET', `/webhook_subscriptions/whs_01JH0000000000000000000000/deliveries`), 404, 'not_found');
  });

  it('retries a non-2xx answer on the schedule and records every attempt', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/flaky'));
    let calls = 0;
    receiver.reply((r) => (r.path === '/flaky' && ++calls <= 2 ? 500 : 200));
    const [id] = await recordEvents(db, integ, residentUpdates(1, 'flaky'));
    const [d] = await until(
      () => deliveriesOf(sub.id),
      (ds) => ds[0]?.status === 'succeeded',
    );
    receiver.reply(() => 200);
    expect(d.attempts.map((a: any) => [a.number, a.response_status, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 500, 'HTTP 500'],
      [3, 200, null],
    ]);
    expect(d.attempts[0].response_body).toBe('no thanks (500)');
    const got = at('/flaky');
    expect(got.map((r) => r.headers['x-service-delivery-attempt'])).toEqual(['1', '2', '3']);
    // The same event id and the same bytes on every attempt.
    expect(new Set(got.map((r) => r.body.id))).toEqual(new Set([id]));
    expect(new Set(got.map((r) => r.raw.toString()))).toHaveProperty('size', 1);
    // Attempts are spaced by the schedule (150 ms after the previous one ended).
    for (let i = 1; i < got.length; i++) expect(got[i]!.at - got[i - 1]!.at).toBeGreaterThanOrEqual(140);
  });

  it('dead-letters after the 7th failure (connection refused) and holds the delivery open; a replay sends the same event and bytes again', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, 'http://127.0.0.1:9/refused');
    const [eventId] = await recordEvents(db, integ, residentUpdates(1, 'dead'));
    const [d] = await until(
      () => deliveriesOf(sub.id),
      (ds) => ds[0]?.status === 'dead_lettered',
    );
    expect(d.attempt_count).toBe(7);
    expect(d.attempts).toHaveLength(7);
    for (const a of d.attempts) {
      expect(a.response_status).toBeNull();
      expect(a.error).toMatch(/ECONNREFUSED/);
    }
    expect(d.next_attempt_at).toBeNull();
    // The workflow stays open as the dead letter, findable by its search attribute (set by the workflow task after
    // the last attempt recorded the row, so a moment later than the row under load).
    const client: Client = stack.client;
    const described = await until(
      () => client.workflow.getHandle(d.id).describe(),
      (w) => w.typedSearchAttributes.get(SA_DELIVERY_STATUS) === 'dead_lettered',
    );
    expect(described.status.name).toBe('RUNNING');
    expect(described.typedSearchAttributes.get(SA_DELIVERY_STATUS)).toBe('dead_lettered');
    const [row] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, d.id));
    expect(row!.status).toBe('dead_lettered');
    const payload = (await admin('GET', `/webhook_deliveries/${d.id}`)).body.payload;
    expect(payload.id).toBe(eventId);

    // The receiver is fixed; a replay is one more attempt on the same delivery record.
    await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { url: hookUrl('/dead') });
    const replay = await admin('POST', `/webhook_deliveries/${d.id}/replay`);
    expect(replay.status).toBe(202);
    expect(replay.body.id).toBe(d.id);
    await receiver.waitFor(() => at('/dead').length >= 1);
    const [got] = at('/dead');
    expect(got!.body.id).toBe(eventId);
    expect(got!.headers['x-service-delivery-attempt']).toBe('8');
    expect(got!.raw.toString()).toBe(JSON.stringify(payload));
    const done = await until(
      () => admin('GET', `/webhook_deliveries/${d.id}`),
      (r) => r.body.status === 'succeeded',
    );
    expect(done.body.attempts.map((a: any) => a.response_status)).toEqual([null, null, null, null, null, null, null, 200]);
    expect(await client.workflow.getHandle(d.id).result()).toMatchObject({ status: 'succeeded', attempts: 8 });
  });

  it('replays a delivered event: a duplicate with the same event id and bytes, attempt 2 after the first attempt as recorded', async () => {
    // The first attempt is answered 201 after 150 ms: what the delivery shows of it must be that answer.
    receiver.reply((r) => (r.path === '/dup' && r.headers['x-service-delivery-attempt'] === '1' ? { status: 201, afterMs: 150 } : 200));
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/dup'));
    await recordEvents(db, integ, residentUpdates(1, 'dup'));
    await receiver.waitFor(() => at('/dup').length >= 1);
    const [d] = await until(
      () => deliveriesOf(sub.id),
      (ds) => ds[0]?.status === 'succeeded',
    );
    // A first attempt that succeeded is kept on the delivery alone (no attempt row); the admin API shows it as ever.
    expect(await db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, d.id))).toEqual([]);
    const firstAttempt = {
      number: 1,
      started_at: expect.stringMatching(/Z$/),
      duration_ms: expect.any(Number),
      response_status: 201,
      error: null,
      response_body: 'ok',
    };
    expect(d).toMatchObject({ status: 'succeeded', attempt_count: 1, last_attempt_at: expect.stringMatching(/Z$/), attempts: [firstAttempt] });
    expect(d.attempts[0].duration_ms).toBeGreaterThanOrEqual(150);
    expect(d.attempts[0].started_at).toBe(d.last_attempt_at);
    expect((await admin('GET', `/webhook_deliveries/${d.id}`)).body.attempts).toEqual(d.attempts);

    const replayed = await admin('POST', `/webhook_deliveries/${d.id}/replay`);
    expect(replayed.status).toBe(202);
    expect(replayed.body.attempts).toEqual(d.attempts);
    await receiver.waitFor(() => at('/dup').length >= 2);
    const [first, second] = at('/dup');
    expect(second!.body.id).toBe(first!.body.id);
    expect(second!.raw.equals(first!.raw)).toBe(true);
    expect(second!.headers['x-service-delivery-attempt']).toBe('2');
    // The replay is attempt 2; attempt 1 still shows as it was answered.
    const after = await until(
      'the replay to be recorded',
      async () => (await admin('GET', `/webhook_deliveries/${d.id}`)).body,
      (x) => x.attempt_count === 2,
    );
    expect(after).toMatchObject({ status: 'succeeded', attempts: [d.attempts[0], { number: 2, response_status: 200, error: null, response_body: 'ok' }] });
    expect((await deliveriesOf(sub.id))[0].attempts).toEqual(after.attempts);
    const health = (await admin('GET', `/webhook_subscriptions/${sub.id}`)).body.health;
    expect(health).toMatchObject({ attempts: 2, success_rate: 1 });
    receiver.reply(() => 200);
  });

  it('replays every dead-lettered delivery of a subscription in bulk', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/bulk'));
    receiver.reply((r) => (r.path === '/bulk' ? 503 : 200));
    const ids = await recordEvents(db, integ, residentUpdates(3, 'bulk'));
    await until(
      () => deliveriesOf(sub.id, '&status=dead_lettered'),
      (ds) => ds.length === 3,
    );
    receiver.reply(() => 200);
    const before = at('/bulk').length;
    expect(before).toBe(21);
    const r = await admin('POST', `/webhook_subscriptions/${sub.id}/replay`, { status: 'dead_lettered' });
    expect(r.status).toBe(202);
    expect(r.body.replayed).toBe(3);
    await receiver.waitFor(() => at('/bulk').length >= before + 3);
    expect(
      new Set(
        at('/bulk')
          .slice(before)
          .map((x) => x.body.id),
      ),
    ).toEqual(new Set(ids));
    await until(
      () => deliveriesOf(sub.id, '&status=succeeded'),
      (ds) => ds.length === 3,
    );
    expect(await deliveriesOf(sub.id, '&status=dead_lettered')).toEqual([]);
  });

  it('re-sends the events of a time range to a subscription, including events recorded before it existed', async () => {
    const integ = await webhookIntegration(db, stack);
    const since = new Date(Date.now() - 1000).toISOString();
    const old = await recordEvents(db, integ, residentUpdates(2, 'range'));
    await dispatched(old[1]!);
    const sub = await subscribe(integ.id, hookUrl('/range'), ['RESIDENT_UPDATED']);
    const r = await admin('POST', `/webhook_subscriptions/${sub.id}/replay`, { since, until: new Date().toISOString() });
    expect(r.status).toBe(202);
    expect(r.body.replayed).toBe(2);
    await receiver.waitFor(() => at('/range').length >= 2);
    expect(
      at('/range')
        .map((x) => x.body.id)
        .sort(),
    ).toEqual([...old].sort());
    const bad = await admin('POST', `/webhook_subscriptions/${sub.id}/replay`, { since: new Date().toISOString(), until: since });
    expectProblem(bad, 422, 'validation_error');
    expectProblem(await admin('POST', `/webhook_subscriptions/${sub.id}/replay`, { status: 'succeeded' }), 422, 'validation_error');
    await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { status: 'disabled' });
    expectProblem(await admin('POST', `/webhook_subscriptions/${sub.id}/replay`, { status: 'dead_lettered' }), 409, 'conflict');
  });

  it('signs with both secrets during a rotation window and with the new one only after it', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/rotate'));
    const rotated = await admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, { grace_period_seconds: 2 });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: expect.stringMatching(/Z$/) });
    expect(rotated.body.secret).not.toBe(sub.secret);
    expect((await admin('GET', `/webhook_subscriptions/${sub.id}`)).body.previous_secret_expires_at).toBe(rotated.body.previous_secret_expires_at);
    await recordEvents(db, integ, residentUpdates(1, 'rot1'));
    await receiver.waitFor(() => at('/rotate').length >= 1);
    const [during] = at('/rotate');
    expect(during!.headers['x-service-signature']).toBe(createHmac('sha256', rotated.body.secret).update(during!.raw).digest('hex'));
    expect(during!.headers['x-service-signature-previous']).toBe(createHmac('sha256', sub.secret).update(during!.raw).digest('hex'));
    // A receiver that only knows the old secret, or only the new one, accepts it.
    expect(verifyWebhookSignature(during!.raw, during!.headers, sub.secret)).toBe(true);
    expect(verifyWebhookSignature(during!.raw, during!.headers, rotated.body.secret)).toBe(true);

    await new Promise((r) => setTimeout(r, Date.parse(rotated.body.previous_secret_expires_at) - Date.now() + 100));
    await recordEvents(db, integ, residentUpdates(1, 'rot2'));
    await receiver.waitFor(() => at('/rotate').length >= 2);
    const after = at('/rotate')[1]!;
    expect(after.headers['x-service-signature-previous']).toBeUndefined();
    expect(verifyWebhookSignature(after.raw, after.headers, sub.secret)).toBe(false);
    expect(verifyWebhookSignature(after.raw, after.headers, rotated.body.secret)).toBe(true);
    expect((await admin('GET', `/webhook_subscriptions/${sub.id}`)).body.previous_secret_expires_at).toBeNull();
  });

  it('signs an event recorded after a rotation with the new secret, also while the dispatcher is busy sending', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/rotate-busy'));
    // The dispatcher is running (it has just sent this one, and waits for more) when the secret changes.
    await recordEvents(db, integ, residentUpdates(1, 'rotb1'));
    await receiver.waitFor(() => at('/rotate-busy').length >= 1);
    const rotated = await admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, { grace_period_seconds: 0 });
    const [later] = await recordEvents(db, integ, residentUpdates(1, 'rotb2'));
    await receiver.waitFor(() => at('/rotate-busy').some((r) => r.body.id === later));
    const got = at('/rotate-busy').find((r) => r.body.id === later)!;
    expect(verifyWebhookSignature(got.raw, got.headers, rotated.body.secret)).toBe(true);
    expect(verifyWebhookSignature(got.raw, got.headers, sub.secret)).toBe(false);
  });

  it('counts a receiver hanging past 10 s as a failed attempt', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/hang'));
    receiver.reply((r) => (r.path === '/hang' && r.headers['x-service-delivery-attempt'] === '1' ? 'hang' : 200));
    await recordEvents(db, integ, residentUpdates(1, 'hang'));
    const [d] = await until(
      () => deliveriesOf(sub.id),
      (ds) => ds[0]?.status === 'succeeded',
      40_000,
    );
    receiver.reply(() => 200);
    expect(d.attempts[0]).toMatchObject({ number: 1, response_status: null, error: 'timed out after 10 s' });
    expect(d.attempts[0].duration_ms).toBeGreaterThanOrEqual(9_900);
    expect(d.attempts[0].duration_ms).toBeLessThan(12_000);
    expect(d.attempts[1]).toMatchObject({ number: 2, response_status: 200 });
  }, 60_000);

  it('stores signing secrets encrypted; a rotation keeps both encrypted and neither is shown again', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/sealed'));
    const rotated = await admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, {});
    const [row] = await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, sub.id));
    expect(row!.secret).toMatch(/^enc:v1:dev:/);
    expect(row!.previousSecret).toMatch(/^enc:v1:dev:/);
    expect(openSigningSecret(testKeyring(), sub.id, row!.secret)).toBe(rotated.body.secret);
    expect(openSigningSecret(testKeyring(), sub.id, row!.previousSecret!)).toBe(sub.secret);
    const view = JSON.stringify((await admin('GET', `/webhook_subscriptions/${sub.id}`)).body);
    for (const s of ['enc:v1', sub.secret, rotated.body.secret]) expect(view).not.toContain(s);
  });

  it('sends nothing when the signing secret does not decrypt (its key is not configured), recording why on each attempt', async () => {
    const integ = await webhookIntegration(db, stack);
    const lost = createKeyring([{ kid: 'lost', key: randomBytes(32) }]);
    const { row: sub } = await createSubscription(
      db,
      { organizationId: integ.organizationId, integrationId: integ.id, url: hookUrl('/undecryptable'), eventTypes: ['*'], description: null },
      lost,
    );
    await recordEvents(db, integ, residentUpdates(1, 'lost'));
    const [d] = await until(
      () => deliveriesOf(sub.id),
      (ds) => ds[0]?.status === 'dead_lettered',
    );
    expect(d.attempts).toHaveLength(7);
    for (const a of d.attempts) {
      expect(a.error).toMatch(
        /^not sent: the signing secret could not be decrypted \(a stored secret was sealed with key lost, which ENCRYPTION_KEYS does not hold/,
      );
      expect(a.response_status).toBeNull();
    }
    expect(at('/undecryptable')).toEqual([]);
  });

  it('live integrations: a name that resolves to loopback and a private address literal are refused at delivery, and recorded as failed attempts', async () => {
    const live = await webhookIntegration(db, stack, { mode: 'live' });
    const rebind = await subscribe(live.id, `https://rebind.example.test:${receiver.port}/ssrf`);
    // Written directly: the admin API already refuses this URL for a live integration.
    const { row: metadata } = await createSubscription(
      db,
      { organizationId: live.organizationId, integrationId: live.id, url: 'https://169.254.169.254/latest/meta-data', eventTypes: ['*'], description: null },
      testKeyring(),
    );
    await recordEvents(db, live, residentUpdates(1, 'ssrf'));
    const [d] = await until(
      () => deliveriesOf(rebind.id),
      (ds) => ds[0]?.status === 'dead_lettered',
    );
    expect(d.attempts).toHaveLength(7);
    expect(d.attempts[0].error).toMatch(/^refused: rebind\.example\.test resolves to 127\.0\.0\.1/);
    const [m] = await until(
      () => deliveriesOf(metadata.id),
      (ds) => ds[0]?.status === 'dead_lettered',
    );
    expect(m.attempts[0].error).toMatch(/^refused: 169\.254\.169\.254/);
    expect(at('/ssrf')).toEqual([]);
  });

  it('delivers nothing for an integration moved to a plan without webhooks', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, hookUrl('/downgraded'));
    await db.update(integrations).set({ plan: 'growth' }).where(eq(integrations.id, integ.id));
    const [id] = await recordEvents(db, integ, residentUpdates(1, 'down'));
    await dispatched(id!);
    // Back on a plan with webhooks, an event recorded now is delivered, and only it: the one before never will be.
    await db.update(integrations).set({ plan: 'scale' }).where(eq(integrations.id, integ.id));
    const later = await recordEvents(db, integ, residentUpdates(1, 'up'));
    await expectOnlyDelivered('/downgraded', sub.id, later);
  });

  it('sends an event whose JSON would exceed 1 MB truncated to its identity and changed fields', async () => {
    const integ = await webhookIntegration(db, stack);
    await subscribe(integ.id, hookUrl('/big'));
    const ctx = { integration: { id: integ.id, organizationId: integ.organizationId, mode: integ.mode }, emitEvents: true };
    const huge = { blob: 'x'.repeat(1_100_000) };
    await db.transaction((tx) => applyRecords(tx, ctx, 'property', [propertyInput('BIG1', { custom_data: huge })]));
    await receiver.waitFor(() => at('/big').length >= 1);
    const [got] = at('/big');
    expect(got!.raw.length).toBeLessThanOrEqual(1_000_000);
    expect(got!.body.type).toBe('PROPERTY_CREATED');
    expect(got!.body.data).toEqual({
      id: expect.stringMatching(/^prp_/),
      x_id: 'BIG1',
      updated_at: expect.any(String),
      changed: expect.arrayContaining(['custom_data', 'name']),
      truncated: true,
    });
    // A lifecycle event (the full lease) truncated lists the fields that moved, not every field.
    const refs = { property: 'BIG1', unit: 'BIGU', residents: [] };
    await db.transaction((tx) => applyRecords(tx, ctx, 'lease', [leaseInput('BIGL', refs, { status: 'pending', custom_data: huge })]));
    await db.transaction((tx) => applyRecords(tx, ctx, 'lease', [leaseInput('BIGL', refs, { status: 'active', custom_data: { ...huge, more: 1 } })]));
    await receiver.waitFor(() => at('/big').some((r) => r.body.type === 'LEASE_SIGNED'));
    const signed = at('/big').find((r) => r.body.type === 'LEASE_SIGNED')!;
    expect(signed.body.data).toEqual({
      id: expect.stringMatching(/^lse_/),
      x_id: 'BIGL',
      updated_at: expect.any(String),
      changed: ['status', 'custom_data'],
      truncated: true,
    });
  });
});
