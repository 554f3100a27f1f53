/** Postgres connections: one postgres.js pool per process, wrapped by Drizzle. */
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema';

export type Db = PostgresJsDatabase<typeof schema> & { $client: postgres.Sql };
/** A transaction or the database itself: query functions accept either. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0] | Db;

export interface DbOptions {
  max?: number;
  /** Application name shown in pg_stat_activity. */
  applicationName?: string;
  /** Postgres statement_timeout of every connection, in ms (0: none). Default 60 s. */
  statementTimeoutMs?: number;
  /** Postgres idle_in_transaction_session_timeout of every connection, in ms (0: none). Default 60 s. */
  idleInTransactionTimeoutMs?: number;
  /** How long establishing a connection may take (TCP, TLS, authentication), in ms. Default 30 s (postgres.js's). */
  connectTimeoutMs?: number;
}

/** Timeouts of a pool when its creator does not say: no statement or open transaction hangs a process for ever. */
const DEFAULT_DB_TIMEOUT_MS = 60_000;

export function createDb(url: string, opts: DbOptions = {}): Db {
  const client = postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    ...(opts.connectTimeoutMs === undefined ? {} : { connect_timeout: opts.connectTimeoutMs / 1000 }),
    connection: {
      application_name: opts.applicationName ?? 'propsync',
      statement_timeout: opts.statementTimeoutMs ?? DEFAULT_DB_TIMEOUT_MS,
      idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs ?? DEFAULT_DB_TIMEOUT_MS,
      // Timestamps as text in UTC and ISO whatever the server's defaults (db/wire.ts reads them as they come).
      TimeZone: 'UTC',
      DateStyle: 'ISO, MDY',
    },
    // bigint columns hold money in minor units; they fit in a JS number.
    types: { bigint: postgres.BigInt },
  });
  return drizzle(client, { schema }) as Db;
}

export async function closeDb(db: Db): Promise<void> {
  await db.$client.end({ timeout: 5 });
}
