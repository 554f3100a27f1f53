/**
 * What every dialect's mapping needs and no dialect owns: the error of a record the mapping cannot read, money as
 * integer minor units by integer arithmetic (never a float), calendar dates checked for real, and the reader of a
 * source object that sends every field the CDM has no column for to custom_data. A dialect's own quirks (its date
 * formats, its code lists, its idea of an empty value) stay in its folder.
 */
import type { Address, Entity, InputOf, JsonObject, Money } from '../domain/cdm';
import { inKeyOrder } from '../domain/content';
import { SourcePermanentError, type RecordsById } from './connector';

/** A record (or a field of it) the mapping cannot read: the connector sets the record aside as skipped. */
export class MappingError extends Error {
  override name = 'MappingError';
}

// ---------------------------------------------------------------------------------------------------------------
// Money
// ---------------------------------------------------------------------------------------------------------------

/** Minor-unit exponent of currencies that do not have two decimals (ISO 4217). */
const EXPONENTS: Record<string, number> = { JPY: 0, KRW: 0, VND: 0, CLP: 0, ISK: 0, BHD: 3, KWD: 3, OMR: 3, JOD: 3, TND: 3 };
export const exponentOf = (currency: string): number => EXPONENTS[currency] ?? 2;

export const DECIMAL = /^([+-])?(\d*)(?:\.(\d*))?$/;

/**
 * A decimal string ("1035", "1035.5", "-12.30", "0.005") to integer minor units, without floating point.
 * Numbers are accepted through their shortest string form; exponent notation, separators and junk are refused.
 */
export function decimalToMinor(value: string | number, exponent = 2): number {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value.trim();
  const m = DECIMAL.exec(text);
  if (!m || (!m[2] && !m[3])) throw new MappingError(`not a decimal amount: ${JSON.stringify(value)}`);
  const negative = m[1] === '-';
  const whole = m[2] ?? '';
  const fraction = m[3] ?? '';
  const kept = fraction.slice(0, exponent).padEnd(exponent, '0');
  let minor = BigInt(whole + kept || '0');
  const dropped = fraction.slice(exponent);
  if (dropped.length > 0) {
    const first = dropped.charCodeAt(0) - 48;
    const beyondHalf = /[1-9]/.test(dropped.slice(1));
    const lastKeptOdd = minor % 2n === 1n;
    if (first > 5 || (first === 5 && (beyondHalf || lastKeptOdd))) minor += 1n;
  }
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw new MappingError(`amount out of range: ${JSON.stringify(value)}`);
  const n = Number(minor);
  return negative && n !== 0 ? -n : n;
}

/**
 * Money for a source that keeps its amounts in `currency` only, as a decimal string: an amount in another currency
 * is refused, as the source would refuse it (a write never silently drops what the caller sent, nor writes ¥5,000 as
 * $5,000.00).
 */
export function minorToDecimalIn(money: Money, currency: string): string {
  if (money.currency !== currency)
    throw new SourcePermanentError(`the source keeps amounts in ${currency}, not ${money.currency}`, undefined, 'VALIDATION_FAILED');
  return minorToDecimal(money);
}

