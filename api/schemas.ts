/**
 * The zod schemas of the public API: query parameters (which both validate requests and generate the OpenAPI
 * document, so the two cannot drift), the records, the list envelope and the problem body.
 *
 * Query parsers raise plain issues for values that cannot be parsed (400) and `RULE` issues for values that parse
 * but break a rule (422); see api/middleware/validation.ts.
 */
import { z } from '@hono/zod-openapi';

export { PropertyListQuery, UnitListQuery, ResidentListQuery, LeaseListQuery } from '../domain/filters';
import { LEASE_STATUSES, RESIDENT_STATUSES, UNIT_STATUSES } from '../domain/cdm';
import { boolParam } from '../domain/filters';
import { dateField, NUL_DETAIL, plainText, SPACE_CLASS, text } from '../domain/scalars';

export { text };

export const RetrieveQuery = z.object({ include_deleted: boolParam('Return the record even when it is soft-deleted.') });
export const IdParam = (example: string) => z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, example }) });

// ---------------------------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------------------------

const ts = z.iso.datetime().openapi({ example: '2025-01-31T17:04:05.123Z' });
const tsOrNull = ts.nullable();
const dateOrNull = z.iso.date().nullable();
const uuid = z.string().openapi({ format: 'uuid' });

/**
 * A registered component or null, as `anyOf: [$ref, null]`: `.nullable()` on a registered schema would make the
 * component itself nullable (`Money`'s `type: ["object", "null"]`), and with it every use that is not.
 */
const orNull = <T extends z.ZodType>(schema: T) => z.union([schema, z.null()]);

const Money = z
  .object({ amount: z.number().int().openapi({ description: 'Integer minor units.' }), currency: z.string().openapi({ example: 'USD' }) })
  .openapi('Money');
const Address = z
  .object({
    line_1: z.string().nullable(),
    line_2: z.string().nullable(),
    city: z.string().nullable(),
    state: z.string().nullable(),
    postal_code: z.string().nullable(),
    country: z.string().nullable(),
  })
  .openapi('Address');
const Phone = z.object({ type: z.string(), number: z.string(), primary: z.boolean() }).openapi('Phone');
const CustomData = z.record(z.string(), z.unknown()).openapi({ description: 'Source values the CDM has no field for.' });

const identity = (prefix: string) => ({
  id: z.string().openapi({ example: `${prefix}01JH0000000000000000000000` }),
  x_id: z.string().openapi({ description: "The source system's native identifier." }),
  organization_id: uuid,
  integration_id: uuid,
});
const times = {
  custom_data: CustomData,
  created_at: ts,
  updated_at: ts,
  deleted_at: tsOrNull,
  ps_synced_at: tsOrNull,
};

export const Property = z
  .object({
    ...identity('prp_'),
    name: z.string().nullable(),
    type: z.string().nullable(),
    status: z.string().nullable(),
    address: orNull(Address),
    description: z.string().nullable(),
    year_built: z.number().int().nullable(),
    total_units: z.number().int().nullable(),
    total_buildings: z.number().int().nullable(),
    total_floors: z.number().int().nullable(),
    website_url: z.string().nullable(),
    email: z.string().nullable(),
    phones: z.array(Phone).nullable(),
    latitude: z.number().nullable(),
    longitude: z.number().nullable(),
    timezone_id: z.string().nullable(),
    management_company_name: z.string().nullable(),
    tax_id: z.string().nullable(),
    pet_policy: z.string().nullable(),
    smoking_policy: z.string().nullable(),
    media: z.array(z.record(z.string(), z.unknown())).nullable(),
    ...times,
  })
  .openapi('Property');

export const PropertySummary = z
  .object({
    ...identity('prp_'),
    name: z.string().nullable(),
    type: z.string().nullable(),
    status: z.string().nullable(),
    custom_data: CustomData,
    created_at: ts,
    updated_at: ts,
  })
  .openapi('PropertySummary', { description: 'The reduced property record of the list endpoint.' });

