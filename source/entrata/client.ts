/**
 * The Entrata-style HTTP client (JSON-RPC over POST, one service per entity, an API key header): the
 * SourceConnector of the sandbox PMS's `entrata` flavour and of live systems alike. The HTTP, its retries and the
 * classification of failures are source/http.ts's; this file adds what the Entrata-style wire says beyond HTTP:
 * - a business error in a 200 reply (`response.code` other than 200) is a rejection (SourcePermanentError with the
 *   source's message, "sendLeases: source rejected the request: unit space 12 does not belong to property 3", and
 *   `code` the source's error code), except a reported 429 or 5xx, which is classified like the HTTP status;
 * - a 4xx carries the source's message in `response.error`.
 * It lists no changes in a window (capabilities.delta false) and takes no idempotency key.
 */
import type { Entity, InputOf } from '../../domain/cdm';
import { PHONE_NUMBER_TYPES } from './codes';
import {
  MALFORMED_RECORD,
  SourcePermanentError,
  SourceTransientError,
  type CreateInputOf,
  type SourceConnector,
  type RecordsById,
  type SourcePage,
  type EntrataSettings,
  type SourceUnitSpace,
  type SourceWriteOptions,
  type UpdateInputOf,
  type WritableEntity,
  type WriteResult,
} from '../connector';
import { SourceHttp, type ConnectorOptions } from '../http';
import { findCreatedIn } from '../find-created';
import { mapRecords, minorToDecimalIn } from '../values';
import { ENTRATA_CURRENCY, MAPPERS, MappingError, setupOption, unitSpaceOption, wrappedList } from './mapping';
import { MAX_PER_PAGE, SERVICES, SETUP_METHODS, WRITE_METHODS } from './native';

export type { ConnectorOptions };

/** "2025-01-31" -> "01/31/2025"; anything else is passed on for the source to judge. */
export function toUsDate(value: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  return m ? `${m[2]}/${m[3]}/${m[1]}` : value;
}

/** Native ids are integers; an x_id that is numeric travels as a number, anything else as given. */
const nativeId = (xId: string): number | string => (/^\d{1,15}$/.test(xId) ? Number(xId) : xId);

const defined = <T extends Record<string, unknown>>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

function phoneTypeId(type: string): number {
  for (const [id, entry] of Object.entries(PHONE_NUMBER_TYPES)) if (entry.cdm === type) return Number(id);
  throw new SourcePermanentError(`phone type "${type}" is not supported by the source (home, office, mobile, fax)`, undefined, 'VALIDATION_FAILED');
}

export class EntrataConnector implements SourceConnector {
  private readonly base: string;
  private readonly http: SourceHttp;
  private seq = 0;
  readonly dialect = 'entrata' as const;
  /** Entrata-style list methods have no "changed since" filter, and its writes take no idempotency key. */
  readonly capabilities = { delta: false, idempotentCreates: false };

  constructor(
    private readonly settings: EntrataSettings,
    options: ConnectorOptions = {},
  ) {
    this.base = settings.base_url.replace(/\/$/, '');
    this.http = new SourceHttp(options);
  }

  readChangedPage<E extends Entity>(entity: E): Promise<SourcePage<E>> {
    return Promise.reject(new SourcePermanentError(`an Entrata-style source cannot list the ${entity} records changed in a window`));
  }

  async readPage<E extends Entity>(entity: E, page: number, perPage: number): Promise<SourcePage<E>> {
    return this.page(entity, page, perPage, {});
  }

  /** One page of an entity, with extra filter params of the read method (`propertyId`). */
  private async page<E extends Entity>(entity: E, page: number, perPage: number, filter: Record<string, unknown>): Promise<SourcePage<E>> {
    const svc = SERVICES[entity];
    const size = Math.max(1, Math.min(perPage, MAX_PER_PAGE));
    const result = await this.call(svc.service, svc.read, { ...filter, page_no: page, per_page: size });
    const { records, skipped } = this.mapList(entity, result);
    const pagination = (result as { pagination?: { total_count?: unknown; per_page?: unknown } }).pagination;
    const total = Number(pagination?.total_count);
    const served = Number(pagination?.per_page) || size;
    const hasMore = Number.isFinite(total) ? page * served < total : records.length + skipped.length >= size;
    return { records, skipped, page, hasMore };
  }

