/**
 * Configuration, parsed once from the environment. Nothing else in the service's processes reads `process.env` (the
 * development scripts, examples, benchmarks and tests read settings of their own).
 * A bad value stops start-up with a message that names the variable.
 */
import { isIPv6 } from 'node:net';
import { z } from 'zod';
import { DEFAULT_DELTA_OVERLAP_SECONDS, DEFAULT_FULL_SYNC_INTERVAL_SECONDS, MAX_FULL_SYNC_INTERVAL_SECONDS } from '../domain/contract';
import { DEFAULT_RETRY_SCHEDULES, listOfSchedule, scheduleOfList, type RetrySchedule } from '../domain/retry';
import { DEFAULT_DISPATCH, DISABLE_AFTER_MS } from '../domain/webhooks';

/**
 * A comma list of whole milliseconds, each item digits only: an empty item (`1,,2`, a trailing comma) or any other
 * form (`1e3`, `0x10`, `-1`) is not a number, so it fails the check that follows and stops start-up naming the
 * variable (Number('') alone would be a silent 0).
 */
const msItems = (s: string): number[] => s.split(',').map((v) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN));

/** A retry schedule's list form: delays in milliseconds before each attempt after the previous one, the first at once. */
const delayList = (defaults: RetrySchedule, maxMs: number) =>
  z
    .string()
    .default(listOfSchedule(defaults).join(','))
    .transform(msItems)
    .pipe(z.array(z.number().int().min(0).max(maxMs)).min(1));

/** An integer setting within its bounds (environment values are text: coerced first). */
const intIn = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const port = intIn(1, 65535);
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Development defaults of the two bearer tokens: fine on a laptop, refused by a deployment that serves live mode. */
export const DEV_ADMIN_TOKEN = 'dev-admin-token-change-me';
const DEV_SANDBOX_CONTROL_TOKEN = 'dev-sandbox-control-token';

/** A key that encrypts stored secrets (domain/secrets.ts): its id, stored beside each value, and 32 bytes. */
export interface EncryptionKey {
  kid: string;
  key: Buffer;
}

/**
 * The built-in development key, used when ENCRYPTION_KEYS is unset so that `npm start` and the tests need no setup.
 * It is public (it is in this file): a deployment that serves live mode refuses it as its active key (it may stay
 * behind a key of one's own, to decrypt values until the migration job has re-encrypted them).
 */
const DEV_ENCRYPTION_KEY: EncryptionKey = { kid: 'dev', key: Buffer.from('1vGcNHXHbTX6rnhPIHvOp1YVqYw8ug7a6JmXXxmbsDY=', 'base64') };

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const KID = /^[A-Za-z0-9_-]{1,32}$/;

/** `kid:base64,kid:base64,…`: the first key encrypts, all decrypt. Issues name the entry and kid, never the key. */
function parseEncryptionKeys(raw: string | undefined, ctx: z.RefinementCtx): EncryptionKey[] {
  if (raw === undefined) return [DEV_ENCRYPTION_KEY];
  const keys: EncryptionKey[] = [];
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const fail = (message: string) => ctx.addIssue({ code: 'custom', message });
  if (entries.length === 0) fail('no key; expected kid:base64 entries separated by commas');
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const kid = colon < 0 ? '' : entry.slice(0, colon);
    const material = colon < 0 ? '' : entry.slice(colon + 1).trim();
    const where = `entry ${i + 1}${KID.test(kid) ? ` (${kid})` : ''}`;
    if (colon < 0) return fail(`${where}: expected kid:base64`);
    if (!KID.test(kid)) return fail(`${where}: the key id must be 1-32 characters of A-Z a-z 0-9 _ -`);
    const key = Buffer.from(material, 'base64');
    if (!BASE64.test(material) || key.length !== 32) {
      return fail(
        `${where}: the key must be 32 random bytes in base64 (44 characters); this one is not (generate one: node -e "console.log('k1:'+require('crypto').randomBytes(32).toString('base64'))")`,
      );
    }
    if (keys.some((k) => k.kid === kid)) return fail(`${where}: the key id ${kid} appears more than once`);
    keys.push({ kid, key });
  });
  return keys;
}

