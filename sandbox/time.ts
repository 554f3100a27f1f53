/**
 * The sandbox's calendar and clock arithmetic, written for it alone (nothing from source/): days since the epoch,
 * ISO and US dates, whole-second local times with their offset, and cents as decimal text. The record model keeps
 * dates as ISO `YYYY-MM-DD` and instants as epoch milliseconds; each flavour's wire formats them its own way.
 */
const DAY = 86_400_000;
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

const formatters = new Map<string, Intl.DateTimeFormat>();
/** A zone's offset as Intl names it: "GMT-06:00", "GMT+05:45", "GMT" for none (seconds only in old local mean times). */
const OFFSET_NAME = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/** Offset of a zone from UTC at an instant, in milliseconds (local = utc + offset): the offset the zone names then. */
function zoneOffsetMs(utcMs: number, timeZone: string): number {
  let f = formatters.get(timeZone);
  if (!f) formatters.set(timeZone, (f = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' })));
  const name = f.formatToParts(new Date(utcMs)).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = OFFSET_NAME.exec(name);
  if (!m) throw new Error(`unreadable UTC offset ${JSON.stringify(name)} of ${timeZone}`);
  if (!m[1]) return 0;
  return (m[1] === '-' ? -1 : 1) * ((Number(m[2]) * 60 + Number(m[3])) * 60 + Number(m[4] ?? 0)) * 1000;
}

/**
 * A zone's offsets over one calendar year: the offset at its start, and up to two changes (DST in and out) found by
 * bisection, so that formatting 100k timestamps costs a few dozen Intl calls per zone and year instead of one each.
 */
interface ZoneYear {
  first: number;
  changes: { at: number; offset: number }[];
}
const years = new Map<string, Map<number, ZoneYear>>();

function changeBetween(lo: number, hi: number, timeZone: string): number {
  const before = zoneOffsetMs(lo, timeZone);
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 2 / 60_000) * 60_000;
    if (zoneOffsetMs(mid, timeZone) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

function zoneYear(year: number, timeZone: string): ZoneYear {
  let zone = years.get(timeZone);
  if (!zone) years.set(timeZone, (zone = new Map()));
  let z = zone.get(year);
  if (!z) {
    const points = [Date.UTC(year, 0, 1), Date.UTC(year, 6, 1), Date.UTC(year + 1, 0, 1)];
    const offsets = points.map((p) => zoneOffsetMs(p, timeZone));
    z = { first: offsets[0]!, changes: [] };
    for (let i = 0; i < 2; i++) {
      if (offsets[i] !== offsets[i + 1]) {
        z.changes.push({ at: changeBetween(points[i]!, points[i + 1]!, timeZone), offset: offsets[i + 1]! });
      }
    }
    zone.set(year, z);
  }
  return z;
}

/** Per zone, the zone-year last used and the instants it spans: consecutive records mostly fall in one. */
const lastYear = new Map<string, { from: number; to: number; z: ZoneYear }>();

function offsetAt(ms: number, timeZone: string): number {
  let hit = lastYear.get(timeZone);
  if (!hit || ms < hit.from || ms >= hit.to) {
    const year = new Date(ms).getUTCFullYear();
    hit = { from: Date.UTC(year, 0, 1), to: Date.UTC(year + 1, 0, 1), z: zoneYear(year, timeZone) };
    lastYear.set(timeZone, hit);
  }
  let off = hit.z.first;
  for (const c of hit.z.changes) if (ms >= c.at) off = c.offset;
  return off;
}

/** "YYYY-MM-DD" of a day number, memoized: a page's times fall on a few thousand days at most. */
const dayTexts = new Map<number, string>();
function dayText(day: number): string {
  let t = dayTexts.get(day);
  if (t === undefined) {
    if (dayTexts.size > 100_000) dayTexts.clear();
    t = new Date(day * DAY).toISOString().slice(0, 10);
    dayTexts.set(day, t);
  }
  return t;
}

/** "2025-01-31T10:04:05-06:00": local wall time in `timeZone`, whole seconds, with its UTC offset. */
export function localTime(ms: number, timeZone: string): string {
  const off = offsetAt(ms, timeZone);
  const local = Math.floor(ms / 1000) * 1000 + off;
  const day = Math.floor(local / DAY);
  const secs = (local - day * DAY) / 1000;
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off) / 60_000;
  return (
    `${dayText(day)}T${pad(Math.floor(secs / 3600))}:${pad(Math.floor(secs / 60) % 60)}:${pad(secs % 60)}` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

/** Days since the epoch as "YYYY-MM-DD". */
export const isoDate = (day: number): string => new Date(day * DAY).toISOString().slice(0, 10);

/** "MM/DD/YYYY" of an ISO date, "" for none. */
export function usOfIso(iso: string | null): string {
  return iso === null ? '' : `${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(0, 4)}`;
}

/** An instant as UTC "YYYY-MM-DDTHH:MM:SSZ" (whole seconds). */
export const utcTime = (ms: number): string => `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;

/** Date.UTC of a day, without Date.UTC's reading of years 0 to 99 as 1900 to 1999. */
function utcDay(year: number, month: number, day: number): number {
  const t = new Date(0);
  t.setUTCFullYear(year, month, day);
  return t.getTime();
}

/** A calendar date "YYYY-MM-DD" that exists, as days since the epoch; undefined otherwise. */
export function dayOfIso(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = utcDay(y, mo - 1, d);
  const back = new Date(ms);
  return back.getUTCFullYear() === y && back.getUTCMonth() === mo - 1 && back.getUTCDate() === d ? ms / DAY : undefined;
}

export const dayOf = (iso: string): number => Math.floor(Date.parse(`${iso}T00:00:00Z`) / DAY);

/** `day` plus `months` calendar months (clamped to the month's last day). */
export function addMonths(day: number, months: number): number {
  const d = new Date(day * DAY);
  const target = new Date(utcDay(d.getUTCFullYear(), d.getUTCMonth() + months, 1));
  const last = new Date(utcDay(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), last));
  return Math.floor(target.getTime() / DAY);
}

/** Integer cents as the source's decimal string: 103500 -> "1035.00", -1230 -> "-12.30". */
export function decimalOf(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${pad(abs % 100)}`;
}

export { DAY };
