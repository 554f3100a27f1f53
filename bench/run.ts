/**
 * Runs one benchmark against a PostgreSQL chosen on purpose, and leaves nothing behind: `npm run bench:<name>` is
 * `tsx bench/run.ts <name> [args]`.
 *
 * - With DATABASE_URL set, the bench uses that server (said at the start); the databases it made there (their names
 *   hold `bench`) are dropped when it ends, unless BENCH_KEEP_DATABASES=1.
 * - Without it, the project's own embedded PostgreSQL (the one `npm start` runs) is started in a temporary directory
 *   on a free port, the bench runs against it, and the server and its directory are removed at the end. A server
 *   that merely answers on 5432 is never used unasked: it may be someone else's.
 *
 * A server that cannot be reached is one clear line and exit code 2, not a connection stack.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../scripts/embedded-postgres';
import { freePort } from './lib/processes';

const [name, ...args] = process.argv.slice(2);
const file = name ? fileURLToPath(new URL(`./${name}.ts`, import.meta.url)) : '';
if (!name || !existsSync(file)) {
  console.error(`usage: tsx bench/run.ts <bench> [args]: no bench/${name ?? ''}.ts`);
  process.exit(2);
}

/** The server's maintenance database URL (path /postgres). */
function adminUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  return url.toString();
}

async function benchDatabases(admin: string): Promise<Set<string>> {
  const sql = postgres(admin, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const rows = await sql<{ datname: string }[]>`select datname from pg_database where datname like '%bench%'`;
    return new Set(rows.map((r) => r.datname));
  } finally {
    await sql.end();
  }
}

let embedded: { pg: EmbeddedPostgres; dir: string } | undefined;
let admin: string;
let before = new Set<string>();
const env = { ...process.env };
if (process.env.DATABASE_URL) {
  const url = new URL(process.env.DATABASE_URL);
  console.log(`[bench] PostgreSQL: ${url.hostname}:${url.port || 5432} (DATABASE_URL)`);
  admin = adminUrl(process.env.DATABASE_URL);
  try {
    before = await benchDatabases(admin);
  } catch (err) {
    console.error(`[bench] cannot reach the PostgreSQL of DATABASE_URL (${url.hostname}:${url.port || 5432}): ${(err as Error).message}`);
    process.exit(2);
  }
} else {
  const dir = mkdtempSync(join(tmpdir(), 'propsync-bench-pg-'));
  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'postgres'), port: await freePort() });
  embedded = { pg, dir };
  env.DATABASE_URL = pg.url('propsync');
  admin = pg.url('postgres');
  console.log(`[bench] PostgreSQL: an embedded server in ${dir} on port ${pg.port}, removed at the end (set DATABASE_URL to use yours)`);
}

const tsx = fileURLToPath(new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url));
const child = spawn(process.execPath, [tsx, file, ...args], { stdio: 'inherit', env });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));

try {
  if (embedded) {
    await embedded.pg.stop();
    rmSync(embedded.dir, { recursive: true, force: true });
  } else if (process.env.BENCH_KEEP_DATABASES !== '1') {
    const made = [...(await benchDatabases(admin))].filter((d) => !before.has(d));
    const sql = postgres(admin, { max: 1, onnotice: () => {} });
    try {
      for (const d of made) await sql.unsafe(`drop database if exists "${d.replaceAll('"', '""')}" with (force)`);
    } finally {
      await sql.end();
    }
    if (made.length > 0) console.log(`[bench] dropped the databases this run made: ${made.join(', ')}`);
  }
} catch (err) {
  console.error(`[bench] cleaning up failed: ${(err as Error).message}`);
}
process.exit(code);
