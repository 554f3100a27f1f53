/**
 * The task queue whose workflow tasks each role polls (none for the relay, which is no Temporal worker): what the
 * start-up log names and what the health check (worker/health.ts) looks for. Kept apart from the role modules so
 * the health check loads none of them.
 */
import type { WorkerRole } from '../../config';
import { automationTaskQueueOf, webhookTaskQueueOf, writeTaskQueueOf } from '../../domain/contract';

export function roleTaskQueueOf(role: WorkerRole, syncTaskQueue: string): string | undefined {
  switch (role) {
    case 'sync':
      return syncTaskQueue;
    case 'webhooks':
      return webhookTaskQueueOf(syncTaskQueue);
    case 'writes':
      return writeTaskQueueOf(syncTaskQueue);
    case 'automations':
      return automationTaskQueueOf(syncTaskQueue);
    case 'relay':
      return undefined;
  }
}