/** The roles a worker process can run (WORKER_ROLES); worker/roles/ holds one module each. */
export const WORKER_ROLE_NAMES = ['sync', 'webhooks', 'writes', 'automations', 'relay'] as const;
export type WorkerRole = (typeof WORKER_ROLE_NAMES)[number];

/**
 * The samplers OpenTelemetry's environment variables name that its SDK for Node implements. The others the
 * specification lists (`jaeger_remote`, `parentbased_jaeger_remote`, `xray`) would silently sample everything: refused.
 */
const OTEL_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

export const configSchema = z.object({
  /**
   * Postgres connection string for the cache, the outbox and everything else the service keeps. Unset: `npm start`
   * runs an embedded PostgreSQL (data in DATA_DIR/postgres, on EMBEDDED_PG_PORT) and points every process at it;
   * a process started on its own (the API, the worker, a migration) uses DEFAULT_DATABASE_URL.
   */
  DATABASE_URL: z.string().url().optional(),
  /**
   * Where `npm start` keeps its local state, relative to the project: the embedded Postgres (DATA_DIR/postgres) and
   * the dev Temporal server's state file.
   */
  DATA_DIR: z.string().min(1).default('.data'),
  /** Port (on 127.0.0.1) of the embedded Postgres that `npm start` runs when DATABASE_URL is unset. */
  EMBEDDED_PG_PORT: port.default(54329),
  /** Max connections in each process's Postgres pool. */
  DB_POOL_MAX: intIn(1, 200).default(10),
  /** Interface the API listens on. */
  HOST: z.string().min(1).default('127.0.0.1'),
  /** Port of the public and admin API. */
  PORT: port.default(3000),
  /** An existing Temporal frontend (host:port). When unset, `npm start` runs a dev server on TEMPORAL_PORT. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  /** Port of the dev Temporal server that `npm start` runs when TEMPORAL_ADDRESS is unset. */
  TEMPORAL_PORT: port.default(7233),
  /** Port of the dev Temporal server's Web UI. */
  TEMPORAL_UI_PORT: port.default(8233),
  /**
   * Base address of the Temporal Web UI the operator console links each sync run, Operation and delivery to.
   * Defaults to http://127.0.0.1:TEMPORAL_UI_PORT (the dev server's UI that `npm start` runs).
   */
  TEMPORAL_UI_URL: z.string().url().optional(),
  /** Hours an operator console sign-in lasts; the session then ends and the console asks for the admin token again. */
  CONSOLE_SESSION_HOURS: z.coerce
    .number()
    .min(0.01)
    .max(24 * 30)
    .default(12),
  /** Temporal namespace for every workflow of the service. */
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Connect to Temporal over TLS (implied by a client certificate or an API key, e.g. Temporal Cloud). */
  TEMPORAL_TLS: bool.default(false),
  /** mTLS client certificate and its private key (PEM files), e.g. for a Temporal Cloud namespace with certificates. */
  TEMPORAL_TLS_CERT_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().min(1).optional(),
  /** CA certificate (PEM file) of a self-hosted cluster whose certificate the system does not trust. */
  TEMPORAL_TLS_CA_PATH: z.string().min(1).optional(),
  /** Name checked against the server's certificate, when it differs from TEMPORAL_ADDRESS's host. */
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
  /** API key of a Temporal Cloud namespace (sent as a bearer token; TLS is then on). */
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  /** Task queue of sync workflows; webhook deliveries run on `<this>-webhooks`. Tests give each file its own. */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('propsync'),
  /** Port of the sandbox PMS that test-mode integrations sync from. */
  SANDBOX_PORT: port.default(4010),
  /** Address the service uses to reach the sandbox PMS. Defaults to http://127.0.0.1:SANDBOX_PORT. */
  SANDBOX_URL: z.string().url().optional(),
  /** Bearer token of the sandbox PMS's control endpoints (create companies, apply changes, set faults). Live mode refuses the default. */
  SANDBOX_CONTROL_TOKEN: z.string().min(16, 'must be at least 16 characters').default(DEV_SANDBOX_CONTROL_TOKEN),
  /** Milliseconds the sandbox PMS delays each reply while a `slow` fault without its own delay is set. */
  SANDBOX_SLOW_MS: intIn(0, 600_000).default(3000),
  /** Bearer token of the admin API (/admin/v1). Live mode refuses the default. */
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').default(DEV_ADMIN_TOKEN),
  /**
   * Whether the API sits behind a reverse proxy of its own (docker-compose.yml: caddy) that puts the client's address
   * first in X-Forwarded-For. Only then is that header believed, for the admin-token throttle; otherwise the client is
   * the connection's peer and the header is ignored, since any client can send one.
   */
  TRUST_PROXY: bool.default(false),
  /**
   * Wrong admin tokens (admin API bearers and console sign-ins together) one client address may present before each
   * further one blocks it for a growing delay (429). They are counted until ADMIN_AUTH_FAILURE_WINDOW_MS pass
   * without one; the right token resets the address's count.
   */
  ADMIN_AUTH_ADDRESS_FAILURES: intIn(0, 100_000).default(10),
  /**
   * The same for wrong tokens that begin with the same ADMIN_AUTH_PREFIX_LENGTH characters, from any address: a
   * guesser of one token family spread over many addresses is slowed too.
   */
  ADMIN_AUTH_PREFIX_FAILURES: intIn(0, 100_000).default(50),
  /** Characters of a presented admin token that make its prefix (family) for ADMIN_AUTH_PREFIX_FAILURES. */
  ADMIN_AUTH_PREFIX_LENGTH: intIn(1, 64).default(6),
  /** An address's or prefix's wrong admin tokens are forgotten once this long has passed without one (and after its block). */
  ADMIN_AUTH_FAILURE_WINDOW_MS: intIn(1_000, 30 * 24 * 3_600_000).default(900_000),
  /** The delay the first wrong admin token beyond the allowance blocks for; each further one doubles it. */
  ADMIN_AUTH_DELAY_MS: intIn(1, 24 * 3_600_000).default(1_000),
  /** The longest such delay. */
  ADMIN_AUTH_MAX_DELAY_MS: intIn(1, 7 * 24 * 3_600_000).default(900_000),
  /**
   * Keys that encrypt stored secrets (source api keys, webhook signing secrets): `kid:base64(32 bytes)` entries
   * separated by commas. The first encrypts; the others only decrypt (rotation: put the new key first, keep the old
   * ones until the migration job has re-encrypted). Unset: the built-in development key `dev`, which live mode refuses.
   */
  ENCRYPTION_KEYS: z.string().optional().transform(parseEncryptionKeys),
  /**
   * Modes of API key this deployment serves; a key of another mode gets 401. An API or worker that serves `live`
   * refuses to start on the development tokens or encryption key (liveModeRefusal); `npm start` serves `test` only
   * unless this is set.
   */
  SERVED_MODES: z
    .string()
    .default('test,live')
    .transform((s) =>
      s
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(['test', 'live'])).min(1)),
  /** Public base address of the API, used in links and the OpenAPI document. Defaults to http://HOST:PORT. */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** Base of problem type URIs that are not under the docs (idempotency-key-conflict). Defaults to PUBLIC_BASE_URL/problems. */
  PROBLEM_BASE_URL: z.string().url().optional(),
  /** Base of documentation URIs; error types are DOCS_BASE_URL/errors/<slug>. Defaults to PUBLIC_BASE_URL/docs. */
  DOCS_BASE_URL: z.string().url().optional(),
  /** Records the sync reads per source page (the source may cap it lower). */
  SYNC_PAGE_SIZE: intIn(1, 10_000).default(1000),
  /** First delay before a failed sync activity (a source outage) is tried again; it doubles per attempt. */
  SYNC_RETRY_INITIAL_MS: intIn(100, 3_600_000).default(2_000),
  /** Longest delay between two attempts of a sync activity. */
  SYNC_RETRY_MAX_INTERVAL_MS: intIn(100, 24 * 3_600_000).default(120_000),
  /** Attempts of one entity of a run (the first included) before the run fails; the next scheduled run starts over. */
  SYNC_RETRY_MAX_ATTEMPTS: intIn(1, 1_000).default(10),
  /** All attempts of one entity of a run together (Temporal's schedule-to-close timeout); beyond it the run fails. */
  SYNC_ENTITY_TIMEOUT_MS: intIn(10_000, 7 * 24 * 3_600_000).default(6 * 3_600_000),
  /** A sync attempt whose resume point has not moved for this long fails (and is retried) instead of heartbeating on. */
  SYNC_STALL_MS: intIn(1_000, 24 * 3_600_000).default(300_000),
  /** All attempts of a run's bookkeeping step (claim, finish, record a failure): a longer database outage fails the run. */
  SYNC_BOOKKEEPING_TIMEOUT_MS: intIn(1_000, 24 * 3_600_000).default(600_000),
  /**
   * Seconds between full runs of an integration whose source can list what changed (delta runs in between), unless
   * the integration sets its own full_sync_interval_seconds. A full run is the only one that finds deletions.
   */
  SYNC_FULL_INTERVAL_SECONDS: intIn(60, MAX_FULL_SYNC_INTERVAL_SECONDS).default(DEFAULT_FULL_SYNC_INTERVAL_SECONDS),
  /** A delta run reads from the end of the last covered window less this many seconds (source clock skew, late commits). */
  SYNC_DELTA_OVERLAP_SECONDS: intIn(0, 86_400).default(DEFAULT_DELTA_OVERLAP_SECONDS),
  /** Postgres statement_timeout of every pool of the service (0: none). A statement stuck on a lock fails instead of hanging. */
  DB_STATEMENT_TIMEOUT_MS: intIn(0, 24 * 3_600_000).default(60_000),
  /** Postgres idle_in_transaction_session_timeout of every pool (0: none): a transaction left open by a stuck process ends. */
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: intIn(0, 24 * 3_600_000).default(60_000),
  /**
   * How long opening a Postgres connection may take, in every process. A database that does not answer (stopped, cut
   * off) then fails requests within this time: the API answers 503 with Retry-After instead of hanging.
   */
  DB_CONNECT_TIMEOUT_MS: intIn(100, 600_000).default(5_000),
  /** statement_timeout of the API's pool: a read stuck on a lock or an overloaded database is a 503 after this long (0: DB_STATEMENT_TIMEOUT_MS). */
  API_STATEMENT_TIMEOUT_MS: intIn(0, 24 * 3_600_000).default(5_000),
  /**
   * How long an admin request (and the console's actions) waits for Temporal: a server that accepts connections and
   * never answers (overloaded, partitioned, stopped) is a 503 after this long instead of a request held open.
   */
  TEMPORAL_REQUEST_TIMEOUT_MS: intIn(100, 600_000).default(10_000),
  /**
   * What a worker process runs, a comma list of WORKER_ROLE_NAMES: `sync` (sync workflows), `webhooks` (the
   * dispatchers and delivery workflows), `writes` (Operations and their sweeper), `automations` (automation runs),
   * `relay` (the outbox relay that queues deliveries and wakes dispatchers; one is active at a time, others stand
   * by). Default: all of them. Webhook delivery scales apart from the sync by running it in processes of its own
   * (docker-compose.yml: worker and worker-webhooks).
   */
  WORKER_ROLES: z
    .string()
    .default(WORKER_ROLE_NAMES.join(','))
    .transform((s) => [
      ...new Set(
        s
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(z.enum(WORKER_ROLE_NAMES)).min(1, `name at least one of ${WORKER_ROLE_NAMES.join(', ')}`)),
  /** Sync activities (one entity of one integration each) a worker runs at once; bounds its memory. */
  WORKER_MAX_ACTIVITIES: intIn(1, 200).default(8),
  /** Threads a worker reads, maps and hashes source pages on (0: on its event loop). */
  WORKER_READ_THREADS: intIn(0, 64).default(1),
  /**
   * The workflow bundle the worker runs (a file written by `bundleWorkflowCode`). Unset: the compiled worker uses
   * dist/workflows.js beside it (written by `npm run build`); the worker run from source bundles at start-up.
   */
  WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  /** Whether the worker creates or updates every integration's sync schedule at start-up (off for workers that share a database with others on another task queue, as in tests). */
  WORKER_RECONCILE_SCHEDULES: bool.default(true),
  /** Webhook retry and replay attempts a worker runs at once (each is one HTTP exchange of at most 10 s). */
  WEBHOOK_MAX_ACTIVITIES: intIn(1, 2000).default(200),
  /**
   * Delays before each webhook attempt, after the previous one, in milliseconds (7 attempts: docs/api.md's schedule).
   * The first value is the first attempt's, which the subscription's dispatcher makes at once. Tests shrink it; the
   * last failure dead-letters the delivery.
   */
  WEBHOOK_RETRY_SCHEDULE_MS: delayList(DEFAULT_RETRY_SCHEDULES.webhook, 30 * 24 * 3600 * 1000),
  /**
   * Attempts of one subscription in flight at once: its dispatcher's first attempts and, in each worker process,
   * the retries of failed ones. The rest of its queue waits in the database.
   */
  WEBHOOK_MAX_IN_FLIGHT: intIn(1, 256).default(DEFAULT_DISPATCH.maxInFlight),
  /** Consecutive failed first attempts of a subscription that open its circuit (its dispatcher then probes with one delivery). */
  WEBHOOK_CIRCUIT_FAILURES: intIn(1, 10_000).default(DEFAULT_DISPATCH.circuitFailures),
  /** Delays before each probe of an open circuit, in milliseconds; the last repeats until a probe succeeds. */
  WEBHOOK_PROBE_SCHEDULE_MS: z
    .string()
    .default(DEFAULT_DISPATCH.probeScheduleMs.join(','))
    .transform(msItems)
    .pipe(
      z
        .array(
          z
            .number()
            .int()
            .min(0)
            .max(24 * 3600 * 1000),
        )
        .min(1),
    ),
  /** How long a subscription's dispatcher waits with nothing queued before its workflow completes (a new one starts with the next delivery). */
  WEBHOOK_DISPATCH_IDLE_MS: intIn(0, 24 * 3600 * 1000).default(DEFAULT_DISPATCH.idleMs),
  /** Longest one dispatcher batch (one activity) takes deliveries before handing back to its workflow. */
  WEBHOOK_BATCH_MS: intIn(100, 120_000).default(DEFAULT_DISPATCH.batchMs),
  /** How long a batch whose queue ran empty waits for more before it settles idle. */
  WEBHOOK_LINGER_MS: intIn(0, 60_000).default(DEFAULT_DISPATCH.lingerMs),
  /** Dispatcher batches a worker runs at once (each serves one subscription, with up to WEBHOOK_MAX_IN_FLIGHT requests open). */
  WEBHOOK_MAX_DISPATCHERS: intIn(1, 2000).default(100),
  /**
   * Endpoint health: a subscription whose every attempt has failed for this long (its first failure after its last
   * success is this old, and an attempt fails again) is disabled, with a record of why. Default 5 days.
   */
  WEBHOOK_DISABLE_AFTER_MS: intIn(1_000, 365 * 24 * 3600 * 1000).default(DISABLE_AFTER_MS),
  /** Write-back attempts (one source write, its read-back and the cache update each) a worker runs at once. */
  WRITE_MAX_ACTIVITIES: intIn(1, 1000).default(50),
  /** How long one write to the source may take before its outcome counts as unknown (a later attempt looks it up first). */
  WRITE_SOURCE_TIMEOUT_MS: intIn(100, 600_000).default(30_000),
  /**
   * Delays before each write attempt after the previous one, in milliseconds: the first at once, then docs/decisions.md's
   * 5 s, 15 s, 1 min, 5 min, 15 min. Tests shrink it.
   */
  WRITE_RETRY_SCHEDULE_MS: delayList(DEFAULT_RETRY_SCHEDULES.write, 24 * 3600 * 1000),
  /** Delay before every write attempt after those of WRITE_RETRY_SCHEDULE_MS (30 min). */
  WRITE_RETRY_EVERY_MS: intIn(0, 24 * 3600 * 1000).default(DEFAULT_RETRY_SCHEDULES.write.thenEveryMs),
  /** No write attempt starts later than this after the write was accepted; the last one's failure fails it (24 h). */
  WRITE_RETRY_WINDOW_MS: intIn(1_000, 30 * 24 * 3600 * 1000).default(DEFAULT_RETRY_SCHEDULES.write.giveUpAfterMs),
  /** Directory under which automations with a directory destination write their files (a destination's path is relative to it). */
  EXPORT_ROOT: z.string().min(1).default('.data/exports'),
  /** Export attempts (each streams one file from the cache to its destination) a worker runs at once. */
  AUTOMATION_MAX_ACTIVITIES: intIn(1, 100).default(4),
  /** How long one export attempt may take in all (reading the cache and sending the file). */
  EXPORT_TIMEOUT_MS: intIn(1_000, 24 * 3_600_000).default(3_600_000),
  /**
   * Delays before each export attempt after the previous one, in milliseconds: the first at once, then 3 retries of a
   * transient failure (docs/decisions.md: 1 min, 5 min, 15 min). Tests shrink it.
   */
  AUTOMATION_RETRY_SCHEDULE_MS: delayList(DEFAULT_RETRY_SCHEDULES.automation, 24 * 3600 * 1000),
  /** How long the API waits for Temporal to accept a write's workflow before answering 502 enqueue_failed. */
  WRITE_ENQUEUE_TIMEOUT_MS: intIn(100, 60_000).default(5_000),
  /**
   * How long the API waits for a source's write options (floor plans, unit spaces, lease terms, code lists) before it
   * gives up on them: GET /v1/write_options answers 503, and a write is queued unchecked for the source to judge.
   */
  WRITE_OPTIONS_TIMEOUT_MS: intIn(100, 60_000).default(2_000),
  /** How long an API process reuses a property's write options read from its source (0: read them every time). */
  WRITE_OPTIONS_CACHE_MS: intIn(0, 3_600_000).default(60_000),
  /**
   * Port of the API's Prometheus endpoint (`GET /metrics`), a listener of its own beside the public one. Unset: no
   * metrics listener (`npm start` sets 9464 unless given one).
   */
  METRICS_PORT: port.optional(),
  /** Port of the worker's Prometheus endpoint (its own metrics and the Temporal SDK's `temporal_*`). Unset: none (`npm start`: 9465). */
  WORKER_METRICS_PORT: port.optional(),
  /** Interface the metrics listeners bind to (0.0.0.0 in a container, where only the Prometheus service reaches it). */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Base address of an OpenTelemetry collector (OTLP over HTTP): spans go to `<this>/v1/traces`. Unset: no traces.
   * The API's spans are `propsync-api`, the worker's and its workflows' `propsync-worker`.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /**
   * OpenTelemetry's standard sampler (observability/tracing.ts gives the SDK the sampler it names): named here so that
   * a misspelt one stops the process instead of sampling everything.
   */
  OTEL_TRACES_SAMPLER: z
    .string()
    .transform((v) => v.trim().toLowerCase())
    .pipe(z.enum(OTEL_SAMPLERS, { error: `must be one of ${OTEL_SAMPLERS.join(', ')}` }))
    .optional(),
  /** The sampler's argument: for the two ratio samplers, the share of traces kept, a number from 0 to 1. */
  OTEL_TRACES_SAMPLER_ARG: z.string().optional(),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Pretty, coloured logs (development) instead of JSON lines. */
  LOG_PRETTY: bool.default(false),
  /** Milliseconds an authenticated API key stays cached in a process (revocations also invalidate at once via NOTIFY). */
  AUTH_CACHE_MS: z.coerce.number().int().min(0).default(30_000),
});

/** The database of a process started on its own without DATABASE_URL (`npm start` runs an embedded one instead). */
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/propsync';

export type Config = Omit<z.infer<typeof configSchema>, 'DATABASE_URL'> & {
  DATABASE_URL: string;
  /** Whether DATABASE_URL was set; when not, `npm start` runs an embedded Postgres and sets it for its children. */
  DATABASE_URL_SET: boolean;
  SANDBOX_URL: string;
  TEMPORAL_UI_URL: string;
  PUBLIC_BASE_URL: string;
  PROBLEM_BASE_URL: string;
  DOCS_BASE_URL: string;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The retry schedules of writes, webhook deliveries and automation runs, as configured: what every start of their
 * workflows passes in (workflows/retry.ts follows them).
 */
export function retrySchedulesOf(c: Config): { write: RetrySchedule; webhook: RetrySchedule; automation: RetrySchedule } {
  return {
    write: scheduleOfList(c.WRITE_RETRY_SCHEDULE_MS, { thenEveryMs: c.WRITE_RETRY_EVERY_MS, giveUpAfterMs: c.WRITE_RETRY_WINDOW_MS }),
    webhook: scheduleOfList(c.WEBHOOK_RETRY_SCHEDULE_MS),
    automation: scheduleOfList(c.AUTOMATION_RETRY_SCHEDULE_MS),
  };
}

/**
 * Why a deployment may not serve live mode on this configuration, one line per problem naming the variable, or
 * undefined: serving live means holding real credentials, so the development tokens and the public development
 * encryption key (as the active key; it may stay behind one's own to open values until they are re-encrypted) are
 * refused.
 */
export function liveModeRefusal(c: Config): string | undefined {
  if (!c.SERVED_MODES.includes('live')) return undefined;
  const lines: string[] = [];
  if (c.ADMIN_TOKEN === DEV_ADMIN_TOKEN) lines.push('  ADMIN_TOKEN: is the development default; set a long random token of your own');
  if (c.SANDBOX_CONTROL_TOKEN === DEV_SANDBOX_CONTROL_TOKEN)
    lines.push('  SANDBOX_CONTROL_TOKEN: is the development default; set a long random token of your own');
  if (c.ENCRYPTION_KEYS[0]!.key.equals(DEV_ENCRYPTION_KEY.key)) {
    lines.push('  ENCRYPTION_KEYS: unset, or its first (active) key is the public development key; put a kid:base64(32 bytes) key of your own first');
  }
  return lines.length > 0 ? `Refusing to serve live mode (SERVED_MODES includes live):\n${lines.join('\n')}` : undefined;
}

/** The environment with empty values dropped: `FOO= npm start` means FOO unset, so it falls back to the default. */
const setOnly = (env: Record<string, string | undefined>) => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));

