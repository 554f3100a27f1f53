/**
 * The one interface to a property management system, whatever its dialect. Each dialect is one folder beside this
 * file (source/entrata/, source/buildium/) with its HTTP client and its mapping to the CDM; nothing outside those
 * folders knows a dialect's wire. The same client serves the sandbox PMS's flavour of the dialect and live systems.
 * Reads are paged; mapping to the CDM happens inside the connector so callers only ever see CDM input (references by
 * x_id, unmapped source fields in custom_data).
 */
import type { Address, Entity, InputOf, Money, Phone } from '../domain/cdm';
import type { WritableEntity } from '../domain/operations';

export interface SourcePage<E extends Entity> {
  records: InputOf[E][];
  /** Records of the page the mapping could not read: left out of `records`, never fatal to the page. */
  skipped: SkippedRecord[];
  /** 1-based page number of this page. */
  page: number;
  /** Whether another page follows. */
  hasMore: boolean;
  /**
   * How many records the listing held when this page was read, when the source says (Buildium's `X-Total-Count`): a
   * delta run that sees it fall between pages knows records left its window and the rest moved up a place.
   */
  total?: number;
}

/** A record the source served that the mapping could not read (quarantined by the sync, not applied). */
export interface SkippedRecord {
  /** The record's native id, when even that could not be read: null. */
  x_id: string | null;
  /** What is wrong with it, for the operator (the field's value, not the whole record). */
  reason: string;
}

/** Records looked up by id: what the source still has (readable or not); an id in neither list is gone. */
export interface RecordsById<E extends Entity> {
  records: InputOf[E][];
  skipped: SkippedRecord[];
}

/** The `code` of a SourcePermanentError for a record the source holds in a form the mapping cannot read. */
export const MALFORMED_RECORD = 'MALFORMED_RECORD';

/** A failure the source will not get over by retrying (bad credentials, a rejected write, a malformed reply). */
export class SourcePermanentError extends Error {
  override name = 'SourcePermanentError';
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * A failure worth retrying (network error, timeout, 5xx, 429). `retryAfterMs` when the source said so.
 * `maybeApplied`: the request may have reached the source and been applied (a timeout, a connection lost after the
 * request was sent, a 5xx), so a write must not simply be sent again: look for what it made first (findCreated).
 * False when the source cannot have acted on it (429, a refused connection, a failed DNS lookup) and for reads.
 */
export class SourceTransientError extends Error {
  override name = 'SourceTransientError';
  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
    readonly maybeApplied: boolean = false,
  ) {
    super(message);
  }
}

/** What a dialect can do beyond the reads and writes every connector has. */
export interface SourceCapabilities {
  /** The source can list the records changed in a time window (readChangedPage): a sync can read only those. */
  delta: boolean;
  /** The source accepts an idempotency key on creates: a create re-sent with the same key makes nothing new. */
  idempotentCreates: boolean;
}

/**
 * A window of last-update times, in the source's own clock (UTC), both ends inclusive as the source filters them.
 * A delta sync asks from the end of its previous window less an overlap (clock skew, records committed late).
 */
export interface ChangeWindow {
  from: Date;
  to: Date;
}

/** Options of one create. */
export interface CreateOptions {
  /** Sent as the source's idempotency key where it takes one (capabilities.idempotentCreates); ignored elsewhere. */
  idempotencyKey?: string;
}

export interface SourceConnector {
  readonly dialect: SourceDialect;
  readonly capabilities: SourceCapabilities;
  /** Read one page (1-based) of an entity. */
  readPage<E extends Entity>(entity: E, page: number, perPage: number): Promise<SourcePage<E>>;
  /**
   * Read one page (1-based) of the records of an entity whose last update falls in the window. Only where
   * capabilities.delta; a connector without it throws SourcePermanentError. Deletions are not listed: only a full
   * read (and its confirmation by readByIds) finds what is gone.
   */
  readChangedPage<E extends Entity>(entity: E, window: ChangeWindow, page: number, perPage: number): Promise<SourcePage<E>>;
  /**
   * Look records up by x_id, in as few requests as the source allows (id lists). Used to confirm that records a
   * run did not page over are really gone before they are soft-deleted.
   */
  readByIds<E extends Entity>(entity: E, xIds: string[]): Promise<RecordsById<E>>;
  /** Read one record by its x_id (the read-back after a write); null when the source has no such record. */
  readOne<E extends Entity>(entity: E, xId: string): Promise<InputOf[E] | null>;
  /**
   * Create a record in the source, in exactly one request (a retry is the caller's decision). A rejection (bad
   * reference, missing field) is a SourcePermanentError; a failure worth retrying is a SourceTransientError, whose
   * `maybeApplied` says whether the record may exist anyway (then ask findCreated before creating again).
   */
  create<E extends WritableEntity>(entity: E, input: CreateInputOf[E], opts?: CreateOptions): Promise<WriteResult>;
  /** Change a record in the source; only the fields given change. One request, classified like create's. */
  update<E extends WritableEntity>(entity: E, xId: string, patch: UpdateInputOf[E]): Promise<WriteResult>;
  /**
   * After a create whose outcome is unknown (a timeout, a lost connection), look the record up in the source by what
   * identifies it; a match means the create was applied. Null when the source holds no such record.
   */
  findCreated<E extends WritableEntity>(entity: E, input: CreateInputOf[E]): Promise<WriteResult | null>;
  /**
   * What the source accepts in the coded fields of writes at one property (its x_id): its floor plans, unit spaces,
   * lease terms and code lists, each value as the write sends it with the name the source gives it. Several
   * requests; a failure of any is thrown like a read's (transient or permanent), never a partial answer.
   */
  readWriteOptions(propertyXId: string): Promise<SourceWriteOptions>;
}

