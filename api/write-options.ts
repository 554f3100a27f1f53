/**
 * Write options: what a caller may put in each write body, and which values the source accepts in its coded fields
 * (floor plans, unit spaces, lease terms, code lists) at one property. Served by GET /v1/write_options/{type}, and
 * checked on every write before it is accepted, so a code the source would refuse is a 422 at once instead of an
 * Operation that fails minutes later.
 *
 * - The field list is derived from the very zod schema the write route validates with (each write route registers
 *   its body here), so it cannot drift from what the route accepts.
 * - The options are read from the source through the connector, by the API process itself: a short time-out
 *   (WRITE_OPTIONS_TIMEOUT_MS, one attempt per request), then kept in this process (WRITE_OPTIONS_CACHE_MS) in an
 *   LRU bounded by the number of values it holds. Concurrent reads of one property share one request.
 * - The check only ever refuses on the source's word: options that cannot be read (source down, slow, or without
 *   these methods) let the write through for the source to judge, as before; a value missing from cached options is
 *   looked up again before it is refused, so a refusal always rests on options read after the request arrived (a
 *   unit created a moment ago is not in options read a minute ago); and a
 *   request whose Idempotency-Key is already held is never checked, so it replays its Operation (or conflicts) as
 *   the key promises, whatever the options say now.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { heldIdempotencyKey } from '../db/operations';
import { getIntegration } from '../db/tenants';
import type { OperationType } from '../domain/operations';
import { openSourceConfig } from '../domain/secrets';
import {
  createConnector,
  SourcePermanentError,
  SourceTransientError,
  type ConnectorOptions,
  type SourceConnector,
  type SourceOption,
  type SourceSettings,
  type SourceUnitSpace,
  type SourceWriteOptions,
} from '../source';
import type { ApiDeps } from './deps';
import type { AppEnv } from './middleware/env';
import { ApiError, type FieldError } from './problem';

/** A list of values the source accepts, by the name the connector gives it. */
export type OptionList = keyof SourceWriteOptions;

/** What the source calls the values of each list, in messages. */
const LIST_NOUNS: Record<OptionList, string> = {
  floorplans: 'floor plan',
  unit_spaces: 'unit space',
  lease_terms: 'lease term',
  customer_relationship_types: 'customer relationship type',
  phone_number_types: 'phone number type',
  address_types: 'address type',
};

const FIELD_TYPES = ['string', 'date', 'integer', 'number', 'boolean', 'object', 'array'] as const;
type FieldType = (typeof FIELD_TYPES)[number];

/** One field of a write body, as derived from its schema. */
interface FieldSpec {
  name: string;
  required: boolean;
  type: FieldType;
  nullable: boolean;
  /** The list of values it accepts, for a coded field. */
  list: OptionList | null;
}

interface WriteOptionJson {
  value: string;
  label: string;
  /** Unit spaces only: the floor plan a lease on this unit space names. */
  floorplan_id?: string | null;
}

export interface WriteFieldJson {
  name: string;
  required: boolean;
  type: FieldType;
  nullable: boolean;
  options: WriteOptionJson[] | null;
}

export interface WriteOptionsJson {
  object: 'write_options';
  operation_type: OperationType;
  property_id: string;
  options_read_at: string | null;
  fields: WriteFieldJson[];
}

type JsonSchema = { type?: string | string[]; format?: string; anyOf?: JsonSchema[] };

