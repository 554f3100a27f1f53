/**
 * Operator console sessions (api/console/session.ts): each row keeps a session token's HMAC, its CSRF token and the
 * digest of the admin token it was opened with; never a token itself.
 */
import { and, eq, gt, lt, or } from 'drizzle-orm';
import type { Db } from './client';
import { consoleSessions } from './schema';

type ConsoleSessionRow = typeof consoleSessions.$inferSelect;

/**
 * Store a new session, first removing expired ones and the session the browser held before (`replaces`, the stored
 * hash of its token), if any.
 */
export async function openConsoleSession(db: Db, session: ConsoleSessionRow, replaces: string | undefined): Promise<void> {
  const now = session.createdAt;
  await db
    .delete(consoleSessions)
    .where(replaces ? or(lt(consoleSessions.expiresAt, now), eq(consoleSessions.tokenHash, replaces)) : lt(consoleSessions.expiresAt, now));
  await db.insert(consoleSessions).values(session);
}

/**
 * The live session of a stored token hash (its CSRF token and expiry), if it was opened with the admin token whose
 * digest is `adminTokenHash`.
 */
export async function findConsoleSession(db: Db, tokenHash: string, adminTokenHash: string, now: Date): Promise<{ csrf: string; expiresAt: Date } | undefined> {
  const [row] = await db
    .select({ csrf: consoleSessions.csrfToken, expiresAt: consoleSessions.expiresAt })
    .from(consoleSessions)
    .where(and(eq(consoleSessions.tokenHash, tokenHash), eq(consoleSessions.adminTokenHash, adminTokenHash), gt(consoleSessions.expiresAt, now)));
  return row;
}

/** End the session of a stored token hash. */
export async function closeConsoleSession(db: Db, tokenHash: string): Promise<void> {
  await db.delete(consoleSessions).where(eq(consoleSessions.tokenHash, tokenHash));
}
