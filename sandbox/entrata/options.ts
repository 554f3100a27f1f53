/**
 * The setup reads of the entrata flavour: what its write methods accept at a property, served the way an Entrata-style
 * system serves them, so a client can offer valid values instead of guessing codes.
 *   properties.getFloorPlans        {propertyId}                     -> {floorPlans: {floorPlan: [...]}}
 *   properties.getPropertyPickLists {propertyId}                     -> {pickLists: {customerRelationshipTypes, phoneNumberTypes, addressTypes}}
 *   propertyunits.getUnitSpaces     {propertyId, page_no, per_page}  -> {unitSpaces: {unitSpace: [...]}, pagination}
 *   leases.getLeaseTerms            {propertyId}                     -> {leaseTerms: {leaseTerm: [...]}}
 * Every list has the API's list-of-one quirk (a lone element instead of an array; `{}` when empty) and numbers as
 * strings where the rest of the API has them. An unknown property is a business error (`NOT_FOUND`), a missing or
 * malformed `propertyId` a bad request. These are read methods: `reads` and `all` faults apply to them.
 *
 * Written for the sandbox alone (its own wire shapes, nothing from source/), and answering from the same tables the
 * write methods validate with (sandbox/codes.ts, the property's floorplans, its units), so what they list is exactly
 * what a write is accepted with.
 */
import { contextOf } from '../generator';
import { getRecords, type Company, type Sql } from '../store';
import { ADDRESS_TYPES, CUSTOMER_RELATIONSHIP_TYPES, leaseTermsAt, PHONE_NUMBER_TYPES, type Code } from './codes';
import { MAX_PER_PAGE } from './wire';
import { BusinessError } from './writes';

/** A parameter the method cannot work with: the RPC layer answers 400 INVALID_PARAMS. */
export class OptionParamError extends Error {}

type Params = Record<string, unknown>;
type Handler = (sql: Sql, company: Company, params: Params) => Promise<Record<string, unknown>>;

function positiveInt(params: Params, key: string, fallback?: number): number {
  const v = params[key];
  if (v === undefined || v === null || v === '') {
    if (fallback !== undefined) return fallback;
    throw new OptionParamError(`${key} is required`);
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new OptionParamError(`${key} must be a positive integer`);
  return n;
}

/** `{inner: [..]}`, `{inner: x}` for one, `{}` for none. */
function wrapped<T>(inner: string, items: T[]): Record<string, T | T[]> {
  if (items.length === 0) return {};
  return { [inner]: items.length === 1 ? items[0]! : items };
}

/** The property a setup read is about, with its stored record: unknown is a business error. */
async function propertyOf(sql: Sql, company: Company, params: Params) {
  const propertyId = positiveInt(params, 'propertyId');
  const [row] = await getRecords(sql, company.id, 'property', [propertyId]);
  if (!row) throw new BusinessError('NOT_FOUND', `property ${propertyId} does not exist`);
  return contextOf(row.model);
}

const pickList = (codes: readonly Code[]) => codes.map((c) => ({ id: c.id, name: c.name }));

const getFloorPlans: Handler = async (sql, company, params) => {
  const property = await propertyOf(sql, company, params);
  const plans = property.floorplans.map((f) => ({
    floorplanId: f.id,
    floorplanName: f.name,
    bedrooms: String(f.bedrooms),
    bathrooms: String(f.bathrooms),
    squareFeet: String(f.squareFeet),
  }));
  return { floorPlans: wrapped('floorPlan', plans) };
};

const getPropertyPickLists: Handler = async (sql, company, params) => {
  await propertyOf(sql, company, params);
  return {
    pickLists: {
      customerRelationshipTypes: wrapped('customerRelationshipType', pickList(CUSTOMER_RELATIONSHIP_TYPES)),
      phoneNumberTypes: wrapped('phoneNumberType', pickList(PHONE_NUMBER_TYPES)),
      addressTypes: wrapped('addressType', pickList(ADDRESS_TYPES)),
    },
  };
};

const getLeaseTerms: Handler = async (sql, company, params) => {
  const property = await propertyOf(sql, company, params);
  const terms = leaseTermsAt(property.id).map((t) => ({ leaseTermId: t.id, name: t.name, termMonths: String(t.months) }));
  return { leaseTerms: wrapped('leaseTerm', terms) };
};

/** The units of a property a lease can name (`unitSpaceId`), in id order, paged like every list. */
const getUnitSpaces: Handler = async (sql, company, params) => {
  const property = await propertyOf(sql, company, params);
  const page = positiveInt(params, 'page_no', 1);
  const perPage = Math.min(positiveInt(params, 'per_page', 100), MAX_PER_PAGE);
  const [rows, [count]] = await Promise.all([
    sql<{ id: number; unit_number: string | null; floorplan_id: number | null }[]>`
      select id, model->>'unitNumber' as unit_number, (model->>'floorplanId')::int as floorplan_id
      from sandbox.records where company_id = ${company.id} and entity = 'unit' and property_id = ${property.id}
      order by id limit ${perPage} offset ${(page - 1) * perPage}`,
    sql<{ n: number }[]>`
      select count(*)::int as n from sandbox.records where company_id = ${company.id} and entity = 'unit' and property_id = ${property.id}`,
  ]);
  const spaces = rows.map((r) => ({
    unitSpaceId: r.id,
    unitNumber: r.unit_number ?? '',
    // A unit set up without a floorplan has none to name.
    floorplanId: r.floorplan_id ? r.floorplan_id : null,
  }));
  return { unitSpaces: wrapped('unitSpace', spaces), pagination: { page_no: page, per_page: perPage, total_count: count?.n ?? 0 } };
};

/** The setup reads by service and method name. */
const METHODS: Record<string, Record<string, Handler>> = {
  properties: { getFloorPlans, getPropertyPickLists },
  propertyunits: { getUnitSpaces },
  leases: { getLeaseTerms },
};

/** The setup read of a service's method, if it is one. */
export function optionMethod(service: string, method: unknown): Handler | undefined {
  const methods = Object.hasOwn(METHODS, service) ? METHODS[service]! : undefined;
  return typeof method === 'string' && methods && Object.hasOwn(methods, method) ? methods[method] : undefined;
}
