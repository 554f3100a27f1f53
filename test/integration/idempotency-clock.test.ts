/**
 * Idempotency keys age by the database's clock (db/operations.ts): an API process whose clock runs a day ahead still
 * replays a key used an hour ago, never makes a second Operation of it; and one a day old is free again.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { closeDb, type Db } from '../../db/client';
import { heldIdempotencyKey } from '../../db/operations';
import { makeTenant, testDb, type Tenant } from '../support/context';
import { acceptDriven } from '../support/writes';

let db: Db;
let t: Tenant;
beforeAll(async () => {
  db = testDb(2);
  t = await makeTenant(db);
});
afterAll(async () => {
  await closeDb(db);
});

it('a key is held for 24 hours of the database, whatever the clock of the process asking', async () => {
  const input = {
    ...{ organizationId: t.organizationId, integrationId: t.integrationId, mode: t.mode, type: 'unit.update' as const },
    ...{ request: { unit_number: 'C-1' }, targetXId: 'U1', idempotencyKey: `clock-${Date.now()}`, requestHash: 'h' },
  };
  const first = await acceptDriven(db, input);
  if (first.outcome !== 'created') throw new Error(`not created: ${first.outcome}`);
  // This process's clock 25 hours ahead of the database's.
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 25 * 3600_000 });
  try {
    expect(await acceptDriven(db, input)).toMatchObject({ outcome: 'replayed', operation: { id: first.operation.id } });
    expect(await heldIdempotencyKey(db, { organizationId: t.organizationId, mode: t.mode, key: input.idempotencyKey })).toBeDefined();
  } finally {
    vi.useRealTimers();
  }
  // Used more than 24 hours ago by the database's clock: free again, a new Operation.
  await db.execute(sql`update idempotency_keys set created_at = now() - interval '25 hours' where key = ${input.idempotencyKey}`);
  expect(await heldIdempotencyKey(db, { organizationId: t.organizationId, mode: t.mode, key: input.idempotencyKey })).toBeUndefined();
  const again = await acceptDriven(db, input);
  expect(again).toMatchObject({ outcome: 'created', operation: { id: expect.not.stringMatching(first.operation.id) } });
});
