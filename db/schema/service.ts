/**
 * What the service keeps for itself: the API's rate-limit buckets, leases of singleton loops, console sessions
 * and the admin token's failed attempts.
 */
import { doublePrecision, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { ts } from './columns';

/** Org-wide token buckets for the API rate limit, shared by every API process. */
export const rateLimitBuckets = pgTable('rate_limit_buckets', {
  organizationId: uuid('organization_id').primaryKey(),
  tokens: doublePrecision('tokens').notNull(),
  refilledAt: ts('refilled_at').notNull(),
});

/** Leases of singleton background loops (the outbox relay): one holder at a time, taken over when it lapses. */
export const leaseLocks = pgTable('lease_locks', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: ts('expires_at').notNull(),
});

/**
 * Operator console sign-ins. The browser holds a random token in an HttpOnly cookie; only its HMAC under a key derived
 * from ADMIN_TOKEN is stored (api/console/session.ts), so a copy of this table signs nobody in and a row written
 * straight into it opens no session. Each session has its own CSRF token for the console's forms, and a value derived
 * by scrypt from the admin token it was opened with (slow to test guesses against): rotating ADMIN_TOKEN ends every
 * session.
 * Sign-out deletes the row.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    csrfToken: text('csrf_token').notNull(),
    adminTokenHash: text('admin_token_hash').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('console_sessions_expires_idx').on(t.expiresAt)],
);

/**
 * Wrong admin tokens (admin API bearers, console sign-ins), counted per client address (`address:<ip or IPv6 /64>`)
 * and per token prefix (`prefix:<HMAC of the first characters>`, never the characters themselves), so that every API
 * process throttles the same guesser (api/admin/auth.ts; the statements are in db/admin-auth-failures.ts). A count is
 * forgotten once the window passes without a failure; `blocked_until` is when the key may try again.
 */
export const adminAuthFailures = pgTable(
  'admin_auth_failures',
  {
    key: text('key').primaryKey(),
    failures: integer('failures').notNull(),
    lastFailedAt: ts('last_failed_at').notNull(),
    blockedUntil: ts('blocked_until'),
  },
  (t) => [index('admin_auth_failures_last_failed_idx').on(t.lastFailedAt)],
);
