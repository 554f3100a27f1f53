/**
 * Write-back activities: the side effects of a write's workflow. `attemptWrite` makes ONE attempt at the source (a
 * write is not idempotent; the workflow owns the retries as durable timers) and classifies its outcome; after an
 * attempt whose outcome is unknown, a create is first looked up in the source by what identifies it, so that a
 * write the source applied is never sent again. An applied write is read back from the source and stored through
 * the sync's own write path (db/apply.ts), with the change events a sync would record, before the Operation
 * turns `succeeded`. No source call runs inside a database transaction.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../db/client';
import { databaseNow } from '../db/clock';
import {
  getOperation,
  markWorkflowStarted,
  moveOperation,
  openOperationIds,
  purgeIdempotencyKeys,
  unstartedOperations,
  type OperationRow,
} from '../db/operations';
import type { IntegrationRow } from '../db/tenants';
import { IntegrationDeletedError, operationWithIntegration, StaleReadBackError, storeWriteBack } from '../db/write-back';
import type { Entity, InputOf } from '../domain/cdm';
import { isTerminal, nextReadBackAtMs, parseOperationType, type OperationStatus } from '../domain/operations';
import { openSourceConfig, SecretError, type Keyring } from '../domain/secrets';
import {
  createConnector,
  MALFORMED_RECORD,
  SourcePermanentError,
  SourceTransientError,
  type CreateInputOf,
  type SourceConnector,
  type SourceSettings,
  type UpdateInputOf,
  type WriteResult,
} from '../source';
import { clip, heartbeating, messageOf } from './attempt';
import { NO_METRICS, type WorkerMetrics } from '../observability/metrics';
import { inSpan, SpanKind } from '../observability/tracing';

/**
 * Read-backs of one store before it gives up for this activity (the attempt's outcome is then `applied` and
 * storeApplied tries again later): each is left out only when another write of the same record was stored meanwhile.
 */
const MAX_READ_BACKS = 5;

export interface WriteActivityDeps {
  db: Db;
  /** Opens the integration's stored source api key. */
  secrets: Keyring;
  /** How long one write to the source may take (WRITE_SOURCE_TIMEOUT_MS). */
  sourceTimeoutMs?: number;
  /** The connector of an integration's settings (tests hand in a fake). */
  connectorOf?: (settings: SourceSettings, opts: { timeoutMs: number }) => SourceConnector;
  /** Starts the workflow of an accepted write (the sweeper's use; control/operations.ts). */
  startWorkflow?: (op: Pick<OperationRow, 'id' | 'organizationId' | 'integrationId' | 'type' | 'createdAt'>) => Promise<void>;
  /**
   * Temporal's view of write workflows (the sweeper's use; control/operations.ts): those that closed while their
   * status still said queued or running (stopped from outside), and why one closed.
   */
  workflows?: {
    closedStillOpen: () => Promise<{ operationId: string; runId: string; status: string }[]>;
    closeReasonOf: (operationId: string, runId: string) => Promise<string>;
  };
  clock?: () => Date;
  /** Heartbeat interval of an attempt (the workflow's heartbeat timeout must be well above it). */
  heartbeatEveryMs?: number;
  /** Counts ended Operations (Prometheus); nothing when absent. */
  metrics?: WorkerMetrics;
}

export interface AttemptInput {
  operationId: string;
  /** 1-based number of this attempt. */
  attempt: number;
  /** Look for the record a previous attempt may have created before sending the create again. */
  probe: boolean;
}

export type AttemptResult =
  /** Applied at the source, read back and stored: the Operation is `succeeded`. */
  | { outcome: 'succeeded'; resourceId: string; xId: string }
  /** Applied at the source, but reading it back or storing it failed: `storeApplied` carries on. */
  | { outcome: 'applied'; xId: string; related: WriteResult['related']; appliedAtMs: number; error: string }
  /** The source refused the change: the caller must fix it. */
  | { outcome: 'rejected'; error: string }
  /** Worth another attempt (network, timeout, 5xx, 429); `maybeApplied`: the request may have reached the source. */
  | {
      outcome: 'transient';
      error: string;
      maybeApplied: boolean;
      /** The source asked to be left alone this long (a 429's or 503's Retry-After): the next attempt waits at least this. */
      retryAfterMs?: number;
    }
  /**
   * A service-side problem no retry fixes (credentials that cannot be opened, integration deleted); `unsent`: this
   * attempt sent nothing to the source (it does not count as one).
   */
  | { outcome: 'failed'; error: string; unsent?: true }
  /** The Operation was already terminal (a repeated attempt). */
  | { outcome: 'finished'; status: OperationStatus };