/** `VAR: why` for each issue, naming the variable itself (a list variable's issue path also carries the item's index). */
const issueLines = (error: z.ZodError) => error.issues.map((i) => `${String(i.path[0] ?? '(root)')}: ${i.message}`);

/** PUBLIC_BASE_URL, or http://HOST:PORT when it is unset (127.0.0.1 for a listener on every interface, IPv6 in brackets); no trailing slash. */
const publicBaseOf = (c: { PUBLIC_BASE_URL?: string | undefined; HOST: string; PORT: number }) =>
  (c.PUBLIC_BASE_URL ?? localUrlOf(c.HOST, c.PORT)).replace(/\/$/, '');

/** Where a listener on `host` answers from this machine: loopback for one on every interface (0.0.0.0, ::). */
export const localHostOf = (host: string) => (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);

/** http://HOST:PORT as this machine reaches a listener there (an IPv6 address in brackets). */
export function localUrlOf(host: string, port: number): string {
  const local = localHostOf(host);
  return `http://${isIPv6(local) ? `[${local}]` : local}:${port}`;
}

/** Parse a configuration from an environment-like record. Throws ConfigError naming every bad variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = configSchema.safeParse(setOnly(env));
  if (!parsed.success)
    throw new ConfigError(
      `Invalid configuration:\n${issueLines(parsed.error)
        .map((l) => `  ${l}`)
        .join('\n')}`,
    );
  const c = parsed.data;
  if ((c.TEMPORAL_TLS_CERT_PATH === undefined) !== (c.TEMPORAL_TLS_KEY_PATH === undefined)) {
    throw new ConfigError(
      'Invalid configuration:\n  TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH: set both (an mTLS client certificate and its key) or neither',
    );
  }
  if (c.OTEL_TRACES_SAMPLER?.endsWith('traceidratio') && c.OTEL_TRACES_SAMPLER_ARG !== undefined) {
    const share = Number(c.OTEL_TRACES_SAMPLER_ARG.trim());
    if (c.OTEL_TRACES_SAMPLER_ARG.trim() === '' || !(share >= 0 && share <= 1)) {
      throw new ConfigError(`Invalid configuration:\n  OTEL_TRACES_SAMPLER_ARG: the share of traces ${c.OTEL_TRACES_SAMPLER} keeps, a number from 0 to 1`);
    }
  }
  const publicBase = publicBaseOf(c);
  return {
    ...c,
    DATABASE_URL: c.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    DATABASE_URL_SET: c.DATABASE_URL !== undefined,
    SANDBOX_URL: (c.SANDBOX_URL ?? `http://127.0.0.1:${c.SANDBOX_PORT}`).replace(/\/$/, ''),
    TEMPORAL_UI_URL: (c.TEMPORAL_UI_URL ?? `http://127.0.0.1:${c.TEMPORAL_UI_PORT}`).replace(/\/$/, ''),
    PUBLIC_BASE_URL: publicBase,
    PROBLEM_BASE_URL: (c.PROBLEM_BASE_URL ?? `${publicBase}/problems`).replace(/\/$/, ''),
    DOCS_BASE_URL: (c.DOCS_BASE_URL ?? `${publicBase}/docs`).replace(/\/$/, ''),
  };
}

/** The variables a client of the admin API reads: where the API is (PUBLIC_BASE_URL, else HOST and PORT) and its token. */
const adminClientSchema = configSchema.pick({ PUBLIC_BASE_URL: true, HOST: true, PORT: true, ADMIN_TOKEN: true });