export const Unit = z
  .object({
    ...identity('unt_'),
    property_id: z.string().nullable(),
    unit_number: z.string().nullable(),
    floorplan_id: z.string().nullable().openapi({
      description: "The source id of the unit's floor plan: the `floorplan_id` a lease create on this unit names (its `unit_space_id` is the unit's `x_id`).",
    }),
    floorplan_name: z.string().nullable(),
    bedrooms: z.number().int().nullable(),
    bathrooms: z.number().int().nullable(),
    square_feet: z.number().int().nullable(),
    max_occupants: z.number().int().nullable(),
    market_rent: orNull(Money),
    status: z.enum(UNIT_STATUSES).nullable().openapi({ description: '`vacant`, `occupied` or `notice`.' }),
    note: z.string().nullable(),
    address: orNull(Address),
    ...times,
  })
  .openapi('Unit');

export const Resident = z
  .object({
    ...identity('res_'),
    property_id: z.string().nullable(),
    first_name: z.string().nullable(),
    middle_name: z.string().nullable(),
    last_name: z.string().nullable(),
    email: z.string().nullable(),
    phones: z.array(Phone).nullable(),
    date_of_birth: dateOrNull,
    address: orNull(Address),
    status: z.enum(RESIDENT_STATUSES).nullable().openapi({ description: '`applicant`, `current`, `notice` or `past`.' }),
    ...times,
  })
  .openapi('Resident');

const LeaseResident = z.object({ resident_id: z.string(), x_id: z.string(), role: z.string().openapi({ example: 'primary' }) }).openapi('LeaseResident');

export const Lease = z
  .object({
    ...identity('lse_'),
    property_id: z.string().nullable(),
    unit_id: z.string().nullable(),
    resident_ids: z.array(z.string()),
    residents: z.array(LeaseResident),
    status: z.enum(LEASE_STATUSES).nullable().openapi({ description: '`pending`, `active`, `notice`, `ended`, `terminated`, `evicted` or `cancelled`.' }),
    type: z.string().nullable(),
    start_date: dateOrNull,
    end_date: dateOrNull,
    move_in_date: dateOrNull,
    move_out_date: dateOrNull,
    notice_date: dateOrNull,
    signed_date: dateOrNull,
    rent_amount: Money,
    security_deposit: orNull(Money),
    balance: orNull(Money),
    term_months: z.number().int().nullable(),
    renewal_status: z.string().nullable(),
    is_renewal: z.boolean().nullable(),
    previous_lease_id: z.string().nullable(),
    concessions: z.string().nullable(),
    notes: z.string().nullable(),
    ...times,
  })
  .openapi('Lease');

const ListMeta = z.object({ limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() }).openapi('ListMeta');

export const listOf = <T extends z.ZodTypeAny>(item: T, name: string) => z.object({ meta: ListMeta, results: z.array(item) }).openapi(name);

// ---------------------------------------------------------------------------------------------------------------
// Problems and health
// ---------------------------------------------------------------------------------------------------------------

