/**
 * Standard Webhooks signatures and endpoint health, as a receiver and an operator see them: deliveries from the real
 * worker and relay to a local receiver, verified with the published `standardwebhooks` library; the subscription's
 * health in the admin API; a subscription disabled when every attempt has failed for WEBHOOK_DISABLE_AFTER_MS (shrunk
 * to 1.5 s here: configuration is data) or at once by a 410 Gone, its queue kept.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { createApiKey } from '../../db/tenants';
import { verifyStandardWebhook, verifyWebhookSignature } from '../../domain/signature';
import { adminCaller, type Reply, type TestServer } from '../support/api-server';
import { onServices } from '../support/services';
import { until } from '../support/until';
import { recordEvents, residentUpdates, webhookIntegration, type Receiver, type Received, type WebhookStack } from '../support/webhooks';

let db: Db;
let config: Config;
let api: TestServer;
let stack: WebhookStack;
let receiver: Receiver;

const SETTINGS = { WEBHOOK_RETRY_SCHEDULE_MS: '0,1100,300,300,300,300,300', WEBHOOK_DISABLE_AFTER_MS: '1500', WEBHOOK_PROBE_SCHEDULE_MS: '200' };
onServices({ pool: 8, settings: SETTINGS, api: true, webhooks: true, receiver: true }, (s) => ({ db, config, api, webhooks: stack, receiver } = s));

const admin = (method: string, path: string, body?: unknown): Promise<Reply> => adminCaller(api, config.ADMIN_TOKEN)(method, path, body);
const at = (path: string) => receiver.received.filter((r) => r.path === path);
const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
/** Paths answered by a status other than 200, per path. */
const answers = new Map<string, (r: Received) => number>();

beforeAll(() => receiver.reply((r) => answers.get(r.path)?.(r) ?? 200));

async function subscribe(
  integrationId: string,
  path: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; secret: string; standard_webhooks: boolean }> {
  const r = await admin('POST', `/integrations/${integrationId}/webhook_subscriptions`, { url: hookUrl(path), event_types: ['*'], ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

const plainHeaders = (r: Received) => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0]! : (v ?? '')]));

