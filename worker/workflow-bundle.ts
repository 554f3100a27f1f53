/**
 * The workflow bundle a worker runs: the one `npm run build` made (or WORKFLOW_BUNDLE_PATH), or, from source, one
 * bundled at start-up by a child process. Every role that runs workflows is created with the same bundle.
 */
import { spawn } from 'node:child_process';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const BUNDLE_SCRIPT = fileURLToPath(new URL('./bundle.ts', import.meta.url));
/**
 * Compiled (`npm run build`), this module is part of dist/worker.mjs and the build wrote the workflow bundle beside
 * it; run from source (tsx, tests), it is worker/workflow-bundle.ts and the workflows are bundled when a worker starts.
 */
const COMPILED = !import.meta.url.endsWith('.ts');
const BUILT_BUNDLE = fileURLToPath(new URL('./workflows.js', import.meta.url));
const BUILT_TRACED_BUNDLE = fileURLToPath(new URL('./workflows-traced.js', import.meta.url));

/**
 * The prebuilt workflow bundle this process runs: WORKFLOW_BUNDLE_PATH, or compiled, dist/workflows.js (with tracing
 * on, dist/workflows-traced.js: the same with OpenTelemetry's workflow interceptors); undefined from source without
 * WORKFLOW_BUNDLE_PATH (the workflows are then bundled at start-up).
 */
function prebuiltWorkflowBundle(config: Pick<Config, 'WORKFLOW_BUNDLE_PATH'>, traced = false): string | undefined {
  if (config.WORKFLOW_BUNDLE_PATH) return resolvePath(config.WORKFLOW_BUNDLE_PATH);
  if (!COMPILED) return undefined;
  return traced ? BUILT_TRACED_BUNDLE : BUILT_BUNDLE;
}

/**
 * Run `use` with the workflow bundle: the prebuilt one when there is one (no webpack in the process's life), else
 * one bundled now by bundleWorkflows. A prebuilt bundle that is missing fails here, naming the file.
 */
export async function withWorkflowBundle<T>(
  config: Pick<Config, 'WORKFLOW_BUNDLE_PATH'>,
  traced: boolean,
  use: (codePath: string, how: 'prebuilt' | 'bundled') => Promise<T>,
): Promise<T> {
  const prebuilt = prebuiltWorkflowBundle(config, traced);
  if (!prebuilt) return bundleWorkflows((codePath) => use(codePath, 'bundled'), traced);
  await access(prebuilt).catch(() => {
    throw new Error(`the workflow bundle ${prebuilt} does not exist: run \`npm run build\`, or set WORKFLOW_BUNDLE_PATH to one`);
  });
  return use(prebuilt, 'prebuilt');
}

/**
 * The workflow bundle, built by a child process (worker/bundle.ts, run through tsx): bundling in the worker itself
 * would leave webpack's memory (about 75 MB of RSS) in a process that runs for weeks. Source only: the compiled
 * worker has no bundle script and uses the bundle `npm run build` made.
 */
export async function bundleWorkflows<T>(use: (codePath: string) => Promise<T>, traced = false): Promise<T> {
  if (COMPILED) throw new Error('the compiled worker does not bundle workflows: it runs dist/workflows.js (npm run build) or WORKFLOW_BUNDLE_PATH');
  const dir = await mkdtemp(join(tmpdir(), 'propsync-workflows-'));
  const codePath = join(dir, 'workflows.js');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', BUNDLE_SCRIPT, codePath, ...(traced ? ['--traced'] : [])], {
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bundling the workflows failed (exit ${code})`))));
    });
    return await use(codePath);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
