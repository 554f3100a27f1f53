/** The worker's workflowsPath: every workflow, re-exported. */
export { syncIntegration } from './sync';
