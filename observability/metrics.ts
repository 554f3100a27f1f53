/**
 * The service's Prometheus metrics (prom-client), one registry per process: names under `propsync_`, units in the
 * name, as the Prometheus naming guide says. Labels stay bounded: methods, route templates, status classes, plans,
 * outcomes, trigger kinds, entities, attempt numbers (capped), Operation types; never a record, event, Operation or
 * key id, an organization's name or anything personal. The only id label is the subscription of the top few
 * backlogs (at most TOP_SUBSCRIPTIONS series at a time).
 *
 * The API registry carries the HTTP metrics and the database facts (db/health.ts), read at scrape time through a
 * short cache; the worker registry carries what its activities count. Both carry the default process metrics where
 * they are served.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HealthFacts } from '../db/health';
import { ENTITIES, type Entity } from '../domain/cdm';
import { SYNC_KINDS, type SyncKind, type SyncTrigger } from '../domain/contract';
import { OPERATION_TYPES, type OperationType } from '../domain/operations';
import { PLAN_RULES } from '../domain/plans';

const SYNC_RUN_OUTCOMES = ['succeeded', 'failed', 'skipped'] as const;
type SyncRunOutcome = (typeof SYNC_RUN_OUTCOMES)[number];
const RECORD_CHANGES = ['created', 'updated', 'deleted', 'skipped'] as const;
type RecordChange = (typeof RECORD_CHANGES)[number];
/** How a webhook attempt, an Operation or an automation run ends. */
const ENDINGS = ['succeeded', 'failed'] as const;

/** What the worker's activities count. Every method is cheap (an in-memory increment). */
export interface WorkerMetrics {
  /** A sync run ended: `kind` null when none was decided (a run skipped, or failed before it started). */
  syncRun(outcome: SyncRunOutcome, run: { trigger: SyncTrigger; kind: SyncKind | null | undefined }, durationSeconds?: number): void;
  syncRecords(entity: Entity, change: RecordChange, count: number): void;
  /** One webhook attempt (`attempt` from 1); `durationSeconds` when a request was sent. */
  webhookAttempt(outcome: 'succeeded' | 'failed', attempt: number, durationSeconds: number | null): void;
  operationCompleted(type: OperationType, outcome: 'succeeded' | 'failed'): void;
  automationRun(outcome: 'succeeded' | 'failed'): void;
}

/** Counts nothing: activities built without metrics (unit and time-skipping tests). */
export const NO_METRICS: WorkerMetrics = {
  syncRun: () => {},
  syncRecords: () => {},
  webhookAttempt: () => {},
  operationCompleted: () => {},
  automationRun: () => {},
};

/** Attempt numbers beyond the schedule's 7 (replays continue the count) share one label value. */
function attemptLabel(attempt: number): string {
  return attempt <= 7 ? String(Math.max(1, Math.floor(attempt))) : '8+';
}

/**
 * How often the default metrics' event-loop delay monitor samples: prom-client's 10 ms wakes the process 100 times a
 * second, some 5 ms of CPU each second whatever the load (about 1 ms at 100 ms): at 15 requests a second, a third of a
 * retrieve's cost. Any stall of the loop longer than this still shows in the lag percentiles.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * A registry, with the default process metrics when `processMetrics` (a process that serves its metrics): collecting
 * them costs every second, so a process whose metrics no one scrapes does not.
 */
function registryOf(processMetrics: boolean): Registry {
  const registry = new Registry();
  if (processMetrics) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  return registry;
}

export interface WorkerRegistry {
  registry: Registry;
  metrics: WorkerMetrics;
}

