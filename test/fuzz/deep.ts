/**
 * `npm run fuzz:deep`: the contract test's fuzzing (test/integration/contract-fuzz.test.ts), deeper and on a new
 * seed each run. It starts what `npm test` starts for it (a database server's test database, a Temporal dev server
 * and the sandbox PMS, through test/global-setup.ts; then, through test/fuzz/stack.ts, a database of its own, the API
 * and a worker, and a synced sandbox integration), and runs Schemathesis with every check and phase against the
 * public document (with a test key) and the admin document (with the admin token).
 *
 *   npm run fuzz:deep                                  a random seed, 120 examples per operation, both documents
 *   npm run fuzz:deep -- --seed 1234 --examples 300    a given seed (to reproduce a run), more examples
 *   npm run fuzz:deep -- --only admin -- --include-path-regex '^/organizations'   one document, Schemathesis options
 *
 * It prints the seed first and last, Schemathesis's report as it runs (each failure with its reproducing curl), and
 * exits non-zero when either document and the service disagree.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { setup, teardown } from '../global-setup';
import { fuzzArgs, schemathesis, startFuzzStack, type FuzzEnvironment, type FuzzStack } from './stack';

const MIN_EXAMPLES = 120;
const USAGE = 'usage: npm run fuzz:deep -- [--seed N] [--examples N (at least 120)] [--only public|admin] [-- <Schemathesis options>]';

function options() {
  const { values, positionals } = parseArgs({
    options: { seed: { type: 'string' }, examples: { type: 'string' }, only: { type: 'string' }, help: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const seed = values.seed === undefined ? randomInt(0, 2 ** 31 - 1) : Number(values.seed);
  const examples = values.examples === undefined ? MIN_EXAMPLES : Number(values.examples);
  const only = values.only;
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`--seed must be a non-negative integer\n${USAGE}`);
  if (!Number.isSafeInteger(examples) || examples < MIN_EXAMPLES) throw new Error(`--examples must be an integer of at least ${MIN_EXAMPLES}\n${USAGE}`);
  if (only !== undefined && only !== 'public' && only !== 'admin') throw new Error(`--only must be public or admin\n${USAGE}`);
  return { seed, examples, only: only as 'public' | 'admin' | undefined, extra: positionals };
}

/** The reproducing commands of a report: Schemathesis prints each under "Reproduce with:". */
function curls(output: string): string[] {
  return output.split('\n').filter((line) => line.trim().startsWith('curl '));
}

async function main(): Promise<number> {
  const opts = options();
  // The worker's activities fail by design here (the fuzzer makes integrations whose sources do not exist): only
  // errors of the SDK itself are worth a line among Schemathesis's report.
  Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  console.log(
    `fuzz:deep seed ${opts.seed}, ${opts.examples} examples per operation (reproduce: npm run fuzz:deep -- --seed ${opts.seed} --examples ${opts.examples})`,
  );
  const provided: Partial<FuzzEnvironment> = {};
  let stack: FuzzStack | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stack?.close().catch((err) => console.error('fuzz:deep: could not stop the stack:', err));
    await teardown().catch((err) => console.error('fuzz:deep: could not stop the services:', err));
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void stop().finally(() => process.exit(130)));
  }
  try {
    await setup({ provide: (key: string, value: string) => ((provided as Record<string, string>)[key] = value) } as never);
    stack = await startFuzzStack(provided as FuzzEnvironment);
    const results: { name: string; code: number; output: string; seconds: number }[] = [];
    for (const target of stack.targets) {
      if (opts.only && target.name !== opts.only) continue;
      console.log(`\n=== ${target.name} document: ${target.document} (seed ${opts.seed}) ===`);
      const started = Date.now();
      const args = ['run', target.document, '-H', `Authorization: ${target.authorization}`, ...fuzzArgs(opts), ...opts.extra];
      const r = await schemathesis(args, { echo: process.stdout });
      results.push({ name: target.name, ...r, seconds: Math.round((Date.now() - started) / 1000) });
    }
    console.log(`\n=== fuzz:deep seed ${opts.seed}, ${opts.examples} examples per operation ===`);
    for (const r of results) {
      const found = curls(r.output);
      console.log(
        `${r.name}: ${r.code === 0 ? 'no failures' : `FAILED (exit ${r.code}, ${found.length} reproducing curl${found.length === 1 ? '' : 's'})`} in ${r.seconds} s`,
      );
      for (const c of found) console.log(`  ${c.trim()}`);
    }
    return results.every((r) => r.code === 0) ? 0 : 1;
  } finally {
    await stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