describe('Standard Webhooks signatures', () => {
  it('signs a new subscription the Standard Webhooks way, verified by the published library, X-Service-Signature unchanged', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/sw');
    expect(sub.standard_webhooks).toBe(true);
    // The specification's form: whsec_ and the base64 of 24 to 64 random bytes.
    expect(sub.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    const keyBytes = Buffer.from(sub.secret.slice('whsec_'.length), 'base64');
    expect(keyBytes.length).toBeGreaterThanOrEqual(24);
    expect(keyBytes.length).toBeLessThanOrEqual(64);

    const [id] = await recordEvents(db, integ, residentUpdates(1, 'sw'));
    const [got] = await receiver.waitFor(() => at('/sw').length >= 1).then(() => at('/sw'));
    const h = plainHeaders(got!);
    expect(h['webhook-id']).toBe(id);
    expect(Number(h['webhook-timestamp'])).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const verified = new Webhook(sub.secret).verify(got!.raw.toString('utf8'), h) as { id: string };
    expect(verified.id).toBe(id);
    expect(() => new Webhook(sub.secret).verify(got!.raw, h)).not.toThrow();
    expect(verifyStandardWebhook(got!.raw, got!.headers, sub.secret)).toBe(true);
    // The service's own signature: keyed with the secret exactly as shown, as before.
    expect(verifyWebhookSignature(got!.raw, got!.headers, sub.secret)).toBe(true);
    // Tampered bytes or another secret fail.
    expect(() => new Webhook(sub.secret).verify(got!.raw.toString('utf8').replace('sw0', 'sw1'), h)).toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got!.raw, h)).toThrow();
  });

  it('refuses a replay outside the tolerance', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/sw-replay');
    await recordEvents(db, integ, residentUpdates(1, 'rp'));
    await receiver.waitFor(() => at('/sw-replay').length >= 1);
    const [got] = at('/sw-replay');
    const h = plainHeaders(got!);
    expect(() => new Webhook(sub.secret).verify(got!.raw, h)).not.toThrow();
    // The same request presented 6 minutes later (the library's tolerance is 5).
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 6 * 60_000);
      expect(() => new Webhook(sub.secret).verify(got!.raw, h)).toThrow(/too old/i);
      expect(verifyStandardWebhook(got!.raw, got!.headers, sub.secret)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
    // A request claiming a later time than it was signed with does not verify either.
    expect(() => new Webhook(sub.secret).verify(got!.raw, { ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) + 1) })).toThrow();
  });

  it('signs a retry afresh with its own timestamp over the same body bytes', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/sw-retry');
    answers.set('/sw-retry', () => (at('/sw-retry').length <= 1 ? 503 : 200));
    await recordEvents(db, integ, residentUpdates(1, 'rt'));
    await receiver.waitFor(() => at('/sw-retry').length >= 2);
    const [first, second] = at('/sw-retry');
    expect(second!.raw.equals(first!.raw)).toBe(true);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(Number(second!.headers['webhook-timestamp'])).toBeGreaterThan(Number(first!.headers['webhook-timestamp']));
    expect(second!.headers['webhook-signature']).not.toBe(first!.headers['webhook-signature']);
    for (const r of [first!, second!]) expect(() => new Webhook(sub.secret).verify(r.raw, plainHeaders(r))).not.toThrow();
  });

  it('carries one signature per secret during a rotation window, each verifying with its own secret', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/sw-rotate');
    const rotated = await admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, { grace_period_seconds: 3600 });
    expect(rotated.status).toBe(200);
    const fresh: string = rotated.body.secret;
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await recordEvents(db, integ, residentUpdates(1, 'ro'));
    await receiver.waitFor(() => at('/sw-rotate').length >= 1);
    const [got] = at('/sw-rotate');
    const h = plainHeaders(got!);
    expect(h['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(fresh).verify(got!.raw, h)).not.toThrow();
    expect(() => new Webhook(sub.secret).verify(got!.raw, h)).not.toThrow();
    expect(verifyWebhookSignature(got!.raw, got!.headers, [fresh])).toBe(true);
    expect(verifyWebhookSignature(got!.raw, got!.headers, [sub.secret])).toBe(true);

    // After the window only the new secret signs.
    expect((await admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, { grace_period_seconds: 0 })).status).toBe(200);
  });

  it('two rotations at once: each secret they showed signs during the window', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/sw-rotate-twice');
    // Both calls read the subscription while a transaction holds its row, so they reach it together when it commits.
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holding = db.transaction(async (tx) => {
      await tx.execute(sql`select 1 from webhook_subscriptions where id = ${sub.id} for update`);
      locked();
      await new Promise<void>((r) => (release = r));
    });
    await isLocked;
    const calls = Promise.all([1, 2].map(() => admin('POST', `/webhook_subscriptions/${sub.id}/rotate_secret`, { grace_period_seconds: 3600 })));
    await new Promise((r) => setTimeout(r, 300));
    release();
    await holding;
    const rotations = await calls;
    expect(rotations.map((r) => r.status)).toEqual([200, 200]);
    await recordEvents(db, integ, residentUpdates(1, 'r2'));
    await receiver.waitFor(() => at('/sw-rotate-twice').length >= 1);
    const [got] = at('/sw-rotate-twice');
    for (const r of rotations) expect(verifyWebhookSignature(got!.raw, got!.headers, [r.body.secret as string])).toBe(true);
  });

  it('is opt-in per subscription: off sends only the service headers, and a PATCH turns it on', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/sw-off', { standard_webhooks: false });
    expect(sub.standard_webhooks).toBe(false);
    await recordEvents(db, integ, residentUpdates(1, 'of'));
    await receiver.waitFor(() => at('/sw-off').length >= 1);
    expect(at('/sw-off')[0]!.headers['webhook-signature']).toBeUndefined();
    expect(verifyWebhookSignature(at('/sw-off')[0]!.raw, at('/sw-off')[0]!.headers, sub.secret)).toBe(true);
    const patched = await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { standard_webhooks: true });
    expect(patched.body.standard_webhooks).toBe(true);
    await new Promise((r) => setTimeout(r, 1100)); // a running batch re-reads its subscription within a second
    await recordEvents(db, integ, residentUpdates(1, 'on'));
    await receiver.waitFor(() => at('/sw-off').length >= 2);
    expect(() => new Webhook(sub.secret).verify(at('/sw-off')[1]!.raw, plainHeaders(at('/sw-off')[1]!))).not.toThrow();
  });
});

