/**
 * Bundles the workflows into one file: `node --import tsx worker/bundle.ts <out.js> [--traced]`. The worker runs it
 * as a child process so that webpack's memory is never part of the long-lived worker's footprint. `--traced` adds
 * OpenTelemetry's workflow interceptors, for a worker with tracing on: only then, since they cost every workflow
 * task (a write's first task took 20 ms with them against 12 without, and each workflow thread held more memory).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from './telemetry';

const [out, flag] = process.argv.slice(2);
if (!out || (flag !== undefined && flag !== '--traced')) {
  console.error('usage: worker/bundle.ts <out.js> [--traced]');
  process.exit(2);
}
const { code } = await bundleWorkflowCode({
  workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
  // OpenTelemetry's workflow spans (worker/telemetry.ts), for a worker with tracing on.
  workflowInterceptorModules: flag === '--traced' ? WORKFLOW_INTERCEPTOR_MODULES : [],
  logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
});
writeFileSync(out, withoutSourcesContent(code));

/**
 * The bundle's inline source map without the sources' text (`sourcesContent`, two thirds of it): stack traces of
 * workflow code still point at the TypeScript file and line, and every workflow thread holds the bundle's code and
 * source map (the worker requires one), which this makes 0.9 MB smaller each.
 */
function withoutSourcesContent(bundle: string): string {
  const at = bundle.lastIndexOf('//# sourceMappingURL=data:');
  const tag = bundle.indexOf('base64,', at);
  if (at < 0 || tag < 0) return bundle;
  const map = JSON.parse(Buffer.from(bundle.slice(tag + 'base64,'.length).trimEnd(), 'base64').toString()) as Record<string, unknown>;
  delete map.sourcesContent;
  return `${bundle.slice(0, at)}//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}
