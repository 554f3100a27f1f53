import { describe, expect, it } from 'vitest';
import { CONSOLE_CSS } from '../../api/console/assets';
import { age } from '../../api/console/pages/organizations';

describe('the console home page', () => {
  it('reads an age in seconds, minutes, or hours and minutes, never "60 min"', () => {
    expect([0, 42, 89, 90, 3_569, 3_570, 3_590, 3_600, 7_169, 7_190, 7_200, 90_061].map(age)).toEqual([
      '0 s',
      '42 s',
      '89 s',
      '2 min',
      '59 min',
      '1 h 0 min',
      '1 h 0 min',
      '1 h 0 min',
      '1 h 59 min',
      '2 h 0 min',
      '2 h 0 min',
      '25 h 1 min',
    ]);
  });

  it('styles the numbers it marks as wanting attention', () => {
    expect(CONSOLE_CSS).toMatch(/\[data-warn\]\s*\{[^}]*color:\s*var\(--bad\)/);
  });
});
