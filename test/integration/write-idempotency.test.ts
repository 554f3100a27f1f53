/**
 * A create re-sent after an unknown outcome must not make a second record, even while the source is too slow to
 * show the first to findCreated: where the source takes an idempotency key, every attempt of an Operation sends its
 * id as the key.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteActivities } from '../../activities/operations';
import { closeDb, type Db } from '../../db/client';
import { SourceTransientError, type CreateOptions, type SourceConnector } from '../../source';
import { makeTenant, testDb, testKeyring, type Tenant } from '../support/context';
import { queuedOperation } from '../support/writes';

let db: Db;
let tenant: Tenant;
beforeAll(async () => {
  db = testDb(2);
  tenant = await makeTenant(db);
});
afterAll(async () => {
  await closeDb(db);
});

/** A source whose creates time out after they may have been applied, and whose look-up finds nothing (yet). */
function slowSource(idempotentCreates: boolean, sent: (CreateOptions | undefined)[]): SourceConnector {
  const unused = () => Promise.reject(new Error('unused'));
  return {
    dialect: idempotentCreates ? 'buildium' : 'entrata',
    capabilities: { delta: idempotentCreates, idempotentCreates },
    async create(_entity, _input, opts) {
      sent.push(opts);
      throw new SourceTransientError('the source did not answer in time', undefined, undefined, true);
    },
    findCreated: async () => null,
    readPage: unused,
    readChangedPage: unused,
    readByIds: unused,
    readOne: unused,
    update: unused,
    readWriteOptions: unused,
  };
}

const unitCreate = () => queuedOperation(db, tenant, { type: 'unit.create', request: { property_x_id: 'P1', unit_number: '101' } });

describe('the idempotency key of a create', () => {
  it.each([
    [true, 'the Operation id on every attempt'],
    [false, 'nothing'],
  ])('a source with idempotentCreates %s sends %s', async (idempotent) => {
    const sent: (CreateOptions | undefined)[] = [];
    const acts = createWriteActivities({ db, secrets: testKeyring(), connectorOf: () => slowSource(idempotent, sent) });
    const operationId = await unitCreate();
    const env = new MockActivityEnvironment();
    // The first attempt's outcome is unknown; the second looks for the record first, finds none, and creates again.
    expect(await env.run(acts.attemptWrite, { operationId, attempt: 1, probe: false })).toMatchObject({ outcome: 'transient', maybeApplied: true });
    expect(await env.run(acts.attemptWrite, { operationId, attempt: 2, probe: true })).toMatchObject({ outcome: 'transient', maybeApplied: true });
    expect(sent).toEqual(idempotent ? [{ idempotencyKey: operationId }, { idempotencyKey: operationId }] : [undefined, undefined]);
  });
});
