/**
 * The list filters of every entity: the query parameters of its list endpoint, as zod schemas. The API validates
 * requests and generates its OpenAPI document with them, and automations validate (and later apply) their export
 * filters with the very same ones, so an export is exactly what the list endpoint would serve.
 *
 * Parsers raise plain issues for values that cannot be parsed (400 in a query) and `RULE` issues for values that
 * parse but break a rule (422); see api/middleware/validation.ts.
 *
 * Uses @hono/zod-openapi (domain/README.md), zod with OpenAPI metadata, so the filters document themselves; never
 * imported by workflows.
 */
import { z } from '@hono/zod-openapi';
import { PLURAL } from './automations';
import type { Entity } from './cdm';
import { isUuid } from './ids';
import {
  DATE_BOUNDS,
  DATE_BOUNDS_DETAIL,
  DATE_RANGE,
  dateInBounds,
  DATETIME_BOUNDS,
  DATETIME_BOUNDS_DETAIL,
  DATETIME_RANGE,
  datetimeInBounds,
  MAX_INSTANT,
  NUL_DETAIL,
  NUL_FREE,
  NUL_FREE_PATTERN,
  plainText,
  SPACE_CLASS,
} from './scalars';

/** Marks a custom zod issue as a rule violation (422) rather than a parse failure (400). */
export const RULE = { rule: true } as const;

// ---------------------------------------------------------------------------------------------------------------
// Query parameters
// ---------------------------------------------------------------------------------------------------------------

const INT = /^[+-]?\d+$/;

/**
 * An integer query parameter: digits with an optional sign, nothing else (not `1e2`, `0x10`, ` 5` or an empty value,
 * which a number coercion would take), within [min, max] (else 422), `default` when absent.
 */
export function intParam(opts: { min: number; max: number; default: number; description: string }) {
  return (
    z
      .string()
      .regex(INT, 'must be an integer')
      .transform(Number)
      // The digits are an integer already: `.int()` would add a safe-integer bound that hides the documented one.
      .pipe(z.number().min(opts.min).max(opts.max))
      .optional()
      .default(opts.default as never)
      .openapi({
        type: 'integer',
        minimum: opts.min,
        maximum: opts.max,
        default: opts.default,
        description: opts.description,
      } as never) as unknown as z.ZodType<number, string | undefined>
  );
}

export const boolParam = (description: string) =>
  z
    .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1')
    .optional()
    .openapi({ type: 'boolean', description } as never) as unknown as z.ZodType<boolean | undefined, string | undefined>;

const DATETIME = z.iso.datetime({ offset: true });
/** The digits of a datetime's fraction beyond its milliseconds. */
const SUB_MILLISECOND = /T[^.]*\.\d{3}(\d+)/;
const DATE = z.iso.date();
/**
 * An instant with `Z` or an offset; a date alone is that day's midnight UTC (`updated_after=2025-01-31`). A `+` in
 * an offset arrives as a space when the caller did not URL-encode it; take it back. Within the bounds of
 * domain/scalars.ts (years 0001 to 9999), else a 422 naming the parameter.
 */
