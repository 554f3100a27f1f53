/**
 * A write the source applied whose read-back keeps failing: Temporal retries the read-back (the workflow's policy:
 * 5 s, doubling up to 5 min), and the Operation a caller polls shows each failure and when the next read-back starts,
 * never a time long past. One the source answers with a record the mapping cannot read is not retried: no retry
 * changes it.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteActivities } from '../../activities/operations';
import { applyRecords } from '../../db/apply';
import { closeDb, type Db } from '../../db/client';
import { getOperation, moveOperation } from '../../db/operations';
import { MALFORMED_RECORD, SourcePermanentError, SourceTransientError } from '../../source';
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

  it('a record the source holds malformed fails the Operation at once, source.state applied, in the attempt and in a retried read-back', async () => {
    const malformed = () =>
      Promise.reject(new SourcePermanentError('malformed unit U1 from getUnits: not a decimal amount: "call for price"', undefined, MALFORMED_RECORD));
    const acts = createWriteActivities({
      db,
      secrets: testKeyring(),
      connectorOf: () => stubConnector({ update: async () => ({ x_id: 'U1', related: [] }), readOne: malformed }),
    });
    const said =
      'the source applied the change (x_id U1), but a record it holds for it cannot be read (malformed unit U1 from getUnits: not a decimal amount: "call for price"): the cache keeps the version before it until the record is repaired at the source and synced; do not send the change again';

    const first = await queuedOperation(db, tenant, { type: 'unit.update', request: { max_occupants: 3 }, targetXId: 'U1' });
    expect(await new MockActivityEnvironment().run(acts.attemptWrite, { operationId: first, attempt: 1, probe: false })).toEqual({
      outcome: 'failed',
      error: said,
    });
    expect(await getOperation(db, first)).toMatchObject({ status: 'failed', sourceState: 'applied', nextAttemptAt: null, lastError: said });

    // A read-back already being retried (it failed transiently before) that meets it ends too, without a retry.
    const second = await queuedOperation(db, tenant, { type: 'unit.update', request: { max_occupants: 4 }, targetXId: 'U1' });
    const appliedAtMs = Date.now() - 60_000;
    await moveOperation(db, second, 'running', { sourceState: 'applied', appliedAt: new Date(appliedAtMs), attempts: 1 });
    const err = await new MockActivityEnvironment({ attempt: 2 })
      .run(acts.storeApplied, { operationId: second, attempts: 1, xId: 'U1', related: [], appliedAtMs })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ type: 'WriteNotStorable', nonRetryable: true, message: said });
    expect(await getOperation(db, second)).toMatchObject({ status: 'failed', sourceState: 'applied', nextAttemptAt: null, lastError: said });
  });
});

describe('a create sent again after an unknown outcome', () => {
  it('is looked up first where the source takes no idempotency key, and sent again with its key where it does', async () => {
    const calls: string[] = [];
    const connector = (idempotentCreates: boolean) => ({
      ...stubConnector({ readOne: async (_e, xId) => unitInput(xId, 'P1', { unit_number: 'N-1' }) as never }),
      capabilities: { delta: false, idempotentCreates },
      findCreated: async () => (calls.push('findCreated'), { x_id: 'U-OLD', related: [] }),
      create: async (_e: unknown, _i: unknown, opts?: { idempotencyKey?: string }) => (
        calls.push(`create ${opts?.idempotencyKey ? 'keyed' : 'bare'}`),
        { x_id: 'U-NEW', related: [] }
      ),
    });
    for (const [idempotent, want, xId] of [
      [false, ['findCreated'], 'U-OLD'],
      [true, ['create keyed'], 'U-NEW'],
    ] as const) {
      calls.length = 0;
      const acts = createWriteActivities({ db, secrets: testKeyring(), connectorOf: () => connector(idempotent) as never });
      const operationId = await queuedOperation(db, tenant, { type: 'unit.create', request: { property_x_id: 'P1', unit_number: 'N-1' } });
      const result = await new MockActivityEnvironment().run(acts.attemptWrite, { operationId, attempt: 2, probe: true });
      expect(calls, `idempotent creates: ${idempotent}`).toEqual(want);
      expect(result).toMatchObject({ outcome: 'succeeded', xId });
    }
  });
});

describe('a write the source applied that ends before it is stored', () => {
  it('keeps source.state applied when it fails for another reason (cancelled, given up), saying not to send it again', async () => {
    const acts = createWriteActivities({ db, secrets: testKeyring(), connectorOf: () => stubConnector({}) });
    const operationId = await queuedOperation(db, tenant, { type: 'unit.update', request: { unit_number: 'B-9' }, targetXId: 'U1' });
    await moveOperation(db, operationId, 'running', { sourceState: 'applied', appliedAt: new Date(), attempts: 1 });
    const cancelled = 'cancelled by an operator before it was known to be applied; the source may or may not hold the change';
    await new MockActivityEnvironment().run(acts.failOperation, { operationId, attempts: 1, error: cancelled, sourceState: null });
    expect(await getOperation(db, operationId)).toMatchObject({
      status: 'failed',
      sourceState: 'applied',
      lastError: `the source applied the change, but the write ended before it was stored (${cancelled}): do not send it again; the next sync brings it`,
    });
  });
});
