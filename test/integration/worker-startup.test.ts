/**
 * What a starting worker does to the schedules (worker/main.ts, in the background once it polls): every live
 * integration's sync schedule and every live automation's schedule made or brought up to date, those of deleted ones
 * removed, several at a time.
 */
import { Client, Connection } from '@temporalio/client';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { automationControlOf, ensureAutomationSchedule, reconcileAutomationSchedules } from '../../control/automations';
import { ensureSyncSchedule } from '../../control/sync';
import { createLogger } from '../../config/logger';
import { closeDb, type Db } from '../../db/client';
import { insertAutomation, updateAutomation } from '../../db/automations';
import { automations, integrations } from '../../db/schema';
import { automationScheduleIdOf, scheduleIdOf } from '../../domain/contract';
import { reconcileSchedules } from '../../worker/roles/sync';
import { makeTenant, testConfig, testDb } from '../support/context';

let db: Db;
let connection: Connection;
let client: Client;
const config = testConfig();

beforeAll(async () => {
  db = testDb();
  connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS! });
  client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
});
afterAll(async () => {
  await connection?.close();
  await closeDb(db);
});

const exists = async (scheduleId: string) =>
  client.schedule
    .getHandle(scheduleId)
    .describe()
    .then(
      () => true,
      () => false,
    );

it("makes every live integration's and automation's schedule, removes deleted ones', and does it again idempotently", async () => {
  const tenants = await Promise.all(Array.from({ length: 12 }, () => makeTenant(db)));
  // The database is shared with other test files: only this file's organizations.
  const organizationIds = tenants.map((t) => t.organizationId);
  const ctl = { db, client, taskQueue: config.TEMPORAL_TASK_QUEUE, logger: createLogger('test', { level: 'silent' }), organizationIds };
  const gone = tenants[0]!;
  const [goneRow] = await db.select().from(integrations).where(eq(integrations.id, gone.integrationId));
  await ensureSyncSchedule(ctl, goneRow!, { runNow: false });
  await db.update(integrations).set({ deletedAt: new Date() }).where(eq(integrations.id, gone.integrationId));

  const controls = automationControlOf(client, config);
  const automation = (name: string, status: 'active' | 'paused') =>
    insertAutomation(db, {
      organizationId: tenants[1]!.organizationId,
      integrationId: tenants[1]!.integrationId,
      name,
      entity: 'unit',
      schedule: { every: 3600 },
      destination: { type: 'directory', path: 'x' },
      status,
    });
  const live = await automation('kept', 'paused');
  const deleted = await automation('deleted', 'active');
  await ensureAutomationSchedule(controls, db, deleted);
  await db.update(automations).set({ deletedAt: new Date() }).where(eq(automations.id, deleted.id));

  for (let round = 0; round < 2; round++) {
    const r = await reconcileSchedules(ctl);
    expect(r).toEqual({ ensured: 11, removed: 1 });
    for (const t of tenants.slice(1)) expect(await exists(scheduleIdOf(t.integrationId)), t.integrationId).toBe(true);
    expect(await exists(scheduleIdOf(gone.integrationId))).toBe(false);
    expect(await reconcileAutomationSchedules({ ...controls, db, organizationIds })).toEqual({ ensured: 1, removed: 1 });
    expect((await client.schedule.getHandle(automationScheduleIdOf(live.id)).describe()).state.paused).toBe(true);
    expect(await exists(automationScheduleIdOf(deleted.id))).toBe(false);
  }
});

it('a push of an automation read before a change or its deletion leaves its schedule as the database says now', async () => {
  const t = await makeTenant(db);
  const controls = automationControlOf(client, config);
  const row = await insertAutomation(db, {
    organizationId: t.organizationId,
    integrationId: t.integrationId,
    name: 'read before',
    entity: 'unit',
    schedule: { every: 3600 },
    destination: { type: 'directory', path: 'x' },
    status: 'paused',
  });
  // An operator resumes it after this row was read (a starting worker's reconcile): the row as it is now wins.
  await db.update(automations).set({ status: 'active' }).where(eq(automations.id, row.id));
  await ensureAutomationSchedule(controls, db, row);
  expect((await client.schedule.getHandle(automationScheduleIdOf(row.id)).describe()).state.paused).toBe(false);
  // Deleted after it was read: the push is undone, no schedule is left behind.
  await db.update(automations).set({ deletedAt: new Date() }).where(eq(automations.id, row.id));
  await ensureAutomationSchedule(controls, db, row);
  expect(await exists(automationScheduleIdOf(row.id))).toBe(false);
  // And a change that reaches it after its deletion changes nothing.
  expect(await updateAutomation(db, row.id, { name: 'too late' })).toBeUndefined();
});
