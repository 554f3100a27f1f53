import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeDb, type Db } from '../../db/client';
import { createSubscription } from '../../db/webhooks';
import { verifyWebhookSignature } from '../../domain/signature';
import { testConfig, testDb } from '../support/context';
import { recordEvents, residentUpdates, startReceiver, startWebhookStack, webhookIntegration, type Receiver, type WebhookStack } from '../support/webhooks';

let db: Db;
let stack: WebhookStack;
let receiver: Receiver;
beforeAll(async () => {
  db = testDb();
  const config = testConfig({ WEBHOOK_RETRY_SCHEDULE_MS: '0,100,100' });
  stack = await startWebhookStack(config, db);
  receiver = await startReceiver();
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  await closeDb(db);
});

it('delivers', async () => {
  const integ = await webhookIntegration(db, stack);
  const sub = await createSubscription(db, { organizationId: integ.organizationId, integrationId: integ.id, url: receiver.url, eventTypes: ['*'], description: null });
  const ids = await recordEvents(db, integ, residentUpdates(20));
  const t0 = Date.now();
  await receiver.waitFor((r) => r.length >= 20);
  console.log('20 delivered in', Date.now() - t0, 'ms');
  expect(receiver.received.map((r) => r.body.id)).toEqual(ids);
  for (const r of receiver.received) expect(verifyWebhookSignature(r.raw, r.headers as any, sub.secret)).toBe(true);
});
