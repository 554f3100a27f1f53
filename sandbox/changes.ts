/**
 * Change scripts: what happens in a real PMS between two syncs, on demand. One request updates, creates and deletes
 * records and moves leases along their lifecycle; which records and what values is a pure function of the
 * company's seed, its change counter and its current data (business dates and `updatedOn` follow the wall clock).
 *
 * - A total count is spread over entities (deletes over units, residents and leases only; a property is deleted
 *   only when asked for by name, with everything at it); per-entity counts are taken as given.
 * - Deletes prefer records nothing references; when a referenced record goes, what references it goes too (a
 *   unit's leases, a resident's leases, a lease's renewals), and all of it is reported.
 * - Every updated record gets a new value in a mapped field; every record written gets the database clock's time as
 *   its last-update time (what the entrata flavour serves as `updatedOn`, the buildium one as `LastUpdatedDateTime`).
 * - Corrupted records are marked malformed: each flavour serves one value its clients cannot read (the sync
 *   quarantines them); a later update leaves them malformed.
 * Everything works on the record model (sandbox/model.ts), so the scripts are the same in both flavours.
 * - Lease transitions: pending -> active | cancelled; active -> notice | terminated | evicted | renewed;
 *   notice -> ended | renewed. A renewal ends the lease and creates its successor (status active, isRenewal,
 *   previousLeaseId), reported under `created.lease` and in `renewals`.
 * The result names exactly the x_ids touched.
 */
import type { SandboxChangeRequest, SandboxChangeResult } from './control';
import { contextOf, makeCustomer, makeLease, makeProperty, makeUnit } from './generator';
import {
  ENTITIES,
  type AnyModel,
  type Entity,
  type LeaseModel,
  type LeaseState,
  type ModelOf,
  type NextIds,
  type PropertyContext,
  type PropertyModel,
} from './model';
import { Rng, streamSeed } from './random';
import { getRecords, lockCompany, putRecords, saveCounters, type Sql } from './store';
import { addMonths, DAY, dayOf, isoDate } from './time';

export class ChangeError extends Error {}

interface Skeleton {
  entity: Entity;
  id: number;
  property_id: number | null;
  unit_id: number | null;
  previous_id: number | null;
  customer_ids: number[] | null;
  status: LeaseState | null;
}

const WEIGHTS: Record<'update' | 'create' | 'delete', readonly (readonly [Entity, number])[]> = {
  update: [
    ['property', 5],
    ['unit', 25],
    ['resident', 35],
    ['lease', 35],
  ],
  create: [
    ['property', 2],
    ['unit', 20],
    ['resident', 38],
    ['lease', 40],
  ],
  delete: [
    ['unit', 20],
    ['resident', 30],
    ['lease', 50],
  ],
};

const TRANSITIONS: Record<'pending' | 'active' | 'notice', readonly (readonly [LeaseState | 'renewed', number])[]> = {
  pending: [
    ['active', 70],
    ['cancelled', 30],
  ],
  active: [
    ['notice', 40],
    ['renewed', 25],
    ['terminated', 20],
    ['evicted', 15],
  ],
  notice: [
    ['ended', 75],
    ['renewed', 25],
  ],
};

const empty = (): Record<Entity, string[]> => ({ property: [], unit: [], resident: [], lease: [] });

/**
 * Counts per entity: as given, or a total spread by weight over the entities that still have records to spare
 * (`capacity`; creates are unbounded), so a spread never asks for more than exists.
 */
function countsOf(
  value: number | Partial<Record<Entity, number>> | undefined,
  rng: Rng,
  weights: readonly (readonly [Entity, number])[],
  capacity?: Record<Entity, number>,
): Record<Entity, number> {
  const out: Record<Entity, number> = { property: 0, unit: 0, resident: 0, lease: 0 };
  if (typeof value === 'number') {
    for (let i = 0; i < value; i++) {
      const open = weights.filter(([e]) => !capacity || out[e] < capacity[e]);
      if (open.length === 0) break;
      out[rng.weighted(open)]++;
    }
  } else if (value) for (const e of ENTITIES) out[e] = value[e] ?? 0;
  return out;
}

const sizes = (of: (e: Entity) => unknown[]) => Object.fromEntries(ENTITIES.map((e) => [e, of(e).length])) as Record<Entity, number>;

export type ChangeResult = SandboxChangeResult & { renewals: { x_id: string; previous_x_id: string }[] };