export const Problem = z
  .object({
    type: z.string().openapi({ format: 'uri', description: 'URI of the error class; stable, safe to switch on.' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().openapi({ description: 'Request path that failed; empty when the request was refused before its path could be read (400, 431).' }),
    request_id: z.string().openapi({ description: 'Equal to the `x-request-id` response header.' }),
    errors: z
      .array(z.object({ pointer: z.string(), detail: z.string() }))
      .optional()
      .openapi({ description: 'On 422 only: each offending parameter or field.' }),
    required_scopes: z
      .array(z.enum(['read', 'write']))
      .optional()
      .openapi({ description: 'On 403 only: the scopes of which the API key needs one for this route.' }),
    operation_id: z
      .string()
      .optional()
      .openapi({ description: 'On 502 `enqueue_failed` only: the Operation the write was stored as. Poll it.', example: 'opr_01JH0000000000000000000000' }),
  })
  .openapi('Problem');

export const Health = z.object({ status: z.literal('ok') }).openapi('Health');

const Check = z
  .object({
    status: z.enum(['up', 'down']),
    reason: z
      .enum(['timeout', 'unreachable', 'error'])
      .optional()
      .openapi({ description: 'When down: no answer in time, no connection, or it answered with an error.' }),
  })
  .openapi('DependencyCheck');
export type DependencyCheck = { status: 'up' } | { status: 'down'; reason: 'timeout' | 'unreachable' | 'error' };
const Checks = z.object({ database: Check, temporal: Check });
export const Readiness = z.object({ status: z.literal('ok'), checks: Checks }).openapi('Readiness');
export const NotReady = Problem.extend({ checks: Checks }).openapi('NotReady');

// ---- Writes (docs/api.md Leases and Units; docs/decisions.md Writes) ----

// Text (not blank, no NUL), dates (0001-01-01 to 9999-12-31) and their patterns: domain/scalars.ts.
const id = (description: string) => text(64).openapi({ description });
const writeDate = dateField;
const count = (max: number) => z.number().int('must be an integer').min(0, 'must not be negative').max(max, `must be at most ${max}`);

const MoneyInput = z
  .strictObject({
    amount: z
      .number()
      .int('must be an integer number of minor units')
      .min(0, 'must not be negative')
      .max(100_000_000_000, 'must be at most 100000000000 minor units')
      .openapi({ description: 'Integer minor units.', example: 185000 }),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD')
      .openapi({ example: 'USD' }),
  })
  .openapi('MoneyInput');
// [0-9], not \d: the document's readers (Python, Rust) take any Unicode digit for \d.
const phoneNumber = () => z.string().regex(/^[+0-9][0-9 ().-]{5,39}$/, 'must be a phone number: digits, spaces, ( ) . - and a leading +');
const PhoneInput = z
  .strictObject({
    type: z.enum(['home', 'office', 'mobile', 'fax']),
    number: phoneNumber(),
    primary: z.boolean().optional(),
  })
  .openapi('PhoneInput');
const AddressInput = z
  .strictObject({
    line_1: text(),
    line_2: text().nullable().optional(),
    city: text(),
    state: text(),
    postal_code: text(20),
    country: text(2).nullable().optional(),
  })
  .openapi('AddressInput');
const integrationChoice = z
  .uuid('must be a UUID')
  .optional()
  .openapi({ description: 'Which of your integrations to write to, when the target is known to several (or to none yet).' });

/** At least one field of a PATCH body. */
const notEmpty = <T extends z.ZodObject>(schema: T) =>
  schema
    .refine((b) => Object.values(b).some((v) => v !== undefined), {
      message: `nothing to update: send at least one of ${Object.keys(schema.shape).join(', ')}`,
      when: (payload) => payload.issues.length === 0,
    })
    .openapi({ minProperties: 1 });

/** The lease create body's fields, each checked on its own (LeaseCreateBody adds the rule between the two dates). */
export const LeaseCreateFields = z.strictObject({
  property_x_id: id('The source id of the property (its `x_id`).'),
  lease_start_date: writeDate('First day of the lease.'),
  lease_end_date: writeDate('Last day of the lease.'),
  move_in_date: writeDate('Move-in day.'),
  lease_term_id: id('The source id of a lease term the property offers.'),
  floorplan_id: id("The source id of the unit's floor plan (the unit's `floorplan_id`)."),
  unit_space_id: id('The source id of the unit (its `x_id`).'),
  first_name: text(100),
  last_name: text(100),
  customer_relationship_type_id: id("The source id of the applicant's relationship (primary, responsible…)."),
  phone_number: phoneNumber(),
  phone_number_type_id: id('The source id of the phone type.'),
  address_type_id: id('The source id of the address type.'),
  street_line_1: text(),
  city: text(),
  state: text(),
  state_code: z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter state code (TX)'),
  postal_code: z.string().regex(/^[0-9]{5}(-[0-9]{4})?$/, 'must be a US ZIP code (78701 or 78701-1234)'),
  integration_id: integrationChoice,
});

export const LeaseCreateBody = LeaseCreateFields
  // Checked once every field is valid, so that a date that is not one is reported as such.
  .refine((b) => b.lease_end_date > b.lease_start_date, {
    message: 'must be after lease_start_date',
    path: ['lease_end_date'],
    when: (payload) => payload.issues.length === 0,
  })
  .openapi('LeaseCreate', {
    description:
      'Source-native names, as the contract lists them. Every field but `integration_id` is required. The coded fields (`lease_term_id`, `floorplan_id`, ' +
      '`unit_space_id`, `customer_relationship_type_id`, `phone_number_type_id`, `address_type_id`) take the values ' +
      '`GET /v1/write_options/lease.create?property_id=…` lists for the property.',
  });

export const LeaseUpdateBody = notEmpty(
  z.strictObject({
    move_in_date: writeDate('Move-in day.').optional(),
    occupants: z.number().int('must be an integer').min(1, 'must be at least 1').max(20, 'must be at most 20').optional(),
    rent_amount: MoneyInput.optional(),
  }),
).openapi('LeaseUpdate');

const unitFields = {
  unit_number: text(20),
  floorplan_id: id(
    "The source id of one of the property's floor plans (`GET /v1/write_options/unit.create` lists them); the source takes the unit's bedrooms, bathrooms and square feet from it unless the body sets them.",
  ),
  bedrooms: count(20),
  bathrooms: count(20),
  square_feet: z.number().int('must be an integer').min(1, 'must be at least 1').max(100_000, 'must be at most 100000'),
  max_occupants: z.number().int('must be an integer').min(1, 'must be at least 1').max(50, 'must be at most 50'),
  // Sent without surrounding white space, as both sources' records read it; empty (or blank) reads back null.
  note: plainText().trim().max(2000, 'must be at most 2000 characters').nullable(),
  market_rent: MoneyInput,
};
/** A character of an email address's parts: no space, `@` or NUL. */
const EMAIL_PART = `[^${SPACE_CLASS}@\\u0000]`;
const residentFields = {
  first_name: text(100),
  last_name: text(100),
  // Sent without surrounding white space, as both sources' records read it.
  middle_name: plainText().trim().max(100, 'must be at most 100 characters').nullable(),
  // What sources take (and the sandbox checks): something@domain.tld without spaces (nor NUL); documented as that
  // pattern rather than format: email, whose RFC 5322 forms (quoted local parts, IP literals) no PMS accepts.
  email: z
    .string()
    .max(254, 'must be at most 254 characters')
    .regex(new RegExp(`^${EMAIL_PART}+@${EMAIL_PART}+\\.${EMAIL_PART}+$`), {
      error: (i) => (typeof i.input === 'string' && i.input.includes('\u0000') ? NUL_DETAIL : 'must be an email address'),
    })
    .nullable(),
  phones: z.array(PhoneInput).max(10, 'at most 10 phones').nullable(),
  date_of_birth: dateField('Date of birth.').nullable(),
  address: orNull(AddressInput),
};
const propertyRef = plainText().openapi({ description: 'The CDM id of the property (`prp_…`).', example: 'prp_01JH0000000000000000000000' });

/** A create body at a property: `property_id`, the `required` fields, the rest of `fields` optional. */
function createAtProperty<F extends Record<string, z.ZodType>, R extends keyof F & string>(fields: F, required: readonly R[]) {
  const optional = z.object(fields).partial().shape;
  const must = Object.fromEntries(required.map((k) => [k, fields[k]])) as Pick<F, R>;
  return z.strictObject({ property_id: propertyRef, ...optional, ...must, integration_id: integrationChoice });
}

export const UnitCreateBody = createAtProperty(unitFields, ['unit_number']).openapi('UnitCreate', {
  description: '`property_id` and `unit_number` are required; the rest optional.',
});
export const UnitUpdateBody = notEmpty(z.strictObject(unitFields).partial()).openapi('UnitUpdate');
export const ResidentCreateBody = createAtProperty(residentFields, ['first_name', 'last_name']).openapi('ResidentCreate', {
  description: '`property_id`, `first_name` and `last_name` are required; the rest optional.',
});
export const ResidentUpdateBody = notEmpty(z.strictObject(residentFields).partial()).openapi('ResidentUpdate');

export const Operation = z
  .object({
    id: z.string().openapi({ example: 'opr_01JH0000000000000000000000' }),
    object: z.literal('operation'),
    type: z.enum(['lease.create', 'lease.update', 'unit.create', 'unit.update', 'resident.create', 'resident.update']),
    status: z.enum(['queued', 'running', 'succeeded', 'failed']).openapi({
      description:
        '`queued`: accepted, no attempt finished yet; `running`: an attempt failed transiently and another is scheduled; `succeeded` and `failed` are terminal.',
    }),
    source: z.object({ state: z.enum(['applied', 'rejected']).nullable(), applied_at: tsOrNull }),
    reconcile: z.object({
      state: z.enum(['pending', 'reconciled', 'failed']),
      attempts: z.number().int(),
      next_attempt_at: tsOrNull,
      last_error: z.string().nullable().openapi({ description: 'Why the last attempt failed; on `failed`, why the Operation failed.' }),
    }),
    resource: z.object({
      type: z.enum(['lease', 'unit', 'resident']),
      id: z.string().nullable(),
      x_id: z.string().nullable(),
    }),
    result: z.object({ id: z.string() }).nullable().openapi({ description: 'On success: the CDM id of the record created or updated.' }),
    idempotency_key: z.string().nullable(),
    created_at: ts,
  })
  .openapi('Operation');

// ---- Write options (GET /v1/write_options/{operation_type}) ----

const WriteOption = z
  .object({
    value: z.string().openapi({ description: 'What to send in the field.', example: '2' }),
    label: z.string().openapi({ description: 'What the source calls it.', example: '12 Months' }),
    floorplan_id: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: 'Unit spaces only: the floor plan a lease on this unit space names as `floorplan_id` (null: the unit has none).' }),
  })
  .openapi('WriteOption');

