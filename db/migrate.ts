/**
 * Creates the database when it does not exist and applies the committed migrations; then (given a keyring) seals
 * every stored secret that is in plaintext or under an older key (db/secrets.ts). Idempotent.
 * Used by `npm start`, the test setup, `npm run db:migrate` and, compiled, `node dist/migrate.mjs` (the migration
 * job of docker-compose.yml).
 */
import { fileURLToPath } from 'node:url';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import type { Keyring } from '../domain/secrets';
import { closeDb, createDb } from './client';
import { describeReseal, resealStoredSecrets, type ResealReport } from './secrets';

/** Beside this file: db/migrations from source; compiled (dist/migrate.mjs), the copy `npm run build` puts in dist/migrations. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url));

export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`DATABASE_URL names an unsupported database: ${name}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) {
      try {
        await sql.unsafe(`create database "${name}"`);
      } catch (err) {
        // Another process created it between our check and our create.
        if ((err as { code?: string }).code !== '42P04') throw err;
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** With `secrets`, the re-encryption pass runs after the migrations and its report is returned. */
export async function migrateDatabase(url: string, opts: { secrets?: Keyring } = {}): Promise<ResealReport | null> {
  await ensureDatabase(url);
  // A migration may rebuild an index of a big table: no statement timeout here.
  const db = createDb(url, { max: 1, applicationName: 'propsync-migrate', statementTimeoutMs: 0 });
  try {
    await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
    return opts.secrets ? await resealStoredSecrets(db, opts.secrets) : null;
  } finally {
    await closeDb(db);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { loadConfigOrExit } = await import('../config');
  const { createKeyring } = await import('../domain/secrets');
  const cfg = loadConfigOrExit();
  const report = await migrateDatabase(cfg.DATABASE_URL, { secrets: createKeyring(cfg.ENCRYPTION_KEYS) });
  console.log('migrations applied');
  console.log(describeReseal(report!));
}
