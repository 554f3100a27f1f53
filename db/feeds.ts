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

interface Feed {
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

/** What a kept feed tells its owner, besides each notification. */
interface KeptFeedEvents extends FeedEvents {
  /** The LISTEN took effect (at start and after each loss): what was missed before it is unknown. */
  onListening(): void;
  /** The LISTEN could not be set up; it is tried again after a while. */
  onUnavailable(err: unknown): void;
}

export interface KeptFeed {
  /** Whether notifications are heard right now (the LISTEN is up). */
  readonly listening: boolean;
  /** Starts listening (once; later calls do nothing). */
  start(): Promise<void>;
  /** Backend pid of the LISTEN connection, undefined while it is down. */
  pid(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * A feed kept listening: opened at start(), LISTENed again `relistenMs` after a failure or a loss, for as long as it
 * is not closed. Its owner learns each notification, each (re)start of the LISTEN and each loss.
 */
function keepListening(open: (on: FeedEvents) => Feed, relistenMs: number, on: KeptFeedEvents): KeptFeed {
  let feed: Feed | undefined;
  let started: Promise<void> | undefined;
  let listening = false;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  async function listen(): Promise<void> {
    if (closed) return;
    feed ??= open({
      onNotify: (payload) => on.onNotify(payload),
      onLost: () => {
        listening = false;
        on.onLost();
        if (!closed) scheduleListen();
      },
    });
    try {
      await feed.listen();
      listening = true;
      on.onListening();
    } catch (err) {
      on.onUnavailable(err);
      scheduleListen();
    }
  }

  function scheduleListen() {
    if (retry || closed) return;
    retry = setTimeout(() => {
      retry = undefined;
      void listen();
    }, relistenMs);
    retry.unref();
  }

  return {
    get listening() {
      return listening;
    },
    start: () => (started ??= listen()),
    async pid() {
      if (!listening || !feed) return undefined;
      return feed.pid();
    },
    async close() {
      if (closed) return;
      closed = true;
      listening = false;
      clearTimeout(retry);
      await started?.catch(() => {});
      await feed?.close();
    },
  };
}

/** API-key changes, kept listening: `onNotify` gets the changed key's sha256. */
export const keepApiKeyFeed = (url: string, relistenMs: number, on: KeptFeedEvents): KeptFeed =>
  keepListening((events) => openFeed(url, CHANNELS.apiKeys, 'propsync-api-auth', events), relistenMs, on);

/** Operations that ended, kept listening: `onNotify` gets the Operation's id. */
export const keepOperationEndedFeed = (url: string, relistenMs: number, on: KeptFeedEvents): KeptFeed =>
  keepListening((events) => openFeed(url, CHANNELS.operationEnded, 'propsync-api-waits', events), relistenMs, on);