/** The JSON type of a body field (a date apart: the API writes dates as YYYY-MM-DD strings) and whether it takes null. */
function typeOf(field: z.ZodType): { type: FieldType; nullable: boolean } {
  const schema = z.toJSONSchema(field, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const variants = schema.anyOf ?? [schema];
  const nullable = variants.some((v) => v.type === 'null');
  const main = variants.find((v) => v.type !== 'null') ?? {};
  const t = Array.isArray(main.type) ? main.type.find((x) => x !== 'null') : main.type;
  if (t === 'string' && main.format === 'date') return { type: 'date', nullable };
  return { type: (FIELD_TYPES as readonly string[]).includes(t ?? '') ? (t as FieldType) : 'string', nullable };
}

/** The fields of an object schema (through the pipes and refinements a body may be wrapped in). */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> {
  const def = (schema as unknown as { def?: { shape?: Record<string, z.ZodType>; in?: z.ZodType } }).def;
  return def?.shape ?? (def?.in ? shapeOf(def.in) : {});
}

function fieldsOf(body: z.ZodType, coded: Partial<Record<string, OptionList>>): FieldSpec[] {
  return Object.entries(shapeOf(body)).map(([name, field]) => ({
    name,
    required: !field.safeParse(undefined).success,
    ...typeOf(field),
    list: coded[name] ?? null,
  }));
}

/** Ids as the source reads them: a numeric id travels as a number, so `02` is `2`. */
const canonical = (v: string): string => (/^\d{1,15}$/.test(v.trim()) ? String(Number(v.trim())) : v.trim());

/** Why options could not be read: what a caller is told (never the underlying error text, which goes to the log). */
type Failure = { transient: boolean; reason: 'timeout' | 'unavailable' | 'refused' | 'error' };
type Outcome = { ok: true; options: SourceWriteOptions; at: number } | ({ ok: false; at: number } & Failure);

const FAILURE_TEXT: Record<Failure['reason'], string> = {
  timeout: 'did not answer in time',
  unavailable: 'is unavailable',
  refused: 'refused to list them',
  error: 'could not be asked',
};

/** A failed read is remembered this long at most, so that a source that is down costs one time-out per property per few seconds. */
const FAILURE_TTL_MS = 5_000;
/** Values held in the cache in all (a value is a few dozen bytes): bounds the memory whatever the properties' sizes. */
const MAX_CACHED_VALUES = 100_000;

interface Entry {
  outcome: Outcome;
  weight: number;
}

/** An LRU of outcomes by integration and property, bounded by the values it holds. */
class OptionsCache {
  private readonly entries = new Map<string, Entry>();
  private weight = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxWeight: number,
  ) {}

  get(key: string, now: number): Outcome | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    const ttl = e.outcome.ok ? this.ttlMs : Math.min(FAILURE_TTL_MS, this.ttlMs);
    this.entries.delete(key);
    if (now - e.outcome.at >= ttl) {
      this.weight -= e.weight;
      return undefined;
    }
    this.entries.set(key, e);
    return e.outcome;
  }

  set(key: string, outcome: Outcome): void {
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.weight -= old.weight;
    }
    if (this.ttlMs === 0) return;
    const weight = 1 + (outcome.ok ? Object.values(outcome.options).reduce((n, list) => n + list.length, 0) : 0);
    if (weight > this.maxWeight) return;
    this.entries.set(key, { outcome, weight });
    this.weight += weight;
    for (const [k, e] of this.entries) {
      if (this.weight <= this.maxWeight) break;
      this.entries.delete(k);
      this.weight -= e.weight;
    }
  }
}

export interface WriteOptionsOptions {
  /** The connector of a source (tests swap it). */
  connectorOf?: (settings: SourceSettings, opts: ConnectorOptions) => SourceConnector;
  now?: () => number;
}

/** The property a write is checked against, resolved only when the body sends a coded field. */
export type OptionsAt = () => Promise<string | null>;

export type WriteOptions = ReturnType<typeof createWriteOptions>;

