/**
 * The sync engine end to end: the real worker on this file's task queue, the real Temporal dev server, the sandbox
 * PMS over HTTP and the real database. Events are checked against an oracle built from the cache before and after
 * each run and docs/api.md's payload rules, not from the write path's own code.
 */
import { Worker } from '@temporalio/worker';
import { ScheduleNotFoundError, WorkflowFailedError } from '@temporalio/client';
import { and, eq } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureSyncSchedule, removeSyncSchedule, triggerSync } from '../../control/sync';
import type { Db } from '../../db/client';
import { softDeleteUnseen } from '../../db/seen';
import { integrations, leases, properties, residents, syncJobs, syncSeen, units } from '../../db/schema';
import { ENTITIES } from '../../domain/cdm';
import { SA_INTEGRATION_ID, SA_ORGANIZATION_ID, SA_STATUS, SA_SYNC_JOB_ID, scheduleIdOf, syncWorkflowIdOf, type SyncKind } from '../../domain/contract';
import { SOURCE_DIALECTS, type SourceDialect } from '../../source';
import { removeOrphanSchedules } from '../../worker/roles/sync';
import { WORKFLOWS_PATH } from '../../worker/workflow-bundle';
import { createOrganization } from '../../db/tenants';
import { unsyncedIntegration } from '../support/fixtures';
import { onServices } from '../support/services';
import {
  eventsOf,
  expectCacheEqualsSource,
  expectedEvents,
  lifecycleOf,
  expectUpdatedShape,
  jobsOf,
  liveCount,
  readCache,
  reload,
  runSync,
  sandbox,
  sandboxIntegration,
  until,
  waitForJob,
  type SandboxIntegration,
  type TestWorker,
} from '../support/sync';

let db: Db;
let t: TestWorker;

// Small pages, so that every entity spans several pages.
onServices({ pool: 5, settings: { SYNC_PAGE_SIZE: '20' }, worker: true }, (s) => ({ db, worker: t } = s));

/**
 * Run a sync (of the kind asked for, else the kind that is due: after the first, a delta run for a buildium company,
 * a full one for an entrata company) and check its events against the oracle: each expected event exactly once,
 * nothing else.
 */
