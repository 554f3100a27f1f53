/**
 * `npm run build`: what production runs with plain `node`, in dist/ (no tsx, no webpack when a worker starts).
 *
 * - One ESM bundle per process, by esbuild for Node 20, every package left external (node_modules ships beside
 *   dist/): api.mjs, worker.mjs, sandbox.mjs, migrate.mjs, cli.mjs, worker-health.mjs (the worker's health check),
 *   and page-task.mjs, which the worker's page-reading threads load by path.
 * - The workflows, bundled once by Temporal's bundler (worker/bundle.ts, the same script a worker run from source
 *   uses): workflows.js, the compiled worker's `workflowBundle`, and workflows-traced.js, the same with
 *   OpenTelemetry's workflow interceptors, which it runs when tracing is on.
 * - db/migrations, copied to migrations/.
 *
 * A module that loads a file by path resolves it relative to itself (`new URL(…, import.meta.url)`), and every bundle
 * sits directly in dist/ with those files beside it, as in the source tree: db/migrate.ts → ./migrations,
 * activities/page-reader.ts → ./page-task.{ts,mjs}, worker/workflow-bundle.ts → ./workflows.js (compiled only). So `tsx` from
 * source and `node dist/…` both work with no path configuration.
 */
import { spawn } from 'node:child_process';
import { cp, mkdir, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = fileURLToPath(new URL('../dist/', import.meta.url));

/** Output name (without .mjs) → entry point. */
const ENTRIES: Record<string, string> = {
  api: 'api/main.ts',
  worker: 'worker/main.ts',
  'worker-health': 'worker/health.ts',
  sandbox: 'sandbox/main.ts',
  migrate: 'db/migrate.ts',
  cli: 'cli/main.ts',
  'page-task': 'activities/page-task.ts',
};

async function bundleWorkflows(out: string, traced: boolean): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'worker/bundle.ts', out, ...(traced ? ['--traced'] : [])], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bundling the workflows failed (exit ${code})`))));
  });
}

const started = Date.now();
await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
const [{ metafile }] = await Promise.all([
  build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir: dist,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // Stack traces point at the TypeScript with `node --enable-source-maps`.
    sourcemap: 'linked',
    logLevel: 'warning',
    metafile: true,
  }),
  // Two: a worker with tracing on runs the one with OpenTelemetry's workflow interceptors (worker/workflow-bundle.ts).
  bundleWorkflows(`${dist}workflows.js`, false),
  bundleWorkflows(`${dist}workflows-traced.js`, true),
  cp(`${root}db/migrations`, `${dist}migrations`, { recursive: true }),
]);
// db/migrate.ts runs the migrations when it is the process's main module, which a bundle cannot tell apart from the
// bundle itself: it must stay out of every bundle but its own.
for (const [out, { inputs }] of Object.entries(metafile.outputs)) {
  if (!out.endsWith('/migrate.mjs') && inputs['db/migrate.ts']) throw new Error(`${out} includes db/migrate.ts, which would run the migrations when it starts`);
}
console.log(
  `built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s: ${Object.keys(ENTRIES)
    .map((n) => `${n}.mjs`)
    .join(', ')}, workflows.js, workflows-traced.js, migrations/`,
);
