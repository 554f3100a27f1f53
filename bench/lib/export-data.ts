/**
 * The export bench's cache: an integration's properties, units, residents and leases written straight into the cache
 * tables with COPY (bench/lib/copy.ts: the rows a first sync writes, content hashes and lease residents included),
 * from the read bench's generators (bench/lib/seed.ts: 400 leases, 200 units and 400 residents per property) with
 * awkward values laid over them: text with commas, double quotes, CR/LF and non-ASCII (accents, CJK, emoji), empty
 * strings next to nulls, custom_data objects holding the same. Loading is not what the bench measures.
 */
import type postgres from 'postgres';
import { newId } from '../../db/ids';
import type { Refs } from '../../db/row-values';
import type { Entity, InputOf } from '../../domain/cdm';
import { hashRecord } from '../../domain/content';
import type { Mode } from '../../domain/plans';
import { cacheRowsOf, copyCsv, SHAPES, toCsv } from './copy';
import { lease, property, resident, sizeOf, unit } from './seed';

/** Records per COPY. */
const BATCH = 2_000;
/** Records are created three to a second from here on, so the export's keyset meets ties on created_at. */
const BASE = Date.parse('2024-01-01T00:00:00.000Z');
const createdAtOf = (n: number) => new Date(BASE + Math.floor(n / 3) * 1000);

/** Lease notes, in turn: a null, an empty string, and text a CSV writer must quote or keep intact. */
const NOTES = [
  null,
  '',
  'Paid by "autopay", confirmed by phone',
  'Line one, with a comma\nLine "two"\r\nLine three',
  'Café Zoë — ½ month free ✓ 日本語 🏠',
  '=SUM(A1:A9), kept as written',
  'Trailing spaces and a tab\t  ',
  '"Quoted at both ends"',
];
const FIRST_NAMES = ['José', 'Zoë', "O'Brien", 'Nguyễn', '李', 'Ada'];

function awkwardProperty(i: number): InputOf['property'] {
  const p = property(i);
  if (i % 3 === 0) p.name = `Résidences "Le Parc", Tower ${i}`;
  p.description = i % 2 === 0 ? 'Pool, gym\n"Pet friendly", near the 日本 garden' : '';
  return p;
}

function awkwardUnit(i: number): InputOf['unit'] {
  const u = unit(i);
  if (i % 6 === 0) u.note = i % 12 === 0 ? 'Corner unit, "west" view\nNew carpet' : '';
  return u;
}

function awkwardResident(j: number): InputOf['resident'] {
  const r = resident(j);
  r.first_name = FIRST_NAMES[j % FIRST_NAMES.length]!;
  if (j % 4 === 0) r.last_name = `Müller-"Mac", ${j}`;
  return r;
}

function awkwardLease(k: number): InputOf['lease'] {
  const l = lease(k);
  l.notes = NOTES[k % NOTES.length]!;
  l.concessions = k % 4 === 0 ? '$250 off, first month; "move-in special"' : null;
  if (k % 5 === 0) l.custom_data = { ...l.custom_data, comment: 'gate code 1234, "back" door\nring twice', 'ünïcödé key': '✓ 🏠' };
  return l;
}

const GENERATORS: { [E in Entity]: (n: number) => InputOf[E] } = {
  property: awkwardProperty,
  unit: awkwardUnit,
  resident: awkwardResident,
  lease: awkwardLease,
};

/**
 * Writes an integration's cache for `leases` leases (a multiple of 400) with COPY; returns the rows written per
 * table. The integration's cache must be empty.
 */
export async function loadExportData(
  sql: postgres.Sql,
  integration: { id: string; organizationId: string; mode: Mode },
  leases: number,
): Promise<Record<string, number>> {
  const size = sizeOf(leases);
  const counts: Record<Entity, number> = { property: size.properties, unit: size.units, resident: size.residents, lease: size.leases };
  const refs: Refs = { property: new Map(), unit: new Map(), resident: new Map(), lease: new Map() };
  const written: Record<string, number> = {};
  // References point backwards only (units to properties, leases to units, residents and earlier leases).
  for (const entity of ['property', 'unit', 'resident', 'lease'] as const) {
    for (let from = 0; from < counts[entity]; from += BATCH) {
      const n = Math.min(BATCH, counts[entity] - from);
      const records = Array.from({ length: n }, (_, i) => {
        const input = (GENERATORS[entity] as (n: number) => InputOf[typeof entity])(from + i);
        return { input, hash: hashRecord(input, false).hash, id: newId(entity) };
      });
      const { rows, people } = cacheRowsOf(entity, records, refs, integration, createdAtOf(from));
      rows.forEach((row, i) => {
        row.createdAt = row.updatedAt = row.psSyncedAt = createdAtOf(from + i);
      });
      await copyCsv(sql, SHAPES[entity], toCsv(SHAPES[entity], rows));
      written[entity] = (written[entity] ?? 0) + rows.length;
      if (entity === 'lease') {
        await copyCsv(sql, SHAPES.lease_residents, toCsv(SHAPES.lease_residents, people));
        written.lease_residents = (written.lease_residents ?? 0) + people.length;
      }
    }
  }
  return written;
}
