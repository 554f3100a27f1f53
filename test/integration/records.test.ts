import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { closeDb, type Db, type Tx } from '../../db/client';
import { applyRecords, lockForWriteBack, type ApplyContext } from '../../db/apply';
import { softDeleteUnseen } from '../../db/seen';
import { toRecords } from '../../db/serialize';
import type { LeaseInput } from '../../domain/cdm';
import { events, leases } from '../../db/schema';
import { makeTenant, testDb, type Tenant } from '../support/context';
import { leaseInput, leaseResidents, propertyInput, residentInput, unitInput } from '../support/fixtures';
import { until } from '../support/sync';

let db: Db;
let t: Tenant;
const ctx = (emitEvents: boolean, syncJobId?: string) => ({
  integration: { id: t.integrationId, organizationId: t.organizationId, mode: t.mode },
  emitEvents,
  syncJobId,
});

beforeAll(async () => {
  db = testDb();
  t = await makeTenant(db);
});
afterAll(async () => closeDb(db));

describe('applyRecords', () => {
  it('creates records, resolves references and records no events when told not to', async () => {
    await db.transaction(async (tx) => {
      await applyRecords(tx, ctx(false), 'property', [propertyInput('P1')]);
      await applyRecords(tx, ctx(false), 'unit', [unitInput('U1', 'P1')]);
      await applyRecords(tx, ctx(false), 'resident', [residentInput('R1', 'P1'), residentInput('R2', 'P1')]);
      const r = await applyRecords(tx, ctx(false), 'lease', [
        leaseInput('L1', {
          property: 'P1',
          unit: 'U1',
          residents: leaseResidents('R1', 'R2'),
        }),
      ]);
      expect(r.created).toBe(1);
    });
    const rows = await db.select().from(leases).where(eq(leases.integrationId, t.integrationId));
    const [lease] = await toRecords(db, 'lease', rows);
    expect(lease!.property_id).toMatch(/^prp_/);
    expect(lease!.unit_id).toMatch(/^unt_/);
    expect(lease!.residents.map((p) => [p.x_id, p.role])).toEqual([
      ['R1', 'primary'],
      ['R2', 'responsible'],
    ]);
    expect(lease!.resident_ids).toHaveLength(2);
    expect(lease!.rent_amount).toEqual({ amount: 103500, currency: 'USD' });
    const evs = await db.select().from(events).where(eq(events.integrationId, t.integrationId));
    expect(evs).toHaveLength(0);
  });

  it('writes nothing and records nothing for unchanged content, and the changed fields otherwise', async () => {
    const refs = { property: 'P1', unit: 'U1', residents: [{ x_id: 'R1', role: 'primary' }] };
    const same = await db.transaction((tx) =>
      applyRecords(tx, ctx(true), 'lease', [leaseInput('L1', { ...refs, residents: [...refs.residents, { x_id: 'R2', role: 'responsible' }] })]),
    );
    expect(same).toMatchObject({ created: 0, updated: 0, unchanged: 1 });
    const moved = await db.transaction((tx) =>
      applyRecords(tx, ctx(true), 'lease', [
        leaseInput(
          'L1',
          { ...refs, residents: [...refs.residents, { x_id: 'R2', role: 'responsible' }] },
          { rent_amount: { amount: 110000, currency: 'USD' } },
        ),
      ]),
    );
    expect(moved.updated).toBe(1);
    const [ev] = await db.select().from(events).where(eq(events.id, moved.eventIds[0]!));
    expect(ev!.type).toBe('LEASE_UPDATED');
    expect(ev!.data).toMatchObject({ rent_amount: { amount: 110000, currency: 'USD' }, changed: ['rent_amount'] });
    expect(Object.keys(ev!.data).sort()).toEqual(['changed', 'id', 'rent_amount', 'updated_at', 'x_id']);

    const ended = await db.transaction((tx) =>
      applyRecords(tx, ctx(true), 'lease', [
        leaseInput(
          'L1',
          { ...refs, residents: [...refs.residents, { x_id: 'R2', role: 'responsible' }] },
          { rent_amount: { amount: 110000, currency: 'USD' }, status: 'ended' },
        ),
      ]),
    );
    const [ended1] = await db.select().from(events).where(eq(events.id, ended.eventIds[0]!));
    expect(ended1!.type).toBe('LEASE_ENDED');
    expect(ended1!.data).toMatchObject({ status: 'ended', residents: expect.any(Array), rent_amount: expect.any(Object) });
  });

  it('fills in a reference the cache could not resolve once the record it names arrives, with its *_UPDATED event', async () => {
    const own = await makeTenant(db);
    const ctx = (emitEvents: boolean) => ({ integration: { id: own.integrationId, organizationId: own.organizationId, mode: own.mode }, emitEvents });
    await db.transaction(async (tx) => {
      await applyRecords(tx, ctx(false), 'property', [propertyInput('P1')]);
      await applyRecords(tx, ctx(false), 'resident', [residentInput('R1', 'P1')]);
    });
    const lease = leaseInput('L9', {
      property: 'P1',
      unit: 'U9',
      residents: [
        { x_id: 'R1', role: 'primary' },
        { x_id: 'R9', role: 'occupant' },
      ],
    });
    const first = await db.transaction((tx) => applyRecords(tx, ctx(true), 'lease', [lease]));
    expect(first.created).toBe(1);
    const stored = async () =>
      (
        await toRecords(
          db,
          'lease',
          await db
            .select()
            .from(leases)
            .where(eq(leases.id, first.ids.get('L9')!)),
        )
      )[0]!;
    const before = await stored();
    expect(before.unit_id).toBeNull();
    expect(before.residents.map((p) => p.x_id)).toEqual(['R1']);
    // Still nothing to point at: no change, no event, however often the record comes by.
    const again = await db.transaction((tx) => applyRecords(tx, ctx(true), 'lease', [lease]));
    expect(again).toMatchObject({ created: 0, updated: 0, unchanged: 1, eventIds: [] });

    await db.transaction(async (tx) => {
      await applyRecords(tx, ctx(false), 'unit', [unitInput('U9', 'P1')]);
      await applyRecords(tx, ctx(false), 'resident', [residentInput('R9', 'P1')]);
    });
    const filled = await db.transaction((tx) => applyRecords(tx, ctx(true), 'lease', [lease]));
    expect(filled).toMatchObject({ updated: 1, unchanged: 0 });
    const [ev] = await db.select().from(events).where(eq(events.id, filled.eventIds[0]!));
    expect(ev!.type).toBe('LEASE_UPDATED');
    expect((ev!.data as { changed: string[] }).changed.sort()).toEqual(['resident_ids', 'residents', 'unit_id']);
    const after = await stored();
    expect(after.unit_id).toMatch(/^unt_/);
    expect(after.residents.map((p) => p.x_id)).toEqual(['R1', 'R9']);
    // Resolved now: the next sighting is unchanged again.
    const settled = await db.transaction((tx) => applyRecords(tx, ctx(true), 'lease', [lease]));
    expect(settled).toMatchObject({ updated: 0, unchanged: 1, eventIds: [] });
  });

  it('soft-deletes what a complete run did not see, with a *_UPDATED event carrying deleted_at', async () => {
    const job = 'syj_01J00000000000000000000000';
    await db.transaction((tx) => applyRecords(tx, ctx(true, job), 'resident', [residentInput('R1', 'P1')]));
    const r = await db.transaction((tx) => softDeleteUnseen(tx, { ...ctx(true, job), syncJobId: job }, 'resident'));
    expect(r.softDeleted).toBe(1);
    const [ev] = await db.select().from(events).where(eq(events.id, r.eventIds[0]!));
    expect(ev!.type).toBe('RESIDENT_UPDATED');
    expect(ev!.data).toMatchObject({ x_id: 'R2', changed: ['deleted_at'], deleted_at: expect.any(String) });
  });
});

