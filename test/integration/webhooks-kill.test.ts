/**
 * A webhook worker (delivery worker and outbox relay in one process, as in production) SIGKILLed in the middle of
 * a burst of 2,000 events: another one takes over, every event reaches the receiver, and nothing is sent beyond
 * at-least-once: every request the receiver saw is a distinct attempt recorded on its delivery, first attempts the
 * killed batch never recorded are recorded as lost and retried, and no attempt recorded as succeeded is sent again.
 */
import type { ChildProcess } from 'node:child_process';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { webhookDeliveries } from '../../db/schema';
import { attemptsOf, createSubscription } from '../../db/webhooks';
import { testConfig, testDb, testKeyring } from '../support/context';
import { Processes } from '../support/faults';
import { until } from '../support/until';
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

it('loses nothing and never re-sends an attempt recorded as succeeded when the worker and its relay are killed mid-burst', async () => {
  const integ = await webhookIntegration(db, null);
  await createSubscription(
    db,
    { organizationId: integ.organizationId, integrationId: integ.id, url: receiver.url, eventTypes: ['*'], description: null },
    testKeyring(),
  );
  const first = spawnChild(integ.organizationId);
  // A burst recorded as a sync records it: a page's events in one insert, four pages back to back.
  const ids: string[] = [];
  for (let page = 0; page < 4; page++) ids.push(...(await recordEvents(db, integ, residentUpdates(500, `k${page}-`))));
  // Kill it while deliveries are going out.
  await receiver.waitFor((r) => r.length >= 300, 60_000);
  await procs.kill(first, 'SIGKILL');
  const atKill = receiver.received.length;
  expect(atKill).toBeLessThan(ids.length);

  // The next one takes over: the dispatcher's batch on the dead worker times out on its heartbeat (30 s) and the
  // next batch, on the new worker, hands what it had taken and never recorded to retries as lost attempts.
  spawnChild(integ.organizationId);
  await receiver.waitFor((r) => new Set(r.map((x) => x.body.id)).size >= ids.length, 120_000);
  // Every delivery ends succeeded once its last attempt is recorded.
  const rows = await until(
    'every delivery to end succeeded',
    () => db.select().from(webhookDeliveries).where(eq(webhookDeliveries.integrationId, integ.id)),
    (ds) => ds.every((r) => r.status === 'succeeded'),
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect(rows).toHaveLength(ids.length);
  expect(new Set(receiver.received.map((r) => r.body.id))).toEqual(new Set(ids));

  const attemptOf = (r: { headers: Record<string, unknown> }) => Number(r.headers['x-service-delivery-attempt']);
  // No (event, attempt number) was sent twice: duplicates only come from attempts lost with the killed worker.
  const seen = new Set<string>();
  for (const r of receiver.received) {
    const key = `${String(r.body.id)}#${attemptOf(r)}`;
    expect(seen.has(key), key).toBe(false);
    seen.add(key);
  }
  // As the admin API shows them (a first attempt that succeeded is kept on its delivery, the others in rows).
  const recorded = [
    ...(
      await attemptsOf(
        db,
        rows.map((d) => d.id),
      )
    ).values(),
  ]
    .flat()
    .map((a) => ({ deliveryId: a.deliveryId, number: a.number, status: a.responseStatus, error: a.error }));
  // Every request received is an attempt recorded on its delivery (lost ones included).
  expect(receiver.received.length).toBeLessThanOrEqual(recorded.length);
  const lost = recorded.filter((a) => a.error?.startsWith('attempt lost: '));
  const duplicates = receiver.received.length - ids.length;
  expect(duplicates).toBeLessThanOrEqual(lost.length);

  // Never a re-send of an attempt recorded as succeeded: for each event, the receiver got no attempt numbered
  // above its delivery's first attempt recorded with a 2xx.
  const ok = (s: number | null) => s !== null && s >= 200 && s < 300;
  const firstOk = new Map<string, number>();
  for (const a of recorded) if (ok(a.status) && a.number < (firstOk.get(a.deliveryId) ?? Infinity)) firstOk.set(a.deliveryId, a.number);
  const eventOf = new Map(rows.map((d) => [d.id, d.eventId]));
  const okByEvent = new Map([...firstOk].map(([deliveryId, n]) => [eventOf.get(deliveryId)!, n]));
  expect(okByEvent.size).toBe(ids.length);
  const resent = receiver.received.filter((r) => attemptOf(r) > okByEvent.get(r.body.id as string)!);
  expect(resent.map((r) => `${String(r.body.id)}#${attemptOf(r)}`)).toEqual([]);

  // The kill fell while the batch held a window of taken, unrecorded first attempts: those are recorded as lost
  // attempts, retried by their own workflows, and their deliveries ended succeeded on a later attempt.
  expect(lost.length).toBeGreaterThan(0);
  for (const a of lost) {
    expect(firstOk.get(a.deliveryId)).toBeGreaterThan(a.number);
  }
}, 180_000);
