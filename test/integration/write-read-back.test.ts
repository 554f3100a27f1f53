/**
 * A write the source applied whose read-back keeps failing: Temporal retries the read-back (the workflow's policy:
 * 5 s, doubling up to 5 min), and the Operation a caller polls shows each failure and when the next read-back starts,
 * never a time long past.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteActivities } from '../../activities/operations';
import { applyRecords } from '../../db/apply';
import { closeDb, type Db } from '../../db/client';
import { getOperation, moveOperation } from '../../db/operations';
import { SourceTransientError } from '../../source';
import { makeTenant, testDb, testKeyring, type Tenant } from '../support/context';
import { propertyInput, unitInput } from '../support/fixtures';
import { queuedOperation, stubConnector } from '../support/writes';

let db: Db;
let tenant: Tenant;
beforeAll(async () => {
  db = testDb(3);
  tenant = await makeTenant(db);
  const ctx = { integration: { id: tenant.integrationId, organizationId: tenant.organizationId, mode: tenant.mode }, emitEvents: false };
  await db.transaction(async (tx) => {
    await applyRecords(tx, ctx, 'property', [propertyInput('P1')]);
    await applyRecords(tx, ctx, 'unit', [unitInput('U1', 'P1')]);
  });
});
afterAll(async () => {
  await closeDb(db);
});

describe('a read-back retried after the source applied the write', () => {
  it('shows its failure and the next read-back on the Operation at each retry (5 s, doubling up to 5 min)', async () => {
    let reads = 0;
    const acts = createWriteActivities({
      db,
      secrets: testKeyring(),
      connectorOf: () =>
        stubConnector({
          readOne: async () => {
            reads++;
            throw new SourceTransientError(`getUnits: source answered HTTP 503 (read ${reads})`);
          },
        }),
    });
    const operationId = await queuedOperation(db, tenant, { type: 'unit.update', request: { unit_number: 'B-2' }, targetXId: 'U1' });
    const appliedAtMs = Date.now() - 60_000;
    await moveOperation(db, operationId, 'running', { sourceState: 'applied', appliedAt: new Date(appliedAtMs), attempts: 1 });
    for (const [attempt, delayMs] of [
      [1, 5_000],
      [3, 20_000],
      [9, 300_000],
    ] as const) {
      const before = Date.now();
      const err = await new MockActivityEnvironment({ attempt })
        .run(acts.storeApplied, { operationId, attempts: 1, xId: 'U1', related: [], appliedAtMs })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourceTransientError);
      const op = (await getOperation(db, operationId))!;
      expect(op).toMatchObject({ status: 'running', sourceState: 'applied', attempts: 1 });
      expect(op.lastError).toBe(
        `the source applied the change (x_id U1); reading it back failed and is retried: getUnits: source answered HTTP 503 (read ${reads})`,
      );
      expect(op.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(before + delayMs);
      expect(op.nextAttemptAt!.getTime()).toBeLessThanOrEqual(Date.now() + delayMs);
    }
  });
});