/** One value a coded write field accepts: `value` as the write sends it, `label` what the source calls it. */
export interface SourceOption {
  value: string;
  label: string;
}

/** A unit space a lease may name, with the floor plan the lease must name with it (null: the unit has none). */
export interface SourceUnitSpace extends SourceOption {
  floorplan_id: string | null;
}

/** The lists of values the coded write fields accept at one property, in the source's order. */
export interface SourceWriteOptions {
  floorplans: SourceOption[];
  unit_spaces: SourceUnitSpace[];
  lease_terms: SourceOption[];
  customer_relationship_types: SourceOption[];
  phone_number_types: SourceOption[];
  address_types: SourceOption[];
}

/** The entities a source takes writes for (every one but Property). */
export type { WritableEntity };

export interface WriteResult {
  /** Native id of the record written. */
  x_id: string;
  /** Records the source created or changed alongside it (the applicant of a new lease), to read back too. */
  related: { entity: Entity; x_id: string }[];
}

/** Lease creation: the fields of POST /v1/leases (source-native names; references are x_ids). */
export interface LeaseCreateInput {
  property_x_id: string;
  lease_start_date: string;
  lease_end_date: string;
  move_in_date: string;
  lease_term_id: string;
  floorplan_id: string;
  /** x_id of the unit. */
  unit_space_id: string;
  first_name: string;
  last_name: string;
  customer_relationship_type_id: string;
  phone_number: string;
  phone_number_type_id: string;
  address_type_id: string;
  street_line_1: string;
  city: string;
  state: string;
  state_code: string;
  postal_code: string;
}
interface LeaseUpdateInput {
  move_in_date?: string;
  occupants?: number;
  rent_amount?: Money;
}
interface UnitCreateInput {
  property_x_id: string;
  unit_number: string;
  /** The source id of one of the property's floor plans. */
  floorplan_id?: string;
  bedrooms?: number | null;
  bathrooms?: number | null;
  square_feet?: number | null;
  max_occupants?: number | null;
  note?: string | null;
  market_rent?: Money | null;
}
type UnitUpdateInput = Partial<Omit<UnitCreateInput, 'property_x_id'>>;
interface ResidentCreateInput {
  property_x_id: string;
  first_name: string;
  last_name: string;
  middle_name?: string | null;
  email?: string | null;
  phones?: Phone[] | null;
  date_of_birth?: string | null;
  address?: Address | null;
}
type ResidentUpdateInput = Partial<Omit<ResidentCreateInput, 'property_x_id'>>;

export interface CreateInputOf {
  unit: UnitCreateInput;
  resident: ResidentCreateInput;
  lease: LeaseCreateInput;
}
export interface UpdateInputOf {
  unit: UnitUpdateInput;
  resident: ResidentUpdateInput;
  lease: LeaseUpdateInput;
}

/** The dialects a connector speaks. */
export const SOURCE_DIALECTS = ['entrata', 'buildium'] as const;
export type SourceDialect = (typeof SOURCE_DIALECTS)[number];

/** An Entrata-style source: one API key. Settings stored before dialects existed have no `dialect`: they are this. */
export interface EntrataSettings {
  dialect?: 'entrata';
  base_url: string;
  api_key: string;
}
/** A Buildium-style source: a client id and secret pair, sent in headers. */
export interface BuildiumSettings {
  dialect: 'buildium';
  base_url: string;
  client_id: string;
  client_secret: string;
}
/** What a connector needs to reach a source, its secrets opened. */
export type SourceSettings = EntrataSettings | BuildiumSettings;

/** The dialect of stored settings (those without one are Entrata-style). */
export function dialectOf(settings: { dialect?: SourceDialect }): SourceDialect {
  return settings.dialect ?? 'entrata';
}