async function syncAndCheckEvents(s: SandboxIntegration, kind?: SyncKind) {
  const before = await readCache(db, s.row.id);
  const job = await runSync(t, db, s.row, kind);
  expect(job.status).toBe('succeeded');
  const after = await expectCacheEqualsSource(db, s.row);
  const want = expectedEvents(before, after);
  const got = await eventsOf(db, s.row.id, job.id);
  const complete = got.at(-1)!;
  expect(complete.type).toBe('SYNC_COMPLETE');
  const dataEvents = got.slice(0, -1);
  expect(dataEvents.every((e) => e.category === 'data_change')).toBe(true);
  for (const e of dataEvents) expectUpdatedShape(e.type, e.data);
  // Every event exactly once, none missing, none extra.
  const key = (e: { type: string; recordId: string | null }) => `${e.type} ${e.recordId}`;
  expect(dataEvents.map(key).sort()).toEqual(want.events.map(key).sort());
  const byKey = new Map(dataEvents.map((e) => [key(e), e]));
  for (const w of want.events) {
    const e = byKey.get(key(w))!;
    expect(e.data, key(w)).toEqual(w.data);
    expect(e.organizationId).toBe(s.row.organizationId);
    expect(e.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
  }
  // SYNC_COMPLETE comes after all of the run's data-change events and carries its counts.
  for (const e of dataEvents) expect(e.createdAt.getTime()).toBeLessThanOrEqual(complete.createdAt.getTime());
  expect(complete.data).toEqual({
    sync_job_id: job.id,
    started_at: job.startedAt!.toISOString(),
    finished_at: job.finishedAt!.toISOString(),
    records_new: want.created,
    records_updated: want.updated,
    records_soft_deleted: want.deleted,
    records_skipped: 0,
  });
  expect(job).toMatchObject({ recordsNew: want.created, recordsUpdated: want.updated, recordsSoftDeleted: want.deleted });
  return { job, want, got, after };
}

/**
 * The lease events a company of each dialect can fire: Buildium's three lease statuses (Future, Active, Past) fold
 * notice into active and every end (ended, terminated, evicted, cancelled) into ended.
 */
const LIFECYCLE_EVENTS: Record<SourceDialect, string[]> = {
  entrata: ['LEASE_SIGNED', 'LEASE_RENEWED', 'LEASE_ENDED', 'LEASE_EVICTED', 'LEASE_CANCELLED', 'LEASE_UPDATED'],
  buildium: ['LEASE_SIGNED', 'LEASE_RENEWED', 'LEASE_ENDED', 'LEASE_UPDATED'],
};

// The same public behaviour (the cache, the events, the counts, the deletion check) for a company of either dialect.
describe.each(SOURCE_DIALECTS)('sync of a sandbox integration of the %s dialect', (dialect) => {
  /** The CDM status a company of this dialect shows for a lease in a state of the sandbox's model. */
  const shownStatus = (state: string): string => {
    if (dialect === 'entrata') return state;
    return state === 'pending' || state === 'active' || state === 'notice' ? state : 'ended';
  };
  let s: SandboxIntegration;
  beforeAll(async () => {
    s = await sandboxIntegration(db, { size: 60, seed: 11, dialect });
  });

  it('first sync: the cache equals the source record for record, with one FIRST_SYNC_COMPLETE and no per-record events', async () => {
    const job = await runSync(t, db, s.row);
    const cache = await expectCacheEqualsSource(db, s.row);
    const total = ENTITIES.reduce((n, e) => n + cache[e].length, 0);
    expect(cache.lease.length).toBeGreaterThan(20);
    expect(job).toMatchObject({
      status: 'succeeded',
      trigger: 'manual',
      initial: true,
      recordsSeen: total,
      recordsNew: total,
      recordsUpdated: 0,
      recordsSoftDeleted: 0,
      error: null,
    });
    expect(job.id).toMatch(/^syj_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(job.startedAt!.getTime()).toBeLessThanOrEqual(job.finishedAt!.getTime());
    // A first sync records no seen x_ids: there is nothing it could soft-delete.
    expect(job.progress).toEqual(
      Object.fromEntries(ENTITIES.map((e) => [e, { page: expect.any(Number), done: true, tracked: false, pageSize: expect.any(Number) }])),
    );

    const evs = await eventsOf(db, s.row.id);
    expect(evs).toHaveLength(1);
    expect(evs[0]).toMatchObject({ type: 'FIRST_SYNC_COMPLETE', category: 'sync_lifecycle', syncJobId: job.id });
    expect(evs[0]!.data).toEqual({
      sync_job_id: job.id,
      started_at: job.startedAt!.toISOString(),
      finished_at: job.finishedAt!.toISOString(),
      records_new: total,
      records_updated: 0,
      records_soft_deleted: 0,
      records_skipped: 0,
    });
    expect((await reload(db, s.row)).firstSyncCompletedAt).toEqual(job.finishedAt);
    // What the run saw is forgotten once it ends.
    expect(await db.select().from(syncSeen).where(eq(syncSeen.syncJobId, job.id))).toHaveLength(0);
  });

  it('puts the search attributes on the run, so an operator finds it by integration and organization', async () => {
    const [job] = await jobsOf(db, s.row.id);
    const desc = await t.client.workflow.getHandle(syncWorkflowIdOf(job!.id)).describe();
    expect(desc.typedSearchAttributes.get(SA_INTEGRATION_ID)).toBe(s.row.id);
    expect(desc.typedSearchAttributes.get(SA_ORGANIZATION_ID)).toBe(s.row.organizationId);
    expect(desc.typedSearchAttributes.get(SA_SYNC_JOB_ID)).toBe(job!.id);
    expect(desc.typedSearchAttributes.get(SA_STATUS)).toBe('succeeded');
    const found = await until('the run in visibility', async () => {
      const ids: string[] = [];
      for await (const w of t.client.workflow.list({ query: `IntegrationId = "${s.row.id}" AND OrganizationId = "${s.row.organizationId}"` })) {
        ids.push(w.workflowId);
      }
      return ids.length > 0 ? ids : undefined;
    });
    expect(found).toContain(syncWorkflowIdOf(job!.id));
  });

  it('an unchanged full re-run reads everything, writes nothing and records only SYNC_COMPLETE', async () => {
    const before = await readCache(db, s.row.id);
    const { job, got } = await syncAndCheckEvents(s, 'full');
    expect(got.map((e) => e.type)).toEqual(['SYNC_COMPLETE']);
    expect(job).toMatchObject({ initial: false, recordsNew: 0, recordsUpdated: 0, recordsSoftDeleted: 0 });
    expect(Object.values(job.progress).map((p) => p.tracked)).toEqual([true, true, true, true]);
    expect(job.recordsSeen).toBe(ENTITIES.reduce((n, e) => n + before[e].length, 0));
    expect(await readCache(db, s.row.id)).toEqual(before);
  });

  it('a record whose stored hash differs but whose fields do not is not a change (a new hashing is no event)', async () => {
    const before = await readCache(db, s.row.id);
    // As if the hash had been computed another way when these rows were written.
    for (const t of [properties, units, residents, leases] as const) {
      await db.update(t).set({ contentHash: 'stale' }).where(eq(t.integrationId, s.row.id));
    }
    // A full run, so that every record is read again.
    const { job, got } = await syncAndCheckEvents(s, 'full');
    expect(got.map((e) => e.type)).toEqual(['SYNC_COMPLETE']);
    expect(job).toMatchObject({ recordsNew: 0, recordsUpdated: 0, recordsSoftDeleted: 0 });
    expect(await readCache(db, s.row.id)).toEqual(before);
    const stale = await db
      .select({ id: leases.id })
      .from(leases)
      .where(and(eq(leases.integrationId, s.row.id), eq(leases.contentHash, 'stale')));
    expect(stale).toHaveLength(0);
  });

  it('creates, updates and deletes in the source produce exactly the right events with the right payloads', async () => {
    const counts = { property: 1, unit: 2, resident: 3, lease: 3 };
    // Creates first, in a run of their own, so that the updates that follow cannot all land on the new records.
    const created = await sandbox().applyChanges(s.companyId, { create: counts });
    const first = await syncAndCheckEvents(s);
    expect(new Set(first.got.map((e) => e.type))).toEqual(new Set(['PROPERTY_CREATED', 'UNIT_CREATED', 'RESIDENT_CREATED', 'LEASE_UPDATED', 'SYNC_COMPLETE']));
    const changes = await sandbox().applyChanges(s.companyId, { update: counts, delete: { unit: 1, resident: 1, lease: 2 } });
    // Only a full run may soft-delete (by the deletion check): the one kind that finds deletions in either dialect.
    const second = await syncAndCheckEvents(s, 'full');
    const types = new Set(second.got.map((e) => e.type));
    for (const t of ['PROPERTY_UPDATED', 'UNIT_UPDATED', 'RESIDENT_UPDATED', 'LEASE_UPDATED']) expect(types, t).toContain(t);
    expect(second.want.deleted).toBeGreaterThanOrEqual(4);

    // Every change the sandbox reports making shows in the cache and has its event.
    for (const [run, kinds] of [
      [first, { created: created.created, updated: created.updated, deleted: created.deleted }],
      [second, { created: changes.created, updated: changes.updated, deleted: changes.deleted }],
    ] as const) {
      const touched = new Set(run.want.events.map((e) => e.recordId));
      for (const entity of ENTITIES) {
        const byXId = new Map(run.after[entity].map((r) => [r.x_id, r]));
        for (const x of kinds.created[entity]) expect(byXId.get(x)?.deleted_at, `${entity} ${x} created`).toBeNull();
        for (const x of kinds.deleted[entity]) expect(byXId.get(x)?.deleted_at, `${entity} ${x} deleted`).not.toBeNull();
        for (const x of [...kinds.created[entity], ...kinds.updated[entity], ...kinds.deleted[entity]]) {
          expect(touched.has(byXId.get(x)!.id), `${entity} ${x} has an event`).toBe(true);
        }
      }
    }
  });

  it('every lease transition fires its lifecycle event (or LEASE_UPDATED when its status has none)', async () => {
    const seen = new Map<string, string>();
    for (let round = 0; round < 8; round++) {
      const changes = await sandbox().applyChanges(s.companyId, { lease_transitions: 12 });
      const { got, after } = await syncAndCheckEvents(s);
      const leases = new Map(after.lease.map((l) => [l.x_id, l]));
      // A renewal in the source ends the lease and creates its successor: first seen active, so LEASE_RENEWED.
      for (const r of changes.renewals) {
        const lease = leases.get(r.x_id)!;
        const evs = got.filter((e) => e.recordId === lease.id);
        expect(
          evs.map((e) => e.type),
          `renewal ${r.x_id}`,
        ).toEqual(['LEASE_RENEWED']);
        expect(evs[0]!.data).toEqual(lease);
        expect(lease).toMatchObject({ status: 'active', is_renewal: true, previous_lease_id: leases.get(r.previous_x_id)!.id });
        seen.set('(new renewal) -> active', 'LEASE_RENEWED');
      }
      for (const tr of changes.lease_transitions) {
        const lease = leases.get(tr.x_id)!;
        const [from, to] = [shownStatus(tr.from), shownStatus(tr.to)];
        expect(lease.status).toBe(to);
        const evs = got.filter((e) => e.recordId === lease.id);
        if (from === to) {
          // A transition the dialect's statuses cannot tell apart is at most an update.
          expect(
            evs.map((e) => e.type),
            `${tr.x_id} ${tr.from}->${tr.to}`,
          ).toEqual(evs.length ? ['LEASE_UPDATED'] : []);
          continue;
        }
        expect(evs, `${tr.x_id} ${tr.from}->${tr.to}`).toHaveLength(1);
        const want = lifecycleOf(to, lease.is_renewal) ?? 'LEASE_UPDATED';
        expect(evs[0]!.type).toBe(want);
        // A lifecycle event is the lease as a GET shows it, and nothing else.
        if (want !== 'LEASE_UPDATED') expect(evs[0]!.data).toEqual(lease);
        else expect(evs[0]!.data).toMatchObject({ id: lease.id, x_id: lease.x_id, status: to, changed: expect.arrayContaining(['status']) });
        seen.set(`${from}->${to}${lease.is_renewal && to === 'active' ? ' (renewal)' : ''}`, want);
      }
      const fired = new Set(seen.values());
      if (LIFECYCLE_EVENTS[dialect].every((x) => fired.has(x))) break;
    }
    expect(new Set(seen.values())).toEqual(new Set(LIFECYCLE_EVENTS[dialect]));
  });

  it('replays its recorded history deterministically', async () => {
    const jobs = await jobsOf(db, s.row.id);
    const last = jobs.at(-1)!;
    const history = await t.client.workflow.getHandle(syncWorkflowIdOf(last.id)).fetchHistory();
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, syncWorkflowIdOf(last.id));
  });
});

// Faults of either dialect's source are the connector conformance suite's; here, what a run makes of them, once.
describe('source faults (an entrata company)', () => {
  let s: SandboxIntegration;
  beforeAll(async () => {
    s = await sandboxIntegration(db, { size: 30, seed: 12 });
    await runSync(t, db, s.row);
  });

  it.each(['unavailable', 'rate_limited'] as const)('survives a source that is %s for a while', async (kind) => {
    await sandbox().applyChanges(s.companyId, { update: { lease: 2, resident: 1 } });
    await sandbox().setFault(s.companyId, { kind, count: 4 });
    try {
      const { job } = await syncAndCheckEvents(s);
      expect(job.recordsUpdated).toBeGreaterThanOrEqual(3);
    } finally {
      await sandbox().clearFaults(s.companyId);
    }
  });

  it('a run that fails marks its job failed, fails the workflow, and soft-deletes nothing', async () => {
    const live = await Promise.all(ENTITIES.map((e) => liveCount(db, s.row.id, e)));
    const eventCount = (await eventsOf(db, s.row.id)).length;
    // A key the source refuses: a permanent failure, not retried.
    await db
      .update(integrations)
      .set({ sourceConfig: { ...(s.row.sourceConfig as { base_url: string; api_key: string }), api_key: 'revoked-key' } })
      .where(eq(integrations.id, s.row.id));
    try {
      const job = await triggerSync(t.ctl, s.row);
      const handle = t.client.workflow.getHandle(syncWorkflowIdOf(job.id));
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      const failed = await until('the job to fail', async () => {
        const j = (await jobsOf(db, s.row.id)).find((x) => x.id === job.id);
        return j?.status === 'failed' ? j : undefined;
      });
      expect(failed.error).toBeTruthy();
      expect(failed.finishedAt).not.toBeNull();
      expect((await handle.describe()).typedSearchAttributes.get(SA_STATUS)).toBe('failed');
      expect(await Promise.all(ENTITIES.map((e) => liveCount(db, s.row.id, e)))).toEqual(live);
      expect(await eventsOf(db, s.row.id)).toHaveLength(eventCount);
      expect(await db.select().from(syncSeen).where(eq(syncSeen.syncJobId, job.id))).toHaveLength(0);
    } finally {
      await db.update(integrations).set({ sourceConfig: s.row.sourceConfig }).where(eq(integrations.id, s.row.id));
    }
    // The next run starts afresh and succeeds.
    expect((await runSync(t, db, s.row)).status).toBe('succeeded');
  });
});

describe('one run at a time', () => {
  let s: SandboxIntegration;
  beforeAll(async () => {
    s = await sandboxIntegration(db, { size: 40, seed: 13 });
  });

  it('a manual trigger while a run is going returns that run, and a scheduled run skips', async () => {
    await sandbox().setFault(s.companyId, { kind: 'slow' });
    try {
      const first = await triggerSync(t.ctl, s.row);
      const again = await triggerSync(t.ctl, s.row);
      expect(again.id).toBe(first.id);
      await until('the run to start', async () => ((await jobsOf(db, s.row.id))[0]?.status === 'running' ? true : undefined));
      expect((await triggerSync(t.ctl, s.row)).id).toBe(first.id);

      // A scheduled run that fires meanwhile does nothing.
      await ensureSyncSchedule(t.ctl, s.row, { runNow: false });
      try {
        const schedule = t.client.schedule.getHandle(scheduleIdOf(s.row.id));
        await schedule.trigger();
        const scheduledId = await until('the scheduled run', async () => {
          const d = await schedule.describe();
          return d.info.recentActions[0]?.action.workflow.workflowId;
        });
        const result = await t.client.workflow.getHandle(scheduledId).result();
        expect(result).toEqual({ syncJobId: first.id, status: 'skipped' });
      } finally {
        await removeSyncSchedule(t.ctl, s.row.id);
      }
      await sandbox().clearFaults(s.companyId);
      const done = await waitForJob(t, db, first.id);
      expect(done.status).toBe('succeeded');
      expect(await jobsOf(db, s.row.id)).toHaveLength(1);
    } finally {
      await sandbox().clearFaults(s.companyId);
    }
  });

  it('a run whose workflow was terminated does not block the next one', async () => {
    await sandbox().setFault(s.companyId, { kind: 'slow' });
    let stuck = '';
    try {
      stuck = (await triggerSync(t.ctl, s.row)).id;
      await t.client.workflow.getHandle(syncWorkflowIdOf(stuck)).terminate('operator stopped it');
    } finally {
      await sandbox().clearFaults(s.companyId);
    }
    const next = await triggerSync(t.ctl, s.row);
    expect(next.id).not.toBe(stuck);
    const [old] = await db.select().from(syncJobs).where(eq(syncJobs.id, stuck));
    expect(old).toMatchObject({ status: 'failed', error: expect.stringContaining('terminated') });
    expect((await waitForJob(t, db, next.id)).status).toBe('succeeded');
    await expectCacheEqualsSource(db, s.row);
    // No two runs of the integration ever overlapped.
    const jobs = (await jobsOf(db, s.row.id)).filter((j) => j.startedAt);
    for (let i = 1; i < jobs.length; i++) expect(jobs[i]!.startedAt!.getTime()).toBeGreaterThanOrEqual(jobs[i - 1]!.finishedAt!.getTime());
  });
});

describe('an integration deleted while it syncs', () => {
  it('fails the run; nothing is brought back and no event is recorded', async () => {
    const s = await sandboxIntegration(db, { size: 40, seed: 15 });
    await runSync(t, db, s.row);
    await sandbox().applyChanges(s.companyId, { update: { unit: 5, resident: 5, lease: 5 } });
    await sandbox().setFault(s.companyId, { kind: 'slow', delay_ms: 700 });
    const job = await triggerSync(t.ctl, s.row);
    await until('the run to commit a page', async () => {
      const j = (await jobsOf(db, s.row.id)).find((x) => x.id === job.id);
      return j && j.recordsSeen > 0 ? true : undefined;
    });
    // What DELETE /admin/v1/integrations/{id} does: mark it deleted and soft-delete every record, without events.
    await db.transaction(async (tx) => {
      const now = new Date();
      await tx.update(integrations).set({ deletedAt: now }).where(eq(integrations.id, s.row.id));
      for (const e of ENTITIES) await softDeleteUnseen(tx, { integration: s.row, emitEvents: false, syncJobId: 'syj_deleting', now }, e);
    });
    await sandbox().clearFaults(s.companyId);
    await expect(t.client.workflow.getHandle(syncWorkflowIdOf(job.id)).result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const failed = (await jobsOf(db, s.row.id)).find((x) => x.id === job.id)!;
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringContaining('deleted') });
    for (const e of ENTITIES) expect(await liveCount(db, s.row.id, e), e).toBe(0);
    expect(await eventsOf(db, s.row.id, job.id)).toHaveLength(0);
  });
});

