/**
 * Webhook retention: events, deliveries and attempts older than 30 days are removed and the rest kept, by a daily
 * schedule on the webhook task queue. On a database of this file's own: the clean-up takes every old row of the
 * database it runs on, and other files' rows dated in the past (their time-window tests) must not go with it.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { events, webhookAttempts, webhookDeliveries } from '../../db/schema';
import { purgeBefore } from '../../db/webhooks';
import { ensurePurgeSchedule } from '../../control/webhooks';
import { PURGE_SCHEDULE_ID, webhookTaskQueueOf } from '../../domain/contract';
import { RETENTION_MS } from '../../domain/webhooks';
import { testConfig } from '../support/context';
import { onOwnDatabase } from '../support/services';
import { until } from '../support/until';
import { recordEvents, residentUpdates, startWebhookStack, storeSubscription, webhookIntegration, type WebhookStack } from '../support/webhooks';

let db: Db;
let config: Config;
let stack: WebhookStack;

onOwnDatabase('retention', (own) => {
  db = own.db;
  config = testConfig({ DATABASE_URL: own.url });
});
beforeAll(async () => {
  stack = await startWebhookStack(config, db);
});
afterAll(async () => {
  await stack?.stop();
});

describe('retention', () => {
  it('removes events, deliveries and attempts older than 30 days and keeps the rest', async () => {
    const integ = await webhookIntegration(db, null);
    const { row: sub } = await storeSubscription(db, integ, 'http://127.0.0.1:9/');
    const [oldEvent, newEvent] = await recordEvents(db, integ, residentUpdates(2, 'purge'));
    const old = new Date(Date.now() - RETENTION_MS - 60_000);
    await db.update(events).set({ createdAt: old, dispatchedAt: old }).where(eq(events.id, oldEvent!));
    await db.update(events).set({ dispatchedAt: new Date() }).where(eq(events.id, newEvent!));
    const base = {
      subscriptionId: sub.id,
      organizationId: integ.organizationId,
      integrationId: integ.id,
      eventType: 'RESIDENT_UPDATED',
      status: 'dead_lettered' as const,
    };
    await db.insert(webhookDeliveries).values([
      { id: 'whd_01M000000000000000000PURGE', eventId: oldEvent!, createdAt: old, ...base },
      { id: 'whd_01M000000000000000000KEEP0', eventId: newEvent!, ...base },
    ]);
    await db.insert(webhookAttempts).values([
      { deliveryId: 'whd_01M000000000000000000PURGE', number: 1, startedAt: old, durationMs: 3, error: 'x' },
      { deliveryId: 'whd_01M000000000000000000KEEP0', number: 1, startedAt: new Date(), durationMs: 3, error: 'x' },
    ]);
    const removed = await purgeBefore(db, new Date(Date.now() - RETENTION_MS), 1);
    expect(removed.events).toBeGreaterThanOrEqual(1);
    expect(removed.deliveries).toBeGreaterThanOrEqual(1);
    expect((await db.select().from(events).where(eq(events.integrationId, integ.id))).map((e) => e.id)).toEqual([newEvent]);
    expect((await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, sub.id))).map((d) => d.id)).toEqual([
      'whd_01M000000000000000000KEEP0',
    ]);
    expect((await db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, 'whd_01M000000000000000000PURGE'))).length).toBe(0);
  });

  it('runs the clean-up daily from a schedule on the webhook task queue, created idempotently', async () => {
    const taskQueue = webhookTaskQueueOf(config.TEMPORAL_TASK_QUEUE);
    await ensurePurgeSchedule({ client: stack.client, taskQueue });
    await ensurePurgeSchedule({ client: stack.client, taskQueue });
    const handle = stack.client.schedule.getHandle(PURGE_SCHEDULE_ID);
    try {
      const d = await handle.describe();
      expect(d.spec.intervals?.[0]?.every).toBe(24 * 3600 * 1000);
      expect(d.action).toMatchObject({ type: 'startWorkflow', workflowType: 'purgeRetention', taskQueue });
      // Run it now: the workflow completes with what it removed.
      await handle.trigger();
      const run = await until(
        () => handle.describe(),
        (x) => x.info.recentActions.length > 0,
      );
      const wf = stack.client.workflow.getHandle(run.info.recentActions[0]!.action.workflow.workflowId);
      expect(await wf.result()).toEqual({ events: expect.any(Number), deliveries: expect.any(Number), skippedRecords: expect.any(Number) });
    } finally {
      await handle.delete();
    }
  });
});
