/**
 * Configuration, parsed once from the environment. Nothing else in the project reads `process.env`.
 * A bad value stops start-up with a message that names the variable.
 */
import { z } from 'zod';

const port = z.coerce.number().int().min(1).max(65535);
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const configSchema = z.object({
  /** Postgres connection string for the cache, the outbox and everything else the service keeps. */
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/propsync'),
  /** Max connections in each process's Postgres pool. */
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
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
  /** Temporal namespace for every workflow of the service. */
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Task queue of sync workflows; webhook deliveries run on `<this>-webhooks`. Tests give each file its own. */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('propsync'),
  /** Port of the sandbox PMS that test-mode integrations sync from. */
  SANDBOX_PORT: port.default(4010),
  /** Address the service uses to reach the sandbox PMS. Defaults to http://127.0.0.1:SANDBOX_PORT. */
  SANDBOX_URL: z.string().url().optional(),
  /** Bearer token of the sandbox PMS's control endpoints (create companies, apply changes, set faults). */
  SANDBOX_CONTROL_TOKEN: z.string().min(16, 'must be at least 16 characters').default('dev-sandbox-control-token'),
  /** Milliseconds the sandbox PMS delays each reply while a `slow` fault without its own delay is set. */
  SANDBOX_SLOW_MS: z.coerce.number().int().min(0).max(600_000).default(3000),
  /** Bearer token of the admin API (/admin/v1). */
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').default('dev-admin-token-change-me'),
  /** Modes of API key this deployment serves; a key of another mode gets 401. */
  SERVED_MODES: z
    .string()
    .default('test,live')
    .transform((s) => s.split(',').map((m) => m.trim()).filter(Boolean))
    .pipe(z.array(z.enum(['test', 'live'])).min(1)),
  /** Public base address of the API, used in links and the OpenAPI document. Defaults to http://HOST:PORT. */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** Base of problem type URIs that are not under the docs (idempotency-key-conflict). Defaults to PUBLIC_BASE_URL/problems. */
  PROBLEM_BASE_URL: z.string().url().optional(),
  /** Base of documentation URIs; error types are DOCS_BASE_URL/errors/<slug>. Defaults to PUBLIC_BASE_URL/docs. */
  DOCS_BASE_URL: z.string().url().optional(),
  /** Records the sync reads per source page (the source may cap it lower). */
  SYNC_PAGE_SIZE: z.coerce.number().int().min(1).max(10_000).default(1000),
  /** Sync activities (one entity of one integration each) a worker runs at once; bounds its memory. */
  WORKER_MAX_ACTIVITIES: z.coerce.number().int().min(1).max(200).default(8),
  /** Threads a worker reads, maps and hashes source pages on (0: on its event loop). */
  WORKER_READ_THREADS: z.coerce.number().int().min(0).max(64).default(1),
  /** Whether the worker creates or updates every integration's sync schedule at start-up (off for workers that share a database with others on another task queue, as in tests). */
  WORKER_RECONCILE_SCHEDULES: bool.default(true),
  /** Webhook delivery attempts a worker runs at once (each is one HTTP exchange of at most 10 s). */
  WEBHOOK_MAX_ACTIVITIES: z.coerce.number().int().min(1).max(2000).default(200),
  /**
   * Delays before each webhook attempt, after the previous one, in milliseconds (7 attempts: SPEC.md's schedule).
   * Tests shrink it; the last failure dead-letters the delivery.
   */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .default('0,30000,60000,300000,1800000,3600000,21600000')
    .transform((s) => s.split(',').map((v) => Number(v.trim())))
    .pipe(z.array(z.number().int().min(0).max(30 * 24 * 3600 * 1000)).min(1)),
  /** Whether this worker runs the outbox relay that starts delivery workflows (one relay is active at a time; others stand by). */
  WEBHOOK_RELAY: bool.default(true),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Pretty, coloured logs (development) instead of JSON lines. */
  LOG_PRETTY: bool.default(false),
  /** Milliseconds an authenticated API key stays cached in a process (revocations also invalidate at once via NOTIFY). */
  AUTH_CACHE_MS: z.coerce.number().int().min(0).default(30_000),
});

export type Config = z.infer<typeof configSchema> & {
  SANDBOX_URL: string;
  PUBLIC_BASE_URL: string;
  PROBLEM_BASE_URL: string;
  DOCS_BASE_URL: string;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parse a configuration from an environment-like record. Throws ConfigError naming every bad variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // Empty strings mean "unset" so that `FOO= npm start` falls back to the default.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    // Name the variable itself (a list variable's issue path also carries the item's index).
    const lines = parsed.error.issues.map((i) => `  ${String(i.path[0] ?? '(root)')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  const publicBase = (c.PUBLIC_BASE_URL ?? `http://${c.HOST === '0.0.0.0' ? '127.0.0.1' : c.HOST}:${c.PORT}`).replace(/\/$/, '');
  return {
    ...c,
    SANDBOX_URL: (c.SANDBOX_URL ?? `http://127.0.0.1:${c.SANDBOX_PORT}`).replace(/\/$/, ''),
    PUBLIC_BASE_URL: publicBase,
    PROBLEM_BASE_URL: (c.PROBLEM_BASE_URL ?? `${publicBase}/problems`).replace(/\/$/, ''),
    DOCS_BASE_URL: (c.DOCS_BASE_URL ?? `${publicBase}/docs`).replace(/\/$/, ''),
  };
}

let loaded: Config | undefined;

/** The process's configuration, parsed on first use. Entry points call this first so a bad value fails fast. */
export function config(): Config {
  loaded ??= parseConfig(process.env);
  return loaded;
}

/** Entry-point helper: parse or exit(1) with the readable message. */
export function loadConfigOrExit(): Config {
  try {
    return config();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}
