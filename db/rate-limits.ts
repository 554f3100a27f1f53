/**
 * The organization-wide API rate limit's shared state: one token bucket row per organization in rate_limit_buckets,
 * which every API process takes tokens from in leases (api/middleware/rate-limit.ts) and gives back what it did not
 * spend. The bucket refills continuously at the organization's rate up to its burst; the row stores the tokens as of
 * `refilled_at`, and the refill since is added (and capped at the burst) whenever tokens are taken.
 */
import type postgres from 'postgres';
import { DEFAULT_BURST_FRACTION, PLAN_RULES } from '../domain/plans';
import { planRuleCase } from './plan-sql';

/** The limits of the moment and what one reservation got. */
export interface Reservation {
  /** Requests per minute: the override, else the highest plan among the organization's integrations. */
  perMinute: number;
  /** Whether `perMinute` is the organization's own override rather than a plan's. */
  custom: boolean;
  /** The bucket's size (the burst): the override, else 10 % of the minute. */
  cap: number;
  /** Tokens per second. */
  rate: number;
  /** Tokens in the bucket just before this reservation (refill included, capped). */
  available: number;
  /** Whole tokens taken: at most what was asked for and what was available. */
  granted: number;
}

const planCase = planRuleCase('rateLimitPerMinute');

/**
 * One statement: the limits (fresh from organizations and integrations, so an override applies at once), the
 * refill since the last reservation, and the grant, under the bucket row's lock. It returns no row the first time an
 * organization is seen (the insert is not visible to the same statement); the caller simply asks again.
 */
const RESERVE = `
with lim as (
  select coalesce(o.rate_limit_per_minute,
                  (select max(${planCase}) from integrations i where i.organization_id = o.id and i.deleted_at is null),
                  ${PLAN_RULES.starter.rateLimitPerMinute})::float8 as per_minute,
         o.rate_limit_burst as burst,
         o.rate_limit_per_minute is not null as custom
  from organizations o where o.id = $1
), cfg as (
  select per_minute, custom, coalesce(burst, greatest(1, ceil(per_minute * ${DEFAULT_BURST_FRACTION})))::float8 as cap, per_minute / 60.0 as rate from lim
), ins as (
  insert into rate_limit_buckets (organization_id, tokens, refilled_at)
  select $1, cap, now() from cfg
  on conflict (organization_id) do nothing
), cur as (
  select tokens, refilled_at from rate_limit_buckets where organization_id = $1 for update
), calc as (
  select cfg.per_minute, cfg.custom, cfg.cap, cfg.rate,
         least(cfg.cap, cur.tokens + greatest(0, extract(epoch from clock_timestamp() - cur.refilled_at)) * cfg.rate) as avail,
         greatest(cur.refilled_at, clock_timestamp()) as at
  from cur, cfg
), grant_ as (
  select calc.*, least($2::float8, floor(avail)) as granted from calc
), upd as (
  update rate_limit_buckets b set tokens = g.avail - g.granted, refilled_at = g.at
  from grant_ g where b.organization_id = $1
)
select per_minute, custom, cap, rate, avail, granted from grant_`;

/**
 * Takes up to `want` whole tokens from the organization's bucket (creating it full the first time). Undefined only
 * on an organization's very first reservation, or for an organization that does not exist: ask once more.
 */
export async function reserveTokens(sql: postgres.Sql, organizationId: string, want: number): Promise<Reservation | undefined> {
  const [row] = await sql.unsafe<{ per_minute: number; custom: boolean; cap: number; rate: number; avail: number; granted: number }[]>(
    RESERVE,
    [organizationId, want],
    { prepare: true },
  );
  return row && { perMinute: row.per_minute, custom: row.custom, cap: row.cap, rate: row.rate, available: row.avail, granted: row.granted };
}

/**
 * Gives back tokens taken and not spent. The stored count may pass the burst for a moment: the next reservation adds
 * the refill and caps the sum at the burst, which is what the bucket would hold had the tokens never been taken.
 */
export async function returnTokens(sql: postgres.Sql, organizationId: string, tokens: number): Promise<void> {
  await sql`update rate_limit_buckets set tokens = tokens + ${tokens}::float8 where organization_id = ${organizationId}`;
}
