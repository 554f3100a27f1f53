/**
 * Write-back rules (docs/api.md Operation and Operations rules, docs/decisions.md Writes): the Operation's types and states,
 * their transitions, and the write workflow's contract. Pure: workflows import it.
 */
import type { RetrySchedule } from './retry';
import { RETRIED_STATUSES, retriedStatesBefore, type RetriedStatus } from './states';

export type WritableEntity = 'unit' | 'resident' | 'lease';
export type WriteAction = 'create' | 'update';

export const OPERATION_TYPES = ['lease.create', 'lease.update', 'unit.create', 'unit.update', 'resident.create', 'resident.update'] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export const operationTypeOf = (entity: WritableEntity, action: WriteAction): OperationType => `${entity}.${action}`;
export function parseOperationType(type: OperationType): { entity: WritableEntity; action: WriteAction } {
  const [entity, action] = type.split('.') as [WritableEntity, WriteAction];
  return { entity, action };
}

/**
 * An Operation's states, those of all work the retry loop drives (domain/states.ts):
 * - `queued`: accepted, no attempt finished yet
 * - `running`: at least one attempt failed transiently and another is scheduled (`next_attempt_at`)
 * - `succeeded`: the source applied the change and the cache holds it (terminal)
 * - `failed`: the source rejected it, or it could not be applied within the retry window (terminal)
 */
export const OPERATION_STATUSES = RETRIED_STATUSES;
export type OperationStatus = RetriedStatus;

/** The states an Operation may move to `to` from: the guard on every status write. */
export const operationStatesBefore = retriedStatesBefore;

export const isTerminal = (s: OperationStatus): boolean => s === 'succeeded' || s === 'failed';

/**
 * When a write the source applied could not be read back and stored, the first retry of that (workflows/operation.ts
 * storeApplied, which Temporal retries with backoff): the Operation's next_attempt_at meanwhile.
 */
export const READ_BACK_FIRST_RETRY_MS = 5_000;
/** The longest wait between two read-backs of an applied write (the delay doubles from READ_BACK_FIRST_RETRY_MS up to it). */
export const READ_BACK_MAX_RETRY_MS = 300_000;

/** When the read-back after the `attempt`th one that failed starts, `nowMs` being when it failed. */
export const nextReadBackAtMs = (attempt: number, nowMs: number): number =>
  nowMs + Math.min(READ_BACK_FIRST_RETRY_MS * 2 ** (attempt - 1), READ_BACK_MAX_RETRY_MS);

/** Input of the write workflow: ids only (the body, with residents' names and phones, stays in the database). */
export interface WriteWorkflowInput {
  operationId: string;
  type: OperationType;
  /** When the Operation was accepted: no attempt starts more than the schedule's give-up time after it. */
  acceptedAtMs: number;
  /** What the operator sees as the target (the updated record's CDM id, or the property of a create). */
  target?: string | null;
  /**
   * The retry schedule (WRITE_RETRY_*): after a transient failure, the next attempt; no attempt starts later than its
   * window after `acceptedAtMs`, and the failure of the last fails the Operation with its error. Absent in runs
   * started before every start passed it (they follow the default).
   */
  schedule?: RetrySchedule;
}

export interface WriteWorkflowResult {
  operationId: string;
  status: 'succeeded' | 'failed';
  attempts: number;
}

/** What the workflow's `state` query and memo show an operator (no personal data). */
export interface OperationView {
  type: OperationType;
  status: OperationStatus;
  /** The record written: its CDM id for an update, its property's for a create. */
  target: string | null;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
}