const WriteField = z
  .object({
    name: z.string().openapi({ example: 'lease_term_id' }),
    required: z.boolean().openapi({ description: 'Whether a body must send it (a PATCH body needs at least one field, none in particular).' }),
    type: z
      .enum(['string', 'date', 'integer', 'number', 'boolean', 'object', 'array'])
      .openapi({ description: 'Its JSON type; `date` is a `YYYY-MM-DD` string.' }),
    nullable: z.boolean().openapi({ description: 'Whether it takes `null` (which clears the value on a PATCH).' }),
    options: z.array(WriteOption).nullable().openapi({
      description:
        "For a coded field, the values the source accepts for this property, in the source's order; null for a field that takes any value of its type.",
    }),
  })
  .openapi('WriteField');

export const WriteOptions = z
  .object({
    object: z.literal('write_options'),
    operation_type: z.enum(['lease.create', 'lease.update', 'unit.create', 'unit.update', 'resident.create', 'resident.update']),
    property_id: z.string().openapi({ example: 'prp_01JH0000000000000000000000' }),
    options_read_at: tsOrNull.openapi({
      description: 'When the options were read from the source (they are reused for up to a minute); null when no field is coded.',
    }),
    fields: z.array(WriteField).openapi({ description: "Every field of the write body, in the body's order." }),
  })
  .openapi('WriteOptions');
