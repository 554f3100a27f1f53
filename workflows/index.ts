/** The worker's workflowsPath: every workflow, re-exported. */
export { syncIntegration } from './sync';
export { deliverWebhook, purgeRetention } from './webhook';
export { dispatchWebhooks } from './dispatcher';
export { sweepWrites, writeOperation } from './operation';
export { automationTick, runAutomation } from './automation';
