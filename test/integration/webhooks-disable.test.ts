/**
 * Disabling or deleting a subscription (or its integration) ends its retries at once, as the admin API says: its deliveries being retried
 * are `cancelled` (replayable) the moment the PATCH or DELETE answers, not when their next attempt was due; enabling
 * it again does not resume them, and their workflows end `cancelled` at once (told at commit), without sending
 * anything, where the Temporal UI shows them. A replay still sends one. The retry schedule is stretched (a minute
 * between attempts: configuration is data) so that a workflow ending within seconds was told, not woken by its timer.
 */
import type { Client } from '@temporalio/client';
import { expect, it } from 'vitest';
import type { Config } from '../../config';
import { eq, inArray } from 'drizzle-orm';
import { setTimeout as sleep } from 'node:timers/promises';
import { webhookDeliveries } from '../../db/schema';
import { SA_DELIVERY_STATUS } from '../../domain/contract';
import { adminCaller, type Reply, type TestServer } from '../support/api-server';
import { onServices } from '../support/services';
import { until } from '../support/until';
import { recordEvents, residentUpdates, webhookIntegration, type Receiver, type WebhookStack } from '../support/webhooks';
import type { Db } from '../../db/client';

let db: Db;
let config: Config;
let api: TestServer;
let stack: WebhookStack;
let receiver: Receiver;

const GAP_MS = 60_000;
const SETTINGS = { WEBHOOK_RETRY_SCHEDULE_MS: `0,${Array(6).fill(GAP_MS).join(',')}` };
onServices({ pool: 6, settings: SETTINGS, api: true, webhooks: true, receiver: true }, (s) => ({ db, config, api, webhooks: stack, receiver } = s));

const admin = (method: string, path: string, body?: unknown): Promise<Reply> => adminCaller(api, config.ADMIN_TOKEN)(method, path, body);
const at = (path: string) => receiver.received.filter((r) => r.path === path);

interface Delivery {
  id: string;
  status: string;
  attempts: { number: number }[];
  next_attempt_at: string | null;
}

const deliveriesOf = async (subscriptionId: string): Promise<Delivery[]> =>
  (await admin('GET', `/webhook_subscriptions/${subscriptionId}/deliveries?limit=100`)).body.results;

