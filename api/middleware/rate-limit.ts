/**
 * The organization-wide rate limit (docs/decisions.md Plans), shared by every API process through one token bucket row per
 * organization (db/rate-limits.ts). The budget per minute is the organization's override, else the highest plan among
 * its integrations; the bucket holds the burst (override, else 10 % of the budget) and refills continuously.
 *
 * Tokens are taken in leases: a process claims a slice of the bucket with one statement and spends it locally, so most
 * requests never wait for the database. A slice is sized to about a second of the organization's traffic through this
 * process, and never more than a tenth of the burst (one token while the burst is under 20): that bounds how far the
 * answer can be from one shared bucket's, at one slice per process. When a slice runs low the next one is claimed in
 * the background, topping the lease up to one slice; a lease not topped up for LEASE_MS gives its unspent tokens back.
 * Once the bucket is empty the time until its next token is known, so the process refuses locally until then.
 *
 * The leases go through a few connections of the limiter's own with `synchronous_commit` off: a bucket's row is worth
 * no disk flush per claim (a crash loses at most the last fraction of a second of bookkeeping), and the claims never
 * queue behind the request pool. They have the API pool's connect and statement time-outs, and a claim waits at most
 * LOCK_TIMEOUT_MS for its bucket's row: a row held by someone else (a stuck session) or a slow claim fails that
 * organization's requests with the database-unavailable 503 and Retry-After, and ties up one connection of the
 * limiter, so the other organizations' claims go on through the others meanwhile.
 *
 * Every authenticated response says where the caller stands, in the fields of the IETF RateLimit header draft
 * (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy` names the two policies the bucket keeps, the burst
 * (`"burst";q=<burst>;w=<seconds the bucket takes to fill>`) and the budget (`"minute";q=<per minute>;w=60`), and
 * `RateLimit` says what is left of the burst now (`"burst";r=<remaining>;t=<seconds until it is full>`). A client
 * that sends at most q requests per w seconds of either policy is never refused. The older `RateLimit-Limit`,
 * `-Remaining` and `-Reset` fields (docs/decisions.md names them) carry the same burst figures, so they agree with each other.
 */
import type { MiddlewareHandler } from 'hono';
import postgres from 'postgres';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import { reserveTokens, returnTokens, type Reservation } from '../../db/rate-limits';
import { planOfLimit } from '../../observability/metrics';
import { ApiError } from '../problem';
import type { Principal } from './env';

/** Tokens a process has not spent this long after its last claim go back to the bucket. */
const LEASE_MS = 1_000;
/** A slice never exceeds this share of the burst, nor MAX_SLICE tokens. */
const SLICE_SHARE = 0.1;
const MAX_SLICE = 100;
/** The lease is topped up in the background once it holds this share of a slice or less. */
const TOP_UP_SHARE = 0.25;
/** The traffic rate is re-estimated over windows at least this long. */
const RATE_WINDOW_MS = 250;
/** An organization's state is dropped after this long without a request (and without tokens held). */
const FORGET_MS = 60_000;
/**
 * Connections of the limiter. An organization has one claim in flight at a time, so claims stuck on their rows hold up
 * other organizations' only once this many are stuck at once (which then queue behind them, for LOCK_TIMEOUT_MS at most).
 */
const CONNECTIONS = 4;
/**
 * How long a claim waits for its bucket's row. Claims of other processes hold it for about a millisecond each, so a
 * wait this long means the row is held by something else.
 */
const LOCK_TIMEOUT_MS = 1_000;

interface OrgState {
  orgId: string;
  /** Whole tokens held (the lease) and when they go back unless topped up before. */
  local: number;
  leaseUntil: number;
  /** The bucket was empty: no token before this time, unless the lease still holds some. */
  blockedUntil: number;
  /** Figures of the last claim, for the headers: the limits, and the bucket after the claim, as of `seenAt`. */
  perMinute: number;
  custom: boolean;
  cap: number;
  rate: number;
  bucketLeft: number;
  seenAt: number;
  /** Requests per second through this process (a moving estimate) and the count since `countedSince`. */
  traffic: number;
  counted: number;
  countedSince: number;
  lastUsed: number;
  /** Requests waiting for a claim in flight. */
  waiting: number;
  pending?: Promise<void>;
  timer?: NodeJS.Timeout;
}

interface Decision {
  allowed: boolean;
  perMinute: number;
  /** Whether the budget is the organization's own limit rather than a plan's. */
  custom: boolean;
  /** The bucket's size: requests that may be sent at once. */
  burst: number;
  /** Seconds an empty bucket takes to fill (rounded up, so that q per w never exceeds the refill rate). */
  burstWindow: number;
  /** Requests left in the burst now (never more than `burst`). */
  remaining: number;
  /** Seconds until the burst is full again. */
  reset: number;
  /** Seconds until a request would be allowed (when refused). */
  retryAfter: number;
}

