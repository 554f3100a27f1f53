/**
 * The service's health as database facts: backlogs, dead letters, the oldest unfinished Operation, quarantined
 * records, failing and overdue integrations. One round trip of bounded statements (each an index scan with a cap, or
 * a lookup per live integration of its newest runs), read by the API's /metrics (with a short cache) and by the
 * console's home page, so every replica and the console report the same truth. And whether the database answers at
 * all (the API's /readyz).
 */
import { sql } from 'drizzle-orm';
import type { Db } from './client';
import { planRuleCase } from './plan-sql';

/** Counts stop at this many rows (a backlog of more reads as this many): each count is bounded in time. */
const COUNT_CAP = 100_000;
/** Subscriptions named in the per-subscription backlog: the ones with the most pending deliveries. */
const TOP_SUBSCRIPTIONS = 5;
/** An integration is overdue when its last successful sync finished longer ago than this many times its cadence. */
const OVERDUE_CADENCES = 3;

export interface HealthFacts {
  /** Seconds since the oldest event the relay has not yet turned into deliveries was recorded; 0 when none. */
  outboxLagSeconds: number;
  /** Deliveries waiting for (or in) their first attempt. */
  deliveriesPending: number;
  /** Of those, the ones a dispatcher has sent and not yet recorded. */
  deliveriesInFlight: number;
  /** Deliveries whose first attempt failed and that wait for the next one. */
  deliveriesRetrying: number;
  /** Dead letters not yet replayed or expired, of live subscriptions (a deleted one's can no longer be replayed). */
  deadLettersOpen: number;
  /** Pending deliveries of the subscriptions with the most of them (at most TOP_SUBSCRIPTIONS). */
  pendingBySubscription: { subscriptionId: string; pending: number }[];
  /** Seconds since the oldest Operation still queued or running (retrying) was accepted; 0 when none. */
  oldestOpenOperationSeconds: number;
  /** Records quarantined now (QUARANTINED): each listed as unreadable within the retention, once, unless stored since. */
  recordsQuarantined: number;
  /** Live integrations whose newest finished sync run failed. */
  integrationsFailing: number;
  /** Live integrations with no successful sync within OVERDUE_CADENCES times their cadence (counted from creation). */
  integrationsOverdue: number;
  /** Sync runs whose entity step is being retried (attempt 2 or later). */
  syncRunsRetrying: number;
  /** Live subscriptions whose circuit is open (a run of failed attempts; a probe has not succeeded since). */
  circuitsOpen: number;
  /** Seconds since the oldest circuit still open opened; 0 when none (over an hour: a receiver failing every attempt). */
  oldestOpenCircuitSeconds: number;
  /**
   * Seconds since the active subscription failing longest had its last success (every attempt since has failed: its
   * `failing_since`); 0 when none is failing. Over an hour: a receiver failing every attempt for an hour, whether or
   * not its circuit opened (a quiet subscription's few attempts never open it).
   */
  oldestFailingSubscriptionSeconds: number;
}

const cadenceCase = planRuleCase('defaultSyncIntervalSeconds');

const capped = (from: string) => `(select count(*) from (select 1 from ${from} limit ${COUNT_CAP}) s)::int`;

/** How many of an integration's newest quarantine listings the count reads (a scrape's work is bounded). */
const QUARANTINE_WINDOW = 20_000;

/**
 * Records quarantined now: each record (integration, entity, x_id) of a live integration that a run since its last
 * successful full run listed as unreadable, once however many runs listed it, unless a later run stored it (the
 * source mended it) or found it gone (soft-deleted since). A full run reads every record, so it lists everything
 * unreadable then; a delta run lists only the unreadable records that changed, and the full run before it holds the
 * rest. A record without a readable id counts once per run that listed it. Per integration, at most its newest
 * QUARANTINE_WINDOW listings are read (by index), so one integration's listings never crowd out another's.
 */
const QUARANTINED = `(select distinct on (l.integration_id, l.entity, coalesce(l.x_id, l.sync_job_id))
       l.integration_id, l.entity, l.x_id, l.created_at
     from integrations i
       left join lateral (select f.created_at from sync_jobs f
                          where f.integration_id = i.id and f.kind = 'full' and f.status = 'succeeded'
                          order by f.created_at desc limit 1) full_run on true
       cross join lateral (select j.integration_id, s.entity, s.x_id, s.sync_job_id, s.created_at
                           from sync_jobs j join sync_skipped_records s on s.sync_job_id = j.id
                           where j.integration_id = i.id and j.created_at >= coalesce(full_run.created_at, '-infinity'::timestamptz)
                           order by s.created_at desc limit ${QUARANTINE_WINDOW}) l
     where i.deleted_at is null
     order by l.integration_id, l.entity, coalesce(l.x_id, l.sync_job_id), l.created_at desc) q
   where q.x_id is null or not exists (
     select 1 from (
       select ps_synced_at, deleted_at from properties r where q.entity = 'property' and r.integration_id = q.integration_id and r.x_id = q.x_id
       union all select ps_synced_at, deleted_at from units r where q.entity = 'unit' and r.integration_id = q.integration_id and r.x_id = q.x_id
       union all select ps_synced_at, deleted_at from residents r where q.entity = 'resident' and r.integration_id = q.integration_id and r.x_id = q.x_id
       union all select ps_synced_at, deleted_at from leases r where q.entity = 'lease' and r.integration_id = q.integration_id and r.x_id = q.x_id
     ) stored where stored.ps_synced_at > q.created_at or stored.deleted_at > q.created_at)`;

