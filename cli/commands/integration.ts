/** `integration`: integrations (connected sources) and their sync schedules. */
import type { FieldFlags } from '../client';
import { defined, id, callVerb, deleteVerb, sendVerb, type Noun } from '../command';
import { int, intOrNull, required, orgAndMode, option, toggle, usageError, type FlagValue } from '../flags';

/** The flags of the cadence fields (create and update). */
const CADENCE_FIELDS: FieldFlags = { sync_interval_seconds: '--interval', full_sync_interval_seconds: '--full-sync-interval' };

/** The flags of each source type: a flag of another type is refused, not dropped. */
const SOURCE_FLAGS: Record<string, string[]> = {
  sandbox: ['dialect', 'size', 'seed'],
  entrata: ['base-url', 'api-key'],
  buildium: ['base-url', 'client-id', 'client-secret'],
};

/** A usage mistake when a flag given belongs to another source type than `type` (an unknown type is the API's to refuse). */
function refuseOtherSources(type: string, flags: Record<string, FlagValue>): void {
  const own = SOURCE_FLAGS[type];
  if (!own) return;
  const stray = [...new Set(Object.values(SOURCE_FLAGS).flat())].filter((f) => flags[f] !== undefined && !own.includes(f));
  if (stray.length === 0) return;
  const needs = stray.map((f) => {
    const types = Object.entries(SOURCE_FLAGS)
      .filter(([, names]) => names.includes(f))
      .map(([t]) => t);
    return `--${f} needs --source ${types.join(' or ')}`;
  });
  throw usageError(`${needs.join(', ')}; this is --source ${type}${flags.source === undefined ? ' (the default)' : ''}`);
}

export const integration: Noun = {
  summary: 'Integrations (connected sources) and their sync schedules',
  verbs: {
    create: {
      summary: 'Connect a source: the sandbox PMS (test mode), an Entrata-style or a Buildium-style system',
      args: [],
      flags: {
        ...orgAndMode,
        plan: option('<plan>', 'starter, growth, scale or enterprise (required)'),
        source: option('<sandbox|entrata|buildium>', 'Source type (default sandbox)'),
        dialect: option('<entrata|buildium>', 'Sandbox: the wire its company speaks (default entrata)'),
        size: option('<n>', 'Sandbox: leases to generate (default 50)'),
        seed: option('<n>', 'Sandbox: generator seed (default random)'),
        'base-url': option('<url>', 'Entrata, Buildium: the API base address'),
        'api-key': option('<key>', 'Entrata: the API key'),
        'client-id': option('<id>', 'Buildium: the API client id'),
        'client-secret': option('<secret>', 'Buildium: the API client secret'),
        name: option('<name>', 'A label'),
        interval: option('<seconds>', 'Sync cadence override (default: the plan cadence)'),
        'full-sync-interval': option('<seconds>', 'Seconds between full runs where the source reads deltas (default: the service default, a day)'),
        'no-initial-sync': toggle('Do not start the first sync now'),
      },
      fields: {
        ...CADENCE_FIELDS,
        '/source/type': '--source',
        '/source/dialect': '--dialect',
        '/source/size': '--size',
        '/source/seed': '--seed',
        '/source/base_url': '--base-url',
        '/source/api_key': '--api-key',
        '/source/client_id': '--client-id',
        '/source/client_secret': '--client-secret',
        initial_sync: '--no-initial-sync',
      },
      run: async ({ client, flags }) => {
        const type = (flags.source as string | undefined) ?? 'sandbox';
        refuseOtherSources(type, flags);
        const source =
          type === 'entrata'
            ? { type, base_url: required('base-url', flags['base-url']), api_key: required('api-key', flags['api-key']) }
            : type === 'buildium'
              ? {
                  type,
                  base_url: required('base-url', flags['base-url']),
                  client_id: required('client-id', flags['client-id']),
                  client_secret: required('client-secret', flags['client-secret']),
                }
              : defined({ type, dialect: flags.dialect, size: int('size', flags.size), seed: int('seed', flags.seed) });
        const body = defined({
          name: flags.name,
          mode: required('mode', flags.mode),
          plan: required('plan', flags.plan),
          source,
          sync_interval_seconds: int('interval', flags.interval),
          full_sync_interval_seconds: int('full-sync-interval', flags['full-sync-interval']),
          initial_sync: flags['no-initial-sync'] ? false : undefined,
        });
        return { output: await client.request('POST', `/organizations/${id(required('org', flags.org))}/integrations`, body) };
      },
    },
    get: callVerb('Show an integration', 'GET /integrations/{integration_id}'),
    update: sendVerb('PATCH /integrations/{integration_id}', {
      summary: 'Change plan, cadence or name (the schedule moves at once)',
      flags: {
        plan: option('<plan>', 'New plan'),
        interval: option('<seconds|default>', 'Cadence override; default = the plan cadence'),
        'full-sync-interval': option('<seconds|default>', 'Seconds between full runs where the source reads deltas; default = the service default'),
        name: option('<name>', 'New label'),
      },
      body: (flags) =>
        defined({
          plan: flags.plan,
          sync_interval_seconds: intOrNull('interval', flags.interval),
          full_sync_interval_seconds: intOrNull('full-sync-interval', flags['full-sync-interval']),
          name: flags.name,
        }),
      nothing: 'nothing to update: give --plan, --interval, --full-sync-interval or --name',
      fields: CADENCE_FIELDS,
    }),
    delete: deleteVerb('Disconnect: remove the schedule; its records are soft-deleted, never erased', '/integrations/{integration_id}'),
  },
};
