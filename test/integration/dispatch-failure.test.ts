/**
 * A dispatcher batch whose loop fails in its middle (activities/dispatch.ts; here the wait for a permit, as a database
 * read there can): it fails, but what
 * it had in flight is answered and recorded, and what it had taken and not sent goes back to the queue in its places,
 * so the next batch neither takes them for lost attempts nor sends them out of order.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDispatchActivities } from '../../activities/dispatch';
import { createInFlight } from '../../activities/in-flight';
import { createSender } from '../../activities/webhook-http';
import { closeDb, type Db } from '../../db/client';
import { queueAndMarkDispatched, undispatchedEvents } from '../../db/relay';
import { claimQueued, ensureCursor } from '../../db/dispatch';
import { relaySubscriptionsOf, subscriptionsToWake } from '../../db/webhooks';
import { webhookDeliveries, webhookSubscriptions } from '../../db/schema';
import type { IntegrationRow } from '../../db/tenants';
import { testDb, testKeyring } from '../support/context';
import { recordEvents, residentUpdates, storeSubscription, webhookIntegration } from '../support/webhooks';

let db: Db;
let server: Server;
let url = '';
let received = 0;
beforeAll(async () => {
  db = testDb(4);
  // Answers each request after 300 ms: the batch has requests in flight when its read fails.
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => (received++, res.end('ok')), 300));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await closeDb(db);
});

/** `n` events of `integ` recorded and queued to its one subscription, as the relay does. */
async function queueEvents(integ: IntegrationRow, n: number, tag: string): Promise<void> {
  await recordEvents(db, integ, residentUpdates(n, tag));
  const batch = await undispatchedEvents(db, { limit: 100, organizationIds: [integ.organizationId] });
  const [sub] = await relaySubscriptionsOf(db, [integ.id], new Date(0));
  await queueAndMarkDispatched(
    db,
    batch.map((event) => ({ event, sub: sub! })),
    batch,
  );
}

it('a failure in the loop ends the batch with its in-flight outcomes recorded and the rest queued again', async () => {
  const integ = await webhookIntegration(db, null);
  const { row: sub } = await storeSubscription(db, integ, url, { maxInFlight: 2 });
  await queueEvents(integ, 6, 'dbfail');

  const permits = createInFlight();
  let acquired = 0;
  const acts = createDispatchActivities({
    db,
    sender: createSender({ timeoutMs: 10_000 }),
    secrets: testKeyring(),
    // The third request's wait for a permit fails, with two requests in flight and four deliveries taken.
    inFlight: {
      acquire: async (key, max) => {
        if (++acquired === 3) throw new Error('connection to the database lost');
        return permits.acquire(key, max);
      },
      held: (key) => permits.held(key),
    },
    queued: { wait: (_s, ms) => new Promise((r) => setTimeout(r, ms)), close: async () => {} },
    startRetries: async () => {},
  });
  const input = { subscriptionId: sub.id, maxInFlight: 2, circuitFailures: 10, batchMs: 10_000, lingerMs: 50, probe: false, firstRetryDelayMs: 30_000 };
  const err = await new MockActivityEnvironment().run(acts.dispatchBatch, input).catch((e: unknown) => e);
  expect((err as Error).message).toMatch(/connection to the database lost/);

  const rows = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, sub.id)).orderBy(webhookDeliveries.seq);
  // The two in flight were answered and recorded as succeeded; the four taken and not sent are pending again, and
  // no retry was started for any of them.
  expect(received).toBe(2);
  expect(rows.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'pending', 'pending', 'pending', 'pending']);

  // The next batch takes up the queue where it stopped: each event once, in order, none as a lost attempt.
  const ok = await new MockActivityEnvironment().run(
    createDispatchActivities({
      db,
      sender: createSender({ timeoutMs: 10_000 }),
      secrets: testKeyring(),
      inFlight: createInFlight(),
      queued: { wait: (_s, ms) => new Promise((r) => setTimeout(r, ms)), close: async () => {} },
      startRetries: async () => {},
    }).dispatchBatch,
    input,
  );
  expect(ok).toMatchObject({ succeeded: 4, failed: 0 });
  expect(received).toBe(6);
});

it('the relay sweep wakes a subscription whose taken deliveries were never settled (its batch and dispatcher died)', async () => {
  const integ = await webhookIntegration(db, null);
  const { row: sub } = await storeSubscription(db, integ, url);
  await queueEvents(integ, 2, 'orphan');
  // A batch took both, then died with its dispatcher before recording anything; the subscription is not idle.
  await ensureCursor(db, sub.id);
  expect(await claimQueued(db, sub.id, 10)).toHaveLength(2);
  await db.update(webhookSubscriptions).set({ dispatchIdle: false }).where(eq(webhookSubscriptions.id, sub.id));
  const scope = { organizationIds: [integ.organizationId] };
  expect(await subscriptionsToWake(db, { staleMs: 60_000, ...scope })).toEqual([]);
  await db
    .update(webhookDeliveries)
    .set({ createdAt: new Date(Date.now() - 120_000) })
    .where(eq(webhookDeliveries.subscriptionId, sub.id));
  expect(await subscriptionsToWake(db, { staleMs: 60_000, ...scope })).toEqual([sub.id]);
});
