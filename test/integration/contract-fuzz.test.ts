/**
 * The OpenAPI documents say exactly what the service does: Schemathesis (pinned, installed by scripts/ensure.mjs into
 * .tools/fuzz) runs every check, with the examples, coverage, fuzzing and stateful phases, against the public document
 * with a test key and against the admin document with the admin token, on a fixed seed and a bounded number of
 * examples. Any failure fails the test, with Schemathesis's report (each failure with its reproducing curl).
 *
 * What it runs against (a database of its own, the API, a worker, a synced sandbox integration) is set up by
 * test/fuzz/stack.ts, which `npm run fuzz:deep` (test/fuzz/deep.ts) shares to run the same on a new seed each time,
 * with more examples.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { fuzzArgs, schemathesis, startFuzzStack, type FuzzStack } from '../fuzz/stack';

const SEED = 42;
const EXAMPLES = Number(process.env.FUZZ_EXAMPLES ?? '15');
let stack: FuzzStack;

beforeAll(async () => {
  stack = await startFuzzStack({
    databaseUrl: inject('databaseUrl'),
    adminDatabaseUrl: inject('adminDatabaseUrl'),
    temporalAddress: inject('temporalAddress'),
    sandboxUrl: inject('sandboxUrl'),
    sandboxControlToken: inject('sandboxControlToken'),
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

async function fuzz(name: 'public' | 'admin') {
  const target = stack.targets.find((t) => t.name === name)!;
  const r = await schemathesis(['run', target.document, '-H', `Authorization: ${target.authorization}`, ...fuzzArgs({ seed: SEED, examples: EXAMPLES })]);
  expect(r.code, r.output).toBe(0);
}

describe('Schemathesis', () => {
  it('finds nothing the public document and the service disagree on', () => fuzz('public'), 600_000);
});

describe('Schemathesis on the admin document', () => {
  it('finds nothing the admin document and the service disagree on', () => fuzz('admin'), 900_000);
});
