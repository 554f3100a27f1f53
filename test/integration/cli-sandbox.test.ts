/**
 * The `sandbox` noun of the operator CLI as an operator runs it: a child process against the served app, whose
 * sandbox routes reach the test sandbox PMS. Every member of a fault (`kind`, `count`, `delay_ms`, `methods`) and of a
 * change (`corrupt` too) can be given with a flag.
 */
import { describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { TestServer } from '../support/api-server';
import { expectFlags, expectUsageErrors, ok, runCli, type CliRun } from '../support/cli';
import { onServices } from '../support/services';

let config: Config;
let api: TestServer;

const cli = (args: string[]): Promise<CliRun> => runCli({ url: api.url, token: config.ADMIN_TOKEN }, args);

onServices({ pool: 3, sandbox: true, api: true }, (s) => ({ config, api } = s));

/** Every step spawns a tsx process (a second or more on a loaded machine). */
const SPAWNS = { timeout: 120_000 };

describe('sandbox', SPAWNS, () => {
  it('lists the flags of a fault and a change', async () => {
    const [fault, changes] = await Promise.all([cli(['sandbox', 'fault', '--help']), cli(['sandbox', 'changes', '--help'])]);
    expectFlags(fault, ['--kind <kind>', '--count <n>', '--delay-ms <ms>', '--methods <all|reads|writes>']);
    expectFlags(changes, ['--update', '--create', '--delete', '--lease-transitions <n>', '--corrupt <n|entity=n,...>']);
  });

  it('refuses a delay for a fault that is not slow, and a corrupt count that is none, before calling the API', async () => {
    const integ = '6b1d1f4e-0000-4000-8000-000000000000';
    await expectUsageErrors(config.ADMIN_TOKEN, [
      [['sandbox', 'fault', integ, '--kind', 'unavailable', '--delay-ms', '500'], '--delay-ms applies to --kind slow only'],
      [['sandbox', 'fault', integ, '--kind', 'slow', '--delay-ms', 'soon'], '--delay-ms must be an integer'],
      [['sandbox', 'changes', integ, '--corrupt', 'many'], '--corrupt must be a count (5) or counts per entity'],
    ]);
  });

  it('injects a slow fault with its delay and scope, corrupts records, and clears the faults', async () => {
    const org = ok(await cli(['org', 'create', '--name', 'CLI Sandbox']));
    const integ = ok(
      await cli([
        'integration',
        'create',
        '--org',
        org.id,
        '--mode',
        'test',
        '--plan',
        'enterprise',
        '--source',
        'sandbox',
        '--size',
        '20',
        '--no-initial-sync',
      ]),
    );

    const slow = ok(await cli(['sandbox', 'fault', integ.id, '--kind', 'slow', '--delay-ms', '250', '--methods', 'reads', '--count', '3']));
    expect(slow).toEqual({ integration_id: integ.id, kind: 'slow', count: 3, delay_ms: 250, methods: 'reads' });
    const writes = ok(await cli(['sandbox', 'fault', integ.id, '--kind', 'reject_writes', '--methods', 'writes']));
    expect(writes).toMatchObject({ kind: 'reject_writes', count: null, delay_ms: null, methods: 'writes' });
    // A field the API refuses is said as its flag.
    const tooSlow = await cli(['sandbox', 'fault', integ.id, '--kind', 'slow', '--delay-ms', '600001']);
    expect(tooSlow.code).toBe(1);
    expect(tooSlow.stderr).toMatch(/^error: 422 Unprocessable Entity: --delay-ms: /);
    expect(ok(await cli(['sandbox', 'clear-faults', integ.id]))).toEqual({ integration_id: integ.id, faults_cleared: true });

    const corrupted = ok(await cli(['sandbox', 'changes', integ.id, '--corrupt', 'lease=2']));
    expect(corrupted.corrupted.lease).toHaveLength(2);
    const both = ok(await cli(['sandbox', 'changes', integ.id, '--update', 'unit=1', '--corrupt', '1']));
    expect(both.updated.unit).toHaveLength(1);
    expect(Object.values(both.corrupted as Record<string, string[]>).flat()).toHaveLength(1);
  });
});
