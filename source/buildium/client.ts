/**
 * The Buildium-style REST client, written from docs/sources/buildium.md alone: the SourceConnector of the sandbox's
 * `buildium` flavour and of live Buildium-style systems. REST collections under /v1, a client id and secret in
 * headers, `limit`/`offset` paging with `X-Total-Count`, `lastupdatedfrom`/`lastupdatedto` for delta reads, an
 * `Idempotency-Key` on creates. The HTTP, its retries and the classification of failures are source/http.ts's; this
 * file adds what the wire says beyond HTTP:
 * - a 4xx is a rejection (SourcePermanentError) whose message carries the source's own `UserMessage` and field
 *   errors ("POST /v1/leases: source rejected the request: Validation failed (FloorPlanId: not the unit's)"), with
 *   `code` naming the kind (VALIDATION_FAILED, AUTHENTICATION_FAILED, NOT_FOUND, CONFLICT);
 * - a 404 of one record is no record (readOne's null), a 404 of a property's floor plans no such property;
 * - an update is a read of the record and one PUT of every writable field with the patch applied (the wire replaces
 *   a record's writable fields whole); only the PUT is the write.
 */
import type { Entity, InputOf, Money, Phone } from '../../domain/cdm';
import {
  MALFORMED_RECORD,
  SourcePermanentError,
  SourceTransientError,
  type BuildiumSettings,
  type ChangeWindow,
  type CreateInputOf,
  type CreateOptions,
  type RecordsById,
  type SourceConnector,
  type SourcePage,
  type SourceUnitSpace,
  type SourceWriteOptions,
  type UpdateInputOf,
  type WritableEntity,
  type WriteResult,
} from '../connector';
import { findCreatedIn } from '../find-created';
import { SourceHttp, type ConnectorOptions } from '../http';
import { mapRecords, minorToDecimalIn } from '../values';
import {
  ADDRESS_TYPES,
  BATHROOMS,
  BEDROOMS,
  DEFAULT_CURRENCY,
  idOf,
  LEASE_TYPES,
  MAPPERS,
  MappingError,
  nameOf,
  PHONE_TYPES,
  str,
  TENANT_ROLES,
} from './mapping';

/** The collection of each entity. */
const COLLECTIONS = {
  property: '/v1/rentals',
  unit: '/v1/rentals/units',
  resident: '/v1/leases/tenants',
  lease: '/v1/leases',
} as const satisfies Record<Entity, string>;

/** The most records one list request may ask for (`limit`), and the most ids one `ids` filter may name. */
const MAX_LIMIT = 1000;

/** The fields a PUT replaces, per entity: every one must be sent. */
const WRITABLE = {
  unit: ['UnitNumber', 'FloorPlanId', 'UnitBedrooms', 'UnitBathrooms', 'UnitSize', 'MaxOccupants', 'MarketRent', 'Description'],
  resident: ['FirstName', 'LastName', 'MiddleName', 'Email', 'PhoneNumbers', 'DateOfBirth', 'PrimaryAddress'],
  lease: ['LeaseType', 'LeaseFromDate', 'LeaseToDate', 'MoveInDate', 'Occupants', 'Rent'],
} as const satisfies Record<WritableEntity, readonly string[]>;

