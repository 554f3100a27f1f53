/** Sync of one integration: placeholder until the sync engine lands. */
import type { SyncWorkflowInput, SyncWorkflowResult } from '../domain/contract';

export async function syncIntegration(input: SyncWorkflowInput): Promise<SyncWorkflowResult> {
  throw new Error(`sync not implemented yet for ${input.integrationId}`);
}