/** A subscription whose receiver fails every attempt, and two of its deliveries waiting for their second attempt. */
async function retrying(path: string): Promise<{ subscriptionId: string; integrationId: string; deliveries: Delivery[] }> {
  const integ = await webhookIntegration(db, stack);
  const r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, {
    url: `http://127.0.0.1:${receiver.port}${path}`,
    event_types: ['*'],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  await recordEvents(db, integ, residentUpdates(2, path));
  const deliveries = await until(
    'both deliveries to be retried',
    () => deliveriesOf(r.body.id),
    (ds) => ds.length === 2 && ds.every((d) => d.status === 'retrying'),
  );
  return { subscriptionId: r.body.id, integrationId: integ.id, deliveries };
}

/**
 * Waits for a delivery's workflow to end, well before its next attempt's time (it was told, not woken by its timer);
 * its status search attribute.
 */
async function workflowEnd(client: Client, deliveryId: string): Promise<unknown> {
  const handle = client.workflow.getHandle(deliveryId);
  const ended = await Promise.race([
    handle.result().then(
      () => true,
      () => true,
    ),
    sleep(GAP_MS / 4).then(() => false),
  ]);
  expect(ended, `delivery ${deliveryId}'s workflow still open ${GAP_MS / 4000} s after its cancellation`).toBe(true);
  return (await handle.describe()).typedSearchAttributes.get(SA_DELIVERY_STATUS);
}

it('a disable cancels the deliveries being retried at once; enabling again does not resume them, a replay sends one', async () => {
  receiver.reply((r) => (r.path === '/disable' ? 500 : 200));
  const { subscriptionId, deliveries } = await retrying('/disable');
  const sentBefore = at('/disable').length;

  expect((await admin('PATCH', `/webhook_subscriptions/${subscriptionId}`, { status: 'disabled' })).status).toBe(200);
  const cancelled = await deliveriesOf(subscriptionId);
  expect(cancelled.map((d) => [d.status, d.next_attempt_at])).toEqual([
    ['cancelled', null],
    ['cancelled', null],
  ]);
  expect((await admin('GET', `/webhook_subscriptions/${subscriptionId}`)).body.health).toMatchObject({ retrying: 0 });

  // Their workflows end cancelled without sending; enabling the subscription again does not resume them.
  receiver.reply(() => 200);
  for (const d of deliveries) expect(await workflowEnd(stack.client, d.id)).toBe('cancelled');
  expect((await admin('PATCH', `/webhook_subscriptions/${subscriptionId}`, { status: 'active' })).status).toBe(200);
  expect(at('/disable').length).toBe(sentBefore);
  expect((await deliveriesOf(subscriptionId)).map((d) => d.status)).toEqual(['cancelled', 'cancelled']);

  // A replay sends it.
  const replayed = await admin('POST', `/webhook_deliveries/${deliveries[0]!.id}/replay`);
  expect(replayed.status, JSON.stringify(replayed.body)).toBe(202);
  await receiver.waitFor(() => at('/disable').length === sentBefore + 1);
  const after = await until(
    'the replay to be recorded',
    async () => (await deliveriesOf(subscriptionId)).find((d) => d.id === deliveries[0]!.id),
    (d) => d?.status === 'succeeded',
  );
  expect(after!.attempts.length).toBeGreaterThanOrEqual(2);
}, 90_000);

/**
 * Two deliveries of a failing receiver at `path` being retried, then `remove` (a DELETE, or a move off the plans with webhooks): both are `cancelled` with
 * `reason` the moment it answers, their workflows end `cancelled`, and nothing more is sent.
 */
async function cancelledAtOnceBy(path: string, remove: (made: { subscriptionId: string; integrationId: string }) => Promise<Reply>, reason: string) {
  receiver.reply((r) => (r.path === path ? 500 : 200));
  const made = await retrying(path);
  const sentBefore = at(path).length;
  const removed = await remove(made);
  expect(removed.status, JSON.stringify(removed.body)).toBeLessThan(300);
  const rows = await db
    .select({ status: webhookDeliveries.status, nextAttemptAt: webhookDeliveries.nextAttemptAt, lastError: webhookDeliveries.lastError })
    .from(webhookDeliveries)
    .where(
      inArray(
        webhookDeliveries.id,
        made.deliveries.map((d) => d.id),
      ),
    );
  expect(rows).toEqual([
    { status: 'cancelled', nextAttemptAt: null, lastError: reason },
    { status: 'cancelled', nextAttemptAt: null, lastError: reason },
  ]);
  receiver.reply(() => 200);
  for (const d of made.deliveries) expect(await workflowEnd(stack.client, d.id)).toBe('cancelled');
  expect(at(path).length).toBe(sentBefore);
  return made.deliveries;
}

it('a delete cancels the deliveries being retried at once, and nothing more is sent', async () => {
  const deliveries = await cancelledAtOnceBy(
    '/delete',
    ({ subscriptionId }) => admin('DELETE', `/webhook_subscriptions/${subscriptionId}`),
    'the subscription was deleted',
  );
  // Their history stays readable, and says so.
  const gone = await Promise.all(deliveries.map(async (d) => (await admin('GET', `/webhook_deliveries/${d.id}`)).body));
  expect(gone.map((d: Delivery) => [d.status, d.next_attempt_at])).toEqual([
    ['cancelled', null],
    ['cancelled', null],
  ]);
}, 60_000);

it("an integration's deletion cancels its subscriptions' deliveries being retried at once, and nothing more is sent", async () => {
  await cancelledAtOnceBy('/integration', ({ integrationId }) => admin('DELETE', `/integrations/${integrationId}`), 'the integration was deleted');
}, 60_000);

it('a move to a plan without webhooks cancels the deliveries being retried at once, as a disable does', async () => {
  await cancelledAtOnceBy(
    '/plan',
    ({ integrationId }) => admin('PATCH', `/integrations/${integrationId}`, { plan: 'growth' }),
    'the integration is on a plan without webhooks',
  );
}, 60_000);

it('a replay while its cancelled retry still waits (its notice lost) sends it, and a failure goes on with the schedule', async () => {
  receiver.reply((r) => (r.path === '/early' ? 500 : 200));
  const { deliveries } = await retrying('/early');
  const id = deliveries[0]!.id;
  // Cancelled as a disable does, but with no notice heard (a worker away at the moment): its workflow still waits.
  await db.update(webhookDeliveries).set({ status: 'cancelled', nextAttemptAt: null }).where(eq(webhookDeliveries.id, id));
  // The replay wakes it, and the attempt is sent.
  expect((await admin('POST', `/webhook_deliveries/${id}/replay`)).status).toBe(202);
  const d = await until(
    'the replayed attempt to be recorded',
    async () => (await admin('GET', `/webhook_deliveries/${id}`)).body,
    (x) => x.attempts.length === 2,
  );
  // It failed: the delivery is retried on its schedule again, not left cancelled under an attempt it does not count.
  expect(d).toMatchObject({ status: 'retrying', attempt_count: 2, next_attempt_at: expect.any(String) });
  expect(await stack.client.workflow.getHandle(id).describe()).toMatchObject({ status: { name: 'RUNNING' } });
}, 60_000);

it('a first attempt in flight when its subscription is disabled ends cancelled, not retried, and its workflow with it', async () => {
  let arrived = 0;
  receiver.reply((r) => {
    if (r.path !== '/inflight') return 200;
    arrived++;
    return { status: 500, afterMs: 3_000 };
  });
  const integ = await webhookIntegration(db, stack);
  const r = await admin('POST', `/integrations/${integ.id}/webhook_subscriptions`, { url: `http://127.0.0.1:${receiver.port}/inflight`, event_types: ['*'] });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  await recordEvents(db, integ, residentUpdates(1, '/inflight'));
  await until(
    'the first attempt to arrive',
    () => Promise.resolve(arrived),
    (n) => n === 1,
  );
  // Disabled while the receiver holds the attempt: nothing is retrying yet, so the disable cancels nothing itself.
  expect((await admin('PATCH', `/webhook_subscriptions/${r.body.id}`, { status: 'disabled' })).status).toBe(200);
  // Recorded, then cancelled by the dispatcher's next statement: within seconds, not at its retry a minute later.
  const [d] = await until(
    'the attempt to be recorded and the delivery cancelled',
    () => deliveriesOf(r.body.id),
    (ds) => ds.length === 1 && ds[0]!.attempts.length === 1 && ds[0]!.status === 'cancelled',
    { timeoutMs: GAP_MS / 4 },
  );
  expect(d).toMatchObject({ status: 'cancelled', next_attempt_at: null });
  expect(await workflowEnd(stack.client, d!.id)).toBe('cancelled');
  expect(arrived).toBe(1);
}, 60_000);