describe('schedules', () => {
  it('creates the schedule with the first run at once, moves it when the plan changes, and removes it', async () => {
    const s = await sandboxIntegration(db, { size: 10, seed: 14, plan: 'starter' });
    await ensureSyncSchedule(t.ctl, s.row, { runNow: true });
    const handle = t.client.schedule.getHandle(scheduleIdOf(s.row.id));
    try {
      const interval = async () => (await handle.describe()).spec.intervals?.[0]?.every;
      const d = await handle.describe();
      expect(d.spec.intervals).toHaveLength(1);
      expect(await interval()).toBe(4 * 3600 * 1000);
      expect(d.policies.overlap).toBe('SKIP');
      expect(d.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'syncIntegration',
        taskQueue: t.ctl.taskQueue,
        args: [{ integrationId: s.row.id, trigger: 'schedule' }],
      });
      expect(d.typedSearchAttributes.get(SA_INTEGRATION_ID)).toBe(s.row.id);

      // runNow started the first run, with trigger `initial`.
      const [job] = await jobsOf(db, s.row.id);
      expect(job!.trigger).toBe('initial');
      expect((await waitForJob(t, db, job!.id)).status).toBe('succeeded');
      expect((await eventsOf(db, s.row.id)).map((e) => e.type)).toEqual(['FIRST_SYNC_COMPLETE']);
      // Ensuring again (a worker restart) neither duplicates the schedule nor starts a run.
      await ensureSyncSchedule(t.ctl, s.row, { runNow: false });
      expect(await jobsOf(db, s.row.id)).toHaveLength(1);

      await db.update(integrations).set({ plan: 'enterprise' }).where(eq(integrations.id, s.row.id));
      await ensureSyncSchedule(t.ctl, await reload(db, s.row), { runNow: false });
      expect(await interval()).toBe(15 * 60 * 1000);
      const next = (await handle.describe()).info.nextActionTimes[0]!;
      expect(next.getTime() - Date.now()).toBeLessThanOrEqual(15 * 60 * 1000);

      await db.update(integrations).set({ syncIntervalSeconds: 300 }).where(eq(integrations.id, s.row.id));
      await ensureSyncSchedule(t.ctl, await reload(db, s.row), { runNow: false });
      expect(await interval()).toBe(5 * 60 * 1000);
    } finally {
      await removeSyncSchedule(t.ctl, s.row.id);
    }
    await expect(handle.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await removeSyncSchedule(t.ctl, s.row.id);
  });

  it('removes the schedules of integrations the database does not know, on its own task queue only', async () => {
    // A schedule left by an integration whose row is gone (a database restored from an older backup): made while the
    // row existed, which then goes.
    const ghost = async (ctl: typeof t.ctl) => {
      const org = await createOrganization(db, { name: `ghost-${randomUUID().slice(0, 8)}` });
      const row = await unsyncedIntegration(db, org.id, { plan: 'starter' });
      await ensureSyncSchedule(ctl, row, { runNow: false });
      await db.delete(integrations).where(eq(integrations.id, row.id));
      return row;
    };
    const ours = await ghost(t.ctl);
    const otherQueue = { ...t.ctl, taskQueue: `other-${randomUUID()}` };
    const theirs = await ghost(otherQueue);
    try {
      const live = (await db.select({ id: integrations.id }).from(integrations)).map((r) => r.id);
      const deps = { client: t.client, taskQueue: t.ctl.taskQueue, logger: pino({ level: 'silent' }) };
      // Schedule listing is eventually consistent: sweep until the new schedule has been seen and removed.
      await until(
        'the sweep to remove the schedule of an integration the database does not know',
        async () => {
          await removeOrphanSchedules(deps, live);
          try {
            await t.client.schedule.getHandle(scheduleIdOf(ours.id)).describe();
            return false;
          } catch (err) {
            if (err instanceof ScheduleNotFoundError) return true;
            throw err;
          }
        },
        { timeoutMs: 20_000, intervalMs: 250 },
      );
      await expect(t.client.schedule.getHandle(scheduleIdOf(ours.id)).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
      // Another deployment's schedule on the same namespace is left alone.
      expect((await t.client.schedule.getHandle(scheduleIdOf(theirs.id)).describe()).scheduleId).toBe(scheduleIdOf(theirs.id));
    } finally {
      await removeSyncSchedule(otherQueue, theirs.id);
      await removeSyncSchedule(t.ctl, ours.id);
    }
  });
});