export function createWriteOptions(deps: ApiDeps, opts: WriteOptionsOptions = {}) {
  const { db, config, logger } = deps;
  const now = opts.now ?? Date.now;
  const connectorOf = opts.connectorOf ?? createConnector;
  const timeoutMs = config.WRITE_OPTIONS_TIMEOUT_MS;
  const cache = new OptionsCache(config.WRITE_OPTIONS_CACHE_MS, MAX_CACHED_VALUES);
  const inFlight = new Map<string, { at: number; outcome: Promise<Outcome> }>();
  const catalog = new Map<OperationType, FieldSpec[]>();

  /** One read of the source, within the time-out; never throws. */
  async function fetchOptions(integrationId: string, propertyXId: string): Promise<Outcome> {
    const started = now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const integration = await getIntegration(db, integrationId);
      if (!integration || integration.deletedAt) return { ok: false, at: started, transient: false, reason: 'error' };
      // One attempt per request: the API answers its caller, it does not sit out a source's bad minute.
      const connector = connectorOf(openSourceConfig(deps.secrets, integration), { timeoutMs, maxAttempts: 1, maxRetryAfterMs: 0 });
      const read = connector.readWriteOptions(propertyXId);
      read.catch(() => {});
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new SourceTransientError(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      const options = await Promise.race([read, deadline]);
      return { ok: true, options, at: started };
    } catch (err) {
      const failure: Failure =
        err instanceof SourceTransientError
          ? { transient: true, reason: /no (reply|answer) within/.test(err.message) ? 'timeout' : 'unavailable' }
          : err instanceof SourcePermanentError
            ? { transient: false, reason: 'refused' }
            : { transient: false, reason: 'error' };
      logger.warn({ err, integration_id: integrationId, property_x_id: propertyXId, reason: failure.reason }, 'could not read write options from the source');
      return { ok: false, at: started, ...failure };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The options of a property: cached ones no older than `maxAgeMs` (default: the cache's own time to live), else a
   * read of the source, shared with a read of the same property already under way that started recently enough.
   */
  async function optionsOf(integrationId: string, propertyXId: string, maxAgeMs = Infinity): Promise<Outcome> {
    const key = `${integrationId}\u0000${propertyXId}`;
    const cached = cache.get(key, now());
    if (cached && now() - cached.at <= maxAgeMs) return cached;
    const pending = inFlight.get(key);
    if (pending && now() - pending.at <= maxAgeMs) return pending.outcome;
    const read = { at: now(), outcome: fetchOptions(integrationId, propertyXId) };
    inFlight.set(key, read);
    try {
      const outcome = await read.outcome;
      // A read that started before another one finished must not replace the newer answer.
      const current = cache.get(key, now());
      if (!current || current.at <= outcome.at) cache.set(key, outcome);
      return outcome;
    } finally {
      if (inFlight.get(key) === read) inFlight.delete(key);
    }
  }

  /** The values of a list the body names that the options do not hold, each as a 422 entry. */
  function refusals(fields: FieldSpec[], body: Record<string, unknown>, options: SourceWriteOptions, propertyXId: string): FieldError[] {
    const errors: FieldError[] = [];
    const found = new Map<OptionList, SourceOption>();
    for (const f of fields) {
      const sent = body[f.name];
      if (!f.list || typeof sent !== 'string') continue;
      const list = options[f.list];
      const hit = list.find((o) => canonical(o.value) === canonical(sent));
      if (hit) {
        found.set(f.list, hit);
        continue;
      }
      const shown = list.slice(0, 12).map((o) => (o.label === o.value ? o.value : `${o.value} (${o.label})`));
      const rest = list.length > shown.length ? `, … (${list.length} in all)` : '';
      errors.push({
        pointer: f.name,
        detail:
          list.length === 0
            ? `${sent} is not accepted: the source has no ${LIST_NOUNS[f.list]} at property ${propertyXId}`
            : `${sent} is not a ${LIST_NOUNS[f.list]} the source accepts at property ${propertyXId}; it accepts ${shown.join(', ')}${rest}`,
      });
    }
    // A lease names its unit space and that unit's floor plan: another of the property's floor plans is refused too.
    const space = found.get('unit_spaces') as SourceUnitSpace | undefined;
    const plan = found.get('floorplans');
    const planField = fields.find((f) => f.list === 'floorplans');
    if (space && plan && planField && space.floorplan_id !== null && canonical(space.floorplan_id) !== canonical(plan.value)) {
      errors.push({ pointer: planField.name, detail: `${plan.value} is not the floor plan of unit space ${space.value}, which is ${space.floorplan_id}` });
    }
    return errors;
  }

  return {
    /** A write route's body and its coded fields (registerWrite calls this with the schema it validates with). */
    register(type: OperationType, body: z.ZodType, coded: Partial<Record<string, OptionList>>): void {
      catalog.set(type, fieldsOf(body, coded));
    },

    /** The fields of a type as the answer lists them, a coded field's options left empty (the document's example). */
    fields(type: OperationType): WriteFieldJson[] {
      return (catalog.get(type) ?? []).map((f) => ({ name: f.name, required: f.required, type: f.type, nullable: f.nullable, options: f.list ? [] : null }));
    },

    /**
     * The write options of a type at a property (its integration and x_id, and its CDM id to echo). Coded fields need
     * the source: when it cannot be read, 503.
     */
    async describe(type: OperationType, property: { id: string; xId: string; integrationId: string }): Promise<WriteOptionsJson> {
      const fields = catalog.get(type);
      if (!fields) throw new ApiError('not_found', `No write operation type ${type}.`);
      let options: SourceWriteOptions | undefined;
      let readAt: number | null = null;
      if (fields.some((f) => f.list)) {
        const outcome = await optionsOf(property.integrationId, property.xId);
        if (!outcome.ok) {
          throw new ApiError(
            'service_unavailable',
            `The source ${FAILURE_TEXT[outcome.reason]}: the values it accepts at property ${property.id} could not be read${outcome.transient ? '. Retry shortly' : ''}. Writes are still accepted, and judged by the source.`,
            outcome.transient ? { headers: { 'Retry-After': String(Math.ceil(FAILURE_TTL_MS / 1000)) } } : {},
          );
        }
        options = outcome.options;
        readAt = outcome.at;
      }
      return {
        object: 'write_options',
        operation_type: type,
        property_id: property.id,
        options_read_at: readAt === null ? null : new Date(readAt).toISOString(),
        fields: fields.map((f) => ({
          name: f.name,
          required: f.required,
          type: f.type,
          nullable: f.nullable,
          options:
            f.list && options
              ? options[f.list].map((o) =>
                  f.list === 'unit_spaces'
                    ? { value: o.value, label: o.label, floorplan_id: (o as SourceUnitSpace).floorplan_id }
                    : { value: o.value, label: o.label },
                )
              : null,
        })),
      };
    },

    /**
     * Check a write's coded fields against the options of the property `at` names, before the write is accepted:
     * a value the source does not accept is a 422 naming each such field. Returns (lets the write through) when
     * the body sends no coded field, when its Idempotency-Key is already held, and when the options cannot be read.
     */
    async check(c: Context<AppEnv>, type: OperationType, integrationId: string, at: OptionsAt | undefined, body: Record<string, unknown>): Promise<void> {
      const fields = catalog.get(type) ?? [];
      if (!at || !fields.some((f) => f.list && typeof body[f.name] === 'string')) return;
      const p = c.get('principal');
      const key = c.req.header('idempotency-key');
      if (key !== undefined && (await heldIdempotencyKey(db, { organizationId: p.organizationId, mode: p.mode, key })) !== undefined) return;
      const started = now();
      const propertyXId = await at();
      if (propertyXId === null) return;
      let outcome = await optionsOf(integrationId, propertyXId);
      if (!outcome.ok) return;
      let errors = refusals(fields, body, outcome.options, propertyXId);
      if (errors.length > 0 && outcome.at < started) {
        // Not in options read before this request: ask the source again (a unit made a moment ago is a unit space
        // already) and refuse only on an answer read for it.
        outcome = await optionsOf(integrationId, propertyXId, now() - started);
        if (!outcome.ok) return;
        errors = refusals(fields, body, outcome.options, propertyXId);
      }
      if (errors.length === 0) return;
      throw new ApiError(
        'validation_error',
        errors.length === 1
          ? `Invalid field \`${errors[0]!.pointer}\`: ${errors[0]!.detail}. GET /v1/write_options/${type} lists the values the source accepts.`
          : `${errors.length} values the source does not accept: ${errors.map((e) => `\`${e.pointer}\``).join(', ')}. GET /v1/write_options/${type} lists the values it accepts.`,
        { errors },
      );
    },
  };
}