export const datetimeParam = (description: string, bound: 'lower' | 'upper') =>
  z
    // Documented as either form (anyOf); both branches take any string, which the transform judges.
    .union([z.string().openapi({ format: 'date-time', pattern: DATETIME_BOUNDS.source }), z.string().openapi({ format: 'date', pattern: DATE_BOUNDS.source })])
    .transform((raw, ctx) => {
      const s = raw.replace(/ /g, '+');
      let instant: Date | undefined;
      if (DATETIME.safeParse(s).success) instant = new Date(s);
      else if (DATE.safeParse(s).success) instant = new Date(`${s}T00:00:00.000Z`);
      if (!instant) {
        ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 datetime such as 2025-01-31T17:04:05.123Z (or a date, meaning midnight UTC)' });
        return z.NEVER;
      }
      if (!datetimeInBounds(s, instant)) {
        ctx.addIssue({ code: 'custom', message: DATETIME_BOUNDS_DETAIL, params: RULE });
        return z.NEVER;
      }
      // Times are kept to the millisecond and a Date drops what is finer: `>= 45.8079` is `>= 45.808` there (`<=` is
      // `<= 45.807`, as dropped), so a lower bound with more than its milliseconds goes up to the next one.
      if (bound === 'lower' && /[1-9]/.test(SUB_MILLISECOND.exec(s)?.[1] ?? '')) instant = new Date(Math.min(instant.getTime() + 1, MAX_INSTANT.getTime()));
      return instant;
    })
    .optional()
    .openapi({
      description: `${description} A date alone (\`2025-01-31\`) means midnight UTC. ${DATETIME_RANGE}`,
    } as never) as unknown as z.ZodType<Date | undefined, string | undefined>;

/** A date `YYYY-MM-DD` from 0001-01-01 to 9999-12-31 (domain/scalars.ts), else a 422 naming the parameter. */
const dateParam = (description: string) =>
  z.iso
    .date({ error: 'must be a date written YYYY-MM-DD' })
    .refine(dateInBounds, { message: DATE_BOUNDS_DETAIL, params: RULE, when: (payload) => payload.issues.length === 0 })
    .optional()
    .openapi({ type: 'string', format: 'date', pattern: DATE_BOUNDS.source, description: `${description} ${DATE_RANGE}` } as never) as unknown as z.ZodType<
    string | undefined,
    string | undefined
  >;

/** A free-text parameter: any text without NUL (domain/scalars.ts). */
const textParam = (description: string) => plainText().optional().openapi({ description }) as unknown as z.ZodType<string | undefined, string | undefined>;

export function splitList(s: string): string[] {
  return s
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
}

/** Exact match; a comma-separated list matches ANY of its values. */
const listParam = (description: string) =>
  z
    .string()
    .regex(NUL_FREE, NUL_DETAIL)
    .transform(splitList)
    .optional()
    .openapi({ type: 'string', pattern: NUL_FREE_PATTERN, description: `${description} Comma-separated list matches any.` } as never) as unknown as z.ZodType<
    string[] | undefined,
    string | undefined
  >;

const UUID_PATTERN = '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}';
/** What the parser accepts: comma-separated UUIDs, each item optionally padded with spaces, empty items ignored. */
const S = `[${SPACE_CLASS}]*`;
const UUID_LIST_PATTERN = `^(${S}(${UUID_PATTERN})?${S})(,${S}(${UUID_PATTERN})?${S})*$`;
export const uuidListParam = (description: string) =>
  z
    .string()
    .transform((s, ctx) => {
      const values = splitList(s);
      const bad = values.filter((v) => !isUuid(v));
      if (bad.length > 0) ctx.addIssue({ code: 'custom', message: `not a UUID: ${bad.join(', ')}` });
      return values.map((v) => v.toLowerCase());
    })
    .optional()
    .openapi({
      type: 'string',
      pattern: UUID_LIST_PATTERN,
      description: `${description} Comma-separated list of UUIDs matches any.`,
    } as never) as unknown as z.ZodType<string[] | undefined, string | undefined>;

export interface OrderBy<F extends string = string> {
  field: F;
  dir: 'asc' | 'desc';
}