const FACTS = `
select
  coalesce(extract(epoch from now() - (select min(created_at) from events where dispatched_at is null)), 0)::float8 as outbox_lag,
  ${capped(`webhook_deliveries where status = 'pending'`)} as pending,
  ${capped(`webhook_deliveries d join webhook_dispatch_cursors c on c.subscription_id = d.subscription_id where d.status = 'pending' and d.seq <= c.taken_seq`)} as in_flight,
  ${capped(`webhook_deliveries where status = 'retrying'`)} as retrying,
  ${capped(`webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id join integrations i on i.id = s.integration_id
             where d.status = 'dead_lettered' and s.deleted_at is null and i.deleted_at is null`)} as dead_letters,
  coalesce(extract(epoch from now() - (select min(created_at) from operations where status in ('queued', 'running'))), 0)::float8 as oldest_operation,
  ${capped(QUARANTINED)} as quarantined,
  (select count(*) from integrations i
     cross join lateral (select j.status from sync_jobs j where j.integration_id = i.id and j.status in ('succeeded', 'failed')
                         order by j.created_at desc limit 1) last
     where i.deleted_at is null and last.status = 'failed')::int as failing,
  (select count(*) from integrations i
     where i.deleted_at is null
       and i.created_at < now() - make_interval(secs => ${OVERDUE_CADENCES} * coalesce(i.sync_interval_seconds, ${cadenceCase}))
       and not exists (select 1 from sync_jobs j where j.integration_id = i.id and j.status = 'succeeded'
                         and j.finished_at > now() - make_interval(secs => ${OVERDUE_CADENCES} * coalesce(i.sync_interval_seconds, ${cadenceCase}))))::int as overdue,
  ${capped(`sync_jobs where status = 'running' and attempt > 1`)} as sync_retrying,
  (select count(*) from webhook_subscriptions where circuit_opened_at is not null and deleted_at is null)::int as circuits_open,
  coalesce(extract(epoch from now() - (select min(circuit_opened_at) from webhook_subscriptions where deleted_at is null)), 0)::float8 as oldest_circuit,
  coalesce(extract(epoch from now() - (select min(h.failing_since) from webhook_subscription_health h
     join webhook_subscriptions s on s.id = h.subscription_id where s.deleted_at is null and s.status = 'active')), 0)::float8 as oldest_failing`;

const TOP = `
select subscription_id, count(*)::int as pending
from (select subscription_id from webhook_deliveries where status = 'pending' limit ${COUNT_CAP}) s
group by subscription_id order by pending desc, subscription_id limit ${TOP_SUBSCRIPTIONS}`;

interface FactsRow {
  outbox_lag: number;
  pending: number;
  in_flight: number;
  retrying: number;
  dead_letters: number;
  oldest_operation: number;
  quarantined: number;
  failing: number;
  overdue: number;
  sync_retrying: number;
  circuits_open: number;
  oldest_circuit: number;
  oldest_failing: number;
}

/** Reads every fact (two statements, in parallel on the pool). */
export async function readHealthFacts(db: Db): Promise<HealthFacts> {
  const [[f], top] = await Promise.all([
    db.$client.unsafe<FactsRow[]>(FACTS, [], { prepare: true }),
    db.$client.unsafe<{ subscription_id: string; pending: number }[]>(TOP, [], { prepare: true }),
  ]);
  return {
    outboxLagSeconds: Math.max(0, f!.outbox_lag),
    deliveriesPending: f!.pending,
    deliveriesInFlight: f!.in_flight,
    deliveriesRetrying: f!.retrying,
    deadLettersOpen: f!.dead_letters,
    pendingBySubscription: top.map((r) => ({ subscriptionId: r.subscription_id, pending: r.pending })),
    oldestOpenOperationSeconds: Math.max(0, f!.oldest_operation),
    recordsQuarantined: f!.quarantined,
    integrationsFailing: f!.failing,
    integrationsOverdue: f!.overdue,
    syncRunsRetrying: f!.sync_retrying,
    circuitsOpen: f!.circuits_open,
    oldestOpenCircuitSeconds: Math.max(0, f!.oldest_circuit),
    oldestFailingSubscriptionSeconds: Math.max(0, f!.oldest_failing),
  };
}

/** The database answers a statement (the API's readiness check). */
export async function pingDatabase(db: Db): Promise<void> {
  await db.execute(sql`select 1`);
}
