/**
 * The bounds of datetimes and dates (years 0001 to 9999, domain/scalars.ts) and text without NUL, as a caller meets
 * them: through the very schemas the API validates with, turned into the answer the validation layer gives (400 or
 * 422 with the parameter or field as pointer). And the pattern each document carries says the same thing, value for
 * value, as a JSON Schema validator (ECMA regex) reads it.
 */
import { describe, expect, it } from 'vitest';
import { SubscriptionReplay } from '../../api/admin/webhooks.schemas';
import { validationError } from '../../api/middleware/validation';
import { ApiError } from '../../api/problem';
import { LeaseCreateFields, LeaseListQuery, ResidentCreateBody, ResidentListQuery, ResidentUpdateBody, UnitUpdateBody } from '../../api/schemas';
import { DATE_BOUNDS, DATETIME_BOUNDS, MAX_INSTANT, MIN_INSTANT, NUL_DETAIL, NUL_FREE_PATTERN, plainText, text } from '../../domain/scalars';
import type { z } from '@hono/zod-openapi';

type Target = Parameters<typeof validationError>[1];

/** What the caller gets: `ok` with the parsed value, or the status and the pointers of the problem. */
function answer(
  schema: z.ZodType,
  input: unknown,
  target: Target,
): { ok: true; value: any } | { ok: false; status: number; pointers: string[]; detail: string } {
  const r = schema.safeParse(input);
  if (r.success) return { ok: true, value: r.data };
  const err = validationError(r.error, target);
  expect(err).toBeInstanceOf(ApiError);
  return { ok: false, status: err.status, pointers: (err.opts.errors ?? []).map((e) => e.pointer), detail: err.detail };
}

// A datetime as written, whether it is inside the bounds, and why.
const DATETIMES: [string, boolean, string][] = [
  ['0001-01-01T00:00:00Z', true, 'the first instant'],
  ['0001-01-01T00:00:00.000+00:00', true, 'the first instant, a zero offset'],
  ['0001-01-01T00:00:00-00:00', true, 'the first instant, RFC 3339 unknown offset'],
  ['0001-01-01', true, 'the first day alone (midnight UTC)'],
  ['0001-01-02T00:00:00+23:59', true, 'the largest offset, one minute past the first instant in UTC'],
  ['9999-12-31T23:59:59.999Z', true, 'the last instant'],
  ['9999-12-31', true, 'the last day alone (midnight UTC)'],
  ['9999-12-30T23:59:59.999-23:59', true, 'the largest negative offset, still on the last day in UTC'],
  ['2025-06-01T02:00:14+02:00', true, 'an ordinary instant with an offset'],
  ['0000-12-31T23:59:59.999Z', false, 'one millisecond before the first instant'],
  ['0000-01-01', false, 'year 0000 (Postgres has no year 0)'],
  ['0000-12-31T23:30:00-01:00', false, 'year 0000 as written, though 0001-01-01T00:30Z in UTC'],
  ['0001-01-01T00:00:00+00:01', false, 'an offset that carries the first instant back into year 0'],
  ['0001-01-01T01:04:22+04:05', false, 'the value of the issue: 0000-12-31T20:59:22Z in UTC'],
  ['0001-01-01T12:00:00-05:00', false, 'an offset on the first day (the rule: UTC only there)'],
  ['9999-12-31T23:59:59-00:01', false, 'an offset that carries the last day into year 10000'],
  ['9999-12-31T00:00:00+01:00', false, 'an offset on the last day (the rule: UTC only there)'],
];

const DATES: [string, boolean][] = [
  ['0001-01-01', true],
  ['9999-12-31', true],
  ['2025-02-28', true],
  ['0000-12-31', false],
  ['0000-01-01', false],
];

