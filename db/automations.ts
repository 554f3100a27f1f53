/**
 * Automation rows: the automations of an integration and their runs, the run's state changes (guarded by the
 * transitions of domain/automations.ts) and the AUTOMATION_* event a run's end records in the outbox, in the same
 * transaction as its final state, once.
 */
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import { exportFileName, runStatesBefore, type RunStatus, type RunTrigger } from '../domain/automations';
import type { Tx, Db } from './client';
import { newId } from './ids';
import { liveById, livePage } from './live';
import { inOrder, type OrderedPage, type SortOrder } from './order';
import { automationRuns, automations, events, integrations } from './schema';

export type AutomationRow = typeof automations.$inferSelect;
export type AutomationRunRow = typeof automationRuns.$inferSelect;
export type NewAutomation = Omit<typeof automations.$inferInsert, 'id' | 'createdAt' | 'updatedAt' | 'deletedAt'>;

export async function insertAutomation(db: Db | Tx, input: NewAutomation & { id?: string }): Promise<AutomationRow> {
  const [row] = await db
    .insert(automations)
    .values({ ...input, id: input.id ?? newId('automation') })
    .returning();
  return row!;
}

/** A live (not deleted) automation. */
export async function getAutomation(db: Db | Tx, id: string): Promise<AutomationRow | undefined> {
  return liveById(db, automations, id);
}

/** An automation, deleted or not (a deleted one's runs stay readable, and name it). */
export async function getAutomationEver(db: Db | Tx, id: string): Promise<AutomationRow | undefined> {
  const [row] = await db.select().from(automations).where(eq(automations.id, id));
  return row;
}

export async function automationsOf(db: Db, integrationId: string): Promise<AutomationRow[]> {
  return db
    .select()
    .from(automations)
    .where(and(eq(automations.integrationId, integrationId), isNull(automations.deletedAt)))
    .orderBy(automations.createdAt, automations.id);
}

/**
 * Every automation, deleted ones included (their schedules are removed), or only those of `organizationIds`: what a
 * starting worker reconciles the automation schedules against.
 */
export async function automationsWithDeleted(db: Db | Tx, organizationIds?: string[]): Promise<AutomationRow[]> {
  return db
    .select()
    .from(automations)
    .where(organizationIds ? inArray(automations.organizationId, organizationIds) : undefined);
}

