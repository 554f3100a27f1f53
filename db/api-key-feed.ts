/**
 * The feed of API-key changes the API's key cache evicts by (api/middleware/auth.ts): a trigger on api_keys
 * (db/migrations, api_keys_notify_change) NOTIFYs every change to a key's revoked_at, scopes or mode, with the key's
 * sha256 as the payload. The feed is a connection of its own rather than the pool's sql.listen(): its closing tells
 * the caller when notifications may have been missed.
 */
import postgres from 'postgres';

/** Channel of the trigger in db/migrations (api_keys_notify_change). */
const API_KEYS_CHANNEL = 'api_keys_changed';

interface ApiKeyFeedEvents {
  /** A key changed: its sha256. */
  onChange(keyHash: string): void;
  /** The connection closed (also when close() ends it): notifications may have been missed until listen() succeeds again. */
  onLost(): void;
}

export interface ApiKeyFeed {
  /** Connect (if not connected) and LISTEN; rejects when that fails, and the caller tries again when it likes. */
  listen(): Promise<void>;
  /** Backend pid of the feed's connection (operators and tests). */
  pid(): Promise<number | undefined>;
  close(): Promise<void>;
}

/** The feed over one connection of its own to `url`; nothing connects until listen(). */
export function openApiKeyFeed(url: string, on: ApiKeyFeedEvents): ApiKeyFeed {
  // `onnotify` is a supported option that postgres.js's typings omit.
  const sql = postgres(url, {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    connection: { application_name: 'propsync-api-auth' },
    onnotify: (_channel: string, payload: string) => on.onChange(payload),
    onclose: () => on.onLost(),
  } as postgres.Options<Record<string, postgres.PostgresType>>);
  return {
    async listen() {
      await sql.unsafe(`listen "${API_KEYS_CHANNEL}"`);
    },
    async pid() {
      const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      return row?.pid;
    },
    async close() {
      await sql.end({ timeout: 2 });
    },
  };
}