  async readByIds<E extends Entity>(entity: E, xIds: string[]): Promise<RecordsById<E>> {
    const svc = SERVICES[entity];
    const out: RecordsById<E> = { records: [], skipped: [] };
    // Native ids are integers: anything else cannot be in the source (and would make it refuse the whole list).
    const ids = [...new Set(xIds)].filter((x) => /^\d{1,15}$/.test(x));
    for (let i = 0; i < ids.length; i += MAX_PER_PAGE) {
      const batch = ids.slice(i, i + MAX_PER_PAGE);
      // Read until the ids received reach the source's count: a source may serve pages smaller than the per_page
      // asked for, and stopping early would make the records on its later pages look deleted. Each page read on
      // must bring an id not yet received, so the batch is read in at most batch.length + 1 requests.
      const received = new Set<string>();
      for (let page = 1; ; page++) {
        const result = await this.call(svc.service, svc.read, { [svc.ids]: batch.join(','), page_no: page, per_page: batch.length });
        const { records, skipped } = this.mapList(entity, result);
        // A source that ignored the id list would make every record it did not return look deleted.
        const asked = new Set(batch);
        const stray = [...records.map((r) => r.x_id), ...skipped.map((r) => r.x_id)].find((x) => x === null || !asked.has(x));
        if (stray !== undefined) {
          throw new SourcePermanentError(
            `${svc.read} answered an id lookup with a record not asked for (${stray ?? 'without an id'}): the source does not filter by ${svc.ids}`,
          );
        }
        const before = received.size;
        for (const r of [...records, ...skipped]) received.add(r.x_id!);
        if (records.length + skipped.length === 0) break;
        if (received.size === before) {
          throw new SourcePermanentError(
            `${svc.read} answered page ${page} of an id lookup with records of earlier pages only: the source does not page by page_no`,
          );
        }
        out.records.push(...records);
        out.skipped.push(...skipped);
        const total = Number((result as { pagination?: { total_count?: unknown } }).pagination?.total_count);
        if (!Number.isFinite(total) || received.size >= Math.min(total, batch.length)) break;
      }
    }
    return out;
  }

  async readOne<E extends Entity>(entity: E, xId: string): Promise<InputOf[E] | null> {
    if (xId.includes(',') || xId.trim() === '') return null;
    const svc = SERVICES[entity];
    const result = await this.call(svc.service, svc.read, { [svc.ids]: xId, page_no: 1, per_page: 1 });
    const { records, skipped } = this.mapList(entity, result);
    const bad = skipped.find((r) => r.x_id === xId);
    if (bad) throw new SourcePermanentError(`malformed ${entity} ${xId} from ${svc.read}: ${bad.reason}`, undefined, MALFORMED_RECORD);
    return records.find((r) => r.x_id === xId) ?? null;
  }

  async create<E extends WritableEntity>(entity: E, input: CreateInputOf[E]): Promise<WriteResult> {
    const method = WRITE_METHODS[entity].create;
    const service = SERVICES[entity].service;
    switch (entity) {
      case 'unit': {
        const u = input as CreateInputOf['unit'];
        const r = await this.send(service, method, { propertyId: nativeId(u.property_x_id), unit: unitParams(u) });
        return { x_id: this.idIn(r, 'unit', 'unitId'), related: [] };
      }
      case 'resident': {
        const c = input as CreateInputOf['resident'];
        const r = await this.send(service, method, { propertyId: nativeId(c.property_x_id), customer: customerParams(c) });
        return { x_id: this.idIn(r, 'customer', 'customerId'), related: [] };
      }
      default: {
        const l = input as CreateInputOf['lease'];
        const r = await this.send(service, method, {
          propertyId: nativeId(l.property_x_id),
          lease: {
            leaseStartDate: toUsDate(l.lease_start_date),
            leaseEndDate: toUsDate(l.lease_end_date),
            moveInDate: toUsDate(l.move_in_date),
            leaseTermId: l.lease_term_id,
            floorplanId: l.floorplan_id,
            unitSpaceId: l.unit_space_id,
            applicant: {
              firstName: l.first_name,
              lastName: l.last_name,
              customerRelationshipTypeId: l.customer_relationship_type_id,
              phone: { phoneNumber: l.phone_number, phoneNumberTypeId: l.phone_number_type_id },
              address: {
                addressTypeId: l.address_type_id,
                streetLine1: l.street_line_1,
                city: l.city,
                state: l.state,
                stateCode: l.state_code,
                postalCode: l.postal_code,
              },
            },
          },
        });
        const customer = (r as { lease?: { customerId?: unknown } }).lease?.customerId;
        return {
          x_id: this.idIn(r, 'lease', 'leaseId'),
          related: customer === undefined || customer === null ? [] : [{ entity: 'resident', x_id: String(customer) }],
        };
      }
    }
  }