export async function applyChanges(sql: Sql, companyId: string, req: SandboxChangeRequest): Promise<ChangeResult> {
  return sql.begin(async (txRaw) => {
    const tx = txRaw as unknown as Sql;
    const company = await lockCompany(tx, companyId);
    if (!company) throw new ChangeError('no such company');
    const counter = company.change_counter + 1;
    const rng = new Rng(streamSeed(company.seed, 'change', counter));
    const next: NextIds = { ...company.next_ids };
    // The database clock: the last-update time of everything written, and the business day of the new dates.
    const now = company.now;
    const today = Math.floor(now / DAY);
    const result: ChangeResult = { updated: empty(), created: empty(), deleted: empty(), corrupted: empty(), lease_transitions: [], renewals: [] };

    const rows = await tx<Skeleton[]>`
      select entity, id, property_id, unit_id, previous_id, customer_ids,
             case when entity = 'lease' then model->>'state' end as status
      from sandbox.records where company_id = ${companyId} order by entity, id`;
    const all: Record<Entity, Skeleton[]> = { property: [], unit: [], resident: [], lease: [] };
    for (const r of rows) all[r.entity].push(r);
    const gone: Record<Entity, Set<number>> = { property: new Set(), unit: new Set(), resident: new Set(), lease: new Set() };
    const touched: Record<Entity, Set<number>> = { property: new Set(), unit: new Set(), resident: new Set(), lease: new Set() };
    const present = (e: Entity) => all[e].filter((r) => !gone[e].has(r.id));
    /** Records still there and not yet changed by this request (each record changes at most once). */
    const alive = (e: Entity) => present(e).filter((r) => !touched[e].has(r.id));

    // ---- deletes
    const del = countsOf(req.delete, rng, WEIGHTS.delete, sizes(alive));
    const group = (key: (l: Skeleton) => (number | null)[]) => {
      const m = new Map<number, number[]>();
      for (const l of all.lease) for (const k of key(l)) if (k !== null) (m.get(k) ?? m.set(k, []).get(k)!).push(l.id);
      return m;
    };
    const renewedBy = group((l) => [l.previous_id]);
    const dropLease = (id: number) => {
      if (gone.lease.has(id)) return;
      gone.lease.add(id);
      for (const r of renewedBy.get(id) ?? []) dropLease(r);
    };
    const pickWithFallback = (candidates: Skeleton[], fallback: Skeleton[], n: number) => {
      const first = rng.sample(candidates, n);
      if (first.length >= n) return first;
      const taken = new Set(first);
      return [
        ...first,
        ...rng.sample(
          fallback.filter((r) => !taken.has(r)),
          n - first.length,
        ),
      ];
    };
    if (del.property > 0) {
      for (const p of rng.sample(alive('property'), del.property)) {
        gone.property.add(p.id);
        for (const e of ['unit', 'resident'] as const) for (const r of all[e]) if (r.property_id === p.id) gone[e].add(r.id);
        for (const l of all.lease) if (l.property_id === p.id) dropLease(l.id);
      }
    }
    /** `n` units or residents deleted, those no lease still there is `on` first, with their leases. */
    const dropWithLeases = (e: 'unit' | 'resident', n: number, on: (l: Skeleton) => (number | null)[]) => {
      const leasesOf = group(on);
      const taken = new Set(all.lease.filter((l) => !gone.lease.has(l.id)).flatMap(on));
      const records = alive(e);
      for (const r of pickWithFallback(
        records.filter((r) => !taken.has(r.id)),
        records,
        n,
      )) {
        gone[e].add(r.id);
        for (const l of leasesOf.get(r.id) ?? []) dropLease(l);
      }
    };
    if (del.unit > 0) dropWithLeases('unit', del.unit, (l) => [l.unit_id]);
    if (del.resident > 0) dropWithLeases('resident', del.resident, (l) => l.customer_ids ?? []);
    if (del.lease > 0) {
      const leases = alive('lease');
      for (const l of pickWithFallback(
        leases.filter((l) => !renewedBy.has(l.id)),
        leases,
        del.lease,
      ))
        dropLease(l.id);
    }
    for (const e of ENTITIES) {
      const ids = [...gone[e]].sort((a, b) => a - b);
      if (ids.length === 0) continue;
      await tx`delete from sandbox.records where company_id = ${companyId} and entity = ${e} and id = any(${ids}::int[])`;
      result.deleted[e] = ids.map(String);
    }

    // ---- loading the data of what changes next
    const contexts = new Map<number, PropertyContext>();
    const contextFor = async (propertyId: number | null): Promise<PropertyContext | undefined> => {
      if (propertyId === null) return undefined;
      if (!contexts.has(propertyId)) {
        const [p] = await getRecords(tx, companyId, 'property', [propertyId]);
        if (p) contexts.set(propertyId, contextOf(p.model));
      }
      return contexts.get(propertyId);
    };
    const writes: { entity: Entity; id: number; model: AnyModel }[] = [];

    // ---- updates
    const upd = countsOf(req.update, rng, WEIGHTS.update, sizes(alive));
    for (const e of ENTITIES) {
      const picked = rng.sample(alive(e), upd[e]).sort((a, b) => a.id - b.id);
      const loaded = await getRecords(
        tx,
        companyId,
        e,
        picked.map((p) => p.id),
      );
      for (const row of loaded) {
        writes.push({ entity: e, id: row.id, model: mutate(e, row.model, rng, counter, today) });
        touched[e].add(row.id);
        result.updated[e].push(String(row.id));
      }
    }

    // ---- lease transitions
    if (req.lease_transitions) {
      const open = alive('lease').filter((l) => {
        const s = l.status;
        return s === 'pending' || s === 'active' || s === 'notice';
      });
      const picked = rng.sample(open, req.lease_transitions).sort((a, b) => a.id - b.id);
      const loaded = await getRecords(
        tx,
        companyId,
        'lease',
        picked.map((p) => p.id),
      );
      for (const row of loaded) {
        const lease = row.model as LeaseModel;
        const from = lease.state as 'pending' | 'active' | 'notice';
        const to = rng.weighted(TRANSITIONS[from]);
        const ctx = await contextFor(row.property_id);
        const moved = transition(lease, to === 'renewed' ? 'ended' : to, today);
        if (to === 'renewed') {
          // Renewing residents stay: no move-out.
          moved.renewalOfferStatus = 'Accepted';
          moved.moveOut = lease.moveOut;
        }
        writes.push({ entity: 'lease', id: row.id, model: moved });
        touched.lease.add(row.id);
        result.lease_transitions.push({ x_id: String(row.id), from, to: to === 'renewed' ? 'ended' : to });
        if (to === 'renewed' && ctx) {
          const start = dayOf(lease.end) + 1;
          const id = next.lease++;
          const term = 12;
          const end = addMonths(start, term) - 1;
          const renewal = makeLease(
            rng,
            id,
            ctx,
            { unitId: lease.unitId, marketRentCents: lease.rentCents },
            'active',
            { start, end, moveIn: null, moveOut: null, notice: null, signed: today, term },
            lease.tenants,
            { leaseId: row.id, rentCents: lease.rentCents },
            'Not Started',
            now,
          );
          renewal.moveIn = lease.moveIn;
          writes.push({ entity: 'lease', id, model: renewal });
          result.created.lease.push(String(id));
          result.renewals.push({ x_id: String(id), previous_x_id: String(row.id) });
        }
      }
    }

    // ---- corruption: one field no mapping can read
    const bad = countsOf(req.corrupt, rng, WEIGHTS.update, sizes(alive));
    for (const e of ENTITIES) {
      const picked = rng.sample(alive(e), bad[e]).sort((a, b) => a.id - b.id);
      for (const row of await getRecords(
        tx,
        companyId,
        e,
        picked.map((p) => p.id),
      )) {
        writes.push({ entity: e, id: row.id, model: { ...row.model, malformed: true } });
        touched[e].add(row.id);
        result.corrupted[e].push(String(row.id));
      }
    }

    // ---- creates
    const cre = countsOf(req.create, rng, WEIGHTS.create);
    for (let i = 0; i < cre.property; i++) {
      const id = next.property++;
      let fp = id * 100;
      const { model, ctx } = makeProperty(rng, id, 0, () => fp++, now);
      contexts.set(id, ctx);
      writes.push({ entity: 'property', id, model });
      result.created.property.push(String(id));
    }
    const properties = present('property');
    const units = present('unit');
    const residentsByProperty = new Map<number, number[]>();
    for (const r of present('resident')) {
      const key = r.property_id ?? 0;
      (residentsByProperty.get(key) ?? residentsByProperty.set(key, []).get(key)!).push(r.id);
    }
    for (let i = 0; i < cre.unit && properties.length > 0; i++) {
      const ctx = (await contextFor(rng.pick(properties).id))!;
      const id = next.unit++;
      writes.push({ entity: 'unit', id, model: makeUnit(rng, id, ctx, `N-${id}`, 'vacant_ready', now) });
      result.created.unit.push(String(id));
    }
    for (let i = 0; i < cre.resident && properties.length > 0; i++) {
      const ctx = (await contextFor(rng.pick(properties).id))!;
      const id = next.resident++;
      writes.push({ entity: 'resident', id, model: makeCustomer(rng, id, ctx, null, 'applicant', now) });
      result.created.resident.push(String(id));
    }
    for (let i = 0; i < cre.lease && units.length > 0; i++) {
      const unitRow = rng.pick(units);
      const ctx = await contextFor(unitRow.property_id);
      const [unit] = await getRecords(tx, companyId, 'unit', [unitRow.id]);
      if (!ctx || !unit) continue;
      let customerId: number;
      const local = residentsByProperty.get(ctx.id) ?? [];
      if (local.length > 0) customerId = rng.pick(local);
      else {
        // Nobody on file at this property: the applicant is new too, and reported as created.
        customerId = next.resident++;
        writes.push({ entity: 'resident', id: customerId, model: makeCustomer(rng, customerId, ctx, null, 'applicant', now) });
        result.created.resident.push(String(customerId));
        residentsByProperty.set(ctx.id, [customerId]);
      }
      const id = next.lease++;
      const start = today + rng.int(5, 75);
      const lease = makeLease(
        rng,
        id,
        ctx,
        { unitId: unitRow.id, marketRentCents: unit.model.marketRentCents ?? 0 },
        'pending',
        { start, end: addMonths(start, 12) - 1, moveIn: null, moveOut: null, notice: null, signed: rng.chance(0.5) ? today : null, term: 12 },
        [{ id: customerId, role: 'primary' }],
        null,
        '',
        now,
      );
      writes.push({ entity: 'lease', id, model: lease });
      result.created.lease.push(String(id));
    }

    await putRecords(tx, companyId, now, writes);
    await saveCounters(tx, companyId, counter, next);
    for (const e of ENTITIES) result.created[e].sort((a, b) => Number(a) - Number(b));
    return result;
  });
}

