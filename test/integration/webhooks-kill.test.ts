/**
 * A webhook worker (delivery worker and outbox relay in one process, as in production) SIGKILLed mid-stream:
 * another one takes over, every event reaches the receiver, and nothing is sent beyond at-least-once: every
 * request the receiver saw is a distinct attempt recorded on its delivery.
 */
import type { ChildProcess } from 'node:child_process';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { webhookAttempts, webhookDeliveries } from '../../db/schema';
import { createSubscription } from '../../db/webhooks';
import { testConfig, testDb, testKeyring } from '../support/context';
import { Processes } from '../support/faults';
import { recordEvents, residentUpdates, startReceiver, webhookIntegration, type Receiver } from '../support/webhooks';

let db: Db;
let config: Config;
let receiver: Receiver;
const procs = new Processes();

beforeAll(async () => {
  db = testDb();
  config = testConfig({ WEBHOOK_RETRY_SCHEDULE_MS: '0,200,200,200,200,200,200' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await procs.killAll();
  await receiver?.close();
  await closeDb(db);
});

function spawnChild(orgId: string): ChildProcess {
  return procs.spawn(process.execPath, ['--import', 'tsx', 'test/support/webhook-child.ts', orgId], {
    ...process.env,
    DATABASE_URL: config.DATABASE_URL,
    TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS!,
    TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    WEBHOOK_RETRY_SCHEDULE_MS: config.WEBHOOK_RETRY_SCHEDULE_MS.join(','),
    LOG_LEVEL: 'warn',
  });
}

it('loses nothing and sends nothing twice beyond at-least-once when the worker and its relay are killed mid-stream', async () => {
  const integ = await webhookIntegration(db, null);
  await createSubscription(db, { organizationId: integ.organizationId, integrationId: integ.id, url: receiver.url, eventTypes: ['*'], description: null }, testKeyring());
  const first = spawnChild(integ.organizationId);
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push(...(await recordEvents(db, integ, residentUpdates(40, `k${i}`))));
  // Kill it while deliveries are going out.
  await receiver.waitFor((r) => r.length >= 30, 60_000);
  await procs.kill(first, 'SIGKILL');
  const atKill = receiver.received.length;
  expect(atKill).toBeLessThan(ids.length);

  spawnChild(integ.organizationId);
  await receiver.waitFor((r) => new Set(r.map((x) => x.body.id)).size >= ids.length, 90_000);
  const rows = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.integrationId, integ.id));
  // Every delivery ends succeeded once its last attempt is recorded.
  const deadline = Date.now() + 30_000;
  let pending = rows;
  while (pending.some((r) => r.status !== 'succeeded') && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    pending = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.integrationId, integ.id));
  }
  expect(pending.filter((r) => r.status !== 'succeeded')).toEqual([]);
  expect(pending).toHaveLength(ids.length);
  expect(new Set(receiver.received.map((r) => r.body.id))).toEqual(new Set(ids));

  // No (event, attempt number) was sent twice: duplicates only come from attempts lost with the killed worker.
  const seen = new Set<string>();
  for (const r of receiver.received) {
    const key = `${String(r.body.id)}#${String(r.headers['x-service-delivery-attempt'])}`;
    expect(seen.has(key), key).toBe(false);
    seen.add(key);
  }
  const attempts = await db.select().from(webhookAttempts);
  const byDelivery = new Map(pending.map((d) => [d.id, d.eventId]));
  const recorded = attempts.filter((a) => byDelivery.has(a.deliveryId));
  // Every request received is an attempt recorded on its delivery (lost ones included).
  expect(receiver.received.length).toBeLessThanOrEqual(recorded.length);
  const duplicates = receiver.received.length - ids.length;
  const lost = recorded.filter((a) => a.error?.startsWith('attempt lost')).length;
  expect(duplicates).toBeLessThanOrEqual(lost);
}, 180_000);