function orderByParam<F extends string>(fields: readonly F[]) {
  const allowed = fields.flatMap((f) => [`${f}:asc`, `${f}:desc`]);
  return z
    .string()
    .transform((s, ctx) => {
      const m = /^([a-z_]+):(asc|desc)$/.exec(s);
      if (!m || !fields.includes(m[1] as F)) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${allowed.join(', ')}`, params: RULE });
        return z.NEVER;
      }
      return { field: m[1] as F, dir: m[2] as 'asc' | 'desc' };
    })
    .optional()
    .openapi({
      type: 'string',
      enum: allowed,
      description: 'Sort order `field:asc` or `field:desc`; default `created_at:asc`. Ties are broken by `id` in the same direction.',
    } as never) as unknown as z.ZodType<OrderBy<F> | undefined, string | undefined>;
}

const common = {
  limit: intParam({ min: 1, max: 100, default: 25, description: 'Page size, 1 to 100.' }),
  offset: intParam({ min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: 'Zero-based record offset.' }),
  include_deleted: boolParam('Include soft-deleted records (hidden by default).'),
  updated_after: datetimeParam('Only records with `updated_at` >= this value.', 'lower'),
  created_after: datetimeParam('Only records with `created_at` >= this value.', 'lower'),
  created_before: datetimeParam('Only records with `created_at` <= this value.', 'upper'),
  x_id: listParam("The source's native identifier, exact."),
  integration_id: uuidListParam('Integration (UUID), exact.'),
};

export const ORDER_FIELDS = {
  property: ['created_at', 'updated_at', 'name'],
  unit: ['created_at', 'updated_at', 'unit_number'],
  resident: ['created_at', 'updated_at', 'last_name'],
  lease: ['created_at', 'updated_at', 'start_date', 'end_date'],
} as const;

export const PropertyListQuery = z.object({
  ...common,
  'order-by': orderByParam(ORDER_FIELDS.property),
  status: listParam('Property status, exact.'),
  type: listParam('Property type, exact.'),
  name: textParam('Case-insensitive substring of the name.'),
});
export const UnitListQuery = z.object({
  ...common,
  'order-by': orderByParam(ORDER_FIELDS.unit),
  property_id: listParam('Property id (`prp_…`), exact.'),
  status: listParam('Unit status (`vacant`, `occupied`, `notice`), exact.'),
});
export const ResidentListQuery = z.object({
  ...common,
  'order-by': orderByParam(ORDER_FIELDS.resident),
  property_id: listParam('Property id (`prp_…`), exact.'),
  email: textParam('Email address, case-insensitive exact match.'),
  status: listParam('Resident status (`applicant`, `current`, `notice`, `past`), exact.'),
});
export const LeaseListQuery = z.object({
  ...common,
  'order-by': orderByParam(ORDER_FIELDS.lease),
  property_id: listParam('Property id (`prp_…`), exact.'),
  unit_id: listParam('Unit id (`unt_…`), exact.'),
  resident_id: listParam('Id of a resident on the lease (`res_…`), exact.'),
  status: listParam('Lease status, exact.'),
  type: listParam('Lease type, exact.'),
  start_date_gte: dateParam('`start_date` on or after this date.'),
  start_date_lte: dateParam('`start_date` on or before this date.'),
  end_date_gte: dateParam('`end_date` on or after this date.'),
  end_date_lte: dateParam('`end_date` on or before this date.'),
});

export const LIST_QUERIES = {
  property: PropertyListQuery,
  unit: UnitListQuery,
  resident: ResidentListQuery,
  lease: LeaseListQuery,
} as const satisfies Record<Entity, z.ZodObject>;

/** The query parameters of an entity's list endpoint, `GET /v1/<entity>`. */
export const listParameters = (entity: Entity): string[] => Object.keys(LIST_QUERIES[entity].shape);

/**
 * Why `name` is refused when it is not among the `known` query parameters of the entity's list endpoint (all of them
 * unless the caller narrows it), or undefined when it is known. An unknown parameter is refused rather than ignored:
 * a misspelt filter (`propertyid=`) would otherwise match everything. The list endpoints (a 400) and automation
 * filters (a 422 at `/filters/<name>`) both say it this way.
 */
export function unknownParameter(entity: Entity, name: string, known: readonly string[] = listParameters(entity)): string | undefined {
  if (known.includes(name)) return undefined;
  return `not a query parameter of GET /v1/${PLURAL[entity]}; one of ${known.join(', ')}`;
}
