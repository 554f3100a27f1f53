/**
 * What every flavour's writes share: one write is one transaction under the company's lock, with the database
 * clock's time as the last-update time of what it writes, and new records built from the model's defaults (what a
 * PMS fills in for fields a create does not give). Each flavour decodes and validates its own wire (its field
 * names, its codes, its error messages) and calls these; so a write made in either flavour is the same record.
 */
import { contextOf } from './generator';
import type { AnyModel, Entity, LeaseModel, NextIds, PropertyContext, ResidentModel, UnitModel } from './model';
import { getRecords, lockCompany, putRecords, saveCounters, type RecordRow, type Sql } from './store';

/** One write's view of its company, inside its transaction. */
export interface WriteTx {
  sql: Sql;
  companyId: string;
  /** The database clock's time (epoch ms): the last-update time of everything this write puts. */
  now: number;
  next: NextIds;
  one<E extends Entity>(entity: E, id: number): Promise<RecordRow<E> | undefined>;
  /** The context of a property (its zone, address, floor plans), undefined when it does not exist. */
  property(id: number): Promise<PropertyContext | undefined>;
  /** Whether another unit of the property has this number. */
  unitNumberTaken(propertyId: number, unitNumber: string, exceptId?: number): Promise<boolean>;
  put(records: { entity: Entity; id: number; model: AnyModel }[]): Promise<void>;
}

/** Run one write for a company under its lock; undefined when the company does not exist. */
export async function inWrite<T>(sql: Sql, companyId: string, fn: (w: WriteTx) => Promise<T>): Promise<{ value: T } | undefined> {
  return sql.begin(async (txRaw) => {
    const tx = txRaw as unknown as Sql;
    const company = await lockCompany(tx, companyId);
    if (!company) return undefined;
    const next: NextIds = { ...company.next_ids };
    const w: WriteTx = {
      sql: tx,
      companyId,
      now: company.now,
      next,
      async one(entity, id) {
        const [row] = await getRecords(tx, companyId, entity, [id]);
        return row;
      },
      async property(id) {
        const row = await w.one('property', id);
        return row ? contextOf(row.model) : undefined;
      },
      async unitNumberTaken(propertyId, unitNumber, exceptId) {
        const [dup] = await tx`
          select 1 from sandbox.records where company_id = ${companyId} and entity = 'unit' and property_id = ${propertyId}
            and model->>'unitNumber' = ${unitNumber} and id <> ${exceptId ?? 0} limit 1`;
        return dup !== undefined;
      },
      put: (records) => putRecords(tx, companyId, company.now, records),
    };
    const value = await fn(w);
    await saveCounters(tx, companyId, company.change_counter, next);
    return { value };
  }) as Promise<{ value: T } | undefined>;
}

/** What a write gives every record it creates at a property: the company's next id, now, the property's zone. */
function createdAt(w: WriteTx, ctx: PropertyContext, entity: 'unit' | 'resident' | 'lease') {
  return { id: w.next[entity]++, created: w.now, zone: ctx.timeZone, propertyId: ctx.id };
}

/** A unit created by a write: the fields given over what a PMS fills in. */
export function newUnit(w: WriteTx, ctx: PropertyContext, fields: Partial<UnitModel> & { unitNumber: string }): UnitModel {
  return {
    ...createdAt(w, ctx, 'unit'),
    buildingName: '',
    floorNumber: 1,
    floorplanId: null,
    floorplanName: '',
    bedrooms: null,
    bathrooms: null,
    squareFeet: null,
    maxOccupants: 2,
    marketRentCents: null,
    status: 'vacant_not_ready',
    remarks: '',
    address: { ...ctx.address, line2: `Apt ${fields.unitNumber}` },
    amenities: '',
    furnished: false,
    parkingSpaces: 0,
    availableOn: null,
    ...fields,
  };
}

/** A resident created by a write (or as a lease's applicant). */
export function newResident(w: WriteTx, ctx: PropertyContext, fields: Partial<ResidentModel>): ResidentModel {
  return {
    ...createdAt(w, ctx, 'resident'),
    firstName: '',
    middleName: '',
    lastName: '',
    email: '',
    phones: [],
    dateOfBirth: null,
    address: null,
    status: 'applicant',
    leadSource: '',
    preferredLanguage: 'en',
    employer: '',
    ...fields,
  };
}

/** A lease applied for by a write: pending, unsigned, at the unit's market rent. */
export function newLease(
  w: WriteTx,
  ctx: PropertyContext,
  unit: UnitModel,
  fields: Pick<LeaseModel, 'kind' | 'start' | 'end' | 'moveIn' | 'termMonths' | 'tenants'>,
): LeaseModel {
  return {
    ...createdAt(w, ctx, 'lease'),
    unitId: unit.id,
    state: 'pending',
    moveOut: null,
    notice: null,
    signed: null,
    rentCents: unit.marketRentCents ?? 0,
    depositCents: null,
    balanceCents: 0,
    renewalOfferStatus: '',
    previousLeaseId: null,
    concessions: '',
    notes: '',
    petCount: 0,
    parkingSpaces: 0,
    occupants: 1,
    leadSource: '',
    ...fields,
  };
}

/** Leases in these states are closed: no write changes them. */
export const CLOSED_LEASE: ReadonlySet<LeaseModel['state']> = new Set(['ended', 'terminated', 'evicted', 'cancelled']);
