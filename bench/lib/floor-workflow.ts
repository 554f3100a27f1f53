/**
 * The floor of bench:webhooks and bench:writes: a bare workflow that calls one no-op activity and returns. What
 * Temporal, this SDK and a worker with the delivery (or write) worker's settings cost per workflow, with no database
 * and no HTTP. Bundled by bench/lib/floor-worker.ts only, never part of workflows/index.ts.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface FloorActivities {
  noop(input: { id: string }): Promise<void>;
}

const { noop } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 1 } });

export async function floorWorkflow(input: { id: string }): Promise<void> {
  await noop(input);
}
