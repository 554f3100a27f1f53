/** Explicit states: a whitelist of transitions per status, and the guard every status write applies. Pure. */

/** The states from which `to` may be reached, by the whitelist `transitions` (status → where it may go). */
export function statesLeadingTo<S extends string>(transitions: Record<S, readonly S[]>, to: S): S[] {
  return (Object.keys(transitions) as S[]).filter((from) => transitions[from].includes(to));
}

/**
 * The lifecycle of work the one retry loop drives (workflows/retry.ts): an Operation, an automation run. `queued`
 * until its first attempt ends; `running` while another attempt is scheduled after a transient failure; then
 * `succeeded` or `failed`, for good.
 */
export const RETRIED_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type RetriedStatus = (typeof RETRIED_STATUSES)[number];

const RETRIED_TRANSITIONS: Record<RetriedStatus, readonly RetriedStatus[]> = {
  queued: ['running', 'succeeded', 'failed'],
  running: ['running', 'succeeded', 'failed'],
  succeeded: [],
  failed: [],
};

/** The states retried work may move to `to` from: the guard on every status write. */
export const retriedStatesBefore = (to: RetriedStatus): RetriedStatus[] => statesLeadingTo(RETRIED_TRANSITIONS, to);
