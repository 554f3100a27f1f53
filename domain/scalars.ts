/**
 * The scalar types every request shares, defined once: text, datetimes and dates. Each carries its rule both ways:
 * the zod check that refuses a value and the JSON Schema `pattern` (with words in the description) that tells the
 * OpenAPI documents' readers, so the documents are neither wider nor narrower than the service.
 *
 * - **Text** may not contain a NUL character (`\u0000`): Postgres text cannot hold one.
 * - **Datetimes and dates** are bounded to years 0001 to 9999, in UTC and as written. Postgres holds more (timestamptz
 *   4713 BC to 294276 AD, date 4713 BC to 5874897 AD) but has no year 0 (1 BC precedes AD 1), and JavaScript's ISO
 *   form writes a year outside 0001–9999 with six digits and a sign, which Postgres cannot read: either way a query
 *   would fail with `22008 date/time field value out of range`. A datetime on the first or the last day of the range
 *   (0001-01-01, 9999-12-31) must be written in UTC (`Z`, `+00:00` or `-00:00`), since an offset could carry it past
 *   either end; on every other day any offset (at most ±23:59) keeps it inside. That keeps the rule one pattern a
 *   document can state exactly.
 *
 * A value outside a bound parses but breaks a rule: 422 naming the parameter or field (the query parsers of
 * domain/filters.ts raise it as a `RULE` issue; see api/middleware/validation.ts).
 *
 * Uses @hono/zod-openapi (domain/README.md), so each scalar carries its OpenAPI `pattern`; never imported by workflows.
 */
import { z } from '@hono/zod-openapi';

// ---------------------------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------------------------

/** Why a text value with NUL is refused (the validation layer says the same of any string, at any depth). */
export const NUL_DETAIL = 'must not contain a NUL character (\\u0000)';
/**
 * White space as JavaScript reads `\s` and `trim()` drops it, spelt out: the documents' readers (Python's `re`, Rust's
 * `regex`) read `\s` differently (U+0085 is space to them, U+FEFF is not), so a pattern that says "space" names these.
 * The inside of a character class.
 */
export const SPACE_CLASS = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
/** Text without NUL, as a regex and as the document's `pattern`. */
export const NUL_FREE = /^[^\u0000]*$/;
export const NUL_FREE_PATTERN = NUL_FREE.source;
/** Text without NUL that is not blank (has a character other than white space). */
const NOT_BLANK = new RegExp(`^[^\\u0000]*[^\\u0000${SPACE_CLASS}][^\\u0000]*$`);

/** Any text without NUL: the type of free-text fields and query parameters. */
export const plainText = () => z.string().regex(NUL_FREE, NUL_DETAIL);

/**
 * Text that is not blank, without NUL, of at most `max` characters as sent (the document's `maxLength`); surrounding
 * spaces are then dropped.
 */
export const text = (max = 200) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .regex(NOT_BLANK, { error: (issue) => (typeof issue.input === 'string' && issue.input.includes('\u0000') ? NUL_DETAIL : 'must not be blank') })
    .trim();

// ---------------------------------------------------------------------------------------------------------------
// Datetimes and dates
// ---------------------------------------------------------------------------------------------------------------

const FIRST_DAY = '0001-01-01';
const LAST_DAY = '9999-12-31';
/** The earliest and the latest instant a datetime may name. */
export const MIN_INSTANT = new Date(`${FIRST_DAY}T00:00:00.000Z`);
export const MAX_INSTANT = new Date(`${LAST_DAY}T23:59:59.999Z`);

/** A date (or the date of a datetime) from 0001-01-01 on: not year 0000 (format `date` already caps it at 9999). */
export const DATE_BOUNDS = /^(?!0000-)/;
/** A datetime of years 0001–9999, written in UTC on 0001-01-01 and 9999-12-31 (a date alone is midnight UTC). */
export const DATETIME_BOUNDS = /^(?!0000-)(?!(?:0001-01-01|9999-12-31)T.*[+-](?!00:00)[0-9]{2}:[0-9]{2}$)/;

export const DATE_RANGE = `From ${FIRST_DAY} to ${LAST_DAY}; a date outside is a 422.`;
export const DATETIME_RANGE =
  `From ${FIRST_DAY}T00:00:00Z to ${LAST_DAY}T23:59:59.999Z (years 0001 to 9999, in UTC and as written); ` +
  `on ${FIRST_DAY} and ${LAST_DAY} write it in UTC (\`Z\`), since an offset could carry it past either end. A value outside is a 422.`;
export const DATE_BOUNDS_DETAIL = `must be a date from ${FIRST_DAY} to ${LAST_DAY}`;
export const DATETIME_BOUNDS_DETAIL = `must be from ${FIRST_DAY}T00:00:00Z to ${LAST_DAY}T23:59:59.999Z, and in UTC (Z) on ${FIRST_DAY} or ${LAST_DAY}`;

/** Whether a date written `YYYY-MM-DD` is within the bounds. */
export function dateInBounds(date: string): boolean {
  return DATE_BOUNDS.test(date);
}

/**
 * Whether a datetime as written (an ISO 8601 instant, or a date alone meaning midnight UTC) is within the bounds. The
 * pattern is the rule; the instant is checked too, so that nothing outside the range can ever reach a query.
 */
export function datetimeInBounds(written: string, instant: Date): boolean {
  const t = instant.getTime();
  return DATETIME_BOUNDS.test(written) && t >= MIN_INSTANT.getTime() && t <= MAX_INSTANT.getTime();
}

/** A date in a JSON body: `YYYY-MM-DD`, from 0001-01-01 to 9999-12-31. */
export const dateField = (description: string) =>
  z.iso
    .date({ error: 'must be a date, YYYY-MM-DD' })
    .refine(dateInBounds, { message: DATE_BOUNDS_DETAIL, when: (payload) => payload.issues.length === 0 })
    .openapi({ description: `${description} ${DATE_RANGE}`, example: '2026-02-01', pattern: DATE_BOUNDS.source });

/** A datetime in a JSON body: an RFC 3339 instant with `Z` or an offset, within the bounds. */
export const datetimeField = (description: string) =>
  z.iso
    .datetime({ offset: true, error: 'must be an RFC 3339 datetime such as 2025-01-31T17:04:05Z' })
    .refine((s) => datetimeInBounds(s, new Date(s)), { message: DATETIME_BOUNDS_DETAIL, when: (payload) => payload.issues.length === 0 })
    .openapi({ description: `${description} ${DATETIME_RANGE}`, example: '2025-01-31T17:04:05.123Z', pattern: DATETIME_BOUNDS.source });
