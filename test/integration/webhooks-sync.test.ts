/**
 * The events a real sync records reach a subscriber: FIRST_SYNC_COMPLETE after the bulk load (no per-record events),
 * then each later run's data-change events in production order, SYNC_COMPLETE last, every one signed; and with many
 * requests in flight, SYNC_COMPLETE still reaches the receiver after every change of its run has been answered.
 */
import { expect, it } from 'vitest';
import type { Db } from '../../db/client';
import { createSubscription } from '../../db/webhooks';
import { categoryOf, type EventType } from '../../domain/events';
import { verifyWebhookSignature } from '../../domain/signature';
import { testKeyring } from '../support/context';
import { onServices } from '../support/services';
import { runSync, sandbox, sandboxIntegration, type TestWorker } from '../support/sync';
import { recordEvents, residentUpdates, type Receiver, type WebhookStack } from '../support/webhooks';

let db: Db;
let worker: TestWorker;
let stack: WebhookStack;
let receiver: Receiver;

onServices({ settings: { WORKER_RECONCILE_SCHEDULES: 'false' }, worker: true, webhooks: true, receiver: true }, (s) => {
  ({ db, worker, webhooks: stack, receiver } = s);
});

it('delivers what each sync run records, SYNC_COMPLETE after the run’s changes', async () => {
  const s = await sandboxIntegration(db, { size: 40, plan: 'scale' });
  stack.orgs.add(s.row.organizationId);
  // One request in flight: first attempts then arrive in the order they go out (production order).
  const sub = await createSubscription(
    db,
    { organizationId: s.row.organizationId, integrationId: s.row.id, url: receiver.url, eventTypes: ['*'], description: null, maxInFlight: 1 },
    testKeyring(),
  );

  const first = await runSync(worker, db, s.row);
  // An event recorded after the run ends is delivered after every event of the run (one in flight, production order):
  // once it is in, the run has delivered all it ever will.
  const [afterFirst] = await recordEvents(db, s.row, residentUpdates(1, 'after-first'));
  await receiver.waitFor((r) => r.some((x) => x.body.id === afterFirst));
  expect(receiver.received.map((r) => r.body.type)).toEqual(['FIRST_SYNC_COMPLETE', 'RESIDENT_UPDATED']);
  expect(receiver.received[1]!.body.id).toBe(afterFirst);
  expect(receiver.received[0]!.body.data).toMatchObject({ sync_job_id: first.id, records_new: first.recordsNew, records_updated: 0, records_soft_deleted: 0 });

  await sandbox().applyChanges(s.companyId, {
    update: { lease: 2, resident: 2, unit: 1 },
    create: { resident: 1 },
    delete: { lease: 1 },
    lease_transitions: 2,
  });
  const second = await runSync(worker, db, s.row);
  const [afterSecond] = await recordEvents(db, s.row, residentUpdates(1, 'after-second'));
  await receiver.waitFor((r) => r.some((x) => x.body.id === afterSecond));
  const end = receiver.received.findIndex((r) => r.body.id === afterSecond);
  expect(receiver.received.slice(end).map((r) => r.body.id)).toEqual([afterSecond]);
  const run = receiver.received.slice(2, end);
  const types = run.map((r) => r.body.type as string);
  expect(types.at(-1)).toBe('SYNC_COMPLETE');
  expect(types.filter((t) => t === 'SYNC_COMPLETE')).toHaveLength(1);
  expect(types).toContain('RESIDENT_CREATED');
  expect(types.filter((t) => t !== 'SYNC_COMPLETE').length).toBe(second.recordsNew + second.recordsUpdated + second.recordsSoftDeleted);
  // Production order: within each entity (whose pages a run applies one after another) the envelope ids (ULIDs)
  // ascend in the order received. Units and residents are synced side by side, so their transactions may commit
  // in either order; the relay dispatches what has committed, in commit order.
  for (const entity of ['PROPERTY', 'UNIT', 'RESIDENT', 'LEASE']) {
    const ids = run.filter((r) => (r.body.type as string).startsWith(entity)).map((r) => r.body.id as string);
    expect(ids, entity).toEqual([...ids].sort());
  }
  for (const r of receiver.received) expect(verifyWebhookSignature(r.raw, r.headers, sub.secret)).toBe(true);
  // A soft-delete arrives as *_UPDATED with deleted_at.
  expect(run.some((r) => r.body.type === 'LEASE_UPDATED' && (r.body.data as any).deleted_at)).toBe(true);
  // By `created_at` too, the run's end comes after each of its changes, its soft-deletes included (never tied).
  const endedAt = run.at(-1)!.body.created_at as string;
  for (const r of run.slice(0, -1)) expect((r.body.created_at as string) < endedAt, r.body.type as string).toBe(true);
}, 120_000);

it('with many requests in flight, SYNC_COMPLETE goes out only once every event of its run has been answered', async () => {
  const s = await sandboxIntegration(db, { size: 40, seed: 41, plan: 'scale' });
  stack.orgs.add(s.row.organizationId);
  // The default bound on requests in flight (16), and a receiver slow to answer data changes: without the wait, the
  // run's end would be sent while its last changes are still being answered.
  await createSubscription(
    db,
    { organizationId: s.row.organizationId, integrationId: s.row.id, url: `${receiver.url}/fenced`, eventTypes: ['*'], description: null },
    testKeyring(),
  );
  await runSync(worker, db, s.row);
  const SLOW_MS = 1_500;
  receiver.reply((r) => (r.path.endsWith('/fenced') && categoryOf(r.body.type as EventType) === 'data_change' ? { status: 200, afterMs: SLOW_MS } : 200));
  try {
    await sandbox().applyChanges(s.companyId, { update: { lease: 3, resident: 3, unit: 2 } });
    const second = await runSync(worker, db, s.row);
    const mine = () => receiver.received.filter((r) => r.path.endsWith('/fenced'));
    await receiver.waitFor(() => mine().some((r) => r.body.type === 'SYNC_COMPLETE'), 60_000);
    const run = mine().filter((r) => r.body.type !== 'FIRST_SYNC_COMPLETE');
    const end = run.find((r) => r.body.type === 'SYNC_COMPLETE')!;
    const changes = run.filter((r) => r.body.type !== 'SYNC_COMPLETE');
    expect(changes.length).toBe(second.recordsUpdated);
    expect(changes.length).toBeGreaterThan(1);
    // Each change was answered SLOW_MS after it arrived (a timer may fire a millisecond early).
    const lastAnswered = Math.max(...changes.map((r) => r.at + SLOW_MS));
    expect(end.at).toBeGreaterThanOrEqual(lastAnswered - 2);
  } finally {
    receiver.reply(() => 200);
  }
}, 120_000);
