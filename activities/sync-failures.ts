/**
 * How the sync activities fail: the types of their failures (non-retryable ones end the run; retryable ones are
 * retried by Temporal, each attempt's failure visible in the history) and the failures they raise.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { NotMoved, NotRunning } from '../db/sync-runs';
import { SourcePermanentError, SourceTransientError } from '../source/connector';

/** Types of the non-retryable failures a sync activity raises. */
export const SYNC_FAILURE = {
  sourcePermanent: 'SourcePermanentError',
  jobNotFound: 'SyncJobNotFound',
  jobNotRunning: 'SyncJobNotRunning',
  integrationGone: 'IntegrationGone',
  incomplete: 'SyncIncomplete',
  /** The stored source api key does not open with ENCRYPTION_KEYS (a key removed too early). */
  secretUnavailable: 'SecretUnavailable',
} as const;

/** Types of the retryable failures a sync activity raises (each attempt's failure is visible in the history). */
export const SYNC_RETRYABLE = {
  /** The attempt's resume point did not move for SYNC_STALL_MS: it gave up so that a fresh attempt can resume. */
  stalled: 'SyncStalled',
  /** The source asked to be left alone for a while (Retry-After): the next attempt waits exactly that long. */
  rateLimited: 'SourceRateLimited',
} as const;

/** A source failure as the activity raises it: permanent ones end the run, a Retry-After sets the next attempt. */
export const sourceFailure =
  (what: string) =>
  (err: unknown): never => {
    if (err instanceof SourcePermanentError) throw ApplicationFailure.nonRetryable(`${what}: ${err.message}`, SYNC_FAILURE.sourcePermanent);
    if (err instanceof SourceTransientError && err.retryAfterMs !== undefined) {
      throw ApplicationFailure.create({
        type: SYNC_RETRYABLE.rateLimited,
        message: `${what}: ${err.message}; the source asked for ${Math.ceil(err.retryAfterMs / 1000)} s`,
        nextRetryDelay: Math.max(1_000, err.retryAfterMs),
      });
    }
    throw err;
  };

/**
 * Why a run's bookkeeping did not move, as the activity fails: the job ended, or its integration went (for good), or
 * another attempt moved it first (retryable: the next attempt starts from where the job now stands).
 */
export function notMovedFailure(syncJobId: string, why: NotMoved): Error {
  if (why.reason === 'integration-deleted') return integrationGone(why.integrationId);
  if (why.reason === 'ended') return ApplicationFailure.nonRetryable(`sync job ${syncJobId} is ${why.status}`, SYNC_FAILURE.jobNotRunning);
  return new Error(`another attempt moved sync job ${syncJobId} first`);
}

/** Why a job cannot run, as the activity fails: no such job, or as notMovedFailure says. */
export function notRunningFailure(syncJobId: string, why: NotRunning): Error {
  if (why.reason === 'not-found') return ApplicationFailure.nonRetryable(`sync job ${syncJobId} not found`, SYNC_FAILURE.jobNotFound);
  return notMovedFailure(syncJobId, why);
}

function integrationGone(integrationId: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`integration ${integrationId} was deleted`, SYNC_FAILURE.integrationGone);
}