  async update<E extends WritableEntity>(entity: E, xId: string, patch: UpdateInputOf[E]): Promise<WriteResult> {
    const method = WRITE_METHODS[entity].update;
    const service = SERVICES[entity].service;
    switch (entity) {
      case 'unit': {
        const r = await this.send(service, method, { unitId: nativeId(xId), unit: unitParams(patch as UpdateInputOf['unit']) });
        return { x_id: this.idIn(r, 'unit', 'unitId'), related: [] };
      }
      case 'resident': {
        const r = await this.send(service, method, { customerId: nativeId(xId), customer: customerParams(patch as UpdateInputOf['resident']) });
        return { x_id: this.idIn(r, 'customer', 'customerId'), related: [] };
      }
      default: {
        const p = patch as UpdateInputOf['lease'];
        const r = await this.send(service, method, {
          leaseId: nativeId(xId),
          lease: defined({
            moveInDate: p.move_in_date === undefined ? undefined : toUsDate(p.move_in_date),
            occupants: p.occupants,
            rent: p.rent_amount === undefined ? undefined : minorToDecimalIn(p.rent_amount, ENTRATA_CURRENCY),
          }),
        });
        return { x_id: this.idIn(r, 'lease', 'leaseId'), related: [] };
      }
    }
  }

  findCreated<E extends WritableEntity>(entity: E, input: CreateInputOf[E]): Promise<WriteResult | null> {
    return findCreatedIn({ atProperty: (e, p, keep) => this.atProperty(e, p, keep), readByIds: (e, ids) => this.readByIds(e, ids) }, entity, input);
  }

  async readWriteOptions(propertyXId: string): Promise<SourceWriteOptions> {
    const property = propertyXId.trim();
    if (!/^\d{1,15}$/.test(property))
      throw new SourcePermanentError(`property ${JSON.stringify(propertyXId)} is not a native id: the source has no such property`);
    const propertyId = Number(property);
    const { floorPlans, pickLists, leaseTerms } = SETUP_METHODS;
    const [plans, picks, terms, spaces] = await Promise.all([
      this.call(floorPlans.service, floorPlans.method, { propertyId }),
      this.call(pickLists.service, pickLists.method, { propertyId }),
      this.call(leaseTerms.service, leaseTerms.method, { propertyId }),
      this.unitSpaces(propertyId),
    ]);
    return this.setup(pickLists.method, () => {
      const lists = objectIn(picks, pickLists.outer);
      if (!lists || typeof lists !== 'object') throw new MappingError(`no ${pickLists.outer}`);
      const codes = (outer: string, inner: string) => wrappedList((lists as Record<string, unknown>)[outer], inner).map((r) => setupOption(r, 'id', 'name'));
      return {
        floorplans: wrappedList(objectIn(plans, floorPlans.outer), floorPlans.inner).map((r) => setupOption(r, 'floorplanId', 'floorplanName')),
        unit_spaces: spaces,
        lease_terms: wrappedList(objectIn(terms, leaseTerms.outer), leaseTerms.inner).map((r) => setupOption(r, 'leaseTermId', 'name')),
        customer_relationship_types: codes('customerRelationshipTypes', 'customerRelationshipType'),
        phone_number_types: codes('phoneNumberTypes', 'phoneNumberType'),
        address_types: codes('addressTypes', 'addressType'),
      };
    });
  }

