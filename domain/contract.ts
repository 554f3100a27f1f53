/**
 * The contract between api/, workflows/ and worker/: task queue, workflow ids and inputs, search attributes,
 * queries. Pure: workflows import it.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Search attributes registered on the namespace at worker start-up so operators can filter in the Temporal UI. */
export const SA_ORGANIZATION_ID = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);
export const SA_INTEGRATION_ID = defineSearchAttributeKey('IntegrationId', SearchAttributeType.KEYWORD);
export const SA_SYNC_JOB_ID = defineSearchAttributeKey('SyncJobId', SearchAttributeType.KEYWORD);
export const SA_STATUS = defineSearchAttributeKey('PropsyncStatus', SearchAttributeType.KEYWORD);
/** Webhook deliveries: which subscription and event type a delivery workflow serves, and where it stands. */
export const SA_SUBSCRIPTION_ID = defineSearchAttributeKey('WebhookSubscriptionId', SearchAttributeType.KEYWORD);
export const SA_EVENT_TYPE = defineSearchAttributeKey('WebhookEventType', SearchAttributeType.KEYWORD);
export const SA_DELIVERY_STATUS = defineSearchAttributeKey('DeliveryStatus', SearchAttributeType.KEYWORD);
/** Write Operations: their type (`lease.create` …); their status is PropsyncStatus, their tenant the two above. */
export const SA_OPERATION_TYPE = defineSearchAttributeKey('OperationType', SearchAttributeType.KEYWORD);
/** Automation runs: which automation (their status is PropsyncStatus). */
export const SA_AUTOMATION_ID = defineSearchAttributeKey('AutomationId', SearchAttributeType.KEYWORD);
export const SEARCH_ATTRIBUTES = [
  SA_ORGANIZATION_ID,
  SA_INTEGRATION_ID,
  SA_SYNC_JOB_ID,
  SA_STATUS,
  SA_SUBSCRIPTION_ID,
  SA_EVENT_TYPE,
  SA_DELIVERY_STATUS,
  SA_OPERATION_TYPE,
  SA_AUTOMATION_ID,
] as const;

/**
 * Webhook deliveries run on their own task queue, so a long sync never delays a webhook: the sync queue's name
 * with this suffix.
 */
export const webhookTaskQueueOf = (syncTaskQueue: string) => `${syncTaskQueue}-webhooks`;
/**
 * Writes run on their own task queue (and their own worker slots), so a long sync activity never delays a write:
 * the sync queue's name with this suffix.
 */
export const writeTaskQueueOf = (syncTaskQueue: string) => `${syncTaskQueue}-writes`;
/** A write's workflow id is its Operation id (`opr_…`). */
export const writeWorkflowIdOf = (operationId: string) => operationId;
/** The schedule of the sweeper that starts the workflow of any accepted write left without one. */
export const OPERATION_SWEEP_SCHEDULE_ID = 'operation-sweeper';
/** Automation runs (CSV exports) run on their own task queue and slots: a 100k-row export never delays a sync or a write. */
export const automationTaskQueueOf = (syncTaskQueue: string) => `${syncTaskQueue}-automations`;
/** An automation run's workflow id is its run id (`aru_…`). */
export const automationRunWorkflowIdOf = (runId: string) => runId;
/** The Temporal Schedule of an automation. */
export const AUTOMATION_SCHEDULE_PREFIX = 'automation-schedule-';
export const automationScheduleIdOf = (automationId: string) => `${AUTOMATION_SCHEDULE_PREFIX}${automationId}`;
/**
 * A subscription's dispatcher (the workflow that makes its first attempts, in order and in batches): one per
 * subscription, under this id, started or woken by the relay with the wake signal.
 */
export const dispatcherWorkflowIdOf = (subscriptionId: string) => `dispatch-${subscriptionId}`;
/** Signal that tells a dispatcher new deliveries are queued. */
export const WAKE_SIGNAL = 'wake';
/**
 * The dispatchers' batch activities run on a task queue of their own (the webhook queue's name with this suffix),
 * with slots of their own: retries of a failing receiver can never take the slots that first attempts need.
 */
