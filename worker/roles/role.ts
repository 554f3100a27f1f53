/**
 * What a worker role is (WORKER_ROLES picks which a process runs): something started with the process's shared
 * connections and workflow bundle, that runs until shutdown, and that brings its schedules in line at start-up.
 */
import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import type { Db } from '../../db/client';
import type { WorkerMetrics } from '../../observability/metrics';
import type { Tracing } from '../../observability/tracing';

/** What a role's Temporal worker is made of (tests create one from these alone). */
export interface WorkerDeps {
  config: Config;
  db: Db;
  connection: NativeConnection;
  /** What the activities count (worker/main.ts: the process's Prometheus registry). */
  metrics?: WorkerMetrics;
  /** Where spans go (worker/main.ts, when OTEL_EXPORTER_OTLP_ENDPOINT is set). */
  tracing?: Tracing;
}

/** What every role of a process shares. */
export interface RoleContext extends WorkerDeps {
  client: Client;
  logger: Logger;
  /** The workflow bundle (worker/workflow-bundle.ts): read by Worker.create, so only during start. */
  codePath: string;
}

export interface RunningRole {
  /** Runs until shutdown() (or a signal, for the Temporal workers); rejects if the role fails. */
  run(): Promise<void>;
  /** Asks the role to stop; run() then resolves once it has. Safe to call more than once. */
  shutdown(): void;
  /** Releases what the role holds (listeners, pools, threads); called after run() ended. */
  close(): Promise<void>;
  /**
   * Brings the role's Temporal schedules in line with the database (WORKER_RECONCILE_SCHEDULES), in the background
   * once the role polls. Idempotent: every replica does it.
   */
  reconcile?(): Promise<void>;
}

export type StartRole = (ctx: RoleContext) => Promise<RunningRole>;
