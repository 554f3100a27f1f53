/**
 * A database server whose defaults are another time zone and DateStyle (someone else's server, DATABASE_URL) serves
 * the same timestamps: the service's sessions set UTC and ISO themselves, and db/wire.ts's fast path reads them.
 */
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeDb, createDb, type Db } from '../../db/client';
import { isoOfText } from '../../db/wire';

const name = `propsync_tz_${randomUUID().slice(0, 8)}`;
const admin = () => postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
const urlOf = (database: string) => inject('adminDatabaseUrl').replace(/\/postgres$/, `/${database}`);
let db: Db | undefined;

beforeAll(async () => {
  const s = admin();
  try {
    await s.unsafe(`create database "${name}"`);
    await s.unsafe(`alter database "${name}" set timezone = 'Asia/Kolkata'`);
    await s.unsafe(`alter database "${name}" set datestyle = 'SQL, DMY'`);
  } finally {
    await s.end();
  }
});

afterAll(async () => {
  if (db) await closeDb(db);
  const s = admin();
  await s.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
  await s.end();
});

describe('a session of the service on a server with other defaults', () => {
  it('has the server default elsewhere (the setting this test relies on is in force)', async () => {
    const plain = postgres(urlOf(name), { max: 1, onnotice: () => {} });
    try {
      const [row] = await plain`select current_setting('TimeZone') as tz, current_setting('DateStyle') as ds`;
      expect(row).toEqual({ tz: 'Asia/Kolkata', ds: 'SQL, DMY' });
    } finally {
      await plain.end();
    }
  });

  it('reads timestamps as text in UTC and ISO, which the fast path turns into the API form', async () => {
    db = createDb(urlOf(name), { max: 1 });
    const [row] = (await db.execute(
      sql`select current_setting('TimeZone') as tz, current_setting('DateStyle') as ds, '2025-06-01 05:30:30.5+05:30'::timestamptz::text as t`,
    )) as unknown as { tz: string; ds: string; t: string }[];
    expect(row).toEqual({ tz: 'UTC', ds: 'ISO, MDY', t: '2025-06-01 00:00:30.5+00' });
    expect(isoOfText(row!.t)).toBe('2025-06-01T00:00:30.500Z');
  });
});