export interface StoreInput {
  operationId: string;
  attempts: number;
  xId: string;
  related: WriteResult['related'];
  appliedAtMs: number;
}

export interface RetryInput {
  operationId: string;
  attempts: number;
  nextAttemptAtMs: number;
  error: string;
}

export interface FailInput {
  operationId: string;
  attempts: number;
  error: string;
  /** `rejected` when the source refused it; `applied` when it took the change but it could not be stored. */
  sourceState: 'rejected' | 'applied' | null;
}

export function createWriteActivities(deps: WriteActivityDeps) {
  const { db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const timeoutMs = deps.sourceTimeoutMs ?? 30_000;
  const connectorOf = deps.connectorOf ?? ((settings, opts) => createConnector(settings, opts));
  const heartbeatEveryMs = deps.heartbeatEveryMs ?? 3_000;
  const metrics = deps.metrics ?? NO_METRICS;

  async function load(operationId: string): Promise<{ op: OperationRow; integration: IntegrationRow } | { done: OperationStatus } | { error: string }> {
    const row = await operationWithIntegration(db, operationId);
    if (!row) return { error: `operation ${operationId} does not exist` };
    const { op, integration } = row;
    if (isTerminal(op.status)) return { done: op.status };
    if (!integration || integration.deletedAt) return { error: deletedBeforeStored(op) };
    return { op, integration };
  }

  /**
   * Why an Operation fails whose integration was deleted before it ended: after the source applied it, after attempts
   * whose outcome is not known (the source may hold the change: an earlier attempt timed out or lost its answer), or
   * before anything was sent.
   */
  function deletedBeforeStored(op: OperationRow): string {
    if (op.sourceState === 'applied') return deletedAfterApplied(op.resourceXId);
    if (op.attempts > 0) {
      return clip(
        `the integration was deleted after ${op.attempts === 1 ? 'an attempt' : `${op.attempts} attempts`} that did not succeed (last error: ${op.lastError ?? 'none recorded'}): the source may or may not hold the change`,
      );
    }
    return 'the integration was deleted before the change reached the source';
  }

  /** Why an Operation the source applied fails when its integration was deleted before the change was stored. */
  function deletedAfterApplied(xId: string | null): string {
    return `the source applied the change${xId ? ` (x_id ${xId})` : ''}, but the integration was deleted before it could be stored: the cache keeps nothing of it`;
  }

  /**
   * Why a change the source applied can never be stored, or undefined when a later read-back may store it: its
   * integration was deleted meanwhile, or the source holds the record (or one written with it: a lease's resident)
   * in a form the mapping cannot read (no retry changes that; once it is repaired at the source, the next sync stores
   * it). The message names the unreadable record.
   */
  function neverStored(err: unknown, xId: string): string | undefined {
    if (err instanceof IntegrationDeletedError) return deletedAfterApplied(xId);
    if (err instanceof SourcePermanentError && err.code === MALFORMED_RECORD) {
      return clip(
        `the source applied the change (x_id ${xId}), but a record it holds for it cannot be read (${err.message}): the cache keeps the version before it until the record is repaired at the source and synced; do not send the change again`,
      );
    }
    return undefined;
  }

  /** Fail an Operation the source applied whose change can never be stored (`error`: why; source.state stays `applied`). */
  async function failAfterApplied(op: OperationRow, attempts: number, appliedAtMs: number, error: string): Promise<string> {
    const moved = await moveOperation(
      db,
      op.id,
      'failed',
      {
        attempts,
        sourceState: 'applied',
        appliedAt: new Date(appliedAtMs),
        reconcileState: 'failed',
        nextAttemptAt: null,
        lastError: error,
        resourceId: null,
        resourceXId: null,
      },
      clock(),
    );
    if (moved) metrics.operationCompleted(op.type, 'failed');
    return error;
  }

  /**
   * A read-back of a change the source applied failed and is retried at `nextAtMs`: the Operation is `running` with
   * this failure (and `fields`). Best effort: when the database is what failed, this fails too, and the next
   * read-back or the Operation's failure records it later.
   */
  async function readBackFailed(
    op: OperationRow,
    xId: string,
    error: string,
    nextAtMs: number,
    fields: Parameters<typeof moveOperation>[3] = {},
  ): Promise<void> {
    const lastError = clip(`the source applied the change (x_id ${xId}); reading it back failed and is retried: ${error}`);
    await moveOperation(db, op.id, 'running', { ...fields, nextAttemptAt: new Date(nextAtMs), lastError }, clock()).catch(() => {});
  }

  function connectorFor(integration: IntegrationRow): SourceConnector {
    return connectorOf(openSourceConfig(deps.secrets, integration), { timeoutMs });
  }

  /**
   * Read the written record (and what the source changed alongside it) back from the source, then store it through
   * the sync's write path and mark the Operation succeeded, in one transaction. When another write-back or a sync
   * page of the record was stored while it was being read (their reads overlapped, so which is newer is unknown),
   * nothing is stored and the source is read again: a later read sees this write and whatever followed it, so the
   * Operation never turns succeeded over an older version of its record.
   */
  async function store(
    op: OperationRow,
    integration: IntegrationRow,
    connector: SourceConnector,
    s: Omit<StoreInput, 'operationId'>,
    firstReadAt?: Promise<Date>,
  ): Promise<string> {
    const { entity } = parseOperationType(op.type);
    const wanted: { entity: Entity; x_id: string }[] = [...s.related, { entity, x_id: s.xId }];
    for (let read = 1; ; read++) {
      // A sync page read after this read-back and stored before it is the newer word: readAt keeps it. Both times are
      // the database's (a sync page's are too): the workers' clocks may disagree by any amount.
      const readAt = read === 1 && firstReadAt ? await firstReadAt : await databaseNow(db);
      try {
        return await readBackAndStore(op, integration, connector, s, entity, wanted, readAt);
      } catch (err) {
        if (!(err instanceof StaleReadBackError) || read >= MAX_READ_BACKS) throw err;
      }
    }
  }

  async function readBackAndStore(
    op: OperationRow,
    integration: IntegrationRow,
    connector: SourceConnector,
    s: Omit<StoreInput, 'operationId'>,
    entity: Entity,
    wanted: { entity: Entity; x_id: string }[],
    readAt: Date,
  ): Promise<string> {
    const read = new Map<Entity, InputOf[Entity][]>();
    for (const w of wanted) {
      const record = await connector.readOne(w.entity, w.x_id);
      if (!record) {
        if (w.entity === entity) throw new Error(`the source applied the write but has no ${entity} ${s.xId} to read back`);
        continue;
      }
      read.set(w.entity, [...(read.get(w.entity) ?? []), record]);
    }
    const stored = await storeWriteBack(db, {
      op,
      integration,
      entity,
      xId: s.xId,
      read,
      readAt,
      attempts: s.attempts,
      appliedAt: new Date(s.appliedAtMs),
    });
    if (stored.succeeded) metrics.operationCompleted(op.type, 'succeeded');
    return stored.resourceId;
  }

  async function send(op: OperationRow, connector: SourceConnector, probe: boolean): Promise<WriteResult> {
    const { entity, action } = parseOperationType(op.type);
    if (action === 'create') {
      // A source that takes an idempotency key makes nothing new of a create sent again: no look-up, which could
      // only find someone else's record.
      if (probe && !connector.capabilities.idempotentCreates) {
        const found = await connector.findCreated(entity, op.request as unknown as CreateInputOf[typeof entity]);
        if (found) return found;
      }
      // Where the source takes an idempotency key, every attempt of the Operation sends its id: a create re-sent
      // after an unknown outcome (which findCreated may miss while the source is slow to show it) makes nothing new.
      const opts = connector.capabilities.idempotentCreates ? { idempotencyKey: op.id } : undefined;
      return connector.create(entity, op.request as unknown as CreateInputOf[typeof entity], opts);
    }
    // Sending an update again sets the same values again: no look-up needed.
    if (!op.targetXId) throw new SourcePermanentError(`operation ${op.id} has no record to update`);
    return connector.update(entity, op.targetXId, op.request as unknown as UpdateInputOf[typeof entity]);
  }

  /**
   * Operations whose workflow Temporal shows closed (terminated by an operator, timed out) while they are queued or
   * running here: nothing will ever finish them, so they fail, with the reason, and the caller polling them learns it.
   */
  async function failAbandoned(): Promise<number> {
    if (!deps.workflows) return 0;
    const closed = await deps.workflows.closedStillOpen();
    const open = await openOperationIds(
      db,
      closed.map((c) => c.operationId),
    );
    let failed = 0;
    for (const c of closed) {
      if (!open.has(c.operationId)) continue;
      const reason = await deps.workflows.closeReasonOf(c.operationId, c.runId);
      // A write the source is known to have applied stays so: the caller must not send it again.
      const applied = (await getOperation(db, c.operationId))?.sourceState === 'applied';
      const moved = await moveOperation(
        db,
        c.operationId,
        'failed',
        {
          sourceState: applied ? 'applied' : null,
          reconcileState: 'failed',
          nextAttemptAt: null,
          lastError: clip(
            applied
              ? `its workflow was ${reason} after the source applied the change, before it was stored: the source holds it (do not send it again; the next sync brings it)`
              : `its workflow was ${reason} before the write finished; the source may or may not hold the change (look there before writing it again)`,
          ),
          resourceId: null,
          resourceXId: null,
        },
        clock(),
      );
      if (moved) {
        failed++;
        metrics.operationCompleted(moved.type, 'failed');
      }
    }
    return failed;
  }

  return {
    /** One attempt at the source (never retried by Temporal), classified; an applied write is stored at once. */
    async attemptWrite(input: AttemptInput): Promise<AttemptResult> {
      const loaded = await load(input.operationId);
      if ('done' in loaded) return { outcome: 'finished', status: loaded.done };
      if ('error' in loaded) return { outcome: 'failed', error: loaded.error, unsent: true };
      const { op, integration } = loaded;
      let connector: SourceConnector;
      try {
        connector = connectorFor(integration);
      } catch (err) {
        if (err instanceof SecretError) return { outcome: 'failed', error: `the source credentials cannot be read: ${err.message}`, unsent: true };
        throw err;
      }
      return heartbeating(heartbeatEveryMs, async () => {
        // The read-back's time is taken while the source write is under way, one round trip fewer on the write's path.
        // Earlier than the read itself, it can only make the stale-page guard count a sync page stored meanwhile as the
        // newer word, and read again; never keep an older version.
        const readAt = databaseNow(db);
        readAt.catch(() => {}); // a write that fails first never waits for it; store() meets a rejection itself
        let written: WriteResult;
        try {
          // The source call, under the attempt's span: what an operator searches by is the Operation id.
          written = await inSpan(
            'source.write',
            { 'propsync.operation_id': op.id, 'propsync.operation_type': op.type, 'propsync.attempt': input.attempt, 'propsync.probe': input.probe },
            () => send(op, connector, input.probe),
            SpanKind.CLIENT,
          );
        } catch (err) {
          if (err instanceof SourcePermanentError) return { outcome: 'rejected', error: clip(err.message) };
          if (err instanceof SourceTransientError) {
            const retryAfter = err.retryAfterMs !== undefined && err.retryAfterMs > 0 ? { retryAfterMs: err.retryAfterMs } : {};
            return { outcome: 'transient', error: clip(err.message), maybeApplied: err.maybeApplied, ...retryAfter };
          }
          return { outcome: 'transient', error: clip(messageOf(err)), maybeApplied: true };
        }
        const appliedAtMs = clock().getTime();
        try {
          const resourceId = await store(
            op,
            integration,
            connector,
            { attempts: input.attempt, xId: written.x_id, related: written.related, appliedAtMs },
            readAt,
          );
          return { outcome: 'succeeded', resourceId, xId: written.x_id };
        } catch (err) {
          const never = neverStored(err, written.x_id);
          if (never !== undefined) return { outcome: 'failed', error: await failAfterApplied(op, input.attempt, appliedAtMs, never) };
          const error = clip(messageOf(err));
          // The caller sees that the source holds the change (not a write still to make) while the read-back is
          // retried: source.state `applied`, the attempt counted.
          await readBackFailed(op, written.x_id, error, nextReadBackAtMs(1, appliedAtMs), {
            sourceState: 'applied',
            appliedAt: new Date(appliedAtMs),
            attempts: input.attempt,
          });
          return { outcome: 'applied', xId: written.x_id, related: written.related, appliedAtMs, error };
        }
      });
    },

    /** Read back and store a write the source applied (retried by Temporal until it works or its time is up). */
    async storeApplied(input: StoreInput): Promise<{ resourceId: string | null }> {
      const loaded = await load(input.operationId);
      if ('done' in loaded) return { resourceId: null };
      // Nothing a retry could change (the Operation or its integration is gone): no more attempts.
      if ('error' in loaded) throw ApplicationFailure.nonRetryable(loaded.error, 'WriteNotStorable');
      try {
        return { resourceId: await store(loaded.op, loaded.integration, connectorFor(loaded.integration), input) };
      } catch (err) {
        const never = neverStored(err, input.xId);
        if (never !== undefined) {
          throw ApplicationFailure.nonRetryable(await failAfterApplied(loaded.op, input.attempts, input.appliedAtMs, never), 'WriteNotStorable');
        }
        // Temporal retries it (the workflow's read-back policy): the caller polling sees this failure and when the
        // next read-back starts, not the first failure's time long past.
        await readBackFailed(loaded.op, input.xId, messageOf(err), nextReadBackAtMs(Context.current().info.attempt, clock().getTime()));
        throw err;
      }
    },

    /** An attempt failed transiently: the Operation is `running` until the next one. */
    async recordRetry(input: RetryInput): Promise<void> {
      await moveOperation(
        db,
        input.operationId,
        'running',
        {
          attempts: input.attempts,
          nextAttemptAt: new Date(input.nextAttemptAtMs),
          lastError: clip(input.error),
        },
        clock(),
      );
    },

    /** The Operation failed: rejected by the source, given up after 24 hours, or cancelled by an operator. */
    async failOperation(input: FailInput): Promise<void> {
      // A write the source is known to have applied (its read-back was under way) stays so, whatever ended it (an
      // operator's cancellation, the give-up): the caller must not send it again.
      const applied = input.sourceState === null && (await getOperation(db, input.operationId))?.sourceState === 'applied';
      const failed = await moveOperation(
        db,
        input.operationId,
        'failed',
        {
          attempts: input.attempts,
          sourceState: applied ? 'applied' : input.sourceState,
          reconcileState: 'failed',
          nextAttemptAt: null,
          lastError: clip(
            applied
              ? `the source applied the change, but the write ended before it was stored (${input.error}): do not send it again; the next sync brings it`
              : input.error,
          ),
          resourceId: null,
          resourceXId: null,
        },
        clock(),
      );
      if (failed) metrics.operationCompleted(failed.type, 'failed');
    },

    /**
     * The sweeper: start the workflow of every write accepted more than `olderThanMs` ago that no one is known to
     * have started (Temporal was unreachable when it was accepted); fail every Operation whose workflow closed
     * without finishing it (an operator terminated it), with the reason; and forget idempotency keys older than a day.
     */
    async sweepOperations(input: { olderThanMs?: number; limit?: number } = {}): Promise<{ started: number; keysPurged: number; abandoned: number }> {
      if (!deps.startWorkflow) throw new Error('the sweeper has no way to start workflows');
      const before = new Date(clock().getTime() - (input.olderThanMs ?? 30_000));
      const rows = await unstartedOperations(db, before, input.limit ?? 500);
      // Both are marked, so that no sweep looks at them again; only the workflows started now are counted as started.
      const started: string[] = [];
      const finished: string[] = [];
      for (const row of rows) {
        if (isTerminal(row.status)) {
          finished.push(row.id);
          continue;
        }
        await deps.startWorkflow(row);
        started.push(row.id);
      }
      await markWorkflowStarted(db, [...finished, ...started], clock());
      const abandoned = await failAbandoned();
      const keysPurged = await purgeIdempotencyKeys(db);
      return { started: started.length, keysPurged, abandoned };
    },
  };
}

export type WriteActivities = ReturnType<typeof createWriteActivities>;