/** What each kind of refusal is called in `code`, whatever the source's words. */
const REFUSALS: Record<number, string> = { 400: 'VALIDATION_FAILED', 401: 'AUTHENTICATION_FAILED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 409: 'CONFLICT' };

type Raw = Record<string, unknown>;
type Query = Record<string, string | number>;

/** A window end as the filters take it: UTC, whole seconds. */
const wireTime = (ms: number): string => new Date(ms).toISOString().slice(0, 19) + 'Z';

/** An x_id as the wire's integer id, or null when it cannot be one (then the source has no such record). */
function wireId(xId: string | null | undefined): number | null {
  const t = (xId ?? '').trim();
  return /^\d{1,15}$/.test(t) && Number(t) > 0 ? Number(t) : null;
}

/** An x_id a write names: an id, or the write is refused before anything is sent. */
function referenceTo(xId: string, field: string): number {
  const id = wireId(xId);
  if (id === null) throw new SourcePermanentError(`${field} ${JSON.stringify(xId)} is not an id of the source`, undefined, 'VALIDATION_FAILED');
  return id;
}

export class BuildiumConnector implements SourceConnector {
  readonly dialect = 'buildium' as const;
  readonly capabilities = { delta: true, idempotentCreates: true };
  private readonly base: string;
  private readonly http: SourceHttp;
  /** The currency of the company's amounts (the wire names none). */
  private readonly currency = DEFAULT_CURRENCY;

  constructor(
    private readonly settings: BuildiumSettings,
    options: ConnectorOptions = {},
  ) {
    this.base = settings.base_url.replace(/\/$/, '');
    this.http = new SourceHttp(options);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Reads
  // -------------------------------------------------------------------------------------------------------------

  readPage<E extends Entity>(entity: E, page: number, perPage: number): Promise<SourcePage<E>> {
    return this.page(entity, page, perPage, {});
  }

  /** The window rounded outward to whole seconds (the filters' precision): a record at its edge is never missed. */
  readChangedPage<E extends Entity>(entity: E, window: ChangeWindow, page: number, perPage: number): Promise<SourcePage<E>> {
    const from = Math.floor(window.from.getTime() / 1000) * 1000;
    const to = Math.ceil(window.to.getTime() / 1000) * 1000;
    if (!(from <= to))
      return Promise.reject(
        new SourcePermanentError(`a change window must not end before it starts (${window.from.toISOString()} .. ${window.to.toISOString()})`),
      );
    return this.page(entity, page, perPage, { lastupdatedfrom: wireTime(from), lastupdatedto: wireTime(to) });
  }

  private async page<E extends Entity>(entity: E, page: number, perPage: number, filter: Query): Promise<SourcePage<E>> {
    const limit = Math.max(1, Math.min(Math.floor(perPage), MAX_LIMIT));
    const offset = (Math.max(1, page) - 1) * limit;
    const { items, total } = await this.list(COLLECTIONS[entity], { ...filter, limit, offset });
    const { records, skipped } = this.mapList(entity, items);
    const hasMore = total === undefined ? items.length >= limit : offset + items.length < total;
    return { records, skipped, page, hasMore, ...(total === undefined ? {} : { total }) };
  }

  async readByIds<E extends Entity>(entity: E, xIds: string[]): Promise<RecordsById<E>> {
    const out: RecordsById<E> = { records: [], skipped: [] };
    // Ids are integers: anything else cannot be in the source (and would make it refuse the whole list).
    const ids = [...new Set(xIds.map((x) => x.trim()))].filter((x) => wireId(x) !== null);
    for (let i = 0; i < ids.length; i += MAX_LIMIT) {
      const batch = ids.slice(i, i + MAX_LIMIT);
      const asked = new Set(batch);
      for (let offset = 0; ; ) {
        const { items, total } = await this.list(COLLECTIONS[entity], { ids: batch.join(','), limit: MAX_LIMIT, offset });
        const { records, skipped } = this.mapList(entity, items);
        // A source that ignored the id list would make every record it did not return look deleted.
        const stray = [...records.map((r) => r.x_id), ...skipped.map((r) => r.x_id)].find((x) => x === null || !asked.has(x));
        if (stray !== undefined) {
          throw new SourcePermanentError(
            `GET ${COLLECTIONS[entity]} answered an id lookup with a record not asked for (${stray ?? 'without an id'}): the source does not filter by ids`,
          );
        }
        out.records.push(...records);
        out.skipped.push(...skipped);
        offset += items.length;
        if (items.length === 0 || total === undefined || offset >= total) break;
      }
    }
    return out;
  }

  async readOne<E extends Entity>(entity: E, xId: string): Promise<InputOf[E] | null> {
    const raw = await this.rawOne(entity, xId);
    if (raw === null) return null;
    try {
      return (MAPPERS[entity] as (raw: unknown) => InputOf[E])(raw);
    } catch (err) {
      if (err instanceof MappingError)
        throw new SourcePermanentError(
          `malformed ${entity} ${xId} from GET ${COLLECTIONS[entity]}/${xId}: ${err.message.slice(0, 500)}`,
          undefined,
          MALFORMED_RECORD,
        );
      throw err;
    }
  }

  /** One record as the wire has it; null when the source has none. */
  private async rawOne(entity: Entity, xId: string): Promise<Raw | null> {
    const id = wireId(xId);
    if (id === null) return null;
    const path = `${COLLECTIONS[entity]}/${id}`;
    const body = await this.read(path, {}, true);
    if (body === null) return null;
    if (!body.json || typeof body.json !== 'object' || Array.isArray(body.json)) throw new SourcePermanentError(`GET ${path}: malformed reply: not a record`);
    return body.json as Raw;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Writes
  // -------------------------------------------------------------------------------------------------------------

  async create<E extends WritableEntity>(entity: E, input: CreateInputOf[E], opts: CreateOptions = {}): Promise<WriteResult> {
    let body: Raw;
    switch (entity) {
      case 'unit': {
        const u = input as CreateInputOf['unit'];
        body = { PropertyId: referenceTo(u.property_x_id, 'property_x_id'), ...this.unitFields(u) };
        break;
      }
      case 'resident': {
        const c = input as CreateInputOf['resident'];
        body = { PropertyId: referenceTo(c.property_x_id, 'property_x_id'), ...tenantFields(c) };
        break;
      }
      default: {
        const l = input as CreateInputOf['lease'];
        body = {
          PropertyId: referenceTo(l.property_x_id, 'property_x_id'),
          UnitId: referenceTo(l.unit_space_id, 'unit_space_id'),
          FloorPlanId: referenceTo(l.floorplan_id, 'floorplan_id'),
          LeaseType: l.lease_term_id,
          LeaseFromDate: l.lease_start_date,
          // An at-will lease has no end at the source (it refuses one): the end the caller gave is not sent.
          LeaseToDate: l.lease_term_id === 'AtWill' ? null : l.lease_end_date,
          MoveInDate: l.move_in_date,
          Applicant: {
            FirstName: l.first_name,
            LastName: l.last_name,
            Role: l.customer_relationship_type_id,
            PhoneNumbers: [{ Number: l.phone_number, Type: l.phone_number_type_id }],
            Address: { AddressLine1: l.street_line_1, City: l.city, State: l.state_code || l.state, PostalCode: l.postal_code },
            AddressType: l.address_type_id,
          },
        };
      }
    }
    const key = opts.idempotencyKey;
    const created = await this.write('POST', COLLECTIONS[entity], body, key ? { 'idempotency-key': key } : {});
    return this.resultOf(entity, created, `POST ${COLLECTIONS[entity]}`);
  }

  async update<E extends WritableEntity>(entity: E, xId: string, patch: UpdateInputOf[E]): Promise<WriteResult> {
    const id = referenceTo(xId, `${entity} x_id`);
    const current = await this.rawOne(entity, xId);
    if (current === null) throw new SourcePermanentError(`${entity} ${xId}: the source has no such record`, 404, 'NOT_FOUND');
    // The PUT repeats every field the patch leaves alone as the source has it: a record the source holds malformed
    // would send its malformed values back and be refused for a field the caller never named, so it is refused here,
    // saying so, before anything is sent.
    try {
      MAPPERS[entity](current);
    } catch (err) {
      if (!(err instanceof MappingError)) throw err;
      throw new SourcePermanentError(
        `${entity} ${xId} is malformed at the source (${err.message.slice(0, 300)}): it cannot be updated until it is repaired there`,
        undefined,
        'VALIDATION_FAILED',
      );
    }
    // Every writable field as the source has it, then the patch over it.
    const body: Raw = Object.fromEntries(WRITABLE[entity].map((k) => [k, current[k] ?? null]));
    switch (entity) {
      case 'unit': {
        const p = patch as UpdateInputOf['unit'];
        Object.assign(body, await this.planFieldsOf(current, p), this.unitFields(p));
        break;
      }
      case 'resident':
        Object.assign(body, tenantFields(patch as UpdateInputOf['resident']));
        break;
      default: {
        const p = patch as UpdateInputOf['lease'];
        Object.assign(
          body,
          defined({
            MoveInDate: p.move_in_date,
            Occupants: p.occupants,
            Rent: p.rent_amount === undefined ? undefined : this.amount(p.rent_amount),
          }),
        );
      }
    }
    const path = `${COLLECTIONS[entity]}/${id}`;
    return this.resultOf(entity, await this.write('PUT', path, body, {}), `PUT ${path}`);
  }

  findCreated<E extends WritableEntity>(entity: E, input: CreateInputOf[E]): Promise<WriteResult | null> {
    return findCreatedIn({ atProperty: (e, p, keep) => this.atProperty(e, p, keep), readByIds: (e, ids) => this.readByIds(e, ids) }, entity, input);
  }

  async readWriteOptions(propertyXId: string): Promise<SourceWriteOptions> {
    const id = wireId(propertyXId);
    if (id === null)
      throw new SourcePermanentError(`property ${JSON.stringify(propertyXId)} is not an id of the source: it has no such property`, 404, 'NOT_FOUND');
    const plansPath = `${COLLECTIONS.property}/${id}/floorplans`;
    const [plans, units] = await Promise.all([this.read(plansPath, {}, true), this.allAt(COLLECTIONS.unit, id)]);
    if (plans === null) throw new SourcePermanentError(`GET ${plansPath}: the source has no property ${id}`, 404, 'NOT_FOUND');
    const fixed = (names: readonly string[]) => names.map((n) => ({ value: n, label: n }));
    try {
      if (!Array.isArray(plans.json)) throw new MappingError('not a list');
      return {
        floorplans: plans.json.map((p: unknown) => option(p, 'Id', 'Name')),
        unit_spaces: units.map((u): SourceUnitSpace => ({ ...option(u, 'Id', 'UnitNumber'), floorplan_id: idOf((u as Raw).FloorPlanId, 'FloorPlanId') })),
        lease_terms: fixed(Object.keys(LEASE_TYPES)),
        customer_relationship_types: fixed(Object.keys(TENANT_ROLES)),
        phone_number_types: fixed(Object.keys(PHONE_TYPES)),
        address_types: fixed(ADDRESS_TYPES),
      };
    } catch (err) {
      if (err instanceof MappingError) throw new SourcePermanentError(`malformed write options of property ${id}: ${err.message.slice(0, 500)}`);
      throw err;
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Write bodies
  // -------------------------------------------------------------------------------------------------------------

  /**
   * A unit given a floor plan takes the plan's bedrooms, bathrooms and size unless the patch sets them (as a create
   * does, and as the CDM says). A PUT must repeat every field, so those the patch leaves out are the plan's, read from
   * the property's floor plans, not the unit's current ones. Nothing when the patch names no plan, or one the property
   * does not have (the source refuses that).
   */
  private async planFieldsOf(current: Raw, p: Partial<CreateInputOf['unit']>): Promise<Raw> {
    if (typeof p.floorplan_id !== 'string' || (p.bedrooms !== undefined && p.bathrooms !== undefined && p.square_feet !== undefined)) return {};
    const propertyId = wireId(String(current.PropertyId ?? ''));
    const planId = wireId(p.floorplan_id);
    if (propertyId === null || planId === null) return {};
    const path = `${COLLECTIONS.property}/${propertyId}/floorplans`;
    const plans = await this.read(path, {}, true);
    const plan = Array.isArray(plans?.json)
      ? (plans.json as unknown[]).find((f): f is Raw => !!f && typeof f === 'object' && (f as Raw).Id === planId)
      : undefined;
    if (plan === undefined) return {};
    const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);
    const size = typeof plan.Size === 'number' && Number.isSafeInteger(plan.Size) && plan.Size > 0 ? plan.Size : null;
    return defined({
      UnitBedrooms: p.bedrooms === undefined ? planRooms(BEDROOMS, count(plan.Bedrooms), 9, 'NineBedPlus') : undefined,
      UnitBathrooms: p.bathrooms === undefined ? planRooms(BATHROOMS, count(plan.Bathrooms), 5, 'FivePlusBath') : undefined,
      UnitSize: p.square_feet === undefined ? size : undefined,
    });
  }

  private unitFields(u: Partial<CreateInputOf['unit']>): Raw {
    return defined({
      UnitNumber: u.unit_number,
      FloorPlanId: u.floorplan_id === undefined ? undefined : u.floorplan_id === null ? null : referenceTo(u.floorplan_id, 'floorplan_id'),
      UnitBedrooms: u.bedrooms === undefined ? undefined : roomsName(BEDROOMS, u.bedrooms, 9, 'NineBedPlus', 'bedrooms'),
      UnitBathrooms: u.bathrooms === undefined ? undefined : roomsName(BATHROOMS, u.bathrooms, 5, 'FivePlusBath', 'bathrooms'),
      UnitSize: u.square_feet,
      MaxOccupants: u.max_occupants,
      MarketRent: u.market_rent === undefined ? undefined : u.market_rent === null ? null : this.amount(u.market_rent),
      Description: u.note,
    });
  }

  /** Money as the wire's JSON number with two decimals, in the company's currency only. */
  private amount(money: Money): number {
    return Number(minorToDecimalIn(money, this.currency));
  }

  /** A write's reply (the record) as the write's result; a lease's tenants are read back with it. */
  private resultOf(entity: WritableEntity, reply: unknown, label: string): WriteResult {
    const record = reply && typeof reply === 'object' && !Array.isArray(reply) ? (reply as Raw) : undefined;
    let x_id: string | null = null;
    try {
      x_id = idOf(record?.Id, 'Id');
    } catch {
      x_id = null;
    }
    // The source answered the write as done, without the id: it may have applied it (never a rejection).
    if (x_id === null) throw new SourceTransientError(`${label}: malformed reply: no record Id; the write may have been applied`, undefined, undefined, true);
    if (entity !== 'lease') return { x_id, related: [] };
    const tenants = Array.isArray(record!.Tenants) ? (record!.Tenants as unknown[]) : [];
    const related = tenants.flatMap((t) => {
      const id = t && typeof t === 'object' ? (t as Raw).Id : undefined;
      return typeof id === 'number' && Number.isSafeInteger(id) ? [{ entity: 'resident' as const, x_id: String(id) }] : [];
    });
    return { x_id, related };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Lookups
  // -------------------------------------------------------------------------------------------------------------

  /** The readable records of an entity at one property that pass `keep`, filtered by `propertyids` at the source. */
  private async atProperty<E extends WritableEntity>(entity: E, propertyXId: string, keep: (r: InputOf[E]) => boolean): Promise<InputOf[E][]> {
    const id = wireId(propertyXId);
    if (id === null) return [];
    const { records } = this.mapList(entity, await this.allAt(COLLECTIONS[entity], id));
    // The property is checked again: a source that ignored the filter must not make another property's record ours.
    return records.filter((r) => r.property_x_id === String(id) && keep(r));
  }

  /** Every raw record of a collection at one property, page by page. */
  private async allAt(path: string, propertyId: number): Promise<unknown[]> {
    const out: unknown[] = [];
    for (let offset = 0; ; ) {
      const { items, total } = await this.list(path, { propertyids: propertyId, limit: MAX_LIMIT, offset });
      out.push(...items);
      offset += items.length;
      if (items.length === 0 || (total === undefined ? items.length < MAX_LIMIT : offset >= total)) return out;
    }
  }

  /** The raw records mapped; one the mapping cannot read is set aside (source/values.ts mapRecords). */
  private mapList<E extends Entity>(entity: E, items: unknown[]): RecordsById<E> {
    return mapRecords(MAPPERS[entity] as (raw: unknown) => InputOf[E], items, rawIdOf);
  }

  // -------------------------------------------------------------------------------------------------------------
  // HTTP
  // -------------------------------------------------------------------------------------------------------------

  /** A list read: the records and `X-Total-Count` (undefined when the source sent none). */
  private async list(path: string, query: Query): Promise<{ items: unknown[]; total: number | undefined }> {
    const body = (await this.read(path, query, false))!;
    if (!Array.isArray(body.json)) throw new SourcePermanentError(`GET ${path}: malformed reply: not a list`);
    const header = body.headers.get('x-total-count');
    const total = header !== null && /^\s*\d+\s*$/.test(header) ? Number(header) : undefined;
    return { items: body.json, total };
  }

  /** A GET with the read retry policy. `missing`: a 404 is null (no such record) instead of a refusal. */
  private async read(path: string, query: Query, missing: boolean): Promise<{ json: unknown; headers: Headers } | null> {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
    const label = `GET ${path}`;
    return this.http.retrying(label, async () => {
      const reply = await this.http.exchange({
        label,
        url: `${this.base}${path}${qs ? `?${qs}` : ''}`,
        init: { method: 'GET', headers: this.headers() },
        write: false,
      });
      if (reply instanceof SourceTransientError) return reply;
      if (missing && reply.status === 404) return null;
      return { json: this.body(label, reply.status, reply.text), headers: reply.headers };
    });
  }

  /** A POST or PUT: exactly one request, classified (source/http.ts); the reply's JSON. */
  private async write(method: 'POST' | 'PUT', path: string, body: Raw, extra: Record<string, string>): Promise<unknown> {
    const label = `${method} ${path}`;
    return this.http.once(async () => {
      const reply = await this.http.exchange({
        label,
        url: `${this.base}${path}`,
        init: { method, headers: { ...this.headers(), 'content-type': 'application/json', ...extra }, body: JSON.stringify(body) },
        write: true,
      });
      if (reply instanceof SourceTransientError) return reply;
      // A write the source took (2xx) whose answer cannot be read may have been applied: never a rejection.
      if (reply.status >= 200 && reply.status < 300 && !isJson(reply.text)) {
        return new SourceTransientError(
          `${label}: source answered HTTP ${reply.status} with a body that is not JSON; the write may have been applied`,
          reply.status,
          undefined,
          true,
        );
      }
      return this.body(label, reply.status, reply.text);
    });
  }

  private headers(): Record<string, string> {
    return { accept: 'application/json', 'x-buildium-client-id': this.settings.client_id, 'x-buildium-client-secret': this.settings.client_secret };
  }

  /** A reply's JSON; a refusal (any status left after source/http.ts took the transient ones) is thrown with the source's words. */
  private body(label: string, status: number, text: string): unknown {
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new SourcePermanentError(`${label}: source answered HTTP ${status} with a body that is not JSON`, status);
    }
    if (status >= 200 && status < 300) return json;
    const e = json && typeof json === 'object' ? (json as { UserMessage?: unknown; Errors?: unknown }) : {};
    const message = typeof e.UserMessage === 'string' && e.UserMessage.trim() ? e.UserMessage.trim() : undefined;
    const fields = (Array.isArray(e.Errors) ? e.Errors : [])
      .map((x: unknown) => (x && typeof x === 'object' ? (x as { Key?: unknown; Value?: unknown }) : {}))
      .filter((x) => x.Key !== undefined || x.Value !== undefined)
      .map((x) => (x.Key ? `${String(x.Key)}: ${String(x.Value ?? '')}` : String(x.Value)));
    const said = [message, fields.length > 0 ? fields.join('; ') : undefined].filter(Boolean).join(': ');
    const code = REFUSALS[status] ?? `HTTP_${status}`;
    if (status === 400 || status === 409)
      throw new SourcePermanentError(`${label}: source rejected the request${said ? `: ${said}` : ` (HTTP ${status})`}`, status, code);
    throw new SourcePermanentError(`${label}: source refused the request (HTTP ${status}${said ? `: ${said}` : ''})`, status, code);
  }
}

const defined = (o: Raw): Raw => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/**
 * The name of a room count (`TwoBed`, `FiveBath`), `NotSet` for none. A count above `most` is refused before anything
 * is sent: the wire's last name (`plus`, `NineBedPlus`) reads back as `most`, so 12 bedrooms would be stored as 9.
 * So is a count the wire has no name for.
 */
/**
 * A floor plan's count as the unit's name for it, as a unit created with the plan reads: over `most` the capped name
 * (`NineBedPlus`), a count the vocabulary has no name for (or none) `NotSet`.
 */
function planRooms(table: Record<string, number | null>, value: number | null, most: number, plus: string): string {
  if (value !== null && value > most) return plus;
  return nameOf(table, value) ?? 'NotSet';
}

/** Whether a reply's text is JSON (an empty body is not). */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function roomsName(table: Record<string, number | null>, value: number | null, most: number, plus: string, field: string): string {
  if (value !== null && value > most) {
    throw new SourcePermanentError(`${field} ${value} is more than the source can hold: at most ${most} (${plus})`, undefined, 'VALIDATION_FAILED');
  }
  const name = nameOf(table, value);
  if (name === undefined) throw new SourcePermanentError(`${field} ${value} is not a count the source takes`, undefined, 'VALIDATION_FAILED');
  return name;
}

function phonesOut(phones: Phone[] | null): Raw[] {
  // The wire has no primary flag: the primary phone goes first, where a reader takes it from. So a list must have
  // exactly one primary phone, or what is read back would differ from what was written.
  const primaries = (phones ?? []).filter((p) => p.primary).length;
  if ((phones ?? []).length > 0 && primaries !== 1) {
    throw new SourcePermanentError(
      `phones must have exactly one primary phone for this source (it holds the first phone as the primary one); ${primaries} sent`,
      undefined,
      'VALIDATION_FAILED',
    );
  }
  const ordered = [...(phones ?? [])].sort((a, b) => Number(b.primary) - Number(a.primary));
  return ordered.map((p) => {
    const type = nameOf(PHONE_TYPES, p.type as (typeof PHONE_TYPES)[keyof typeof PHONE_TYPES]);
    if (type === undefined)
      throw new SourcePermanentError(`phone type "${p.type}" is not supported by the source (home, office, mobile, fax)`, undefined, 'VALIDATION_FAILED');
    return { Number: p.number, Type: type };
  });
}

function tenantFields(c: Partial<CreateInputOf['resident']>): Raw {
  const a = c.address;
  return defined({
    FirstName: c.first_name,
    LastName: c.last_name,
    MiddleName: c.middle_name,
    Email: c.email,
    PhoneNumbers: c.phones === undefined ? undefined : phonesOut(c.phones),
    DateOfBirth: c.date_of_birth,
    PrimaryAddress:
      a === undefined
        ? undefined
        : a === null
          ? null
          : { AddressLine1: a.line_1, AddressLine2: a.line_2, AddressLine3: null, City: a.city, State: a.state, PostalCode: a.postal_code, Country: a.country },
  });
}

/** A pick-list entry as a write option: its id as the value, its name (else the id) as the label. */
function option(raw: unknown, idField: string, nameField: string): { value: string; label: string } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new MappingError(`not an object: ${JSON.stringify(raw)}`);
  const value = idOf((raw as Raw)[idField], idField);
  if (value === null) throw new MappingError(`entry without ${idField}`);
  return { value, label: str((raw as Raw)[nameField]) ?? value };
}

/** The id of a raw record, if it has a usable one. */
function rawIdOf(raw: unknown): string | null {
  const v = raw && typeof raw === 'object' ? (raw as Raw).Id : undefined;
  return typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : null;
}