/** A new run of an automation, queued; its file name is fixed now (`<name>-<run id>.csv`). */
export async function insertRun(
  db: Db | Tx,
  automation: AutomationRow,
  trigger: RunTrigger,
  now = new Date(),
  /** A scheduled run's firing (its workflow id): a firing that asks again gets the run it made. */
  firingId?: string,
): Promise<AutomationRunRow> {
  const id = newId('automationRun');
  const [row] = await db
    .insert(automationRuns)
    .values({
      id,
      automationId: automation.id,
      organizationId: automation.organizationId,
      integrationId: automation.integrationId,
      trigger,
      status: 'queued',
      fileName: exportFileName(automation.name, id),
      firingId: firingId ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing({ target: automationRuns.firingId })
    .returning();
  // Only a firing's second insert can be left out (no other unique key is drawn from the caller).
  return row ?? (await runOfFiring(db, firingId!))!;
}

/** The run a schedule's firing made, if it made one. */
export async function runOfFiring(db: Db | Tx, firingId: string): Promise<AutomationRunRow | undefined> {
  const [row] = await db.select().from(automationRuns).where(eq(automationRuns.firingId, firingId));
  return row;
}

export async function getRun(db: Db | Tx, id: string): Promise<AutomationRunRow | undefined> {
  const [row] = await db.select().from(automationRuns).where(eq(automationRuns.id, id));
  return row;
}

/** An automation's runs, newest first unless `order` says otherwise. */
export async function runsOf(db: Db, automationId: string, page: { limit: number; offset: number; order?: SortOrder }): Promise<AutomationRunRow[]> {
  return db
    .select()
    .from(automationRuns)
    .where(eq(automationRuns.automationId, automationId))
    .orderBy(...inOrder(page.order ?? 'desc', automationRuns.createdAt, automationRuns.id))
    .limit(page.limit)
    .offset(page.offset);
}

/** Move a run to `status` with `fields`, if the transition is allowed; undefined when it was not moved. */
export async function moveRun(
  db: Db | Tx,
  id: string,
  status: RunStatus,
  fields: Partial<Pick<AutomationRunRow, 'attempts' | 'nextAttemptAt' | 'recordsExported' | 'error' | 'startedAt' | 'finishedAt'>>,
  now = new Date(),
): Promise<AutomationRunRow | undefined> {
  const [row] = await db
    .update(automationRuns)
    .set({ ...fields, status, updatedAt: now })
    .where(and(eq(automationRuns.id, id), inArray(automationRuns.status, runStatesBefore(status))))
    .returning();
  return row;
}

/** The first attempt of a run began: its `started_at` (kept on later attempts), and `running` from then on. */
export async function markRunStarted(db: Db | Tx, id: string, now = new Date()): Promise<void> {
  await db
    .update(automationRuns)
    .set({
      startedAt: sql`coalesce(${automationRuns.startedAt}, ${now.toISOString()}::timestamptz)`,
      // A queued run is running from its first attempt on; a finished one (a late attempt) stays as it ended.
      status: sql`case when ${automationRuns.status} = 'queued' then 'running' else ${automationRuns.status} end`,
      updatedAt: now,
    })
    .where(eq(automationRuns.id, id));
}

export interface RunEnd {
  status: 'succeeded' | 'failed';
  attempts: number;
  recordsExported: number;
  error?: string;
}

/**
 * End a run: its final state and its AUTOMATION_COMPLETED or AUTOMATION_FAILED event, in one transaction. Idempotent:
 * a run already ended keeps its end, and its event is recorded once.
 */
export async function endRun(db: Db, runId: string, end: RunEnd, now = new Date()): Promise<AutomationRunRow | undefined> {
  return db.transaction(async (tx) => {
    const moved = await moveRun(
      tx,
      runId,
      end.status,
      { attempts: end.attempts, recordsExported: end.recordsExported, error: end.error ?? null, nextAttemptAt: null, finishedAt: now },
      now,
    );
    const run = moved ?? (await getRun(tx, runId));
    if (!run || !moved) return run;
    const automation = await getAutomationEver(tx, run.automationId);
    const [integration] = await tx.select({ mode: integrations.mode }).from(integrations).where(eq(integrations.id, run.integrationId));
    const data: Record<string, unknown> = {
      automation_id: run.automationId,
      automation_name: automation?.name ?? '',
      run_id: run.id,
      records_exported: end.recordsExported,
      file_name: run.fileName,
    };
    if (end.status === 'failed') Object.assign(data, { error_message: end.error ?? 'the export failed', attempt_number: end.attempts });
    await tx
      .insert(events)
      .values({
        id: newId('event'),
        organizationId: run.organizationId,
        integrationId: run.integrationId,
        mode: integration?.mode ?? 'test',
        type: end.status === 'succeeded' ? 'AUTOMATION_COMPLETED' : 'AUTOMATION_FAILED',
        category: 'automation',
        data,
        automationRunId: run.id,
        createdAt: now,
      })
      .onConflictDoNothing();
    return run;
  });
}

// The admin API's reads and writes.

/** An integration's automations that are not deleted, one page. */
export async function automationsPage(db: Db, integrationId: string, page: OrderedPage): Promise<AutomationRow[]> {
  return livePage(db, automations, automations.integrationId, integrationId, page);
}

/** Change a live automation (or put it back as it was); returns it as it now is, undefined once deleted. */
export async function updateAutomation(db: Db, id: string, changes: Partial<Omit<AutomationRow, 'id' | 'createdAt'>>): Promise<AutomationRow | undefined> {
  const [row] = await db
    .update(automations)
    .set(changes)
    .where(and(eq(automations.id, id), isNull(automations.deletedAt)))
    .returning();
  return row;
}

/** Mark an automation deleted; its runs stay. */
export async function markAutomationDeleted(db: Db, id: string, now = new Date()): Promise<void> {
  await db.update(automations).set({ deletedAt: now, updatedAt: now }).where(eq(automations.id, id));
}

/** Undo an automation's creation: nothing refers to the row yet. */
export async function deleteNewAutomation(db: Db, id: string): Promise<void> {
  await db.delete(automations).where(eq(automations.id, id));
}
