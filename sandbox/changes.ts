/**
 * Change scripts: what happens in a real PMS between two syncs, on demand. One request updates, creates and deletes
 * records and moves leases along their lifecycle; which records and what values is a pure function of the
 * company's seed, its change counter and its current data (business dates and `updatedOn` follow the wall clock).
 *
 * - A total count is spread over entities (deletes over units, residents and leases only; a property is deleted
 *   only when asked for by name, with everything at it); per-entity counts are taken as given.
 * - Deletes prefer records nothing references; when a referenced record goes, what references it goes too (a
 *   unit's leases, a resident's leases, a lease's renewals), and all of it is reported.
 * - Every updated record gets a new value in a mapped field and a new `updatedOn`.
 * - Corrupted records get one value the mapping refuses (the sync quarantines them).
 * - Lease transitions: pending -> active | cancelled; active -> notice | terminated | evicted | renewed;
 *   notice -> ended | renewed. A renewal ends the lease and creates its successor (status active, isRenewal,
 *   previousLeaseId), reported under `created.lease` and in `renewals`.
 * The result names exactly the x_ids touched.
 */
import { ENTITIES, type Entity, type LeaseStatus } from '../domain/cdm';
import { codeOf, LEASE_STATUS_ID, LEASE_STATUS_TYPES } from '../source/entrata/codes';
import { toIsoDate } from '../source/entrata/mapping';
import { decimalToMinor } from '../source/values';
import type { NativeLease } from '../source/entrata/native';
import type { SandboxChangeRequest, SandboxChangeResult } from './control';
import { contextOf, makeCustomer, makeLease, makeProperty, makeUnit, type PropertyContext } from './generator';
import { Rng, streamSeed } from './random';
import { getRecords, lockCompany, putRecords, saveCounters, type NextIds, type RecordRow, type Sql } from './store';
import { addMonths, DAY, dayOf, decimalOf, localTime, usDate } from './time';

const usDateToIso = (day: number) => new Date(day * DAY).toISOString().slice(0, 10);

export class ChangeError extends Error {}

interface Skeleton {
  entity: Entity;
  id: number;
  property_id: number | null;
  unit_id: number | null;
  previous_id: number | null;
  customer_ids: number[] | null;
  status: number | null;
}

const WEIGHTS: Record<'update' | 'create' | 'delete', readonly (readonly [Entity, number])[]> = {
  update: [['property', 5], ['unit', 25], ['resident', 35], ['lease', 35]],
  create: [['property', 2], ['unit', 20], ['resident', 38], ['lease', 40]],
  delete: [['unit', 20], ['resident', 30], ['lease', 50]],
};

