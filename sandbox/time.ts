/** How the sandbox writes times and dates: the property's local time with its offset, and MM/DD/YYYY dates. */
import { zoneOffsetMs } from '../source/mapping';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

// Offsets only change on the hour in every zone the sandbox uses, so one lookup per zone and hour suffices.
const offsets = new Map<string, number>();
function offsetAt(ms: number, timeZone: string): number {
  const key = `${timeZone}|${Math.floor(ms / HOUR)}`;
  let off = offsets.get(key);
  if (off === undefined) {
    off = zoneOffsetMs(Math.floor(ms / HOUR) * HOUR, timeZone);
    if (offsets.size > 200_000) offsets.clear();
    offsets.set(key, off);
  }
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
