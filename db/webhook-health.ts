/**
 * Endpoint health of webhook subscriptions: what the attempts say about a receiver (its last success and failure,
 * since when every attempt has failed, its recent success rate and what waits for it), and the service disabling a
 * subscription whose receiver keeps failing or says it is gone. An operator sees the same in the admin API, the CLI
 * and the console, with the record of who disabled it and why.
 */
import { and, eq, isNull, sql } from 'drizzle-orm';
import { DELIVERY_STATUSES } from '../domain/webhooks';
import type { Tx } from './client';
import { newId } from './ids';
import { cancelRetries, DISABLED, firstOfEachState } from './webhooks';
import { events, integrations, webhookSubscriptionHealth, webhookSubscriptions } from './schema';

/** Who disabled a subscription: an operator, or the service because every attempt failed for long, or a 410 Gone. */
export type DisabledBy = 'operator' | 'failures' | 'gone';

/** One recorded attempt outcome, as health counts it. */
export interface Outcome {
  at: Date;
  ok: boolean;
}

/** How far back the success rate looks, and at most how many of the most recent deliveries it reads. */
const HEALTH_WINDOW_MS = 24 * 3600 * 1000;
const RATE_DELIVERIES = 1000;

/**
 * Fold outcomes into the subscription's health row (one statement): its last success and failure, and `failing_since`
 * (the first failure after its last success; null when the newest outcome after a success is a success). Returns
 * `failing_since` as it now stands.
 */
async function recordHealth(tx: Tx, subscriptionId: string, outcomes: readonly Outcome[]): Promise<Date | null> {
  if (outcomes.length === 0) return null;
  let okMax: number | null = null;
  let failMax: number | null = null;
  for (const o of outcomes) {
    const t = o.at.getTime();
    if (o.ok) okMax = Math.max(okMax ?? t, t);
    else failMax = Math.max(failMax ?? t, t);
  }
  const after = outcomes.filter((o) => !o.ok && (okMax === null || o.at.getTime() > okMax)).map((o) => o.at.getTime());
  const failingSince = after.length > 0 ? new Date(Math.min(...after)) : null;
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  const [row] = await tx.execute<{ failing_since: string | null }>(sql`
    insert into ${webhookSubscriptionHealth} as h (subscription_id, last_success_at, last_failure_at, failing_since)
    values (${subscriptionId}, ${iso(okMax)}::timestamptz, ${iso(failMax)}::timestamptz, ${failingSince?.toISOString() ?? null}::timestamptz)
    on conflict (subscription_id) do update set
      last_success_at = greatest(h.last_success_at, excluded.last_success_at),
      last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
      failing_since = case
        -- a success newer than any before: the run of failures (if any) starts after it
        when excluded.last_success_at is not null and (h.last_success_at is null or excluded.last_success_at >= h.last_success_at) then excluded.failing_since
        -- failures only: the run goes on, or starts
        when excluded.last_success_at is null then coalesce(h.failing_since, excluded.failing_since)
        else h.failing_since
      end
    returning failing_since`);
  return row?.failing_since ? new Date(row.failing_since) : null;
}

/**
 * Disable an active subscription, recording who and why. Its queue pauses (deliveries waiting for a first attempt stay
 * `pending`, for when it is enabled again or replayed), and its deliveries being retried end `cancelled` now
 * (replayable). False when it was not active.
 */
async function disableSubscription(tx: Tx, subscriptionId: string, by: DisabledBy, reason: string, now?: Date): Promise<boolean> {
  // The database's time unless told (a test's clock): the relay compares it with events' times, which are the database's.
  const at = now ?? sql`now()`;
  const rows = await tx
    .update(webhookSubscriptions)
    .set({ status: 'disabled', disabledAt: at, disabledBy: by, disabledReason: reason, updatedAt: at })
    .where(and(eq(webhookSubscriptions.id, subscriptionId), eq(webhookSubscriptions.status, 'active'), isNull(webhookSubscriptions.deletedAt)))
    .returning({ id: webhookSubscriptions.id });
  if (rows.length === 0) return false;
  await cancelRetries(tx, subscriptionId, DISABLED);
  return true;
}

/**
 * The operators' notice that the service disabled a subscription: a SUBSCRIPTION_DISABLED event in its integration's
 * outbox, delivered (like any event, signed, retried) to the subscriptions that name that type. It is not in docs/api.md's
 * catalog, so `["*"]` does not cover it and the public feed leaves it out.
 */
async function recordDisabledNotice(
  tx: Tx,
  subscriptionId: string,
  by: DisabledBy,
  reason: string,
  now: Date,
  health: { failingSince: Date | null },
): Promise<void> {
  await tx.execute(sql`
    insert into ${events} (id, organization_id, integration_id, mode, type, category, data, created_at)
    select ${newId('event')}, s.organization_id, s.integration_id, i.mode, 'SUBSCRIPTION_DISABLED', 'operational',
      jsonb_build_object(
        'subscription_id', s.id, 'url', s.url, 'disabled_by', ${by}::text, 'reason', ${reason}::text,
        'disabled_at', ${now.toISOString()}::text, 'failing_since', ${health.failingSince?.toISOString() ?? null}::text),
      ${now.toISOString()}::timestamptz
    from ${webhookSubscriptions} s join ${integrations} i on i.id = s.integration_id
    where s.id = ${subscriptionId}`);
}

/** A subscription enabled again starts with a clean run: its old failures no longer count towards disabling it. */
export async function clearFailingRun(tx: Tx, subscriptionId: string): Promise<void> {
  await tx.update(webhookSubscriptionHealth).set({ failingSince: null }).where(eq(webhookSubscriptionHealth.subscriptionId, subscriptionId));
}

