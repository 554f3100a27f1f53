/**
 * Starting a sync run makes no network call inside a database transaction: where Temporal is asked which jobs are
 * abandoned and where the run's workflow is started, no transaction of the caller is open (so no advisory lock is
 * held), and the job row the workflow will look for is committed before its start.
 */
import { randomUUID } from 'node:crypto';
import { Client, type WorkflowStartOptions } from '@temporalio/client';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { triggerSync, type SyncControlDeps } from '../../control/sync';
import type { Db } from '../../db/client';
import { syncJobs, syncSeen } from '../../db/schema';
import { syncWorkflowIdOf } from '../../domain/contract';
import { onServices } from '../support/services';
import { sandboxIntegration, type SandboxIntegration } from '../support/sync';

let db: Db;
let client: Client;
let s: SandboxIntegration;
const taskQueue = `test-${randomUUID()}`;

onServices({ temporal: true }, (started) => ({ db, temporal: client } = started));
beforeAll(async () => {
  s = await sandboxIntegration(db, { size: 5, seed: 41 });
});

interface Call {
  what: 'start' | 'describe';
  /** Transactions of the caller open when the call went out. */
  openTransactions: number;
  /** The started job's row, read from another connection at that moment (start only). */
  jobSeen?: boolean;
}

/** The caller's database and Temporal client, watched: every Temporal call records how many transactions are open. */
function watched(): { ctl: SyncControlDeps; calls: Call[] } {
  let open = 0;
  const calls: Call[] = [];
  const watchedDb = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== 'transaction') return Reflect.get(target, prop, receiver) as unknown;
      return (fn: (tx: unknown) => Promise<unknown>, ...rest: unknown[]) =>
        (target.transaction as (...a: unknown[]) => Promise<unknown>)(
          async (tx: unknown) => {
            open++;
            try {
              return await fn(tx);
            } finally {
              open--;
            }
          },
          ...rest,
        );
    },
  });
  const watchedClient = {
    workflow: {
      start: async (type: unknown, options: WorkflowStartOptions) => {
        const call: Call = { what: 'start', openTransactions: open };
        calls.push(call);
        const jobId = (options.args?.[0] as { syncJobId: string }).syncJobId;
        call.jobSeen = (await db.select({ id: syncJobs.id }).from(syncJobs).where(eq(syncJobs.id, jobId))).length === 1;
        return client.workflow.start(type as never, options as never);
      },
      getHandle: (workflowId: string) => ({
        describe: async () => {
          calls.push({ what: 'describe', openTransactions: open });
          return client.workflow.getHandle(workflowId).describe();
        },
      }),
    },
  } as unknown as Client;
  return { ctl: { db: watchedDb, client: watchedClient, taskQueue }, calls };
}

describe('triggerSync', () => {
  it('asks Temporal and starts the workflow with no transaction open, after the job row committed', async () => {
    // No worker polls this task queue: the run stays queued, which is all this test needs.
    const first = watched();
    const job = await triggerSync(first.ctl, s.row);
    expect(first.calls).toEqual([{ what: 'start', openTransactions: 0, jobSeen: true }]);

    // It had read a page when the operator terminates it: the next trigger asks Temporal about the job (describe),
    // fails it, forgets what it saw and starts another.
    await db.insert(syncSeen).values({ syncJobId: job.id, entity: 'property', xIds: ['P1'] });
    await client.workflow.getHandle(syncWorkflowIdOf(job.id)).terminate('operator');
    const second = watched();
    const next = await triggerSync(second.ctl, s.row);
    expect(next.id).not.toBe(job.id);
    expect(second.calls).toEqual([
      { what: 'describe', openTransactions: 0 },
      { what: 'start', openTransactions: 0, jobSeen: true },
    ]);
    const [old] = await db.select().from(syncJobs).where(eq(syncJobs.id, job.id));
    expect(old!.status).toBe('failed');
    expect(await db.select().from(syncSeen).where(eq(syncSeen.syncJobId, job.id))).toEqual([]);
    await client.workflow.getHandle(syncWorkflowIdOf(next.id)).terminate('test over');
  });
});
