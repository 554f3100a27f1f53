/** `sandbox`: controls of the sandbox PMS behind a sandbox integration. */
import { defined, id, sendVerb, type Noun } from '../command';
import { int, required, usageError, option, type FlagValue } from '../flags';

/** `5` (a total) or `lease=3,unit=2` (per entity). */
function counts(name: string, value: FlagValue): number | Record<string, number> | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  if (typeof value !== 'string' || !/^(\w+=\d+)(,\w+=\d+)*$/.test(value)) {
    throw usageError(`--${name} must be a count (5) or counts per entity (lease=3,unit=2), got ${JSON.stringify(value)}`);
  }
  return Object.fromEntries(
    value
      .split(',')
      .map((kv) => kv.split('='))
      .map(([k, v]) => [k!, Number(v)]),
  );
}

export const sandbox: Noun = {
  summary: 'Controls of the sandbox PMS behind a sandbox integration',
  verbs: {
    changes: sendVerb('POST /integrations/{integration_id}/sandbox/changes', {
      summary: 'Change source data; prints the x_ids touched',
      flags: {
        update: option('<n|entity=n,...>', 'Records to update'),
        create: option('<n|entity=n,...>', 'Records to create'),
        delete: option('<n|entity=n,...>', 'Records to delete'),
        'lease-transitions': option('<n>', 'Leases whose status moves on'),
        corrupt: option('<n|entity=n,...>', 'Records to make unreadable by the mapping (a bad date, amount or type), to see a sync quarantine them'),
      },
      body: (flags) =>
        defined({
          update: counts('update', flags.update),
          create: counts('create', flags.create),
          delete: counts('delete', flags.delete),
          lease_transitions: int('lease-transitions', flags['lease-transitions']),
          corrupt: counts('corrupt', flags.corrupt),
        }),
      nothing: 'nothing to change: give --update, --create, --delete, --lease-transitions or --corrupt',
      fields: { lease_transitions: '--lease-transitions' },
    }),
    fault: sendVerb('POST /integrations/{integration_id}/sandbox/faults', {
      summary: 'Inject a fault: unavailable, rate_limited, slow or reject_writes',
      flags: {
        kind: option('<kind>', 'unavailable, rate_limited, slow or reject_writes (required)'),
        count: option('<n>', 'Requests affected, within --methods (default: until cleared)'),
        'delay-ms': option('<ms>', "slow: how long each reply is delayed, 0 to 600000 (default: the sandbox's SANDBOX_SLOW_MS)"),
        methods: option('<all|reads|writes>', 'Requests the fault affects (default all; reject_writes: writes only)'),
      },
      body: (flags) => {
        if (flags['delay-ms'] !== undefined && flags.kind !== 'slow') throw usageError('--delay-ms applies to --kind slow only');
        return defined({
          kind: required('kind', flags.kind),
          count: int('count', flags.count),
          delay_ms: int('delay-ms', flags['delay-ms']),
          methods: flags.methods,
        });
      },
      fields: { delay_ms: '--delay-ms' },
    }),
    'clear-faults': {
      summary: 'Clear every fault',
      args: ['integration_id'],
      flags: {},
      run: async ({ client, args }) => {
        await client.request('DELETE', `/integrations/${id(args[0]!)}/sandbox/faults`);
        return { output: { integration_id: args[0], faults_cleared: true } };
      },
    },
  },
};
