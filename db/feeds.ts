/**
 * Feeds of database notifications the API acts on, each over a connection of its own rather than the pool's
 * sql.listen(): its closing tells the caller when notifications may have been missed.
 * - API-key changes, which the key cache evicts by (api/middleware/auth.ts): a trigger on api_keys
 *   (db/migrations, api_keys_notify_change) NOTIFYs every change to a key's revoked_at, scopes or mode, with the
 *   key's sha256 as the payload.
 * - Operations that ended, which held polls answer at (api/operation-waits.ts): a trigger on operations
 *   (operations_notify_ended) NOTIFYs the id of each one that turns succeeded or failed, at its commit.
 */
import postgres from 'postgres';

/** Channels of the triggers in db/migrations. */
const CHANNELS = { apiKeys: 'api_keys_changed', operationEnded: 'operation_ended' } as const;

interface FeedEvents {
  /** A notification: its payload (a key's sha256; an Operation's id). */
  onNotify(payload: string): void;
  /** The connection closed (also when close() ends it): notifications may have been missed until listen() succeeds again. */
  onLost(): void;
}

export interface Feed {
  /** Connect (if not connected) and LISTEN; rejects when that fails, and the caller tries again when it likes. */
  listen(): Promise<void>;
  /** Backend pid of the feed's connection (operators and tests). */
  pid(): Promise<number | undefined>;
  close(): Promise<void>;
}

/** The feed of one channel over one connection of its own to `url`; nothing connects until listen(). */
function openFeed(url: string, channel: string, applicationName: string, on: FeedEvents): Feed {
  // `onnotify` is a supported option that postgres.js's typings omit.
  const sql = postgres(url, {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    connection: { application_name: applicationName },
    onnotify: (_channel: string, payload: string) => on.onNotify(payload),
    onclose: () => on.onLost(),
  } as postgres.Options<Record<string, postgres.PostgresType>>);
  return {
    async listen() {
      await sql.unsafe(`listen "${channel}"`);
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

/** API-key changes: `onNotify` gets the changed key's sha256. */
export const openApiKeyFeed = (url: string, on: FeedEvents): Feed => openFeed(url, CHANNELS.apiKeys, 'propsync-api-auth', on);

/** Operations that ended: `onNotify` gets the Operation's id. */
export const openOperationEndedFeed = (url: string, on: FeedEvents): Feed => openFeed(url, CHANNELS.operationEnded, 'propsync-api-waits', on);
