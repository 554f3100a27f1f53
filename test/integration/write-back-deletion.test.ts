/**
 * A write whose integration is deleted while the write is under way. The deletion soft-deletes every record of the
 * integration; a write-back stored after it would bring its record back to life (listed again, with an event). So
 * the write-back and the deletion run one after the other (liveIntegrationLock): a write-back that comes second
 * stores nothing and its Operation fails with the source holding the change; a deletion that comes second waits for
 * the write-back and soft-deletes its record with the rest.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { and, eq, gt } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteActivities } from '../../activities/operations';
import { applyRecords, lockForWriteBack } from '../../db/apply';
import { closeDb, type Db } from '../../db/client';
import { getOperation, moveOperation } from '../../db/operations';
import { events, units } from '../../db/schema';
import { disconnectIntegration, getIntegration } from '../../db/tenants';
import type { SourceConnector } from '../../source';
import { makeTenant, testDb, testKeyring, type Tenant } from '../support/context';
import { propertyInput, unitInput } from '../support/fixtures';
import { queuedOperation, stubConnector } from '../support/writes';

let db: Db;
beforeAll(() => {
  db = testDb(4);
});
afterAll(async () => {
  await closeDb(db);
});

const ctxOf = (t: Tenant) => ({ integration: { id: t.integrationId, organizationId: t.organizationId, mode: t.mode }, emitEvents: false });

/** A tenant whose cache holds property P1 and unit U1. */
async function tenantWithUnit(): Promise<Tenant> {
  const t = await makeTenant(db);
  await db.transaction(async (tx) => {
    await applyRecords(tx, ctxOf(t), 'property', [propertyInput('P1')]);
    await applyRecords(tx, ctxOf(t), 'unit', [unitInput('U1', 'P1')]);
  });
  return t;
}

async function deleteIntegration(t: Tenant): Promise<Date> {
  const now = new Date();
  await disconnectIntegration(db, (await getIntegration(db, t.integrationId))!, now);
  return now;
}

const unitRow = async (t: Tenant, xId: string) =>
  (
    await db
      .select()
      .from(units)
      .where(and(eq(units.integrationId, t.integrationId), eq(units.xId, xId)))
  )[0];

/** A source that applies every update and answers the read-back, running `during` as it reads. */
function source(during: () => Promise<void>): SourceConnector {
  return stubConnector({
    update: async (_entity, xId) => ({ x_id: xId, related: [] }),
    async readOne(_entity, xId) {
      await during();
      return unitInput(xId, 'P1', { unit_number: 'B-2' }) as never;
    },
  });
}