/** Integer minor units to a decimal string, by string arithmetic: 103550 -> "1035.50". For writes: a bad amount is refused. */
export function minorToDecimal(money: Money): string {
  const exp = exponentOf(money.currency);
  if (!Number.isSafeInteger(money.amount)) throw new SourcePermanentError(`amount must be an integer number of minor units: ${money.amount}`);
  const digits = String(Math.abs(money.amount)).padStart(exp + 1, '0');
  const whole = digits.slice(0, digits.length - exp);
  const sign = money.amount < 0 ? '-' : '';
  return exp === 0 ? `${sign}${whole}` : `${sign}${whole}.${digits.slice(digits.length - exp)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------------------------------------------

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** Whether year, month and day name a day of the calendar (30 February does not). */
export function validDate(y: number, m: number, d: number): boolean {
  if (!(m >= 1 && m <= 12 && d >= 1 && y >= 1)) return false;
  const leap = m === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= DAYS_IN_MONTH[m - 1]! + (leap ? 1 : 0);
}
export const pad = (n: number, w = 2) => String(n).padStart(w, '0');

// ---------------------------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------------------------

/** How a dialect normalizes a field it keeps in custom_data (its times and dates), by the field's name. */
export type Normalize = (key: string, value: unknown) => unknown;

/**
 * Reads fields off a source object and remembers which were used, so that everything left lands in custom_data
 * under its source name (nested ones under a dotted path, e.g. "address.county"), normalized by the dialect.
 */
export class Fields {
  private readonly used = new Set<string>();
  constructor(
    private readonly obj: Record<string, unknown>,
    private readonly path: string,
    private readonly custom: JsonObject,
    private readonly normalize: Normalize = (_key, value) => value,
  ) {}

  static of(value: unknown, what: string): Record<string, unknown> {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new MappingError(`${what} is not an object: ${JSON.stringify(value)}`);
    return value as Record<string, unknown>;
  }

  take(key: string): unknown {
    this.used.add(key);
    return this.obj[key];
  }
  /** A field's value, left for custom_data unless it is taken too. */
  peek(key: string): unknown {
    return this.obj[key];
  }
  /** A nested object read with its own leftovers under `key.`; null when `absent` says the value is none. */
  child(key: string, absent: (v: unknown) => boolean = (v) => v === null || v === undefined): Fields | null {
    const v = this.take(key);
    if (absent(v)) return null;
    return new Fields(Fields.of(v, key), `${this.path}${key}.`, this.custom, this.normalize);
  }
  /** The elements of a list, as `items` reads the field's value, each with its leftovers under `key.<index>.`. */
  list(key: string, items: (v: unknown) => unknown[], what = key): Fields[] {
    return items(this.take(key)).map((v, i) => new Fields(Fields.of(v, what), `${this.path}${key}.${i}.`, this.custom, this.normalize));
  }
  /** A record's custom_data, once every field its mapping reads is taken: the unread ones copied in, keys in order. */
  customData(): JsonObject {
    this.finish();
    return inKeyOrder(this.custom);
  }
  /** Copy every unread field into custom_data. */
  finish(): void {
    for (const key in this.obj) {
      const value = this.obj[key];
      if (this.used.has(key) || value === undefined) continue;
      this.custom[this.path ? this.path + key : key] = this.normalize(key, value) as JsonObject[string];
    }
  }
}

/**
 * An address from the six fields `names` gives (read by the dialect's `text`, the rest kept as leftovers); null when
 * every one is empty.
 */
export function addressFrom(f: Fields | null, names: Record<keyof Address, string>, text: (value: unknown) => string | null): Address | null {
  if (!f) return null;
  const a: Address = {
    line_1: text(f.take(names.line_1)),
    line_2: text(f.take(names.line_2)),
    city: text(f.take(names.city)),
    state: text(f.take(names.state)),
    postal_code: text(f.take(names.postal_code)),
    country: text(f.take(names.country)),
  };
  f.finish();
  return Object.values(a).every((v) => v === null) ? null : a;
}

/**
 * A reply's raw records mapped. A record the mapping cannot read is set aside with its native id (`idOf`) and the
 * reason, so one bad row in a customer's system never stops the rest.
 */
export function mapRecords<E extends Entity>(map: (raw: unknown) => InputOf[E], items: unknown[], idOf: (raw: unknown) => string | null): RecordsById<E> {
  const out: RecordsById<E> = { records: [], skipped: [] };
  for (const raw of items) {
    try {
      out.records.push(map(raw));
    } catch (err) {
      if (!(err instanceof MappingError)) throw err;
      out.skipped.push({ x_id: idOf(raw), reason: err.message.slice(0, 500) });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Matching (findCreated)
// ---------------------------------------------------------------------------------------------------------------

/** Text compared the way people write it: trimmed, case-insensitive. */
export const fold = (s: string | null | undefined): string => (s ?? '').trim().toLowerCase();
/** A phone number's digits alone, so "(512) 555 0177" matches "512-555-0177". */
export const digits = (s: string): string => s.replace(/\D/g, '');

/** Whether two source ids name one record: a numeric id travels as a number, so `0100001` is `100001`. */
export function sameId(a: string | null | undefined, b: string | null | undefined): boolean {
  if (a == null || b == null) return false;
  const [x, y] = [a.trim(), b.trim()];
  return x === y || (/^\d{1,15}$/.test(x) && /^\d{1,15}$/.test(y) && Number(x) === Number(y));
}

/** The record with the highest numeric x_id (the newest), if any. */
export function newest<T extends { x_id: string }>(records: T[]): T | undefined {
  const rank = (x: string) => (/^\d{1,15}$/.test(x) ? Number(x) : -1);
  return records.reduce<T | undefined>((best, r) => (best === undefined || rank(r.x_id) > rank(best.x_id) ? r : best), undefined);
}