describe('a sync page read before a write-back', () => {
  it('leaves the record the write-back stored after the page was read, and announces nothing; a later read applies', async () => {
    const tenant = await makeTenant(db);
    const c = (at: Date, readAt?: Date) => ({
      integration: { id: tenant.integrationId, organizationId: tenant.organizationId, mode: tenant.mode },
      emitEvents: true,
      now: at,
      readAt,
    });
    const t0 = new Date('2026-01-01T00:00:00.000Z');
    await db.transaction(async (tx) => {
      await applyRecords(tx, c(t0), 'property', [propertyInput('SP1')]);
      await applyRecords(tx, c(t0), 'unit', [unitInput('SU1', 'SP1', { bedrooms: 1 })]);
    });
    // The sync reads its page at t1; the write-back stores bedrooms 3 at t2; the page (bedrooms 1... then 2 at the
    // source before the write) is applied after.
    const t1 = new Date(t0.getTime() + 1_000);
    const t2 = new Date(t0.getTime() + 2_000);
    await db.transaction((tx) =>
      applyRecords(tx, { ...c(t2), operationId: 'opr_01JH0000000000000000000000' }, 'unit', [unitInput('SU1', 'SP1', { bedrooms: 3 })]),
    );
    const stale = await db.transaction((tx) => applyRecords(tx, c(new Date(t0.getTime() + 3_000), t1), 'unit', [unitInput('SU1', 'SP1', { bedrooms: 2 })]));
    expect(stale).toMatchObject({ created: 0, updated: 0, unchanged: 1 });
    const unitEvents = async () =>
      (await db.select().from(events).where(eq(events.integrationId, tenant.integrationId)).orderBy(events.createdAt, events.id)).filter(
        (e) => e.type === 'UNIT_UPDATED',
      );
    expect((await unitEvents()).map((e) => (e.data as { bedrooms: number }).bedrooms)).toEqual([3]);
    // A page read after the write-back is the source's newer word.
    const fresh = await db.transaction((tx) =>
      applyRecords(tx, c(new Date(t0.getTime() + 5_000), new Date(t0.getTime() + 4_000)), 'unit', [unitInput('SU1', 'SP1', { bedrooms: 4 })]),
    );
    expect(fresh).toMatchObject({ updated: 1 });
    expect((await unitEvents()).map((e) => (e.data as { bedrooms: number }).bedrooms)).toEqual([3, 4]);
  });
});