export interface RateLimiter {
  take(organizationId: string): Promise<Decision>;
  /**
   * Takes a token for the organization: the headers every answer to the request carries, or the 429 ApiError (with
   * its own headers) when there is none. The middleware's whole decision, for the read fast path too.
   */
  admit(organizationId: string): Promise<Record<string, string>>;
  middleware: MiddlewareHandler;
  /** Gives every held token back and closes the limiter's connections. */
  close(): Promise<void>;
}

/** The response headers of a decision (see the header of this file). */
function rateLimitHeaders(d: Decision): Record<string, string> {
  return {
    'ratelimit-policy': `"burst";q=${d.burst};w=${d.burstWindow}, "minute";q=${d.perMinute};w=60`,
    ratelimit: `"burst";r=${d.remaining};t=${d.reset}`,
    'ratelimit-limit': String(d.burst),
    'ratelimit-remaining': String(d.remaining),
    'ratelimit-reset': String(d.reset),
  };
}

/** A 429 of the organization's limit, with the plan its budget comes from (`custom`: its own), for the metrics. */
export class RateLimitedError extends ApiError {
  constructor(
    detail: string,
    headers: Record<string, string>,
    readonly plan: string,
  ) {
    super('rate_limit_exceeded', detail, { headers });
  }
}

/** The largest slice of an organization's bucket one process may hold. */
export function maxSliceOf(cap: number): number {
  return Math.max(1, Math.min(MAX_SLICE, Math.floor(cap * SLICE_SHARE)));
}

