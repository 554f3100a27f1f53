/**
 * The admin token: bearer auth of the admin API (the configured ADMIN_TOKEN only; API keys are for the public API),
 * and the guard that it and the console's sign-in share.
 *
 * Guessing it is throttled across every API process (the counts live in Postgres: db/admin-auth-failures.ts says
 * why a table of our own). A client address may present ADMIN_AUTH_ADDRESS_FAILURES wrong tokens, and all addresses
 * together ADMIN_AUTH_PREFIX_FAILURES wrong tokens that begin with the same ADMIN_AUTH_PREFIX_LENGTH characters (one
 * token family guessed from many addresses); each further wrong token blocks the address (or prefix) for a delay that
 * doubles from ADMIN_AUTH_DELAY_MS up to ADMIN_AUTH_MAX_DELAY_MS. While it is blocked, every token, the right one
 * too, is answered 429 rate_limit_exceeded with Retry-After (and a wrong one is not counted): accepting the right one
 * would tell it apart. Failures are forgotten ADMIN_AUTH_FAILURE_WINDOW_MS after the last one and the block, and the
 * right token resets its address's count. A request without a token (no or a malformed header, an empty form field)
 * is no guess and is not counted. Requests made in-process (the console's own calls, with the configured token) came
 * from no client: they are not throttled.
 */
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import {
  countAdminAuthFailure,
  forgetAddressFailuresUnlessBlocked,
  purgeStaleAdminAuthFailures,
  type FailureKeys,
  type FailurePolicy,
} from '../../db/admin-auth-failures';
import type { ApiDeps } from '../deps';
import { clientAddress } from '../middleware/client-address';
import { ApiError } from '../problem';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Counts nobody has failed under for a window are deleted at most this often per process (on a failure). */
const PURGE_EVERY_MS = 60_000;

/**
 * A 32-byte key for one `purpose`, derived from the admin token by HKDF-SHA256. It is as secret as the token, never
 * stored, and changes with it. HKDF is fast: a value stored that only the token determines is stamped with scrypt
 * instead (api/console/session.ts adminTokenStamp).
 */
export function keyFromAdminToken(adminToken: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', adminToken, 'propsync admin token', purpose, 32));
}

export interface AdminTokenGuard {
  /**
   * Whether `presented` is the admin token. For a request that came from a client it also counts a wrong token,
   * resets the address's count on the right one, and throws the 429 ApiError (with Retry-After) while the client's
   * address or the token's prefix is blocked, or when this wrong token starts a block.
   */
  verify(c: Context, presented: string): Promise<boolean>;
}

export function createAdminTokenGuard(deps: Pick<ApiDeps, 'config' | 'db' | 'logger'>): AdminTokenGuard {
  const { config, db, logger } = deps;
  const expected = digest(config.ADMIN_TOKEN);
  // The prefix is stored as its HMAC: a table of the first characters of guesses (and of the token) would tell too much.
  const prefixKey = keyFromAdminToken(config.ADMIN_TOKEN, 'throttle token prefix');
  const policy: FailurePolicy = {
    addressAllowance: config.ADMIN_AUTH_ADDRESS_FAILURES,
    prefixAllowance: config.ADMIN_AUTH_PREFIX_FAILURES,
    windowMs: config.ADMIN_AUTH_FAILURE_WINDOW_MS,
    delayMs: config.ADMIN_AUTH_DELAY_MS,
    maxDelayMs: config.ADMIN_AUTH_MAX_DELAY_MS,
  };
  let nextPurgeAt = 0;

  const keysOf = (address: string, token: string): FailureKeys => ({
    address: `address:${address}`,
    prefix: `prefix:${createHmac('sha256', prefixKey).update(token.slice(0, config.ADMIN_AUTH_PREFIX_LENGTH)).digest('hex')}`,
  });

  const tooMany = (blockedMs: number) => {
    // Whole milliseconds first: blocked_until is stored to the millisecond, so a fresh 3 s block may read 3000.4 ms.
    const seconds = Math.max(1, Math.ceil(Math.floor(blockedMs) / 1000));
    return new ApiError(
      'rate_limit_exceeded',
      `Too many wrong admin tokens from this address, or beginning like this one: every token is refused for ${seconds} s. Try again after that.`,
      { headers: { 'retry-after': String(seconds) } },
    );
  };

  return {
    async verify(c, presented) {
      // Comparing fixed-length digests keeps the comparison constant-time whatever the presented length.
      const right = timingSafeEqual(digest(presented), expected);
      const address = clientAddress(c, config.TRUST_PROXY);
      if (address === undefined) return right;
      const keys = keysOf(address, presented);
      if (right) {
        const blockedMs = await forgetAddressFailuresUnlessBlocked(db, keys);
        if (blockedMs > 0) throw tooMany(blockedMs);
        return true;
      }
      if (Date.now() >= nextPurgeAt) {
        nextPurgeAt = Date.now() + PURGE_EVERY_MS;
        await purgeStaleAdminAuthFailures(db, policy.windowMs);
      }
      const outcome = await countAdminAuthFailure(db, keys, policy);
      if (outcome.counted && outcome.blockedMs > 0) {
        logger.warn({ client_address: address, blocked_ms: Math.round(outcome.blockedMs) }, 'wrong admin tokens: blocking further attempts');
      }
      if (!outcome.counted || outcome.blockedMs > 0) throw tooMany(outcome.blockedMs);
      return false;
    },
  };
}

/** Bearer auth of the admin API through the guard. */
export function adminAuth(guard: AdminTokenGuard): MiddlewareHandler {
  const challenge = { headers: { 'www-authenticate': 'Bearer realm="admin"' } };
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (!header) throw new ApiError('unauthorized', 'Missing Authorization header; send `Authorization: Bearer <ADMIN_TOKEN>`.', challenge);
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match) throw new ApiError('unauthorized', 'Malformed Authorization header; expected `Bearer <ADMIN_TOKEN>`.', challenge);
    if (!(await guard.verify(c, match[1]!))) throw new ApiError('unauthorized', 'The admin token is not valid.', challenge);
    await next();
  };
}