  /** Every unit space of a property, page by page. */
  private async unitSpaces(propertyId: number): Promise<SourceUnitSpace[]> {
    const { service, method, outer, inner } = SETUP_METHODS.unitSpaces;
    const out: SourceUnitSpace[] = [];
    for (let page = 1; ; page++) {
      const result = await this.call(service, method, { propertyId, page_no: page, per_page: MAX_PER_PAGE });
      const items = this.setup(method, () => wrappedList(objectIn(result, outer), inner).map(unitSpaceOption));
      out.push(...items);
      const pagination = (result as { pagination?: { total_count?: unknown; per_page?: unknown } }).pagination;
      const total = Number(pagination?.total_count);
      const served = Number(pagination?.per_page) || MAX_PER_PAGE;
      if (items.length === 0 || !Number.isFinite(total) || page * served >= total) return out;
    }
  }

  /** A setup reply read with `read`: whatever the mapping cannot read makes the reply malformed (permanent). */
  private setup<T>(method: string, read: () => T): T {
    try {
      return read();
    } catch (err) {
      if (err instanceof MappingError) throw new SourcePermanentError(`malformed ${method} reply: ${err.message.slice(0, 500)}`);
      throw err;
    }
  }

  /**
   * The readable records of an entity at one property that pass `keep`, paged with the read method's `propertyId`
   * filter so a lookup never reads the whole company. A property id that is not native (not an integer) has none.
   */
  private async atProperty<E extends WritableEntity>(entity: E, propertyXId: string, keep: (r: InputOf[E]) => boolean): Promise<InputOf[E][]> {
    const property = propertyXId.trim();
    if (!/^\d{1,15}$/.test(property)) return [];
    const out: InputOf[E][] = [];
    for (let n = 1; ; n++) {
      const page = await this.page(entity, n, MAX_PER_PAGE, { propertyId: Number(property) });
      // The property is checked again: a source that ignored the filter must not make another property's record ours.
      out.push(...page.records.filter((r) => r.property_x_id === property && keep(r)));
      if (!page.hasMore || page.records.length + page.skipped.length === 0) return out;
    }
  }

  /**
   * A reply's list, mapped. A record the mapping cannot read is set aside with its native id and the reason, so
   * one bad row in a customer's system never stops the rest; a reply that is not a list at all is a permanent error.
   */
  private mapList<E extends Entity>(entity: E, result: unknown): RecordsById<E> {
    const svc = SERVICES[entity];
    if (!result || typeof result !== 'object') throw new SourcePermanentError(`malformed ${svc.read} reply: no result`);
    const items = wrappedList((result as Record<string, unknown>)[svc.outer], svc.inner);
    return mapRecords(MAPPERS[entity] as (raw: unknown) => InputOf[E], items, (raw) => rawIdOf(raw, svc.idField));
  }

  private idIn(result: unknown, key: string, field: string): string {
    const id = (result as Record<string, Record<string, unknown> | undefined> | null)?.[key]?.[field];
    // The source answered the write as done, without the id: it may have applied it (never a rejection).
    if (id === undefined || id === null || id === '') throw mayHaveApplied(`malformed write reply: no ${key}.${field}`);
    return String(id);
  }

  /** A read: one RPC call with the read retry policy (source/http.ts); returns `response.result`. */
  private async call(service: string, method: string, params: Record<string, unknown>): Promise<unknown> {
    return (await this.http.retrying(method, () => this.request(service, method, params, false))).result;
  }

  /** A write: exactly one RPC call, never retried here; returns `response.result`. */
  private async send(service: string, method: string, params: Record<string, unknown>): Promise<unknown> {
    return (await this.http.once(() => this.request(service, method, params, true))).result;
  }

  /**
   * One RPC call. A failure worth retrying is returned (the caller decides), a permanent one thrown. `write`
   * decides `maybeApplied`: a read that failed applied nothing.
   */
  private async request(service: string, method: string, params: Record<string, unknown>, write: boolean): Promise<{ result: unknown } | SourceTransientError> {
    const requestId = `${Date.now().toString(36)}-${++this.seq}`;
    const reply = await this.http.exchange({
      label: method,
      url: `${this.base}/${service}`,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': this.settings.api_key },
        body: JSON.stringify({ auth: { type: 'apikey' }, requestId, method: { name: method, version: 'r1', params } }),
      },
      write,
    });
    if (reply instanceof SourceTransientError) return reply;
    const { status, text } = reply;

