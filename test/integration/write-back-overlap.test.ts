/**
 * Two writes to one record whose read-backs overlap: the later write's read-back (of the source after both) must be
 * what the cache holds when its Operation turns succeeded, even if the earlier write stored its own read-back after
 * the later one began reading. The stale-page guard leaves a version out when the cache holds one stored after it
 * was read; for a write-back that would keep the older write's values under the newer write's `succeeded`.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteActivities } from '../../activities/operations';
import { applyRecords, lockForWriteBack } from '../../db/apply';
import { closeDb, type Db } from '../../db/client';
import { newId } from '../../db/ids';
import { getOperation } from '../../db/operations';
import { units } from '../../db/schema';
import type { UnitInput } from '../../domain/cdm';
import type { SourceConnector } from '../../source';
import { makeTenant, testDb, testKeyring, type Tenant } from '../support/context';
import { propertyInput, unitInput } from '../support/fixtures';
import { queuedOperation, stubConnector } from '../support/writes';

let db: Db;
let tenant: Tenant;
const integration = () => ({ id: tenant.integrationId, organizationId: tenant.organizationId, mode: tenant.mode });

beforeAll(async () => {
  db = testDb(3);
  tenant = await makeTenant(db);
  await db.transaction(async (tx) => {
    await applyRecords(tx, { integration: integration(), emitEvents: false }, 'property', [propertyInput('P1')]);
    await applyRecords(tx, { integration: integration(), emitEvents: false }, 'unit', [unitInput('U1', 'P1')]);
  });
});
afterAll(async () => {
  await closeDb(db);
});

/** Another write-back of U1 stored now (its read-back, `name`, read and stored after ours began reading). */
async function storeOtherWriteBack(unitNumber: string): Promise<void> {
  await db.transaction(async (tx) => {
    await lockForWriteBack(tx, tenant.integrationId, [{ entity: 'unit', xId: 'U1' }]);
    await applyRecords(tx, { integration: integration(), emitEvents: false, operationId: newId('operation'), recordsLocked: true }, 'unit', [
      unitInput('U1', 'P1', { unit_number: unitNumber }),
    ]);
  });
}

/** A source that applies every update and answers every read-back with `answer`, running `during` inside the first. */
function source(answer: UnitInput, during: () => Promise<void>, reads: string[]): SourceConnector {
  return stubConnector({
    update: async (_entity, xId) => ({ x_id: xId, related: [] }),
    async readOne(_entity, xId) {
      reads.push(xId);
      if (reads.length === 1) {
        // Past the read's database millisecond, so that the other store is strictly after it.
        await new Promise((r) => setTimeout(r, 5));
        await during();
      }
      return answer as never;
    },
  });
}

const unitUpdate = () => queuedOperation(db, tenant, { type: 'unit.update', request: { unit_number: 'B-2' }, targetXId: 'U1' });

const cachedUnitNumber = async () =>
  (
    await db
      .select({ n: units.unitNumber })
      .from(units)
      .where(and(eq(units.integrationId, tenant.integrationId), eq(units.xId, 'U1')))
  )[0]!.n;

describe('a write-back whose read overlaps another write-back of the same record', () => {
  it('reads the source again and stores what it holds after both, before the Operation succeeds', async () => {
    const reads: string[] = [];
    const after = unitInput('U1', 'P1', { unit_number: 'B-2' });
    const acts = createWriteActivities({
      db,
      secrets: testKeyring(),
      connectorOf: () => source(after, () => storeOtherWriteBack('A-1'), reads),
    });
    const operationId = await unitUpdate();
    const result = await new MockActivityEnvironment().run(acts.attemptWrite, { operationId, attempt: 1, probe: false });
    expect(result).toMatchObject({ outcome: 'succeeded', xId: 'U1' });
    // The first read-back was left out (the other write-back was stored after it began); the second is stored.
    expect(reads).toEqual(['U1', 'U1']);
    expect(await cachedUnitNumber()).toBe('B-2');
    expect(await getOperation(db, operationId)).toMatchObject({ status: 'succeeded', resourceXId: 'U1' });
  });

  it('stores the read-back when nothing else was stored meanwhile, reading the source once', async () => {
    const reads: string[] = [];
    const acts = createWriteActivities({
      db,
      secrets: testKeyring(),
      connectorOf: () => source(unitInput('U1', 'P1', { unit_number: 'C-3' }), async () => {}, reads),
    });
    const operationId = await unitUpdate();
    expect(await new MockActivityEnvironment().run(acts.attemptWrite, { operationId, attempt: 1, probe: false })).toMatchObject({ outcome: 'succeeded' });
    expect(reads).toEqual(['U1']);
    expect(await cachedUnitNumber()).toBe('C-3');
  });
});
