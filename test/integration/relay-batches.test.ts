/**
 * The relay's batches (db/relay.ts undispatchedEvents): in production order, and bounded by the size of the payloads
 * they read as well as by their number, so that a run of large events is taken a few at a time instead of in one
 * batch too large to serialize (which would fail on every pass and hold up every tenant's events behind it).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeDb, type Db } from '../../db/client';
import { undispatchedEvents } from '../../db/relay';
import { testDb } from '../support/context';
import { recordEvents, webhookIntegration } from '../support/webhooks';

let db: Db;
beforeAll(() => {
  db = testDb(2);
});
afterAll(async () => {
  await closeDb(db);
});

it('takes as many events as fit in its byte budget, at least one, in production order', async () => {
  const integ = await webhookIntegration(db, null);
  // Five events of about 300 kB each, incompressible (as stored, they stay that large).
  const ids = await recordEvents(
    db,
    integ,
    Array.from({ length: 5 }, (_, i) => ({ type: 'RESIDENT_UPDATED' as const, data: { id: `res_big${i}`, blob: randomBytes(225_000).toString('base64') } })),
  );
  const scope = { limit: 1000, organizationIds: [integ.organizationId] };
  const all = await undispatchedEvents(db, scope);
  expect(all.map((e) => e.id)).toEqual(ids);
  // 700 kB: the first three start within it.
  expect((await undispatchedEvents(db, { ...scope, maxBytes: 700_000 })).map((e) => e.id)).toEqual(ids.slice(0, 3));
  // A budget smaller than the first event still takes it.
  expect((await undispatchedEvents(db, { ...scope, maxBytes: 1 })).map((e) => e.id)).toEqual(ids.slice(0, 1));
  // And the count still bounds it.
  expect((await undispatchedEvents(db, { ...scope, limit: 2 })).map((e) => e.id)).toEqual(ids.slice(0, 2));
});
