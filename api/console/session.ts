/**
 * Operator console sessions. Signing in with the admin token opens a session: a random token in an HttpOnly,
 * SameSite=Strict cookie (Secure when the console is reached over HTTPS) that expires with the session. The database
 * keeps only the token's HMAC, the session's CSRF token and a value derived from the admin token it was opened with, so
 * every API replica sees the same sessions, sign-out ends one everywhere, and rotating ADMIN_TOKEN ends them all.
 *
 * The HMAC key is derived from ADMIN_TOKEN (keyFromAdminToken, HKDF-SHA256, purpose `console session token`): a
 * session is worth exactly the admin token, so that secret, which every API replica already holds and the database
 * never does, keys it, and a new token ends the sessions by construction. Whoever can write to console_sessions
 * still cannot mint a session (a bare SHA-256 of a token of one's own choosing would have been one). The
 * ENCRYPTION_KEYS are not used: they rotate on their own schedule and would end every session with each rotation.
 * Sessions stored before this (under a bare SHA-256, of the session token and of the admin token) no longer match,
 * and migration 0022 removed them: their operators sign in again.
 *
 * Which admin token opened a session is stored as adminTokenStamp (scrypt): any value computed from the token alone
 * lets whoever copies the table test token guesses against it offline, and scrypt makes each guess cost milliseconds
 * and 16 MiB where a digest or HKDF costs a microsecond. The token's own entropy stays the real protection (a live
 * deployment refuses the development token). Sessions stamped before (by HKDF) no longer match: sign in again.
 */
import { createHash, createHmac, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Db } from '../../db/client';
import { closeConsoleSession, findConsoleSession, openConsoleSession } from '../../db/console-sessions';
import { keyFromAdminToken } from '../admin/auth';

const SESSION_COOKIE = 'propsync_console';
const CONSOLE_PATH = '/console';

export interface ConsoleSession {
  csrf: string;
  expiresAt: Date;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time equality of two secrets of any length (their digests are compared). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** Whether the browser reached the console over HTTPS (directly, or through a proxy that says so). */
function isHttps(c: Context, publicBaseUrl: string): boolean {
  const forwarded = c.req.header('x-forwarded-proto')?.split(',')[0]?.trim();
  return new URL(c.req.url).protocol === 'https:' || forwarded === 'https' || publicBaseUrl.startsWith('https:');
}

/** What console_sessions.admin_token_hash holds for the admin token: scrypt (N 2^14, r 8), slow to guess against. */
export function adminTokenStamp(adminToken: string): string {
  return scryptSync(adminToken, 'propsync console session admin token', 32, { N: 2 ** 14, r: 8, p: 1 }).toString('hex');
}

export function createSessions(db: Db, opts: { adminToken: string; ttlMs: number; publicBaseUrl: string }) {
  // Which admin token opened a session: computed once per process (it costs tens of milliseconds by design).
  const adminTokenHash = adminTokenStamp(opts.adminToken);
  const sessionKey = keyFromAdminToken(opts.adminToken, 'console session token');
  /** What console_sessions.token_hash holds for a session token. */
  const stored = (token: string) => createHmac('sha256', sessionKey).update(token).digest('hex');

  return {
    /**
     * Opens a new session and sets its cookie; the session the browser held before (if any) ends, so a signed-in
     * browser never carries a session id chosen before sign-in. Expired sessions are purged on the way.
     */
    async open(c: Context): Promise<ConsoleSession> {
      const token = randomBytes(32).toString('base64url');
      const now = new Date();
      const session = { csrf: randomBytes(32).toString('base64url'), expiresAt: new Date(now.getTime() + opts.ttlMs) };
      const previous = getCookie(c, SESSION_COOKIE);
      await openConsoleSession(
        db,
        { tokenHash: stored(token), csrfToken: session.csrf, adminTokenHash, createdAt: now, expiresAt: session.expiresAt },
        previous ? stored(previous) : undefined,
      );
      setCookie(c, SESSION_COOKIE, token, {
        path: CONSOLE_PATH,
        httpOnly: true,
        sameSite: 'Strict',
        secure: isHttps(c, opts.publicBaseUrl),
        expires: session.expiresAt,
        maxAge: Math.floor(opts.ttlMs / 1000),
      });
      return session;
    },

    /** The session of the request's cookie, if it is live and was opened with the current admin token. */
    async find(c: Context): Promise<ConsoleSession | undefined> {
      const token = getCookie(c, SESSION_COOKIE);
      if (!token || token.length > 100) return undefined;
      return findConsoleSession(db, stored(token), adminTokenHash, new Date());
    },

    /** Ends the request's session (if any) and clears its cookie. */
    async close(c: Context): Promise<void> {
      const token = getCookie(c, SESSION_COOKIE);
      if (token) await closeConsoleSession(db, stored(token));
      deleteCookie(c, SESSION_COOKIE, { path: CONSOLE_PATH, httpOnly: true, sameSite: 'Strict', secure: isHttps(c, opts.publicBaseUrl) });
    },
  };
}