describe('a write-back store (lockForWriteBack, recordsLocked)', () => {
  let w: Tenant;
  const wctx = (extra: Partial<ApplyContext> = {}): ApplyContext => ({
    integration: { id: w.integrationId, organizationId: w.organizationId, mode: w.mode },
    emitEvents: true,
    recordsLocked: true,
    ...extra,
  });
  const refs = { property: 'WP1', unit: 'WU1', residents: [{ x_id: 'WR1', role: 'primary' }] };
  const rent = (amount: number) => ({ rent_amount: { amount, currency: 'USD' } });
  let locks: Db;

  beforeAll(async () => {
    w = await makeTenant(db);
    locks = testDb(4);
    await db.transaction(async (tx) => {
      await applyRecords(tx, { ...wctx(), recordsLocked: false, emitEvents: false }, 'property', [propertyInput('WP1')]);
      await applyRecords(tx, { ...wctx(), recordsLocked: false, emitEvents: false }, 'unit', [unitInput('WU1', 'WP1')]);
      await applyRecords(tx, { ...wctx(), recordsLocked: false, emitEvents: false }, 'resident', [residentInput('WR1', 'WP1'), residentInput('WR2', 'WP1')]);
      await applyRecords(tx, { ...wctx(), recordsLocked: false, emitEvents: false }, 'lease', [leaseInput('WL1', refs), leaseInput('WL2', refs)]);
    });
  });
  afterAll(async () => closeDb(locks));

  /** A write-back of one lease held open: its locks taken and its record stored, until release() commits it. */
  function openWriteBack(xId: string, over: Partial<LeaseInput>) {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let stored!: (pid: number) => void;
    const ready = new Promise<number>((r) => (stored = r));
    const done = locks.transaction(async (tx) => {
      const [{ pid }] = (await tx.execute(sql`select pg_backend_pid() as pid`)) as unknown as [{ pid: number }];
      await lockForWriteBack(tx, w.integrationId, [{ entity: 'lease', xId }]);
      const r = await applyRecords(tx, wctx(), 'lease', [leaseInput(xId, refs, over)]);
      stored(pid);
      await held;
      return r;
    });
    return { ready, release, done };
  }

  /** A statement of its own (its backend's pid first), which must wait behind `holder`'s locks. */
  async function waitsBehind<T>(holderPid: number, run: (tx: Tx) => Promise<T>): Promise<{ done: Promise<T> }> {
    let pid!: (p: number) => void;
    const started = new Promise<number>((r) => (pid = r));
    const done = locks.transaction(async (tx): Promise<T> => {
      pid(((await tx.execute(sql`select pg_backend_pid() as pid`)) as unknown as [{ pid: number }])[0].pid);
      return run(tx);
    });
    const own = await started;
    await until('the statement to wait for the open write-back', async () => {
      const [row] = (await db.execute(sql`select ${holderPid}::int = any(pg_blocking_pids(${own}::int)) as blocked`)) as unknown as [{ blocked: boolean }];
      return row.blocked ? true : undefined;
    });
    return { done };
  }

  it('holds its own record only: a write-back of another lease of the integration commits while it is open', async () => {
    const a = openWriteBack('WL1', rent(111_100));
    await a.ready;
    const b = await locks.transaction(async (tx) => {
      await lockForWriteBack(tx, w.integrationId, [{ entity: 'lease', xId: 'WL2' }]);
      return applyRecords(tx, wctx(), 'lease', [leaseInput('WL2', refs, rent(222_200))]);
    });
    expect(b).toMatchObject({ updated: 1 });
    a.release();
    expect(await a.done).toMatchObject({ updated: 1 });
  });

  it('makes a write-back of the same record, and a sync page of the entity, wait for it; each then sees its commit', async () => {
    const a = openWriteBack('WL1', rent(333_300));
    const pid = await a.ready;
    const same = await waitsBehind(pid, async (tx) => {
      await lockForWriteBack(tx, w.integrationId, [{ entity: 'lease', xId: 'WL1' }]);
      return applyRecords(tx, wctx(), 'lease', [leaseInput('WL1', refs, { ...rent(333_300), notes: 'after' })]);
    });
    const page = await waitsBehind(pid, (tx) => applyRecords(tx, { ...wctx(), recordsLocked: false }, 'lease', [leaseInput('WL2', refs, rent(444_400))]));
    a.release();
    await a.done;
    // Compared with what the first one stored: only the notes changed.
    const [second, sync] = await Promise.all([same.done, page.done]);
    const [ev] = await db.select().from(events).where(eq(events.id, second.eventIds[0]!));
    expect((ev!.data as { changed: string[] }).changed).toEqual(['notes']);
    expect(sync).toMatchObject({ updated: 1 });
  });

  it('keeps the rows of lease residents that did not change, replaces those that did, and moves along with its writes', async () => {
    const people = async () =>
      (await db.execute(sql`select lr.x_id, lr.xmin::text as xmin from lease_residents lr join leases l on l.id = lr.lease_id
        where l.integration_id = ${w.integrationId} and l.x_id = 'WL1' order by lr.position`)) as unknown as { x_id: string; xmin: string }[];
    const before = await people();
    const seen: string[] = [];
    const alongside = async (ids: ReadonlyMap<string, string>) => {
      seen.push(ids.get('WL1')!);
    };
    await db.transaction(async (tx) => {
      await lockForWriteBack(tx, w.integrationId, [{ entity: 'lease', xId: 'WL1' }]);
      await applyRecords(tx, wctx({ alongside }), 'lease', [leaseInput('WL1', refs, { ...rent(555_500), notes: 'after' })]);
    });
    expect(await people()).toEqual(before);
    const two = { ...refs, residents: [...refs.residents, { x_id: 'WR2', role: 'occupant' }] };
    const moved = await db.transaction(async (tx) => {
      await lockForWriteBack(tx, w.integrationId, [{ entity: 'lease', xId: 'WL1' }]);
      return applyRecords(tx, wctx({ alongside }), 'lease', [leaseInput('WL1', two, { ...rent(555_500), notes: 'after' })]);
    });
    expect((await people()).map((p) => p.x_id)).toEqual(['WR1', 'WR2']);
    const [ev] = await db.select().from(events).where(eq(events.id, moved.eventIds[0]!));
    expect((ev!.data as { changed: string[] }).changed.sort()).toEqual(['resident_ids', 'residents']);
    // Unchanged content still runs the caller's statement.
    await db.transaction(async (tx) => {
      await lockForWriteBack(tx, w.integrationId, [{ entity: 'lease', xId: 'WL1' }]);
      expect(await applyRecords(tx, wctx({ alongside }), 'lease', [leaseInput('WL1', two, { ...rent(555_500), notes: 'after' })])).toMatchObject({
        unchanged: 1,
      });
    });
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(1);
    expect(seen[0]).toMatch(/^lse_/);
  });
});
