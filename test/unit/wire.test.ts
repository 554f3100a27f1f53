import { describe, expect, it } from 'vitest';
import { isoOfText } from '../../db/wire';

/** Postgres's text of a timestamptz in UTC (ISO DateStyle): trailing zeros of the fraction dropped, no fraction when whole. */
const pgText = (ms: number) => {
  const iso = new Date(ms).toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''}+00`;
};

describe('a timestamptz read as text', () => {
  it('is written as Date.toISOString() writes it, for every precision Postgres prints', () => {
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const times = [0, 1, 10, 100, 120, 999, Date.UTC(1000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(2024, 1, 29, 12)];
    for (let i = 0; i < 2000; i++) times.push(Math.floor((random() - 0.3) * 4e12));
    for (const ms of times) expect(isoOfText(pgText(ms)), pgText(ms)).toBe(new Date(ms).toISOString());
  });

  it('goes through a Date when it is not UTC or has more decimals', () => {
    for (const s of [
      '2025-06-01 02:00:30+02',
      '2025-06-01 00:00:30.5-03:30',
      '2025-06-01 00:00:30.123456+00',
      '2025-06-01 00:00:30.1234+00',
      '2025-06-01T00:00:30Z',
    ])
      expect(isoOfText(s), s).toBe(new Date(s).toISOString());
  });
});
