/**
 * The statements of the admin-token throttle (api/admin/auth.ts): wrong admin tokens counted per client address and
 * per token prefix in admin_auth_failures, shared by every API process.
 *
 * Why a table of our own and not rate-limiter-flexible (the well-kept library for this): its RateLimiterPostgres
 * speaks to `pg`, Knex, Sequelize or TypeORM clients, not postgres.js, and creates its table at run time outside the
 * migrations; its RateLimiterDrizzle does work over this stack, but offers fixed windows with a fixed block duration.
 * Delays that grow with each failure need a second limiter and several statements per attempt (its brute-force
 * recipes read the count, verify, then add a failure), so a burst of parallel guesses all pass the read before the
 * first failure lands. Here one statement per wrong token counts it under the rows' locks, decides the block and
 * returns it, and the right token reads the blocks in the same order, so at most the allowance plus one guess per
 * delay gets an answer that tells right from wrong, however many arrive at once.
 *
 * Times are the database's (now()), so API processes with skewed clocks agree.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Tx } from './client';
import { adminAuthFailures } from './schema';

/** The two keys one attempt is counted under. */
export interface FailureKeys {
  /** `address:<client address>`. */
  address: string;
  /** `prefix:<HMAC of the token's first characters>`. */
  prefix: string;
}

export interface FailurePolicy {
  /** Failures of an address answered without a delay; each one beyond blocks the address. */
  addressAllowance: number;
  /** The same for a token prefix. */
  prefixAllowance: number;
  /** A key's failures are forgotten once this long passes without one and after its block. */
  windowMs: number;
  /** The block of the first failure beyond the allowance; it doubles with each further one. */
  delayMs: number;
  maxDelayMs: number;
}

export interface FailureOutcome {
  /** Whether the failure was counted: false when the address or the prefix was already blocked. */
  counted: boolean;
  /** How long the address or prefix is blocked from now on (0: not blocked). */
  blockedMs: number;
}

const ms = (n: number) => sql`(${n}::float8 * interval '1 millisecond')`;
/** Whether a row's failures are forgotten: the window has passed since its last failure and since its block ended. */
const forgotten = (windowMs: number) => sql`greatest(f.last_failed_at, f.blocked_until) <= now() - ${ms(windowMs)}`;

/** One key's upsert: counts the failure unless the key is blocked, and blocks it when the count passes its allowance. */
function countUnder(key: string, allowance: number, p: FailurePolicy, onlyIf?: SQL): SQL {
  const count = sql`(case when ${forgotten(p.windowMs)} then 1 else f.failures + 1 end)`;
  const blockAfter = (n: SQL) =>
    sql`case when ${n} > ${allowance}::int then now() + least(${p.maxDelayMs}::float8, ${p.delayMs}::float8 * power(2, least(${n} - ${allowance}::int - 1, 40))) * interval '1 millisecond' end`;
  return sql`
    insert into ${adminAuthFailures} as f (key, failures, last_failed_at, blocked_until)
    select ${key}::text, 1, now(), ${blockAfter(sql`1`)} ${onlyIf ? sql`where ${onlyIf}` : sql``}
    on conflict (key) do update set failures = ${count}, last_failed_at = now(), blocked_until = ${blockAfter(count)}
    where f.blocked_until is null or f.blocked_until <= now()
    returning f.blocked_until`;
}

/**
 * Counts a wrong admin token under its address and then its prefix, atomically per key. A key already blocked is not
 * counted (it was refused unseen), and a blocked address's guesses do not count against the prefix, so one address
 * cannot lock out a token family. The failure that passes an allowance starts the block it reports.
 */
export async function countAdminAuthFailure(db: Tx, keys: FailureKeys, policy: FailurePolicy): Promise<FailureOutcome> {
  const [row] = await db.execute<{ counted: boolean; blocked_ms: number }>(sql`
    with addr as (${countUnder(keys.address, policy.addressAllowance, policy)}),
    pre as (${countUnder(keys.prefix, policy.prefixAllowance, policy, sql`exists (select from addr)`)})
    select exists (select from addr) and exists (select from pre) as counted,
           coalesce(extract(epoch from greatest(
             (select blocked_until from addr),
             (select blocked_until from pre),
             (select max(blocked_until) from ${adminAuthFailures} where key in (${keys.address}, ${keys.prefix}))
           ) - now()) * 1000, 0)::float8 as blocked_ms`);
  return { counted: row!.counted, blockedMs: Math.max(0, row!.blocked_ms) };
}

/**
 * For the right admin token: how long its address or prefix is still blocked (0: not), and when neither is, forgets
 * the address's failures (a success resets the client's count; the prefix's count stays, as it is many clients').
 */
export async function forgetAddressFailuresUnlessBlocked(db: Tx, keys: FailureKeys): Promise<number> {
  const [row] = await db.execute<{ blocked_ms: number }>(sql`
    with blocked as (
      select max(blocked_until) as until from ${adminAuthFailures}
      where key in (${keys.address}, ${keys.prefix}) and blocked_until > now()
    ), forget as (
      delete from ${adminAuthFailures} where key = ${keys.address} and (select until from blocked) is null
    )
    select coalesce(extract(epoch from (select until from blocked) - now()) * 1000, 0)::float8 as blocked_ms`);
  return Math.max(0, row!.blocked_ms);
}

/** Deletes the counts that are forgotten anyway (the window has passed since the last failure and the block). */
export async function purgeStaleAdminAuthFailures(db: Tx, windowMs: number): Promise<number> {
  const rows = await db.execute(sql`
    delete from ${adminAuthFailures} as f
    where f.last_failed_at <= now() - ${ms(windowMs)} and ${forgotten(windowMs)}
    returning key`);
  return rows.length;
}