export const dispatchTaskQueueOf = (webhookTaskQueue: string) => `${webhookTaskQueue}-dispatch`;
/** The delivery workflow's id is the delivery id (`whd_…`). */
export const deliveryWorkflowIdOf = (deliveryId: string) => deliveryId;
/** Signal that asks a delivery workflow for one more attempt now (an operator's replay). */
export const REPLAY_SIGNAL = 'replay';
/** Signal that asks a waiting delivery workflow to look at its row now: it ends if the delivery was cancelled. */
export const RECHECK_SIGNAL = 'recheck';
/** The schedule of the retention clean-up (events and deliveries older than 30 days). */
export const PURGE_SCHEDULE_ID = 'webhook-retention-purge';

export type SyncTrigger = 'initial' | 'schedule' | 'manual';

/**
 * What a run reads. `full`: every record, and only a full run may soft-delete (what it did not see, once the source
 * confirms it gone). `delta`: the records the source says changed in the run's window; it deletes nothing.
 */
export const SYNC_KINDS = ['full', 'delta'] as const;
export type SyncKind = (typeof SYNC_KINDS)[number];

/** Seconds between full runs of an integration whose source reads deltas, unless it sets its own (SYNC_FULL_INTERVAL_SECONDS). */
export const DEFAULT_FULL_SYNC_INTERVAL_SECONDS = 86_400;
/** The longest full-run interval an integration may set: a source's deletions are never older than this in the cache. */
export const MAX_FULL_SYNC_INTERVAL_SECONDS = 30 * 86_400;
/**
 * How far before the end of the last covered window a delta run starts reading (SYNC_DELTA_OVERLAP_SECONDS): the
 * source's clock may run behind the database's, and a record may be committed at the source after the time it bears.
 */
export const DEFAULT_DELTA_OVERLAP_SECONDS = 300;

export interface SyncWorkflowInput {
  integrationId: string;
  trigger: SyncTrigger;
  /** Set when the API created the job row (manual trigger); scheduled runs create theirs in the first activity. */
  syncJobId?: string;
  /**
   * A manual trigger's request: `full` makes the run full; `delta` lets it be a delta run where one may be (the first
   * run of an integration, or one with no run succeeded yet, is full whatever is asked). Unset: the run decides.
   */
  kind?: SyncKind;
}

export interface SyncWorkflowResult {
  /** The run's job; for a skipped scheduled run, the job of the run that was already going (null: none). */
  syncJobId: string | null;
  /**
   * `skipped`: a scheduled run found another run of the integration going (or the integration deleted) and did
   * nothing. A failed run never returns: the workflow fails, after marking its job failed.
   */
  status: 'succeeded' | 'failed' | 'skipped';
}

/** Values of the PropsyncStatus search attribute on a sync workflow. */
export type SyncRunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';

/** Id of the Temporal Schedule of an integration. */
export const SCHEDULE_ID_PREFIX = 'sync-schedule-';
export const scheduleIdOf = (integrationId: string) => `${SCHEDULE_ID_PREFIX}${integrationId}`;
/** Id of a sync workflow run for a job: one job, one workflow. */
export const syncWorkflowIdOf = (syncJobId: string) => `sync-${syncJobId}`;

/**
 * How a sync run retries and bounds its steps: the worker's configuration (SYNC_* variables), fixed for a run by
 * its first step (a local activity), so every attempt of the run follows the same policy.
 */
export interface SyncPolicy {
  /** Retries of an entity's activity (source outages): first delay, growth, longest delay, attempts in all. */
  retry: { initialIntervalMs: number; backoffCoefficient: number; maximumIntervalMs: number; maximumAttempts: number };
  /** All attempts of one entity (or its deletion check) together; beyond it the run fails. */
  entityTimeoutMs: number;
  /** Silence after which an attempt counts as lost (a dead worker); activities heartbeat well within it. */
  heartbeatTimeoutMs: number;
  /** All attempts of a bookkeeping step (claim, finish, record a failure): a long database outage fails the run. */
  bookkeepingTimeoutMs: number;
}

/** The policy of a worker with the default configuration. */
export const DEFAULT_SYNC_POLICY: SyncPolicy = {
  retry: { initialIntervalMs: 2_000, backoffCoefficient: 2, maximumIntervalMs: 120_000, maximumAttempts: 10 },
  entityTimeoutMs: 6 * 3600_000,
  heartbeatTimeoutMs: 20_000,
  bookkeepingTimeoutMs: 10 * 60_000,
};