export function createRateLimiter(deps: { config: Config; logger: Logger }): RateLimiter {
  const { config, logger } = deps;
  const orgs = new Map<string, OrgState>();
  let closed = false;
  const sql = postgres(config.DATABASE_URL, {
    max: CONNECTIONS,
    onnotice: () => {},
    fetch_types: false,
    // The API pool's time-outs (api/main.ts): a database that cannot be reached or answer is a 503 within seconds.
    connect_timeout: config.DB_CONNECT_TIMEOUT_MS / 1000,
    connection: {
      application_name: 'propsync-api-ratelimit',
      synchronous_commit: 'off',
      statement_timeout: config.API_STATEMENT_TIMEOUT_MS || config.DB_STATEMENT_TIMEOUT_MS,
      lock_timeout: LOCK_TIMEOUT_MS,
    } as Record<string, string | number>,
  });

  function stateOf(orgId: string): OrgState {
    let s = orgs.get(orgId);
    if (!s) {
      const now = Date.now();
      s = {
        orgId,
        local: 0,
        leaseUntil: 0,
        blockedUntil: 0,
        perMinute: 0,
        custom: false,
        cap: 1,
        rate: 1,
        bucketLeft: 0,
        seenAt: now,
        traffic: 0,
        counted: 0,
        countedSince: now,
        lastUsed: now,
        waiting: 0,
      };
      orgs.set(orgId, s);
    }
    return s;
  }

  /** The slice this process should hold: about LEASE_MS of its traffic, within the bound. */
  function sliceOf(s: OrgState, now: number): number {
    const elapsed = now - s.countedSince;
    if (elapsed >= RATE_WINDOW_MS) {
      const seen = (s.counted * 1000) / elapsed;
      // A long quiet spell says more than the old estimate; otherwise the two are blended.
      s.traffic = elapsed > 4 * LEASE_MS ? seen : (s.traffic + seen) / 2;
      s.counted = 0;
      s.countedSince = now;
    }
    return Math.min(maxSliceOf(s.cap), Math.max(1, Math.ceil((s.traffic * LEASE_MS) / 1000)));
  }

  function apply(s: OrgState, r: Reservation, want: number, now: number) {
    s.perMinute = r.perMinute;
    s.custom = r.custom;
    s.cap = r.cap;
    s.rate = r.rate;
    s.bucketLeft = r.available - r.granted;
    s.seenAt = now;
    if (r.granted >= 1) {
      s.local += r.granted;
      s.leaseUntil = now + LEASE_MS;
      s.blockedUntil = 0;
      arm(s);
    }
    // Short of what was asked: the bucket is down to a fraction of a token, and its next one is this far away.
    if (r.granted < want) s.blockedUntil = now + Math.ceil(((1 - (r.available - r.granted)) / r.rate) * 1000);
  }

  /** One claim of up to `want` tokens (asking again once for a bucket that did not exist yet). */
  async function claim(orgId: string, s: OrgState, want: number): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await reserveTokens(sql, orgId, want);
      if (r) return apply(s, r, want, Date.now());
    }
    throw new Error(`rate limit: organization ${orgId} not found`);
  }

  function startClaim(orgId: string, s: OrgState, want: number): Promise<void> {
    s.pending ??= claim(orgId, s, want).finally(() => {
      s.pending = undefined;
    });
    return s.pending;
  }

  /** The lease's timer: at its end, what was not spent goes back (a top-up in flight or since moves the end). */
  function arm(s: OrgState) {
    if (s.timer || closed) return;
    const fire = () => {
      s.timer = undefined;
      if (s.pending) {
        void s.pending.then(
          () => arm(s),
          () => arm(s),
        );
      } else if (s.leaseUntil > Date.now()) arm(s);
      else if (s.local >= 1) void giveBack(s);
    };
    s.timer = setTimeout(fire, Math.max(0, s.leaseUntil - Date.now()));
    s.timer.unref();
  }

  function giveBack(s: OrgState): Promise<void> {
    const tokens = s.local;
    s.local = 0;
    s.bucketLeft += tokens;
    return returnTokens(sql, s.orgId, tokens).catch((err: unknown) =>
      logger.warn({ err, organizationId: s.orgId, tokens }, 'could not give rate-limit tokens back'),
    );
  }

  // Organizations gone quiet are forgotten, so the map holds only those seen in the last minute or so.
  const sweeper = setInterval(() => {
    const quiet = Date.now() - FORGET_MS;
    for (const [orgId, s] of orgs) if (s.lastUsed < quiet && s.local < 1 && !s.pending && !s.timer && s.waiting === 0) orgs.delete(orgId);
  }, FORGET_MS);
  sweeper.unref();

  function decision(s: OrgState, allowed: boolean, now: number): Decision {
    const bucket = Math.min(s.cap, s.bucketLeft + (Math.max(0, now - s.seenAt) / 1000) * s.rate);
    const burst = Math.max(1, Math.floor(s.cap));
    const remaining = Math.min(burst, Math.max(0, Math.floor(bucket + s.local)));
    return {
      allowed,
      perMinute: Math.round(s.perMinute),
      custom: s.custom,
      burst,
      burstWindow: Math.max(1, Math.ceil(burst / s.rate)),
      remaining,
      reset: Math.max(0, Math.ceil((s.cap - remaining) / s.rate)),
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil((s.blockedUntil - now) / 1000)),
    };
  }

  async function take(orgId: string): Promise<Decision> {
    const s = stateOf(orgId);
    s.counted++;
    for (;;) {
      const now = Date.now();
      s.lastUsed = now;
      if (s.local >= 1) {
        s.local--;
        const slice = sliceOf(s, now);
        // Top the lease up to one slice before it runs dry, so that the next requests do not wait for the claim (a
        // slice of one token is this process's whole traffic for a second: nothing to gain by claiming ahead).
        if (slice > 1 && !s.pending && s.local <= Math.floor(slice * TOP_UP_SHARE) && s.blockedUntil <= now) {
          startClaim(orgId, s, slice - s.local).catch((err: unknown) => logger.warn({ err, organizationId: orgId }, 'rate-limit top-up failed'));
        }
        return decision(s, true, now);
      }
      if (s.blockedUntil > now) return decision(s, false, now);
      // Nothing held: wait for the claim in flight, or claim a slice (or as many tokens as requests are waiting for
      // one, within the bound). A failed claim fails every request that waited for it.
      s.waiting++;
      try {
        await (s.pending ?? startClaim(orgId, s, Math.min(maxSliceOf(s.cap), Math.max(sliceOf(s, now), s.waiting))));
      } finally {
        s.waiting--;
      }
    }
  }

  async function admit(orgId: string): Promise<Record<string, string>> {
    const d = await take(orgId);
    const headers = rateLimitHeaders(d);
    if (!d.allowed) {
      throw new RateLimitedError(
        `The organization's rate limit of ${d.perMinute} requests per minute (bursts of ${d.burst}) is exhausted; retry after ${d.retryAfter} s.`,
        { ...headers, 'retry-after': String(d.retryAfter) },
        // Named only for a refusal (the metrics' label), not on every request admitted.
        d.custom ? 'custom' : planOfLimit(d.perMinute),
      );
    }
    return headers;
  }

  return {
    take,
    admit,
    middleware: async (c, next) => {
      const principal = c.get('principal' as never) as Principal;
      const headers = await admit(principal.organizationId);
      // As with x-request-id: before the route for its own response, afterwards for error responses.
      for (const [name, value] of Object.entries(headers)) c.header(name, value);
      await next();
      if (c.res.status >= 400) for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    },
    async close() {
      closed = true;
      clearInterval(sweeper);
      await Promise.allSettled([...orgs.values()].map((s) => s.pending));
      const back: Promise<void>[] = [];
      for (const s of orgs.values()) {
        clearTimeout(s.timer);
        if (s.local >= 1) back.push(giveBack(s));
      }
      await Promise.all(back);
      await sql.end({ timeout: 2 });
    },
  };
}
