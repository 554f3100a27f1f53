/** How the sandbox writes times and dates: the property's local time with its offset, and MM/DD/YYYY dates. */
import { zoneOffsetMs } from '../source/entrata/mapping';

const DAY = 86_400_000;
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

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

function offsetAt(ms: number, timeZone: string): number {
  const z = zoneYear(new Date(ms).getUTCFullYear(), timeZone);
  let off = z.first;
  for (const c of z.changes) if (ms >= c.at) off = c.offset;
  return off;
}

/** "2025-01-31T10:04:05-06:00": local wall time in `timeZone`, whole seconds, with its UTC offset. */
export function localTime(ms: number, timeZone: string): string {
  const off = offsetAt(ms, timeZone);
  const d = new Date(Math.floor(ms / 1000) * 1000 + off);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off) / 60_000;
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

/** Days since the epoch as "MM/DD/YYYY". */
export function usDate(day: number): string {
  const d = new Date(day * DAY);
  return `${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${d.getUTCFullYear()}`;
}

export const dayOf = (iso: string): number => Math.floor(Date.parse(`${iso}T00:00:00Z`) / DAY);

/** `day` plus `months` calendar months (clamped to the month's last day). */
export function addMonths(day: number, months: number): number {
  const d = new Date(day * DAY);
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1));
  const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
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