/** `processMetrics`: the worker serves its metrics (WORKER_METRICS_PORT); its counters count either way. */
export function createWorkerMetrics(opts: { processMetrics: boolean }): WorkerRegistry {
  const registry = registryOf(opts.processMetrics);
  const syncRuns = new Counter({
    name: 'propsync_sync_runs_total',
    help: 'Sync runs ended, by outcome and kind (full, delta; none when no run was decided). By trigger: propsync_sync_run_duration_seconds_count.',
    labelNames: ['outcome', 'kind'],
    registers: [registry],
  });
  const syncDuration = new Histogram({
    name: 'propsync_sync_run_duration_seconds',
    help: 'Wall time of sync runs from claim to end, by outcome, kind and trigger.',
    labelNames: ['outcome', 'kind', 'trigger'],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200],
    registers: [registry],
  });
  const syncRecords = new Counter({
    name: 'propsync_sync_records_total',
    help: 'Records a sync applied, by entity and change (skipped: quarantined as unreadable).',
    labelNames: ['entity', 'change'],
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'propsync_webhook_attempts_total',
    help: 'Webhook delivery attempts made, by outcome and attempt number (8+ for replays beyond the schedule).',
    labelNames: ['outcome', 'attempt'],
    registers: [registry],
  });
  const attemptDuration = new Histogram({
    name: 'propsync_webhook_attempt_duration_seconds',
    help: 'Time from sending a webhook attempt to its answer (or its failure), by outcome.',
    labelNames: ['outcome'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const operations = new Counter({
    name: 'propsync_operations_completed_total',
    help: 'Operations (writes) that ended, by type and outcome.',
    labelNames: ['type', 'outcome'],
    registers: [registry],
  });
  const automations = new Counter({
    name: 'propsync_automation_runs_total',
    help: 'Automation runs that ended, by outcome.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Every series of a bounded label set exists from the start at 0, as Prometheus advises: a rate() or increase()
  // over a counter's first increment then sees it (a series born at 1 would hide its first event).
  for (const outcome of SYNC_RUN_OUTCOMES) for (const kind of [...SYNC_KINDS, 'none']) syncRuns.labels({ outcome, kind }).inc(0);
  for (const entity of ENTITIES) for (const change of RECORD_CHANGES) syncRecords.labels({ entity, change }).inc(0);
  for (const outcome of ENDINGS) {
    for (let attempt = 1; attempt <= 8; attempt++) attempts.labels({ outcome, attempt: attemptLabel(attempt) }).inc(0);
    for (const type of OPERATION_TYPES) operations.labels({ type, outcome }).inc(0);
    automations.labels({ outcome }).inc(0);
  }
  return {
    registry,
    metrics: {
      syncRun(outcome, run, durationSeconds) {
        const kind = run.kind ?? 'none';
        syncRuns.inc({ outcome, kind });
        if (durationSeconds !== undefined) syncDuration.observe({ outcome, kind, trigger: run.trigger }, durationSeconds);
      },
      syncRecords(entity, change, count) {
        if (count > 0) syncRecords.inc({ entity, change }, count);
      },
      webhookAttempt(outcome, attempt, durationSeconds) {
        attempts.inc({ outcome, attempt: attemptLabel(attempt) });
        if (durationSeconds !== null) attemptDuration.observe({ outcome }, durationSeconds);
      },
      operationCompleted(type, outcome) {
        operations.inc({ type, outcome });
      },
      automationRun(outcome) {
        automations.inc({ outcome });
      },
    },
  };
}

/** The database facts with a short cache: one read per `ttlMs` however many scrapes (and console pages) ask. */
export interface HealthFactsSource {
  /** The facts, at most `ttlMs` old; rejects when the database cannot be read. */
  read(): Promise<HealthFacts>;
}

export function cachedHealthFacts(read: () => Promise<HealthFacts>, opts: { ttlMs?: number; timeoutMs?: number } = {}): HealthFactsSource {
  const ttlMs = opts.ttlMs ?? 5_000;
  const timeoutMs = opts.timeoutMs ?? 3_000;
  let cached: { at: number; value: Promise<HealthFacts> } | undefined;
  return {
    read() {
      const now = Date.now();
      if (cached && now - cached.at < ttlMs) return cached.value;
      let timer: NodeJS.Timeout | undefined;
      const value = Promise.race([
        read(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the health facts took longer than ${timeoutMs} ms`)), timeoutMs);
        }),
      ]).finally(() => clearTimeout(timer));
      const entry = { at: now, value };
      cached = entry;
      // A failed read is not kept: the next scrape asks again.
      value.catch(() => {
        if (cached === entry) cached = undefined;
      });
      return value;
    },
  };
}

export interface ApiMetrics {
  registry: Registry;
  /** One answered request: its method, route template (never the raw path) and status. */
  request(method: string, route: string, status: number, durationSeconds: number): void;
  /** A /v1 request refused by the rate limit, by the plan its budget comes from. */
  rateLimited(plan: string): void;
  /** A request answered 503 because the database could not be reached in time. */
  databaseUnavailable(): void;
}

/** Methods as labels: the standard ones, anything else as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The plan whose budget a per-minute limit is (an organization's own override: `custom`). */
export function planOfLimit(perMinute: number): string {
  const hit = Object.entries(PLAN_RULES).find(([, r]) => r.rateLimitPerMinute === perMinute);
  return hit ? hit[0] : 'custom';
}

/** `processMetrics`: the API serves its metrics (METRICS_PORT). */
export function createApiMetrics(facts: HealthFactsSource, opts: { processMetrics: boolean }): ApiMetrics {
  const registry = registryOf(opts.processMetrics);
  const duration = new Histogram({
    name: 'propsync_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route template and status class.',
    labelNames: ['method', 'route', 'status_class'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const limited = new Counter({
    name: 'propsync_rate_limited_requests_total',
    help: 'Requests refused by the organization-wide rate limit (429), by plan.',
    labelNames: ['plan'],
    registers: [registry],
  });
  for (const plan of [...Object.keys(PLAN_RULES), 'custom']) limited.labels({ plan }).inc(0);
  const dbDown = new Counter({
    name: 'propsync_database_unavailable_total',
    help: 'Requests answered 503 because Postgres could not be reached within its connection or statement timeout.',
    registers: [registry],
  });

  // Database facts: every gauge asks the cache, so one scrape (and the scrapes within its time to live) read once.
  const factsNow = (): Promise<HealthFacts | undefined> => facts.read().catch(() => undefined);
  new Gauge({
    name: 'propsync_health_facts_up',
    help: '1 when the database facts could be read at this scrape, else 0 (they then keep their last values).',
    registers: [registry],
    async collect() {
      this.set((await factsNow()) ? 1 : 0);
    },
  });
  const fact = (name: string, help: string, pick: (f: HealthFacts) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const f = await factsNow();
        if (f) this.set(pick(f));
      },
    });
  fact('propsync_outbox_lag_seconds', 'Age of the oldest event not yet turned into deliveries by the relay; 0 when none.', (f) => f.outboxLagSeconds);
  fact('propsync_webhook_deliveries_pending', 'Deliveries waiting for their first attempt or with it in flight.', (f) => f.deliveriesPending);
  fact('propsync_webhook_deliveries_in_flight', 'First attempts sent by a dispatcher and not yet recorded.', (f) => f.deliveriesInFlight);
  fact('propsync_webhook_deliveries_retrying', 'Deliveries whose last attempt failed, waiting for the next.', (f) => f.deliveriesRetrying);
  fact('propsync_webhook_dead_letters_open', 'Dead-lettered deliveries not yet replayed or expired, of subscriptions not deleted.', (f) => f.deadLettersOpen);
  fact(
    'propsync_operation_oldest_queued_age_seconds',
    'Age of the oldest Operation not finished (queued, or running between attempts); 0 when none.',
    (f) => f.oldestOpenOperationSeconds,
  );
  fact(
    'propsync_records_quarantined',
    'Records quarantined now: each one a sync run listed as unreadable within the retention, once, unless a later run stored it.',
    (f) => f.recordsQuarantined,
  );
  fact('propsync_integrations_failing', 'Live integrations whose newest finished sync run failed.', (f) => f.integrationsFailing);
  fact('propsync_integrations_sync_overdue', 'Live integrations with no successful sync within 3 times their cadence.', (f) => f.integrationsOverdue);
  fact('propsync_sync_runs_retrying', 'Sync runs whose current step is being retried (attempt 2 or later).', (f) => f.syncRunsRetrying);
  fact(
    'propsync_webhook_circuits_open',
    'Subscriptions whose circuit is open: their receiver failed a run of attempts, and no probe has since succeeded or found the queue empty.',
    (f) => f.circuitsOpen,
  );
  fact('propsync_webhook_circuit_open_oldest_seconds', 'Seconds since the oldest circuit still open opened; 0 when none.', (f) => f.oldestOpenCircuitSeconds);
  fact(
    'propsync_webhook_subscription_failing_oldest_seconds',
    'Seconds every attempt of the active subscription failing longest has failed (since its last success); 0 when none is failing.',
    (f) => f.oldestFailingSubscriptionSeconds,
  );
  new Gauge({
    name: 'propsync_webhook_subscription_deliveries_pending',
    help: 'Pending deliveries of the subscriptions with the most of them (the top 5 only).',
    labelNames: ['subscription_id'],
    registers: [registry],
    async collect() {
      const f = await factsNow();
      if (!f) return;
      this.reset();
      for (const s of f.pendingBySubscription) this.set({ subscription_id: s.subscriptionId }, s.pending);
    },
  });

  return {
    registry,
    request(method, route, status, durationSeconds) {
      duration.observe({ method: METHODS.has(method) ? method : 'OTHER', route, status_class: `${Math.floor(status / 100)}xx` }, durationSeconds);
    },
    rateLimited(plan) {
      limited.inc({ plan });
    },
    databaseUnavailable() {
      dbDown.inc();
    },
  };
}