/**
 * What a client of the admin API (the operator CLI) takes from the environment, by the rules and defaults of
 * parseConfig, every other variable ignored: the API's address (PUBLIC_BASE_URL, else http://HOST:PORT) and the admin
 * token. A variable that is not needed is not read at all: HOST and PORT when PUBLIC_BASE_URL is set, and those `given`
 * instead (the client's `--url`, `--token`). Throws ConfigError with one line, `VAR: why` (several joined by `; `).
 */
export function adminClientConfig(
  env: Record<string, string | undefined>,
  given: { url?: string; token?: string } = {},
): { PUBLIC_BASE_URL: string; ADMIN_TOKEN: string } {
  const set = setOnly(env);
  const ignored = new Set([
    ...(given.url !== undefined ? ['PUBLIC_BASE_URL', 'HOST', 'PORT'] : set.PUBLIC_BASE_URL !== undefined ? ['HOST', 'PORT'] : []),
    ...(given.token !== undefined ? ['ADMIN_TOKEN'] : []),
  ]);
  const parsed = adminClientSchema.safeParse(Object.fromEntries(Object.entries(set).filter(([k]) => !ignored.has(k))));
  if (!parsed.success) throw new ConfigError(issueLines(parsed.error).join('; '));
  return { PUBLIC_BASE_URL: given.url ?? publicBaseOf(parsed.data), ADMIN_TOKEN: given.token ?? parsed.data.ADMIN_TOKEN };
}

let loaded: Config | undefined;

/** The process's configuration, parsed on first use. Entry points call this first so a bad value fails fast. */
export function config(): Config {
  loaded ??= parseConfig(process.env);
  return loaded;
}

/**
 * Entry-point helper: parse or exit(1) with the readable message. `serving`: the process serves the API modes
 * (the API, the worker), so it also refuses live mode on development secrets.
 */
export function loadConfigOrExit(opts: { serving?: boolean } = {}): Config {
  try {
    const c = config();
    const refusal = opts.serving ? liveModeRefusal(c) : undefined;
    if (refusal) throw new ConfigError(refusal);
    return c;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}
