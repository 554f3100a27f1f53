/**
 * Bearer API keys for /v1. Keys are looked up by sha256 and cached per process for AUTH_CACHE_MS; a trigger on
 * api_keys NOTIFYs every change to revoked_at, scopes or mode, and each process LISTENs and evicts, so a revocation
 * takes effect at once everywhere. While the LISTEN connection is down (a notification could be missed) the cache
 * is not trusted: every request goes to the database, and the cache starts empty once the connection is back.
 */
import type { MiddlewareHandler } from 'hono';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import { keepApiKeyFeed } from '../../db/feeds';
import type { Db } from '../../db/client';
import { apiKeyByHash, hashApiKey, recordApiKeyUse } from '../../db/tenants';
import type { Mode } from '../../domain/plans';
import { ApiError } from '../problem';
import type { Principal } from './env';

const KEY = /^sk_(test|live)_[A-Za-z0-9]{32,128}$/;
const MAX_CACHED = 10_000;
const RELISTEN_MS = 1_000;
/** last_used_at is written at most this often per key (the UPDATE also checks it, across processes). */
const TOUCH_EVERY_MS = 60_000;

interface Cached {
  principal: Principal;
  expiresAt: number;
}

export interface ApiKeyAuth {
  middleware: MiddlewareHandler;
  /** The caller behind an `Authorization` header value, or a 401 ApiError: what the middleware does, for the read fast path. */
  principalOf(authorization: string | undefined): Promise<Principal>;
  /** Whether cached keys are trusted right now (the LISTEN connection is up). */
  readonly listening: boolean;
  /** Backend pid of the LISTEN connection (operators and tests), undefined while it is down. */
  listenerPid(): Promise<number | undefined>;
  close(): Promise<void>;
}

const unauthorized = (detail: string) => new ApiError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer realm="api"' } });

export function createApiKeyAuth(deps: { config: Config; db: Db; logger: Logger }): ApiKeyAuth {
  const { config, db, logger } = deps;
  const served = new Set<Mode>(config.SERVED_MODES);
  const cache = new Map<string, Cached>();
  const touchedAt = new Map<string, number>();
  /** Bumped on every notification and reconnect, so a lookup that raced with one is not cached. */
  let generation = 0;

  function evictAll() {
    generation++;
    cache.clear();
  }

  // A connection of its own (db/feeds.ts): its closing tells us when notifications may have been missed.
  const feed = keepApiKeyFeed(config.DATABASE_URL, RELISTEN_MS, {
    onNotify: (keyHash) => {
      generation++;
      cache.delete(keyHash);
    },
    // Whatever changed while the connection was down is unknown: the cache starts empty.
    onListening: evictAll,
    onLost: evictAll,
    onUnavailable: (err) => logger.warn({ err }, 'api key revocation feed unavailable; authenticating every request against the database'),
  });

  function touch(principal: Principal) {
    const now = Date.now();
    if ((touchedAt.get(principal.keyId) ?? 0) > now - TOUCH_EVERY_MS) return;
    // Bounded like the cache: forgetting when a key was last recorded costs at most one early UPDATE per key.
    if (touchedAt.size >= MAX_CACHED) touchedAt.clear();
    touchedAt.set(principal.keyId, now);
    recordApiKeyUse(db, principal.keyId).catch((err: unknown) => logger.warn({ err }, 'could not record api key use'));
  }

  async function authenticate(header: string | undefined): Promise<Principal> {
    if (!header) throw unauthorized('Missing Authorization header; send `Authorization: Bearer <API key>`.');
    const m = /^Bearer +(\S+) *$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header; expected `Bearer <API key>`.');
    const key = m[1]!;
    const km = KEY.exec(key);
    if (!km) throw unauthorized('Invalid API key.');
    const mode = km[1] as Mode;
    if (!served.has(mode)) throw unauthorized(`This deployment does not serve ${mode}-mode keys.`);
    const hash = hashApiKey(key);

    const now = Date.now();
    if (feed.listening) {
      const hit = cache.get(hash);
      if (hit && hit.expiresAt > now) return hit.principal;
    }
    const before = generation;
    const row = await apiKeyByHash(db, hash);
    if (!row) throw unauthorized('Invalid API key.');
    if (row.revoked_at) throw unauthorized('This API key has been revoked.');
    if (row.mode !== mode) throw unauthorized('Invalid API key.');
    const principal: Principal = { keyId: row.id, organizationId: row.organization_id, mode: row.mode, scopes: row.scopes };
    if (feed.listening && before === generation && config.AUTH_CACHE_MS > 0) {
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
      cache.set(hash, { principal, expiresAt: now + config.AUTH_CACHE_MS });
    }
    return principal;
  }

  async function principalOf(authorization: string | undefined): Promise<Principal> {
    void feed.start();
    const principal = await authenticate(authorization);
    touch(principal);
    return principal;
  }

  return {
    get listening() {
      return feed.listening;
    },
    listenerPid: () => feed.pid(),
    principalOf,
    middleware: async (c, next) => {
      c.set('principal' as never, (await principalOf(c.req.header('authorization'))) as never);
      await next();
    },
    close: () => feed.close(),
  };
}