describe('endpoint health', () => {
  it('shows success rate, last success and what waits, in the admin API', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/health-ok');
    await recordEvents(db, integ, residentUpdates(3, 'ok'));
    await receiver.waitFor(() => at('/health-ok').length >= 3);
    const view = await until(
      () => admin('GET', `/webhook_subscriptions/${sub.id}`),
      // The health row is folded in just after the attempts are recorded (activities/dispatch.ts), so wait for both.
      (r) => r.body.health.attempts === 3 && r.body.health.last_success_at !== null,
    );
    expect(view.body.health).toEqual({
      success_rate: 1,
      attempts: 3,
      last_success_at: expect.stringMatching(/Z$/),
      last_failure_at: null,
      failing_since: null,
      pending: 0,
      retrying: 0,
      dead_lettered: 0,
    });
    expect(view.body.disabled).toBeNull();
    const list = await admin('GET', `/integrations/${integ.id}/webhook_subscriptions`);
    expect(list.body.results[0].health.success_rate).toBe(1);
  });

  it('disables a subscription whose every attempt failed for the configured window, keeping its queue', async () => {
    const integ = await webhookIntegration(db, stack);
    const sub = await subscribe(integ.id, '/health-down', { max_in_flight: 1 });
    answers.set('/health-down', () => 500);
    const disabled = await until(
      async () => {
        await recordEvents(db, integ, residentUpdates(1, `d${Date.now()}`));
        return admin('GET', `/webhook_subscriptions/${sub.id}`);
      },
      (r) => r.body.status === 'disabled',
      20_000,
    );
    expect(disabled.body.disabled).toEqual({ at: expect.stringMatching(/Z$/), by: 'failures', reason: expect.stringContaining('every attempt failed since') });
    expect(disabled.body.health.failing_since).toEqual(expect.stringMatching(/Z$/));
    expect(disabled.body.health.last_success_at).toBeNull();
    expect(Date.parse(disabled.body.disabled.at) - Date.parse(disabled.body.health.failing_since)).toBeGreaterThanOrEqual(1500);

    // Events recorded while disabled are not queued; what was queued waits (kept for when it is enabled or replayed).
    const received = at('/health-down').length;
    const before = disabled.body.health.pending;
    answers.set('/health-down', () => 200);
    const enabled = await admin('PATCH', `/webhook_subscriptions/${sub.id}`, { status: 'active' });
    expect(enabled.body.disabled).toBeNull();
    expect(enabled.body.health.failing_since).toBeNull();
    if (before > 0) await receiver.waitFor(() => at('/health-down').length >= received + 1);
    await recordEvents(db, integ, residentUpdates(1, 'back'));
    const back = await until(
      () => admin('GET', `/webhook_subscriptions/${sub.id}`),
      (r) => r.body.health.last_success_at !== null && r.body.health.pending === 0,
    );
    expect(back.body.status).toBe('active');
  });

  it('disables a subscription at once when its receiver answers 410 Gone, and tells the operators who asked', async () => {
    const integ = await webhookIntegration(db, stack);
    const { key } = await createApiKey(db, { organizationId: integ.organizationId, mode: 'test' });
    // An operator's endpoint for notices, and a catch-all one (which does not get them: they are not in the catalog).
    const ops = await subscribe(integ.id, '/gone-ops', { event_types: ['SUBSCRIPTION_DISABLED'] });
    const catchAll = await subscribe(integ.id, '/gone-all', { event_types: ['*'] });
    // One that asks for both: `*` does not swallow the notice it names beside it.
    const both = await subscribe(integ.id, '/gone-both', { event_types: ['SUBSCRIPTION_DISABLED', '*', '*'] });
    expect((await admin('GET', `/webhook_subscriptions/${both.id}`)).body.event_types).toEqual(['*', 'SUBSCRIPTION_DISABLED']);
    const sub = await subscribe(integ.id, '/gone', { max_in_flight: 1 });
    answers.set('/gone', () => 410);
    await recordEvents(db, integ, residentUpdates(5, 'g'));
    const disabled = await until(
      () => admin('GET', `/webhook_subscriptions/${sub.id}`),
      (r) => r.body.status === 'disabled',
      10_000,
    );
    expect(disabled.body.disabled).toEqual({ at: expect.stringMatching(/Z$/), by: 'gone', reason: expect.stringContaining('410 Gone') });
    // Nothing more was sent after the 410; the rest of the queue is kept.
    expect(at('/gone').length).toBe(1);
    const deliveries = await admin('GET', `/webhook_subscriptions/${sub.id}/deliveries?limit=100`);
    expect(deliveries.body.results.filter((d: any) => d.status === 'pending').length).toBe(4);

    // The notice: signed like any event, to the subscription that named its type only.
    await receiver.waitFor(() => at('/gone-ops').length >= 1);
    const [notice] = at('/gone-ops');
    expect(verifyWebhookSignature(notice!.raw, notice!.headers, ops.secret)).toBe(true);
    expect(notice!.body).toMatchObject({
      type: 'SUBSCRIPTION_DISABLED',
      category: 'operational',
      integration_id: integ.id,
      data: {
        subscription_id: sub.id,
        url: hookUrl('/gone'),
        disabled_by: 'gone',
        reason: expect.stringContaining('410 Gone'),
        disabled_at: disabled.body.disabled.at,
      },
    });
    await receiver.waitFor(() => at('/gone-both').length >= 6);
    expect(
      at('/gone-both')
        .map((r) => r.body.type)
        .sort(),
    ).toEqual([...Array(5).fill('RESIDENT_UPDATED'), 'SUBSCRIPTION_DISABLED']);
    await receiver.waitFor(() => at('/gone-all').length >= 5);
    expect(at('/gone-all').map((r) => r.body.type)).not.toContain('SUBSCRIPTION_DISABLED');
    // Nor is it queued for it: the relay queued every delivery of the notice in one transaction, before /gone-ops got it.
    const queued = await admin('GET', `/webhook_subscriptions/${catchAll.id}/deliveries?limit=100`);
    expect(queued.body.results.map((d: any) => d.event_type)).toEqual(Array(5).fill('RESIDENT_UPDATED'));
    // Nor is it in the public feed, whose types are docs/api.md's catalog.
    const feed = (await (await api.get('/v1/events?limit=100', { key })).json()) as { results: { type: string }[] };
    expect(feed.results.map((e) => e.type)).toEqual(['RESIDENT_UPDATED', 'RESIDENT_UPDATED', 'RESIDENT_UPDATED', 'RESIDENT_UPDATED', 'RESIDENT_UPDATED']);
    expect((await api.get(`/v1/events/${notice!.body.id as string}`, { key })).status).toBe(404);

    // The operator who disables by hand is recorded as such.
    const other = await subscribe(integ.id, '/gone-manual');
    const manual = await admin('PATCH', `/webhook_subscriptions/${other.id}`, { status: 'disabled' });
    expect(manual.body.disabled).toEqual({ at: expect.stringMatching(/Z$/), by: 'operator', reason: 'disabled by an operator' });
  });
});