describe('a write whose integration is deleted while it is under way', () => {
  it('deleted during the read-back: nothing is stored, the record stays deleted, and the Operation fails with the source holding the change', async () => {
    const t = await tenantWithUnit();
    let deletedAt: Date | undefined;
    const acts = createWriteActivities({ db, secrets: testKeyring(), connectorOf: () => source(async () => void (deletedAt = await deleteIntegration(t))) });
    const operationId = await queuedOperation(db, t, { type: 'unit.update', request: { unit_number: 'B-2' }, targetXId: 'U1' });
    const result = await new MockActivityEnvironment().run(acts.attemptWrite, { operationId, attempt: 1, probe: false });
    expect(result).toMatchObject({
      outcome: 'failed',
      error: expect.stringMatching(/^the source applied the change \(x_id U1\), but the integration was deleted/),
    });
    const u = await unitRow(t, 'U1');
    expect(u!.unitNumber).not.toBe('B-2');
    expect(u!.deletedAt).toEqual(deletedAt);
    expect(await getOperation(db, operationId)).toMatchObject({
      status: 'failed',
      sourceState: 'applied',
      reconcileState: 'failed',
      resourceId: null,
      resourceXId: null,
      lastError: expect.stringContaining('the integration was deleted before it could be stored'),
    });
    expect(
      await db
        .select()
        .from(events)
        .where(and(eq(events.integrationId, t.integrationId), gt(events.createdAt, deletedAt!))),
    ).toEqual([]);
  });

  it('deleted between attempts: nothing is sent; the reason says the source may hold the change when an earlier attempt was made', async () => {
    const t = await tenantWithUnit();
    let sent = 0;
    const acts = createWriteActivities({
      db,
      secrets: testKeyring(),
      connectorOf: () => stubConnector({ update: async (_e, xId) => (sent++, { x_id: xId, related: [] }) }),
    });
    // Never attempted: nothing can have reached the source.
    const fresh = await queuedOperation(db, t, { type: 'unit.update', request: { unit_number: 'B-2' }, targetXId: 'U1' });
    // One attempt lost its answer: the source may hold the change.
    const retried = await queuedOperation(db, t, { type: 'unit.update', request: { unit_number: 'B-3' }, targetXId: 'U1' });
    const lost = 'updateUnit: source answered HTTP 503; the write may have been applied';
    await moveOperation(db, retried, 'running', { attempts: 1, lastError: lost, nextAttemptAt: new Date() });
    await deleteIntegration(t);
    const env = new MockActivityEnvironment();
    expect(await env.run(acts.attemptWrite, { operationId: fresh, attempt: 1, probe: false })).toEqual({
      outcome: 'failed',
      error: 'the integration was deleted before the change reached the source',
      unsent: true,
    });
    expect(await env.run(acts.attemptWrite, { operationId: retried, attempt: 2, probe: false })).toEqual({
      outcome: 'failed',
      error: `the integration was deleted after an attempt that did not succeed (last error: ${lost}): the source may or may not hold the change`,
      unsent: true,
    });
    expect(sent).toBe(0);
  });

  it('deleted before a retried read-back: the retry stores nothing and ends at once, the Operation failed with the source holding the change', async () => {
    const t = await tenantWithUnit();
    const acts = createWriteActivities({ db, secrets: testKeyring(), connectorOf: () => source(async () => {}) });
    const operationId = await queuedOperation(db, t, { type: 'unit.update', request: { unit_number: 'B-2' }, targetXId: 'U1' });
    const appliedAtMs = Date.now();
    await moveOperation(db, operationId, 'running', { sourceState: 'applied', appliedAt: new Date(appliedAtMs), attempts: 1 });
    await deleteIntegration(t);
    const err = await new MockActivityEnvironment()
      .run(acts.storeApplied, { operationId, attempts: 1, xId: 'U1', related: [], appliedAtMs })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    expect((err as Error).message).toMatch(/^the source applied the change, but the integration was deleted before it could be stored/);
    expect((await unitRow(t, 'U1'))!.deletedAt).not.toBeNull();
    expect(await getOperation(db, operationId)).toMatchObject({ status: 'running', sourceState: 'applied' });
  });

  it('a deletion that begins while a write-back is being stored waits for it, and soft-deletes what it stored', async () => {
    const t = await tenantWithUnit();
    let deletion: Promise<Date> | undefined;
    let deletionDone = false;
    await db.transaction(async (tx) => {
      const { live } = await lockForWriteBack(tx, t.integrationId, [{ entity: 'unit', xId: 'U9' }]);
      expect(live).toBe(true);
      await applyRecords(tx, { ...ctxOf(t), recordsLocked: true }, 'unit', [unitInput('U9', 'P1')]);
      deletion = deleteIntegration(t).finally(() => (deletionDone = true));
      await new Promise((r) => setTimeout(r, 300));
      // The deletion is waiting for this transaction (it takes the integration's row first).
      expect(deletionDone).toBe(false);
    });
    const deletedAt = await deletion!;
    expect((await unitRow(t, 'U9'))!.deletedAt).toEqual(deletedAt);
    expect((await unitRow(t, 'U1'))!.deletedAt).toEqual(deletedAt);
    // A write-back that comes after it finds the integration deleted.
    await db.transaction(async (tx) => {
      expect((await lockForWriteBack(tx, t.integrationId, [{ entity: 'unit', xId: 'U1' }])).live).toBe(false);
    });
  });
});