const TRANSITIONS: Record<'pending' | 'active' | 'notice', readonly (readonly [LeaseStatus | 'renewed', number])[]> = {
  pending: [['active', 70], ['cancelled', 30]],
  active: [['notice', 40], ['renewed', 25], ['terminated', 20], ['evicted', 15]],
  notice: [['ended', 75], ['renewed', 25]],
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

const sizes = (of: (e: Entity) => unknown[]) =>
  Object.fromEntries(ENTITIES.map((e) => [e, of(e).length])) as Record<Entity, number>;

const statusOf = (id: unknown): LeaseStatus | undefined => codeOf(LEASE_STATUS_TYPES, id)?.cdm;

export type ChangeResult = SandboxChangeResult & { renewals: { x_id: string; previous_x_id: string }[] };

export async function applyChanges(sql: Sql, companyId: string, req: SandboxChangeRequest): Promise<ChangeResult> {
  return sql.begin(async (txRaw) => {
    const tx = txRaw as unknown as Sql;
    const company = await lockCompany(tx, companyId);
    if (!company) throw new ChangeError('no such company');
    const counter = company.change_counter + 1;
    const rng = new Rng(streamSeed(company.seed, 'change', counter));
    const next: NextIds = { ...company.next_ids };
    const now = Date.now();
    const today = Math.floor(now / DAY);
    const result: ChangeResult = { updated: empty(), created: empty(), deleted: empty(), corrupted: empty(), lease_transitions: [], renewals: [] };

    const rows = await tx<Skeleton[]>`
      select entity, id, property_id, unit_id, previous_id, customer_ids,
             case when entity = 'lease' then (data->>'leaseStatusTypeId')::int end as status
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
    const leasesOfUnit = group((l) => [l.unit_id]);
    const leasesOfCustomer = group((l) => l.customer_ids ?? []);
    const dropLease = (id: number) => {
      if (gone.lease.has(id)) return;
      gone.lease.add(id);
      for (const r of renewedBy.get(id) ?? []) dropLease(r);
    };
    const pickWithFallback = (candidates: Skeleton[], fallback: Skeleton[], n: number) => {
      const first = rng.sample(candidates, n);
      if (first.length >= n) return first;
      const taken = new Set(first);
      return [...first, ...rng.sample(fallback.filter((r) => !taken.has(r)), n - first.length)];
    };
    if (del.property > 0) {
      for (const p of rng.sample(alive('property'), del.property)) {
        gone.property.add(p.id);
        for (const e of ['unit', 'resident'] as const) for (const r of all[e]) if (r.property_id === p.id) gone[e].add(r.id);
        for (const l of all.lease) if (l.property_id === p.id) dropLease(l.id);
      }
    }
    if (del.unit > 0) {
      const leased = new Set(all.lease.filter((l) => !gone.lease.has(l.id)).map((l) => l.unit_id));
      const units = alive('unit');
      for (const u of pickWithFallback(units.filter((u) => !leased.has(u.id)), units, del.unit)) {
        gone.unit.add(u.id);
        for (const l of leasesOfUnit.get(u.id) ?? []) dropLease(l);
      }
    }
    if (del.resident > 0) {
      const onLease = new Set(all.lease.filter((l) => !gone.lease.has(l.id)).flatMap((l) => l.customer_ids ?? []));
      const residents = alive('resident');
      for (const r of pickWithFallback(residents.filter((r) => !onLease.has(r.id)), residents, del.resident)) {
        gone.resident.add(r.id);
        for (const l of leasesOfCustomer.get(r.id) ?? []) dropLease(l);
      }
    }
    if (del.lease > 0) {
      const leases = alive('lease');
      for (const l of pickWithFallback(leases.filter((l) => !renewedBy.has(l.id)), leases, del.lease)) dropLease(l.id);
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
        if (p) contexts.set(propertyId, contextOf(p.data));
      }
      return contexts.get(propertyId);
    };
    const writes: { entity: Entity; id: number; data: Record<string, unknown> }[] = [];
    const stamp = (ctx: PropertyContext | undefined) => localTime(now, ctx?.timeZone ?? 'America/Chicago');

    // ---- updates
    const upd = countsOf(req.update, rng, WEIGHTS.update, sizes(alive));
    for (const e of ENTITIES) {
      const picked = rng.sample(alive(e), upd[e]).sort((a, b) => a.id - b.id);
      const loaded = await getRecords(tx, companyId, e, picked.map((p) => p.id));
      for (const row of loaded) {
        const ctx = await contextFor(e === 'property' ? row.id : row.property_id);
        const data = { ...mutate(e, row, rng, counter, today), updatedOn: stamp(ctx) };
        writes.push({ entity: e, id: row.id, data });
        touched[e].add(row.id);
        result.updated[e].push(String(row.id));
      }
    }

    // ---- lease transitions
    if (req.lease_transitions) {
      const open = alive('lease').filter((l) => {
        const s = statusOf(l.status);
        return s === 'pending' || s === 'active' || s === 'notice';
      });
      const picked = rng.sample(open, req.lease_transitions).sort((a, b) => a.id - b.id);
      const loaded = await getRecords(tx, companyId, 'lease', picked.map((p) => p.id));
      for (const row of loaded) {
        const lease = row.data as unknown as NativeLease;
        const from = statusOf(lease.leaseStatusTypeId) as 'pending' | 'active' | 'notice';
        const to = rng.weighted(TRANSITIONS[from]);
        const ctx = await contextFor(row.property_id);
        const moved = transition(lease, to === 'renewed' ? 'ended' : to, today);
        if (to === 'renewed') {
          // Renewing residents stay: no move-out.
          moved.renewalOfferStatus = 'Accepted';
          moved.moveOutDate = lease.moveOutDate;
        }
        moved.updatedOn = stamp(ctx);
        writes.push({ entity: 'lease', id: row.id, data: moved as unknown as Record<string, unknown> });
        touched.lease.add(row.id);
        result.lease_transitions.push({ x_id: String(row.id), from, to: to === 'renewed' ? 'ended' : to });
        if (to === 'renewed' && ctx) {
          const start = dayOf(toIsoDate(lease.leaseEndDate) ?? usDateToIso(today)) + 1;
          const id = next.lease++;
          const term = 12;
          const end = addMonths(start, term) - 1;
          const customers = asArray(lease.customers.customer);
          const renewal = makeLease(
            rng,
            id,
            ctx,
            { unitId: lease.unitId, marketRentCents: centsOf(lease.rent) },
            'active',
            { start, end, moveIn: null, moveOut: null, notice: null, signed: today, term },
            customers,
            { leaseId: row.id, rentCents: centsOf(lease.rent) },
            'Not Started',
            now,
            now,
          );
          const { rentCents: _rent, ...wire } = renewal;
          wire.moveInDate = lease.moveInDate;
          writes.push({ entity: 'lease', id, data: wire as unknown as Record<string, unknown> });
          result.created.lease.push(String(id));
          result.renewals.push({ x_id: String(id), previous_x_id: String(row.id) });
        }
      }
    }

    // ---- corruption: one field no mapping can read
    const bad = countsOf(req.corrupt, rng, WEIGHTS.update, sizes(alive));
    for (const e of ENTITIES) {
      const picked = rng.sample(alive(e), bad[e]).sort((a, b) => a.id - b.id);
      for (const row of await getRecords(tx, companyId, e, picked.map((p) => p.id))) {
        writes.push({ entity: e, id: row.id, data: { ...row.data, ...MALFORMED[e] } });
        touched[e].add(row.id);
        result.corrupted[e].push(String(row.id));
      }
    }

    // ---- creates
    const cre = countsOf(req.create, rng, WEIGHTS.create);
    for (let i = 0; i < cre.property; i++) {
      const id = next.property++;
      let fp = id * 100;
      const { data, ctx } = makeProperty(rng, id, 0, () => fp++, now, now);
      contexts.set(id, ctx);
      writes.push({ entity: 'property', id, data: data as unknown as Record<string, unknown> });
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
      const unit = makeUnit(rng, id, ctx, `N-${id}`, 1, now, now);
      writes.push({ entity: 'unit', id, data: unit as unknown as Record<string, unknown> });
      result.created.unit.push(String(id));
    }
    for (let i = 0; i < cre.resident && properties.length > 0; i++) {
      const ctx = (await contextFor(rng.pick(properties).id))!;
      const id = next.resident++;
      writes.push({ entity: 'resident', id, data: makeCustomer(rng, id, ctx, null, 1, now, now) as unknown as Record<string, unknown> });
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
        writes.push({ entity: 'resident', id: customerId, data: makeCustomer(rng, customerId, ctx, null, 1, now, now) as unknown as Record<string, unknown> });
        result.created.resident.push(String(customerId));
        residentsByProperty.set(ctx.id, [customerId]);
      }
      const id = next.lease++;
      const start = today + rng.int(5, 75);
      const lease = makeLease(
        rng,
        id,
        ctx,
        { unitId: unitRow.id, marketRentCents: centsOf(unit.data.marketRent) },
        'pending',
        { start, end: addMonths(start, 12) - 1, moveIn: null, moveOut: null, notice: null, signed: rng.chance(0.5) ? today : null, term: 12 },
        [{ customerId, customerTypeId: 1 }],
        null,
        '',
        now,
        now,
      );
      const { rentCents: _rent, ...wire } = lease;
      writes.push({ entity: 'lease', id, data: wire as unknown as Record<string, unknown> });
      result.created.lease.push(String(id));
    }

    await putRecords(tx, companyId, writes);
    await saveCounters(tx, companyId, counter, next);
    for (const e of ENTITIES) result.created[e].sort((a, b) => Number(a) - Number(b));
    return result;
  });
}

/** Per entity, a value the mapping refuses, as a PMS with bad data entry would serve it. */
const MALFORMED: Record<Entity, Record<string, unknown>> = {
  property: { updatedOn: '2025-13-45 25:61' },
  unit: { marketRent: 'call for price' },
  resident: { dateOfBirth: '02/30/1990' },
  lease: { rent: 'TBD' },
};

/** An amount in cents; 0 for none, or for a value `corrupt` made unreadable. */
function centsOf(value: unknown): number {
  try {
    return decimalToMinor(String(value || '0'));
  } catch {
    return 0;
  }
}

function asArray<T>(v: T | T[]): T[] {
  return Array.isArray(v) ? v : [v];
}

/** A lease moved to `to`, with the dates a PMS records on that move. */
function transition(lease: NativeLease, to: LeaseStatus, today: number): NativeLease {
  const out = { ...lease, leaseStatusTypeId: LEASE_STATUS_ID[to] };
  switch (to) {
    case 'active':
      out.leaseSignedDate = lease.leaseSignedDate || usDate(today);
      out.moveInDate = lease.moveInDate || lease.leaseStartDate;
      break;
    case 'notice':
      out.noticeDate = usDate(today);
      out.moveOutDate = lease.leaseEndDate;
      out.renewalOfferStatus = 'Declined';
      break;
    case 'ended':
      out.moveOutDate = lease.moveOutDate || lease.leaseEndDate;
      break;
    case 'terminated':
      out.noticeDate = lease.noticeDate || usDate(today);
      out.moveOutDate = usDate(today);
      break;
    case 'evicted':
      out.moveOutDate = usDate(today);
      out.notes = 'Eviction judgment granted';
      break;
    default:
      break;
  }
  return out;
}

/** The record with one mapped field changed to a value it did not have. */
function mutate(entity: Entity, row: RecordRow, rng: Rng, counter: number, today: number): Record<string, unknown> {
  const d = { ...row.data };
  const nudge = (amount: string, stepCents: number) => {
    const cents = centsOf(amount);
    const delta = rng.int(1, 8) * stepCents * (rng.chance(0.5) || cents < 8 * stepCents ? 1 : -1);
    return decimalOf(cents + delta);
  };
  switch (entity) {
    case 'property': {
      const kind = rng.pick(['email', 'description', 'phone'] as const);
      if (kind === 'email') d.email = `leasing.${counter}.${rng.int(100, 999)}@property${row.id}.example.com`;
      else if (kind === 'description') d.description = `${String(d.description ?? '').replace(/ \(updated [^)]*\)$/, '')} (updated ${usDate(today)} #${counter})`;
      else d.phones = { phone: { phoneNumber: `555-${counter % 1000}-${String(rng.int(0, 9999)).padStart(4, '0')}`, phoneNumberTypeId: 2, isPrimary: '1' } };
      break;
    }
    case 'unit': {
      const kind = rng.weighted([['rent', 70], ['remarks', 30]] as const);
      if (kind === 'rent') d.marketRent = nudge(String(d.marketRent ?? ''), 2500);
      else d.remarks = `Inspected ${usDate(today)} (#${counter})`;
      break;
    }
    case 'resident': {
      const kind = rng.pick(['email', 'phone', 'lastName'] as const);
      if (kind === 'email') d.email = `${String(d.firstName ?? 'resident').toLowerCase().replace(/[^a-z]/g, '')}.${counter}.${rng.int(100, 999)}@example.net`;
      else if (kind === 'phone') d.phones = { phone: { phoneNumber: `555-${counter % 1000}-${String(rng.int(0, 9999)).padStart(4, '0')}`, phoneNumberTypeId: 3, isPrimary: '1' } };
      else d.lastName = `${String(d.lastName ?? '').split('-')[0]}-${rng.pick(['Rivera', 'Okafor', 'Lindqvist', 'Tanaka', 'Moreau'])}${counter}`;
      break;
    }
    default: {
      const kind = rng.weighted([['rent', 40], ['balance', 40], ['notes', 20]] as const);
      if (kind === 'rent') d.rent = nudge(String(d.rent ?? ''), 1000);
      else if (kind === 'balance') d.balance = nudge(String(d.balance ?? ''), 1234);
      else d.notes = `Contacted ${usDate(today)} about renewal (#${counter})`;
    }
  }
  return d;
}

