/**
 * An export's file name (domain/automations.ts exportFileName): safe characters, and short enough in bytes for a
 * file system (255 bytes a name) whatever the automation's name is written in, cut between whole characters.
 */
import { describe, expect, it } from 'vitest';
import { exportFileName } from '../../domain/automations';

const RUN = 'arun_01JH0000000000000000000000';
const bytes = (s: string) => Buffer.byteLength(s);

describe('exportFileName', () => {
  it('keeps a short name as it is, made safe', () => {
    expect(exportFileName('Weekly units', RUN)).toBe(`Weekly units-${RUN}.csv`);
    expect(exportFileName('a/b:c', RUN)).toBe(`a_b_c-${RUN}.csv`);
    expect(exportFileName('...', RUN)).toBe(`_-${RUN}.csv`);
  });

  it('fits a long name of three-byte characters within 255 bytes', () => {
    const name = exportFileName('東'.repeat(200), RUN);
    expect(bytes(name)).toBeLessThanOrEqual(255);
    expect(name).toBe(`${'東'.repeat(60)}-${RUN}.csv`);
  });

  it('never cuts a character in two', () => {
    const name = exportFileName('😀'.repeat(100), RUN);
    expect(bytes(name)).toBeLessThanOrEqual(255);
    expect(name).not.toContain('\ufffd');
    expect(name).toBe(`${'😀'.repeat(45)}-${RUN}.csv`);
    // Mixed widths: the cut falls before the character that would pass the limit.
    expect(bytes(exportFileName(`${'a'.repeat(179)}é`, RUN))).toBe(179 + bytes(`-${RUN}.csv`));
  });
});