/**
 * Record outcomes, then disable the subscription when every attempt has failed for `disableAfterMs` (its run of
 * failures began that long ago and nothing has succeeded since) or when the receiver answered 410 Gone. Returns who
 * disabled it, or null.
 */
export async function noteOutcomes(
  tx: Tx,
  subscriptionId: string,
  outcomes: readonly (Outcome & { status: number | null })[],
  opts: { disableAfterMs: number; now?: Date },
): Promise<DisabledBy | null> {
  const now = opts.now ?? new Date();
  const failingSince = await recordHealth(tx, subscriptionId, outcomes);
  const gone = outcomes.find((o) => o.status === 410);
  if (gone) {
    const reason = `the receiver answered 410 Gone at ${gone.at.toISOString()}: disabled at once (a receiver that is gone asks not to be sent more)`;
    return disable('gone', reason);
  }
  if (failingSince && now.getTime() - failingSince.getTime() >= opts.disableAfterMs) {
    const days = ((now.getTime() - failingSince.getTime()) / 86_400_000).toFixed(1);
    const reason = `every attempt failed since ${failingSince.toISOString()} (${days} days; the limit is ${opts.disableAfterMs / 86_400_000} days): disabled automatically`;
    return disable('failures', reason);
  }
  return null;

  /** Disable and record the notice in one transaction: the notice exists exactly when the service disabled it. */
  async function disable(by: DisabledBy, reason: string): Promise<DisabledBy | null> {
    return tx.transaction(async (t) => {
      if (!(await disableSubscription(t, subscriptionId, by, reason, opts.now))) return null;
      await recordDisabledNotice(t, subscriptionId, by, reason, now, { failingSince });
      return by;
    });
  }
}

/** What the admin API shows of a subscription's endpoint health. */
export interface Health {
  /** Succeeded attempts over attempts in the last 24 hours (of at most its 1,000 most recent deliveries); null without attempts. */
  successRate: number | null;
  attempts: number;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  failingSince: Date | null;
  /** Deliveries waiting for their first attempt, being retried, and dead-lettered. */
  pending: number;
  retrying: number;
  deadLettered: number;
}

export const NO_HEALTH: Health = {
  successRate: null,
  attempts: 0,
  lastSuccessAt: null,
  lastFailureAt: null,
  failingSince: null,
  pending: 0,
  retrying: 0,
  deadLettered: 0,
};

/** The health of these subscriptions, in one statement. */
export async function healthOf(tx: Tx, subscriptionIds: readonly string[], now = new Date()): Promise<Map<string, Health>> {
  const out = new Map<string, Health>();
  if (subscriptionIds.length === 0) return out;
  const since = new Date(now.getTime() - HEALTH_WINDOW_MS).toISOString();
  const rows = await tx.execute<{
    id: string;
    last_success_at: string | null;
    last_failure_at: string | null;
    failing_since: string | null;
    pending: number;
    retrying: number;
    dead_lettered: number;
    attempts: number;
    succeeded: number;
  }>(sql`
    select s.id, h.last_success_at, h.last_failure_at, h.failing_since,
      (select count(*)::int from webhook_deliveries d where d.status = 'pending' and d.subscription_id = s.id) as pending,
      (select count(*)::int from webhook_deliveries d where d.status = 'retrying' and d.subscription_id = s.id) as retrying,
      (select count(*)::int from webhook_deliveries d where d.status = 'dead_lettered' and d.subscription_id = s.id) as dead_lettered,
      coalesce(r.attempts, 0) as attempts, coalesce(r.succeeded, 0) as succeeded
    from unnest(${sql.param([...subscriptionIds])}::text[]) as s(id)
    left join ${webhookSubscriptionHealth} h on h.subscription_id = s.id
    left join lateral (
      select count(*)::int as attempts, (count(*) filter (where a.response_status between 200 and 299))::int as succeeded
      from (
        -- The most recent of each state, merged (the index is by subscription, state and time).
        select * from (${firstOfEachState({
          subscription: sql`s.id`,
          columns: sql`d.id, d.created_at, d.first_sent_at, d.first_duration_ms, d.first_response_status`,
          states: DELIVERY_STATUSES,
          where: sql`and d.created_at >= ${since}::timestamptz`,
          order: 'desc',
          first: RATE_DELIVERIES,
        })}) recent
        order by created_at desc limit ${RATE_DELIVERIES}
      ) d cross join lateral (
        -- Attempt rows, and a first attempt that succeeded as its delivery records it (it stands over a row numbered 1).
        select a.response_status from webhook_attempts a
        where a.delivery_id = d.id and a.started_at >= ${since}::timestamptz and not (a.number = 1 and d.first_duration_ms is not null)
        union all
        select d.first_response_status where d.first_duration_ms is not null and d.first_sent_at >= ${since}::timestamptz
      ) a
    ) r on true`);
  const date = (v: string | null) => (v === null ? null : new Date(v));
  for (const r of rows) {
    out.set(r.id, {
      successRate: r.attempts > 0 ? Math.round((r.succeeded / r.attempts) * 10_000) / 10_000 : null,
      attempts: r.attempts,
      lastSuccessAt: date(r.last_success_at),
      lastFailureAt: date(r.last_failure_at),
      failingSince: date(r.failing_since),
      pending: r.pending,
      retrying: r.retrying,
      deadLettered: r.dead_lettered,
    });
  }
  return out;
}