    let body: { response?: { code?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } } };
    const taken = write && status >= 200 && status < 300;
    try {
      body = JSON.parse(text);
    } catch {
      // A write the source took (2xx) whose answer cannot be read may have been applied: never a rejection.
      if (taken) return mayHaveApplied(`${method}: source answered HTTP ${status} with a body that is not JSON`, status);
      throw new SourcePermanentError(`${method}: source answered HTTP ${status} with a body that is not JSON`, status);
    }
    const response = body?.response;
    const error = response?.error;
    const errorCode = error?.code === undefined ? undefined : String(error.code);
    const errorMessage = typeof error?.message === 'string' ? error.message : undefined;
    if (status < 200 || status >= 300) {
      throw new SourcePermanentError(`${method}: source refused the request (HTTP ${status}${errorMessage ? `: ${errorMessage}` : ''})`, status, errorCode);
    }
    if (!response || typeof response !== 'object') {
      if (taken) return mayHaveApplied(`${method}: malformed reply without "response"`, status);
      throw new SourcePermanentError(`${method}: malformed reply without "response"`, status);
    }
    const code = Number(response.code);
    const reported = this.http.transientStatus(method, code, write, undefined, errorMessage, true);
    if (reported) return reported;
    if (code !== 200) {
      const why = errorMessage ? `: ${errorMessage}` : errorCode ? ` (${errorCode})` : ` (code ${String(response.code)})`;
      throw new SourcePermanentError(`${method}: source rejected the request${why}`, code || status, errorCode);
    }
    return { result: response.result };
  }
}

/** A write's reply that cannot be read although the source took it: transient, and it may have been applied. */
function mayHaveApplied(message: string, status?: number): SourceTransientError {
  return new SourceTransientError(`${message}; the write may have been applied`, status, undefined, true);
}

/** `result[key]` of a reply; a reply without a result object is malformed. */
function objectIn(result: unknown, key: string): unknown {
  if (!result || typeof result !== 'object') throw new MappingError('no result');
  return (result as Record<string, unknown>)[key];
}

/** The native id of a raw record, if it has a usable one. */
function rawIdOf(raw: unknown, idField: string): string | null {
  const v = raw && typeof raw === 'object' ? (raw as Record<string, unknown>)[idField] : undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'string' && v.trim() !== '') return v.trim();
  return null;
}

function unitParams(u: Partial<CreateInputOf['unit']>): Record<string, unknown> {
  return defined({
    unitNumber: u.unit_number,
    floorplanId: u.floorplan_id === undefined ? undefined : nativeId(u.floorplan_id),
    bedrooms: u.bedrooms ?? undefined,
    bathrooms: u.bathrooms ?? undefined,
    squareFeet: u.square_feet ?? undefined,
    maxOccupants: u.max_occupants ?? undefined,
    remarks: u.note === undefined ? undefined : (u.note ?? ''),
    marketRent: u.market_rent ? minorToDecimalIn(u.market_rent, ENTRATA_CURRENCY) : undefined,
  });
}

function customerParams(c: Partial<CreateInputOf['resident']>): Record<string, unknown> {
  const a = c.address;
  return defined({
    firstName: c.first_name,
    lastName: c.last_name,
    middleName: c.middle_name === undefined ? undefined : (c.middle_name ?? ''),
    email: c.email === undefined ? undefined : (c.email ?? ''),
    phones:
      c.phones === undefined
        ? undefined
        : (c.phones ?? []).map((p) => ({ phoneNumber: p.number, phoneNumberTypeId: phoneTypeId(p.type), isPrimary: p.primary ? '1' : '0' })),
    dateOfBirth: c.date_of_birth === undefined ? undefined : c.date_of_birth === null ? '' : toUsDate(c.date_of_birth),
    address:
      a === undefined
        ? undefined
        : a === null
          ? null
          : defined({
              streetLine1: a.line_1 ?? undefined,
              streetLine2: a.line_2 ?? undefined,
              city: a.city ?? undefined,
              state: a.state ?? undefined,
              postalCode: a.postal_code ?? undefined,
              country: a.country ?? undefined,
            }),
  });
}
