/**
 * Runs in flight across a deploy must replay: histories of the write, delivery and automation workflows recorded on
 * the time-skipping server by the code before the shared retry helper (workflows/retry.ts), replayed against the
 * code as it is. Each covers one way such a run goes: on the default schedule and on one passed in, succeeding after
 * failures and lost attempts, giving up, rejected, dead-lettered and replayed, replayed while waiting, expired,
 * cancelled by its subscription or by an operator; and one recorded later (delivery-recheck-before-the-signal), on the
 * code before the `recheck` signal, which that code ignored. A change to the commands a run issues fails here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// A CommonJS module: a default import works under both Node's ESM loader and bundlers.
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

const recorded = JSON.parse(readFileSync(fileURLToPath(new URL('./fixtures/retry-histories-v1.json', import.meta.url)), 'utf8')) as Record<
  string,
  { workflowId: string; history: string }
>;
const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

describe('histories recorded before the retry helper replay on the code as it is', () => {
  it('every recorded run replays without a nondeterminism error', { timeout: 120_000 }, async () => {
    const histories = Object.entries(recorded).map(([name, r]) => ({
      name,
      workflowId: r.workflowId,
      history: proto.temporal.api.history.v1.History.decode(Buffer.from(r.history, 'base64')),
    }));
    expect(histories.length).toBeGreaterThanOrEqual(20);
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowsPath }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });
});