/** A lease moved to `to`, with the dates a PMS records on that move. */
function transition(lease: LeaseModel, to: LeaseState, today: number): LeaseModel {
  const out = { ...lease, state: to };
  const day = isoDate(today);
  switch (to) {
    case 'active':
      out.signed = lease.signed ?? day;
      out.moveIn = lease.moveIn ?? lease.start;
      break;
    case 'notice':
      out.notice = day;
      out.moveOut = lease.end;
      out.renewalOfferStatus = 'Declined';
      break;
    case 'ended':
      out.moveOut = lease.moveOut ?? lease.end;
      break;
    case 'terminated':
      out.notice = lease.notice ?? day;
      out.moveOut = day;
      break;
    case 'evicted':
      out.moveOut = day;
      out.notes = 'Eviction judgment granted';
      break;
    default:
      break;
  }
  return out;
}

/** The record with one field a client maps changed to a value it did not have. */
function mutate<E extends Entity>(entity: E, model: ModelOf[E], rng: Rng, counter: number, today: number): ModelOf[E] {
  const nudge = (cents: number, stepCents: number) => {
    const delta = rng.int(1, 8) * stepCents * (rng.chance(0.5) || cents < 8 * stepCents ? 1 : -1);
    return cents + delta;
  };
  const phone = (kind: 'office' | 'mobile') => [{ number: `555-${counter % 1000}-${String(rng.int(0, 9999)).padStart(4, '0')}`, kind, primary: true }];
  const m = { ...model } as AnyModel;
  switch (entity) {
    case 'property': {
      const d = m as PropertyModel;
      const kind = rng.pick(['email', 'description', 'phone'] as const);
      if (kind === 'email') d.email = `leasing.${counter}.${rng.int(100, 999)}@property${d.id}.example.com`;
      else if (kind === 'description') d.description = `${d.description.replace(/ \(updated [^)]*\)$/, '')} (updated ${usDay(today)} #${counter})`;
      else d.phones = phone('office');
      break;
    }
    case 'unit': {
      const d = m as ModelOf['unit'];
      const kind = rng.weighted([
        ['rent', 70],
        ['remarks', 30],
      ] as const);
      if (kind === 'rent') d.marketRentCents = nudge(d.marketRentCents ?? 0, 2500);
      else d.remarks = `Inspected ${usDay(today)} (#${counter})`;
      break;
    }
    case 'resident': {
      const d = m as ModelOf['resident'];
      const kind = rng.pick(['email', 'phone', 'lastName'] as const);
      if (kind === 'email') d.email = `${(d.firstName || 'resident').toLowerCase().replace(/[^a-z]/g, '')}.${counter}.${rng.int(100, 999)}@example.net`;
      else if (kind === 'phone') d.phones = phone('mobile');
      else d.lastName = `${d.lastName.split('-')[0]}-${rng.pick(['Rivera', 'Okafor', 'Lindqvist', 'Tanaka', 'Moreau'])}${counter}`;
      break;
    }
    default: {
      const d = m as LeaseModel;
      const kind = rng.weighted([
        ['rent', 40],
        ['balance', 40],
        ['notes', 20],
      ] as const);
      if (kind === 'rent') d.rentCents = nudge(d.rentCents, 1000);
      else if (kind === 'balance') d.balanceCents = nudge(d.balanceCents, 1234);
      else d.notes = `Contacted ${usDay(today)} about renewal (#${counter})`;
    }
  }
  return m as ModelOf[E];
}

/** A day as the notes a PMS's staff type carry it ("MM/DD/YYYY"), in the model's free text. */
function usDay(day: number): string {
  const iso = isoDate(day);
  return `${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(0, 4)}`;
}