describe('datetime bounds', () => {
  it('are the instants of years 0001 to 9999 in UTC', () => {
    expect(MIN_INSTANT.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(MAX_INSTANT.toISOString()).toBe('9999-12-31T23:59:59.999Z');
  });

  it.each(DATETIMES)('a list filter %s: inside %s (%s)', (written, inside) => {
    for (const name of ['created_before', 'created_after', 'updated_after']) {
      const r = answer(ResidentListQuery, { [name]: written }, 'query');
      if (inside) {
        expect(r).toMatchObject({ ok: true });
        const value = (r as { value: Record<string, Date> }).value[name]!;
        expect(value.getTime()).toBeGreaterThanOrEqual(MIN_INSTANT.getTime());
        expect(value.getTime()).toBeLessThanOrEqual(MAX_INSTANT.getTime());
      } else {
        // It parses, but breaks a rule: 422 naming the parameter, never a query that fails in Postgres.
        expect(r).toMatchObject({ ok: false, status: 422, pointers: [name] });
      }
    }
  });

  it('an unencoded + (read as a space) is the offset it stands for, bounds included', () => {
    expect(answer(ResidentListQuery, { created_before: '0001-01-01T01:04:22 04:05' }, 'query')).toMatchObject({
      ok: false,
      status: 422,
      pointers: ['created_before'],
    });
    expect(answer(ResidentListQuery, { created_before: '0001-01-02T01:04:22 04:05' }, 'query')).toMatchObject({ ok: true });
  });

  it('a bound finer than a millisecond admits exactly the millisecond instants it admits (times are kept to the millisecond)', () => {
    const at = (name: string, written: string) =>
      (answer(LeaseListQuery, { [name]: written }, 'query') as { value: Record<string, Date> }).value[name]!.toISOString();
    // >= 45.8079 is >= 45.808; <= 45.8079 is <= 45.807; a fraction of zeros changes nothing.
    expect(at('created_after', '2026-11-27T15:16:45.8079Z')).toBe('2026-11-27T15:16:45.808Z');
    expect(at('updated_after', '2026-11-27T15:16:45.807001+02:00')).toBe('2026-11-27T13:16:45.808Z');
    expect(at('created_after', '2026-11-27T15:16:45.807000Z')).toBe('2026-11-27T15:16:45.807Z');
    expect(at('created_before', '2026-11-27T15:16:45.8079Z')).toBe('2026-11-27T15:16:45.807Z');
    expect(at('created_after', '9999-12-31T23:59:59.9999Z')).toBe('9999-12-31T23:59:59.999Z');
  });

  it('a value that is no datetime at all stays a 400', () => {
    expect(answer(ResidentListQuery, { created_before: '10000-01-01T00:00:00Z' }, 'query')).toMatchObject({ ok: false, status: 400 });
    expect(answer(ResidentListQuery, { created_before: 'yesterday' }, 'query')).toMatchObject({ ok: false, status: 400 });
  });

  it.each(DATETIMES.filter(([w]) => w.includes('T')))('an admin replay range %s: inside %s (%s)', (written, inside) => {
    const r = answer(SubscriptionReplay, { since: written, until: '2025-01-01T00:00:00Z' }, 'json');
    if (inside) expect(r).toMatchObject({ ok: true });
    else {
      expect(r).toMatchObject({ ok: false, status: 422 });
      expect((r as { pointers: string[] }).pointers).toContain('since');
    }
  });

  it.each(DATETIMES)('the documented pattern agrees on %s', (written, inside) => {
    // What a client validating against the document concludes: the format aside, the pattern is the bound.
    expect(new RegExp(DATETIME_BOUNDS.source, 'u').test(written)).toBe(inside);
  });
});

describe('date bounds', () => {
  it.each(DATES)('a lease date filter %s: inside %s', (date, inside) => {
    for (const name of ['start_date_gte', 'start_date_lte', 'end_date_gte', 'end_date_lte']) {
      const r = answer(LeaseListQuery, { [name]: date }, 'query');
      expect(r).toMatchObject(inside ? { ok: true, value: { [name]: date } } : { ok: false, status: 422, pointers: [name] });
    }
    // An export filter is the list's own schema: the same answer, which the automation turns into /filters/<name>.
    expect(new RegExp(DATE_BOUNDS.source, 'u').test(date)).toBe(inside);
  });

  it.each(DATES)('a date in a write body %s: inside %s', (date, inside) => {
    const r = answer(ResidentCreateBody, { property_id: 'prp_1', first_name: 'A', last_name: 'B', date_of_birth: date }, 'json');
    expect(r).toMatchObject(inside ? { ok: true } : { ok: false, status: 422, pointers: ['date_of_birth'] });
    const lease = answer(LeaseCreateFields.pick({ lease_start_date: true }), { lease_start_date: date }, 'json');
    expect(lease).toMatchObject(inside ? { ok: true } : { ok: false, status: 422, pointers: ['lease_start_date'] });
  });

  it('a malformed date stays "not a date" (400 in a query)', () => {
    expect(answer(LeaseListQuery, { start_date_gte: '2025-02-30' }, 'query')).toMatchObject({ ok: false, status: 400 });
    expect(answer(LeaseListQuery, { start_date_gte: '0000-13-01' }, 'query')).toMatchObject({ ok: false, status: 400 });
  });
});

describe('text', () => {
  it('refuses NUL, in a query (400) and in a body (422 at the field)', () => {
    expect(answer(ResidentListQuery, { email: 'a\u0000b' }, 'query')).toMatchObject({ ok: false, status: 400, detail: expect.stringContaining('email') });
    expect(answer(ResidentListQuery, { property_id: 'prp_1,\u0000' }, 'query')).toMatchObject({
      ok: false,
      status: 400,
      detail: expect.stringContaining('property_id'),
    });
    const body = answer(ResidentCreateBody, { property_id: 'prp_\u0000', first_name: 'A\u0000', last_name: ' ' }, 'json');
    expect(body).toMatchObject({ ok: false, status: 422 });
    expect((body as { pointers: string[] }).pointers.sort()).toEqual(['first_name', 'last_name', 'property_id']);
  });

  it('says why: NUL, or blank', () => {
    expect(
      text()
        .safeParse('a\u0000')
        .error?.issues.map((i) => i.message),
    ).toEqual([NUL_DETAIL]);
    expect(
      text()
        .safeParse('  ')
        .error?.issues.map((i) => i.message),
    ).toEqual(['must not be blank']);
    expect(text().safeParse('  Ada ').data).toBe('Ada');
    expect(plainText().safeParse('').success).toBe(true);
  });

  it('a unit note and a middle name are sent without surrounding white space, as the sources read them back (docs/api.md Writes)', () => {
    expect(UnitUpdateBody.parse({ note: '  Lobby side \n' })).toEqual({ note: 'Lobby side' });
    expect(UnitUpdateBody.parse({ note: '   ' })).toEqual({ note: '' });
    expect(UnitUpdateBody.parse({ note: null })).toEqual({ note: null });
    // The length is the trimmed text's.
    expect(UnitUpdateBody.parse({ note: `${'x'.repeat(1995)}${' '.repeat(10)}` }).note).toHaveLength(1995);
    expect(ResidentUpdateBody.parse({ middle_name: '  Q  ' })).toEqual({ middle_name: 'Q' });
  });

  it('documents it as the pattern it validates with', () => {
    const free = new RegExp(NUL_FREE_PATTERN, 'u');
    for (const s of ['', 'Ada', 'a b', 'ü']) expect(free.test(s)).toBe(true);
    for (const s of ['\u0000', 'a\u0000', '\u0000a']) expect(free.test(s)).toBe(false);
  });
});
