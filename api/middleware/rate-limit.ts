/**
 * The organization-wide rate limit (DECISIONS.md Plans), shared by every API process through one token bucket row per
 * organization in rate_limit_buckets. The budget per minute is the organization's override, else the highest plan
 * among its integrations; the bucket holds the burst (override, else 10 % of the budget) and refills continuously.
 *
 * To keep the database off the hot path, a process takes small batches of tokens with one atomic statement and
 * spends them locally for at most a second; the batch is a small fraction of the burst so processes stay fair and
 * the limit holds across processes. Once the bucket is empty, the time until the next token is known exactly, so
 * the process refuses locally until then without asking again.
 */
import type { MiddlewareHandler } from 'hono';
import type { Db } from '../../db/client';
import { DEFAULT_BURST_FRACTION, PLAN_RULES } from '../../domain/plans';
import { ApiError } from '../problem';
import type { Principal } from './env';

/** Reserved tokens a process has not spent within this time are dropped, so an idle process cannot hoard them. */
const LOCAL_TTL_MS = 1_000;
const MAX_BATCH = 100;

interface OrgState {
  local: number;
  localExpiresAt: number;
  blockedUntil: number;
  /** Figures of the last reservation, for the RateLimit-* headers. */
  perMinute: number;
  cap: number;
  rate: number;
  bucketLeft: number;
  pending?: Promise<void>;
}

export interface Decision {
  allowed: boolean;
  perMinute: number;
  remaining: number;
  /** Seconds until the burst is full again. */
  reset: number;
  /** Seconds until a request would be allowed (when refused). */
  retryAfter: number;
}

const planCase = `case i.plan ${Object.entries(PLAN_RULES)
  .map(([plan, r]) => `when '${plan}' then ${r.rateLimitPerMinute}`)
  .join(' ')} end`;

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
         o.rate_limit_burst as burst
  from organizations o where o.id = $1
), cfg as (
  select per_minute, coalesce(burst, greatest(1, ceil(per_minute * ${DEFAULT_BURST_FRACTION})))::float8 as cap, per_minute / 60.0 as rate from lim
), ins as (
  insert into rate_limit_buckets (organization_id, tokens, refilled_at)
  select $1, cap, now() from cfg
  on conflict (organization_id) do nothing
), cur as (
  select tokens, refilled_at from rate_limit_buckets where organization_id = $1 for update
), calc as (
  select cfg.per_minute, cfg.cap, cfg.rate,
         least(cfg.cap, cur.tokens + greatest(0, extract(epoch from clock_timestamp() - cur.refilled_at)) * cfg.rate) as avail,
         greatest(cur.refilled_at, clock_timestamp()) as at
  from cur, cfg
), grant_ as (
  select calc.*, least($2::float8, floor(avail)) as granted from calc
), upd as (
  update rate_limit_buckets b set tokens = g.avail - g.granted, refilled_at = g.at
  from grant_ g where b.organization_id = $1
)
select per_minute, cap, rate, avail, granted from grant_`;

export interface RateLimiter {
  take(organizationId: string): Promise<Decision>;
  middleware: MiddlewareHandler;
}

export function createRateLimiter(db: Db): RateLimiter {
  const orgs = new Map<string, OrgState>();

  async function reserve(orgId: string, s: OrgState): Promise<void> {
    const want = Math.max(1, Math.min(MAX_BATCH, Math.floor(s.cap / 20)));
    for (let attempt = 0; attempt < 2; attempt++) {
      const [row] = await db.$client.unsafe<{ per_minute: number; cap: number; rate: number; avail: number; granted: number }[]>(RESERVE, [orgId, want], {
        prepare: true,
      });
      if (!row) continue;
      const now = Date.now();
      s.perMinute = row.per_minute;
      s.cap = row.cap;
      s.rate = row.rate;
      s.bucketLeft = row.avail - row.granted;
      if (row.granted >= 1) {
        s.local = row.granted;
        s.localExpiresAt = now + LOCAL_TTL_MS;
      } else {
        s.local = 0;
        s.blockedUntil = now + Math.ceil(((1 - row.avail) / row.rate) * 1000);
      }
      return;
    }
    throw new Error(`rate limit: organization ${orgId} not found`);
  }

  function decision(s: OrgState, allowed: boolean, now: number): Decision {
    const remaining = Math.max(0, Math.floor(s.bucketLeft + s.local));
    return {
      allowed,
      perMinute: Math.round(s.perMinute),
      remaining,
      reset: Math.max(0, Math.ceil((s.cap - remaining) / s.rate)),
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil((s.blockedUntil - now) / 1000)),
    };
  }

  async function take(orgId: string): Promise<Decision> {
    let s = orgs.get(orgId);
    if (!s) {
      s = { local: 0, localExpiresAt: 0, blockedUntil: 0, perMinute: 0, cap: 1, rate: 1, bucketLeft: 0 };
      orgs.set(orgId, s);
    }
    for (;;) {
      const now = Date.now();
      if (s.blockedUntil > now) return decision(s, false, now);
      if (s.local >= 1 && s.localExpiresAt > now) {
        s.local--;
        return decision(s, true, now);
      }
      if (!s.pending) {
        const state = s;
        state.pending = reserve(orgId, state).finally(() => {
          state.pending = undefined;
        });
      }
      await s.pending;
    }
  }

  return {
    take,
    middleware: async (c, next) => {
      const principal = c.get('principal' as never) as Principal;
      const d = await take(principal.organizationId);
      const headers = {
        'ratelimit-limit': String(d.perMinute),
        'ratelimit-remaining': String(d.remaining),
        'ratelimit-reset': String(d.reset),
      };
      if (!d.allowed) {
        throw new ApiError(
          'rate_limit_exceeded',
          `The organization's rate limit of ${d.perMinute} requests per minute is exhausted; retry after ${d.retryAfter} s.`,
          { headers: { ...headers, 'retry-after': String(d.retryAfter) } },
        );
      }
      // As with x-request-id: before the route for its own response, afterwards for error responses.
      for (const [k, v] of Object.entries(headers)) c.header(k, v);
      await next();
      if (c.res.status >= 400) for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
    },
  };
}
