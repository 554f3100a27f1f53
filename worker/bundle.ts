/**
 * Bundles the workflows into one file: `node --import tsx worker/bundle.ts <out.js>`. The worker runs it as a
 * child process so that webpack's memory is never part of the long-lived worker's footprint.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from './telemetry';

const out = process.argv[2];
if (!out) {
  console.error('usage: worker/bundle.ts <out.js>');
  process.exit(2);
}
const { code } = await bundleWorkflowCode({
  workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
  // OpenTelemetry's workflow spans (worker/telemetry.ts: exported when tracing is on, dropped otherwise).
  workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
  logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
});
writeFileSync(out, code);
