/** The CLI's nouns and verbs: each maps its arguments and flags onto one admin API call (or a few, for --wait). */
import { CliError, type AdminClient } from './client';
import { oneLine, waitForAutomationRun, waitForJob, waitForOperation, type AutomationRun, type Operation, type SyncJob } from './progress';

export interface Flag {
  type: 'string' | 'boolean';
  description: string;
  /** Shown in help: `--size <n>`. */
  value?: string;
  /** May be given more than once (`--filter a=1 --filter b=2`); its value is then the list of them. */
  multiple?: boolean;
}

/** A parsed flag: a string, a boolean switch, or the list of a `multiple` flag's values. */
export type FlagValue = string | boolean | string[] | undefined;

export interface Command {
  summary: string;
  /** Positional arguments, in order, all required. */
  args: string[];
  flags: Record<string, Flag>;
  run(ctx: { client: AdminClient; args: string[]; flags: Record<string, FlagValue> }): Promise<{ output: unknown; exitCode?: number }>;
}

export interface Noun {
  summary: string;
  verbs: Record<string, Command>;
}

export const usageError = (message: string) => new CliError(message, 2);

function int(name: string, value: FlagValue): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^-?\d+$/.test(value)) throw usageError(`--${name} must be an integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** An integer, or `null`/`default` to clear an override. */
function intOrNull(name: string, value: FlagValue): number | null | undefined {
  if (value === 'null' || value === 'default') return null;
  return int(name, value);
}

function required(name: string, value: FlagValue): string {
  if (typeof value !== 'string' || value === '') throw usageError(`--${name} is required`);
  return value;
}

/** `5` (a total) or `lease=3,unit=2` (per entity). */
function counts(name: string, value: FlagValue): number | Record<string, number> | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  if (typeof value !== 'string' || !/^(\w+=\d+)(,\w+=\d+)*$/.test(value)) {
    throw usageError(`--${name} must be a count (5) or counts per entity (lease=3,unit=2), got ${JSON.stringify(value)}`);
  }
  return Object.fromEntries(value.split(',').map((kv) => kv.split('=')).map(([k, v]) => [k!, Number(v)]));
}

/** `on`/`off` (also `true`/`false`) as a boolean; undefined when the flag is absent. */
function onOff(name: string, value: FlagValue | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'true') return true;
  if (value === 'off' || value === 'false') return false;
  throw usageError(`--${name} must be on or off, got ${JSON.stringify(value)}`);
}

/** Drops undefined members so the API sees only what the operator gave. */
const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const page: Record<string, Flag> = {
  limit: { type: 'string', value: '<n>', description: 'Page size, 1 to 100 (default 25)' },
  offset: { type: 'string', value: '<n>', description: 'Zero-based offset (default 0)' },
};
const pageQuery = (flags: Record<string, FlagValue>) => {
  const q = new URLSearchParams(defined({ limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<string, string>);
  return q.size ? `?${q}` : '';
};
const id = (s: string) => encodeURIComponent(s);

/** A verb that PATCHes one field of a resource to a fixed value (enable, disable, pause, resume). */
const patchVerb = (summary: string, arg: string, path: (id: string) => string, body: Record<string, unknown>): Command => ({
  summary,
  args: [arg],
  flags: {},
  run: async ({ client, args }) => ({ output: await client.request('PATCH', path(id(args[0]!)), body) }),
});

/** A verb that DELETEs one resource and says so. */
const deleteVerb = (summary: string, arg: string, path: (id: string) => string): Command => ({
  summary,
  args: [arg],
  flags: {},
  run: async ({ client, args }) => {
    await client.request('DELETE', path(id(args[0]!)));
    return { output: { id: args[0], deleted: true } };
  },
});

/** `LEASE_SIGNED,LEASE_UPDATED` or `*` (every type) as the API's `event_types`. */
function eventTypes(name: string, value: FlagValue): string[] | undefined {
  if (value === undefined) return undefined;
  const types = typeof value === 'string' ? value.split(',').map((t) => t.trim()).filter(Boolean) : [];
  if (types.length === 0) throw usageError(`--${name} must list event types (LEASE_SIGNED,LEASE_UPDATED) or be *, got ${JSON.stringify(value)}`);
  return types;
}

/** A description; an empty one clears it. */
const descriptionOrNull = (value: FlagValue) => (value === undefined ? undefined : value === '' ? null : value);

/** The values of a repeatable flag (none when absent). */
const many = (value: FlagValue): string[] => (value === undefined || typeof value === 'boolean' ? [] : typeof value === 'string' ? [value] : value);

/** `--filter status=active,notice --filter start_date_gte=2025-01-01` as the API's `filters` object. */
function filters(value: FlagValue): Record<string, string> | undefined {
  const pairs = many(value);
  if (pairs.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw usageError(`--filter must be name=value (a query parameter of the entity's list endpoint), got ${JSON.stringify(pair)}`);
    const name = pair.slice(0, at).trim();
    if (name in out) throw usageError(`--filter ${name} is given twice; a list filter takes comma-separated values (status=active,notice)`);
    out[name] = pair.slice(at + 1);
  }
  return out;
}

/** `--columns id,status,rent_amount`, or `all` (every field: the default). */
function columns(value: FlagValue, allowAll: boolean): string[] | null | undefined {
  if (value === undefined) return undefined;
  if (allowAll && value === 'all') return null;
  const list = typeof value === 'string' ? value.split(',').map((c) => c.trim()).filter(Boolean) : [];
  if (list.length === 0) throw usageError(`--columns must list field names (id,status,rent_amount)${allowAll ? ' or be all' : ''}, got ${JSON.stringify(value)}`);
  return list;
}

/** `--every <seconds>`, or `--cron "<expr>" [--timezone Area/City]`; undefined when none is given and none is required. */
function schedule(flags: Record<string, FlagValue>, isRequired: boolean): Record<string, unknown> | undefined {
  const every = int('every', flags.every);
  const cron = flags.cron;
  if (every !== undefined && cron !== undefined) throw usageError('give either --every or --cron, not both');
  if (flags.timezone !== undefined && cron === undefined) throw usageError('--timezone applies to --cron only');
  if (every !== undefined) return { every };
  if (cron !== undefined) return defined({ cron: required('cron', cron), timezone: flags.timezone });
  if (isRequired) throw usageError('a schedule is required: give --every <seconds> or --cron "<expr>" [--timezone Area/City]');
  return undefined;
}

/** `--header "Authorization: Bearer x"` (repeatable) as the API's `headers`. */
function headers(value: FlagValue): Record<string, string> | undefined {
  const lines = many(value);
  if (lines.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const line of lines) {
    const at = line.indexOf(':');
    const name = at > 0 ? line.slice(0, at).trim() : '';
    // The value itself is never echoed: it may be a credential.
    if (!name) throw usageError('--header must be "Name: value"');
    out[name] = line.slice(at + 1).trim();
  }
  return out;
}

/** `--http-url <url> [--method PUT|POST] [--header "Name: value"]…` or `--directory <path>`. */
function destination(flags: Record<string, FlagValue>, isRequired: boolean): Record<string, unknown> | undefined {
  const url = flags['http-url'];
  const dir = flags.directory;
  if (url !== undefined && dir !== undefined) throw usageError('give either --http-url or --directory, not both');
  if (dir !== undefined && (flags.method !== undefined || flags.header !== undefined)) throw usageError('--method and --header apply to --http-url only');
  if (url !== undefined) return defined({ type: 'http', url: required('http-url', url), method: flags.method, headers: headers(flags.header) });
  if (dir !== undefined) return { type: 'directory', path: required('directory', dir) };
  if (flags.method !== undefined || flags.header !== undefined) throw usageError('--method and --header apply to --http-url only');
  if (isRequired) throw usageError('a destination is required: give --http-url <url> or --directory <path>');
  return undefined;
}

const exportFlags: Record<string, Flag> = {
  filter: { type: 'string', multiple: true, value: '<name=value>', description: "A query parameter of the entity's list endpoint, e.g. status=active,notice (repeatable)" },
  every: { type: 'string', value: '<seconds>', description: 'Run every this many seconds (at least 60)' },
  cron: { type: 'string', value: '"<expr>"', description: 'Or run on a five-field cron, e.g. "0 6 * * 1-5"' },
  timezone: { type: 'string', value: '<Area/City>', description: 'Time zone of --cron (default UTC)' },
  'http-url': { type: 'string', value: '<url>', description: 'Send the file to this URL (live integrations: public https only)' },
  method: { type: 'string', value: '<PUT|POST>', description: 'With --http-url: how the file is sent (default PUT)' },
  header: { type: 'string', multiple: true, value: '"<Name: value>"', description: 'With --http-url: a header to send, stored encrypted, never shown again (repeatable)' },
  directory: { type: 'string', value: '<path>', description: 'Or write the file to this directory, relative to the export root' },
  'escape-formulas': {
    type: 'string',
    value: '<on|off>',
    description: "CSV-injection protection for spreadsheets: a text cell starting with = + - @ TAB or CR gets a leading ' (default on)",
  },
};

/** `--escape-formulas on|off` as the API's boolean. */
function escapeFormulas(value: FlagValue): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'off') return value === 'on';
  throw usageError(`--escape-formulas must be on or off, got ${JSON.stringify(value)}`);
}

export const NOUNS: Record<string, Noun> = {
  org: {
    summary: 'Organizations (tenants)',
    verbs: {
      create: {
        summary: 'Create an organization',
        args: [],
        flags: { name: { type: 'string', value: '<name>', description: 'Its name (required)' } },
        run: async ({ client, flags }) => ({ output: await client.request('POST', '/organizations', { name: required('name', flags.name) }) }),
      },
      get: {
        summary: 'Show an organization',
        args: ['org_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/organizations/${id(args[0]!)}`) }),
      },
      update: {
        summary: 'Rename, or override the org-wide rate limit',
        args: ['org_id'],
        flags: {
          name: { type: 'string', value: '<name>', description: 'New name' },
          'rate-limit': { type: 'string', value: '<n|null>', description: 'Requests per minute; null = the plan limit' },
          burst: { type: 'string', value: '<n|null>', description: 'Burst size; null = 10 % of the per-minute budget' },
        },
        run: async ({ client, args, flags }) => {
          const body = defined({
            name: flags.name,
            rate_limit_per_minute: intOrNull('rate-limit', flags['rate-limit']),
            rate_limit_burst: intOrNull('burst', flags.burst),
          });
          if (Object.keys(body).length === 0) throw usageError('nothing to update: give --name, --rate-limit or --burst');
          return { output: await client.request('PATCH', `/organizations/${id(args[0]!)}`, body) };
        },
      },
      integrations: {
        summary: "List an organization's integrations",
        args: ['org_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/organizations/${id(args[0]!)}/integrations${pageQuery(flags)}`) }),
      },
      keys: {
        summary: "List an organization's API keys (without secrets)",
        args: ['org_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/organizations/${id(args[0]!)}/api_keys${pageQuery(flags)}`) }),
      },
    },
  },

  integration: {
    summary: 'Integrations (connected sources) and their sync schedules',
    verbs: {
      create: {
        summary: 'Connect a source: the sandbox PMS (test mode), an Entrata-style or a Buildium-style system',
        args: [],
        flags: {
          org: { type: 'string', value: '<org_id>', description: 'Organization (required)' },
          mode: { type: 'string', value: '<test|live>', description: 'Mode (required)' },
          plan: { type: 'string', value: '<plan>', description: 'starter, growth, scale or enterprise (required)' },
          source: { type: 'string', value: '<sandbox|entrata|buildium>', description: 'Source type (default sandbox)' },
          dialect: { type: 'string', value: '<entrata|buildium>', description: 'Sandbox: the wire its company speaks (default entrata)' },
          size: { type: 'string', value: '<n>', description: 'Sandbox: leases to generate (default 50)' },
          seed: { type: 'string', value: '<n>', description: 'Sandbox: generator seed (default random)' },
          'base-url': { type: 'string', value: '<url>', description: 'Entrata, Buildium: the API base address' },
          'api-key': { type: 'string', value: '<key>', description: 'Entrata: the API key' },
          'client-id': { type: 'string', value: '<id>', description: 'Buildium: the API client id' },
          'client-secret': { type: 'string', value: '<secret>', description: 'Buildium: the API client secret' },
          name: { type: 'string', value: '<name>', description: 'A label' },
          interval: { type: 'string', value: '<seconds>', description: 'Sync cadence override (default: the plan cadence)' },
          'full-sync-interval': {
            type: 'string',
            value: '<seconds>',
            description: 'Seconds between full runs where the source reads deltas (default: the service default, a day)',
          },
          'no-initial-sync': { type: 'boolean', description: 'Do not start the first sync now' },
        },
        run: async ({ client, flags }) => {
          const type = (flags.source as string | undefined) ?? 'sandbox';
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
      get: {
        summary: 'Show an integration',
        args: ['integration_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/integrations/${id(args[0]!)}`) }),
      },
      update: {
        summary: 'Change plan, cadence or name (the schedule moves at once)',
        args: ['integration_id'],
        flags: {
          plan: { type: 'string', value: '<plan>', description: 'New plan' },
          interval: { type: 'string', value: '<seconds|default>', description: 'Cadence override; default = the plan cadence' },
          'full-sync-interval': {
            type: 'string',
            value: '<seconds|default>',
            description: 'Seconds between full runs where the source reads deltas; default = the service default',
          },
          name: { type: 'string', value: '<name>', description: 'New label' },
        },
        run: async ({ client, args, flags }) => {
          const body = defined({
            plan: flags.plan,
            sync_interval_seconds: intOrNull('interval', flags.interval),
            full_sync_interval_seconds: intOrNull('full-sync-interval', flags['full-sync-interval']),
            name: flags.name,
          });
          if (Object.keys(body).length === 0) throw usageError('nothing to update: give --plan, --interval, --full-sync-interval or --name');
          return { output: await client.request('PATCH', `/integrations/${id(args[0]!)}`, body) };
        },
      },
      delete: {
        summary: 'Disconnect: remove the schedule; its records are soft-deleted, never erased',
        args: ['integration_id'],
        flags: {},
        run: async ({ client, args }) => {
          await client.request('DELETE', `/integrations/${id(args[0]!)}`);
          return { output: { id: args[0], deleted: true } };
        },
      },
    },
  },

  key: {
    summary: 'API keys of the public API',
    verbs: {
      create: {
        summary: 'Create a key; its secret is printed this once',
        args: [],
        flags: {
          org: { type: 'string', value: '<org_id>', description: 'Organization (required)' },
          mode: { type: 'string', value: '<test|live>', description: 'Mode (required)' },
          scopes: { type: 'string', value: '<read,write>', description: 'Comma-separated scopes (default read,write)' },
        },
        run: async ({ client, flags }) => {
          const scopes = typeof flags.scopes === 'string' ? flags.scopes.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
          const body = defined({ mode: required('mode', flags.mode), scopes });
          return { output: await client.request('POST', `/organizations/${id(required('org', flags.org))}/api_keys`, body) };
        },
      },
      revoke: {
        summary: 'Revoke a key (at once, everywhere; idempotent)',
        args: ['key_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('POST', `/api_keys/${id(args[0]!)}/revoke`) }),
      },
    },
  },

  sync: {
    summary: 'Sync runs',
    verbs: {
      run: {
        summary: 'Start a sync now; with --wait, follow it to its end',
        args: ['integration_id'],
        flags: {
          wait: { type: 'boolean', description: 'Poll the job with a progress display on stderr; exit 1 if it fails' },
          'poll-ms': { type: 'string', value: '<ms>', description: 'Polling interval with --wait (default 1000)' },
          timeout: { type: 'string', value: '<seconds>', description: 'Give up waiting after this long (exit 1)' },
          kind: {
            type: 'string',
            value: '<full|delta>',
            description: 'full: read every record and find deletions now; delta: only what changed (sources that can list it). Default: as the cadence decides',
          },
        },
        run: async ({ client, args, flags }) => {
          const job = await client.request<SyncJob>('POST', `/integrations/${id(args[0]!)}/syncs`, defined({ kind: flags.kind }));
          if (!flags.wait) return { output: job };
          const timeout = int('timeout', flags.timeout);
          const final = await waitForJob(client, job, {
            pollMs: int('poll-ms', flags['poll-ms']) ?? 1000,
            timeoutMs: timeout === undefined ? undefined : timeout * 1000,
          });
          if (final.status === 'failed') {
            process.stderr.write(`error: sync job ${final.id} failed: ${final.error ?? 'no error recorded'}\n`);
            return { output: final, exitCode: 1 };
          }
          if (final.status !== 'succeeded') {
            process.stderr.write(`error: sync job ${final.id} is still ${final.status} after ${timeout} s\n`);
            return { output: final, exitCode: 1 };
          }
          if (final.records_skipped > 0) {
            process.stderr.write(
              `warning: ${final.records_skipped} record(s) could not be read from the source and were skipped; see: sync skipped ${final.id}\n`,
            );
          }
          return { output: final };
        },
      },
      get: {
        summary: 'Show a sync job',
        args: ['sync_job_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/sync_jobs/${id(args[0]!)}`) }),
      },
      list: {
        summary: "List an integration's sync jobs, most recent first",
        args: ['integration_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/integrations/${id(args[0]!)}/sync_jobs${pageQuery(flags)}`) }),
      },
      skipped: {
        summary: 'List the records a sync job quarantined (unreadable in the source), with the reason',
        args: ['sync_job_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/sync_jobs/${id(args[0]!)}/skipped_records${pageQuery(flags)}`) }),
      },
    },
  },

  operations: {
    summary: 'Writes (Operations) and how their write-back to the source went',
    verbs: {
      get: {
        summary: 'Show an Operation; with --wait, poll until it succeeded or failed',
        args: ['operation_id'],
        flags: {
          wait: { type: 'boolean', description: 'Poll, backing off with its attempts (1 s, 2 s, 4 s, … at most 30 s); exit 1 if it failed' },
          timeout: { type: 'string', value: '<seconds>', description: 'With --wait: give up waiting after this long (exit 1)' },
        },
        run: async ({ client, args, flags }) => {
          const timeout = int('timeout', flags.timeout);
          if (timeout !== undefined && timeout < 1) throw usageError(`--timeout must be at least 1 second, got ${timeout}`);
          if (timeout !== undefined && !flags.wait) throw usageError('--timeout applies to --wait only');
          const op = await client.request<Operation>('GET', `/operations/${id(args[0]!)}`);
          if (!flags.wait) return { output: op };
          const { operation, timedOut } = await waitForOperation(client, op, { timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
          if (timedOut) {
            process.stderr.write(`error: operation ${operation.id} is still ${operation.status} after ${timeout} s; stopped waiting (the write goes on)\n`);
            return { output: operation, exitCode: 1 };
          }
          if (operation.status === 'failed') {
            process.stderr.write(`error: operation ${operation.id} failed: ${oneLine(operation.reconcile.last_error ?? '') || 'no error recorded'}\n`);
            return { output: operation, exitCode: 1 };
          }
          return { output: operation };
        },
      },
      list: {
        summary: "List an integration's Operations, most recent first (never their request bodies)",
        args: ['integration_id'],
        flags: {
          status: { type: 'string', value: '<status,...>', description: 'queued, running, succeeded or failed; a comma-separated list matches any' },
          type: { type: 'string', value: '<type,...>', description: 'e.g. lease.create or resident.update; a comma-separated list matches any' },
          ...page,
        },
        run: async ({ client, args, flags }) => {
          const q = new URLSearchParams(
            defined({ status: flags.status, type: flags.type, limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<string, string>,
          );
          return { output: await client.request('GET', `/integrations/${id(args[0]!)}/operations${q.size ? `?${q}` : ''}`) };
        },
      },
    },
  },

  sandbox: {
    summary: 'Controls of the sandbox PMS behind a sandbox integration',
    verbs: {
      changes: {
        summary: 'Change source data; prints the x_ids touched',
        args: ['integration_id'],
        flags: {
          update: { type: 'string', value: '<n|entity=n,...>', description: 'Records to update' },
          create: { type: 'string', value: '<n|entity=n,...>', description: 'Records to create' },
          delete: { type: 'string', value: '<n|entity=n,...>', description: 'Records to delete' },
          'lease-transitions': { type: 'string', value: '<n>', description: 'Leases whose status moves on' },
        },
        run: async ({ client, args, flags }) => {
          const body = defined({
            update: counts('update', flags.update),
            create: counts('create', flags.create),
            delete: counts('delete', flags.delete),
            lease_transitions: int('lease-transitions', flags['lease-transitions']),
          });
          if (Object.keys(body).length === 0) throw usageError('nothing to change: give --update, --create, --delete or --lease-transitions');
          return { output: await client.request('POST', `/integrations/${id(args[0]!)}/sandbox/changes`, body) };
        },
      },
      fault: {
        summary: 'Inject a fault: unavailable, rate_limited, slow or reject_writes',
        args: ['integration_id'],
        flags: {
          kind: { type: 'string', value: '<kind>', description: 'unavailable, rate_limited, slow or reject_writes (required)' },
          count: { type: 'string', value: '<n>', description: 'Requests affected (default: until cleared)' },
        },
        run: async ({ client, args, flags }) => ({
          output: await client.request('POST', `/integrations/${id(args[0]!)}/sandbox/faults`, defined({ kind: required('kind', flags.kind), count: int('count', flags.count) })),
        }),
      },
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
  },

  webhook: {
    summary: 'Webhook subscriptions of an integration (scale and enterprise plans) and their deliveries',
    verbs: {
      create: {
        summary: 'Subscribe a URL to events; the signing secret is printed this once',
        args: ['integration_id'],
        flags: {
          endpoint: { type: 'string', value: '<url>', description: 'Where events are POSTed (required; live integrations: public https only)' },
          events: { type: 'string', value: '<TYPE,...|*>', description: "Comma-separated event types, or '*' for every type (required)" },
          description: { type: 'string', value: '<text>', description: 'A label' },
          'standard-webhooks': { type: 'string', value: '<on|off>', description: 'Also sign with the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature); default on' },
        },
        run: async ({ client, args, flags }) => {
          const body = defined({
            url: required('endpoint', flags.endpoint),
            event_types: eventTypes('events', required('events', flags.events)),
            description: descriptionOrNull(flags.description),
            standard_webhooks: onOff('standard-webhooks', flags['standard-webhooks']),
          });
          return { output: await client.request('POST', `/integrations/${id(args[0]!)}/webhook_subscriptions`, body) };
        },
      },
      list: {
        summary: "List an integration's webhook subscriptions (without secrets), oldest first",
        args: ['integration_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/integrations/${id(args[0]!)}/webhook_subscriptions${pageQuery(flags)}`) }),
      },
      get: {
        summary: 'Show a webhook subscription (without its secret)',
        args: ['subscription_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/webhook_subscriptions/${id(args[0]!)}`) }),
      },
      update: {
        summary: 'Change the endpoint, event types, description or status',
        args: ['subscription_id'],
        flags: {
          endpoint: { type: 'string', value: '<url>', description: 'New address to POST events to' },
          events: { type: 'string', value: '<TYPE,...|*>', description: "Comma-separated event types, or '*' for every type" },
          description: { type: 'string', value: '<text>', description: "New label; '' clears it" },
          status: { type: 'string', value: '<active|disabled>', description: 'disabled = gets nothing, retries stop; enabling does not resend what it missed' },
          'standard-webhooks': { type: 'string', value: '<on|off>', description: 'Sign with the Standard Webhooks headers too, or stop' },
        },
        run: async ({ client, args, flags }) => {
          const body = defined({
            url: flags.endpoint,
            event_types: eventTypes('events', flags.events),
            description: descriptionOrNull(flags.description),
            status: flags.status,
            standard_webhooks: onOff('standard-webhooks', flags['standard-webhooks']),
          });
          if (Object.keys(body).length === 0) throw usageError('nothing to update: give --endpoint, --events, --description, --status or --standard-webhooks');
          return { output: await client.request('PATCH', `/webhook_subscriptions/${id(args[0]!)}`, body) };
        },
      },
      health: {
        summary: "A subscription's endpoint health: success rate (24 h), last success and failure, failing since, what waits; and who disabled it and why",
        args: ['subscription_id'],
        flags: {},
        run: async ({ client, args }) => {
          const sub = (await client.request('GET', `/webhook_subscriptions/${id(args[0]!)}`)) as Record<string, unknown>;
          return { output: { id: sub.id, url: sub.url, status: sub.status, disabled: sub.disabled, ...(sub.health as object) } };
        },
      },
      enable: patchVerb('Set the status to active (what it missed is not resent: see replay-all)', 'subscription_id', (s) => `/webhook_subscriptions/${s}`, { status: 'active' }),
      disable: patchVerb('Set the status to disabled: it gets nothing, retries stop', 'subscription_id', (s) => `/webhook_subscriptions/${s}`, { status: 'disabled' }),
      delete: deleteVerb('Delete a subscription; its delivery history stays readable until the retention ends', 'subscription_id', (s) => `/webhook_subscriptions/${s}`),
      'rotate-secret': {
        summary: 'Rotate the signing secret; the new one is printed this once',
        args: ['subscription_id'],
        flags: { 'grace-seconds': { type: 'string', value: '<n>', description: 'How long the previous secret keeps signing too (default 86400)' } },
        run: async ({ client, args, flags }) => ({
          output: await client.request('POST', `/webhook_subscriptions/${id(args[0]!)}/rotate_secret`, defined({ grace_period_seconds: int('grace-seconds', flags['grace-seconds']) })),
        }),
      },
      deliveries: {
        summary: "List a subscription's deliveries with their attempts, most recent first",
        args: ['subscription_id'],
        flags: {
          status: { type: 'string', value: '<status>', description: 'pending, retrying, succeeded, dead_lettered, cancelled or expired' },
          'event-type': { type: 'string', value: '<TYPE>', description: 'Only this event type' },
          ...page,
        },
        run: async ({ client, args, flags }) => {
          const q = new URLSearchParams(
            defined({ status: flags.status, event_type: flags['event-type'], limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<string, string>,
          );
          return { output: await client.request('GET', `/webhook_subscriptions/${id(args[0]!)}/deliveries${q.size ? `?${q}` : ''}`) };
        },
      },
      delivery: {
        summary: 'Show a delivery with every attempt and the payload as sent',
        args: ['delivery_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/webhook_deliveries/${id(args[0]!)}`) }),
      },
      replay: {
        summary: 'Attempt a delivery once more now (same event id and bytes, current secret)',
        args: ['delivery_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('POST', `/webhook_deliveries/${id(args[0]!)}/replay`) }),
      },
      'replay-all': {
        summary: 'Replay every dead-lettered delivery, or every event of a time range (last 30 days)',
        args: ['subscription_id'],
        flags: {
          'dead-lettered': { type: 'boolean', description: 'Replay every dead-lettered delivery' },
          since: { type: 'string', value: '<iso>', description: 'Start of the range, e.g. 2025-01-31T00:00:00Z (with --until)' },
          until: { type: 'string', value: '<iso>', description: 'End of the range (with --since)' },
        },
        run: async ({ client, args, flags }) => {
          const range = flags.since !== undefined || flags.until !== undefined;
          if (flags['dead-lettered'] && range) throw usageError('give either --dead-lettered or --since and --until, not both');
          if (!flags['dead-lettered'] && !range) throw usageError('nothing to replay: give --dead-lettered, or --since and --until');
          const body = flags['dead-lettered'] ? { status: 'dead_lettered' } : { since: required('since', flags.since), until: required('until', flags.until) };
          return { output: await client.request('POST', `/webhook_subscriptions/${id(args[0]!)}/replay`, body) };
        },
      },
    },
  },

  automation: {
    summary: 'Automations (scheduled CSV exports of an integration) and their runs',
    verbs: {
      create: {
        summary: 'Create an automation: an entity, its filters, a schedule and a destination',
        args: ['integration_id'],
        flags: {
          name: { type: 'string', value: '<name>', description: 'Its name; each file is <name>-<run id>.csv (required)' },
          entity: { type: 'string', value: '<entity>', description: 'properties, units, residents or leases (required)' },
          columns: { type: 'string', value: '<field,...>', description: 'Fields to export, in order (default every field)' },
          ...exportFlags,
        },
        run: async ({ client, args, flags }) => {
          const body = defined({
            name: required('name', flags.name),
            entity: required('entity', flags.entity),
            filters: filters(flags.filter),
            columns: columns(flags.columns, false),
            schedule: schedule(flags, true),
            destination: destination(flags, true),
            escape_formulas: escapeFormulas(flags['escape-formulas']),
          });
          return { output: await client.request('POST', `/integrations/${id(args[0]!)}/automations`, body) };
        },
      },
      list: {
        summary: "List an integration's automations, oldest first (header names only)",
        args: ['integration_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/integrations/${id(args[0]!)}/automations${pageQuery(flags)}`) }),
      },
      get: {
        summary: 'Show an automation (header names only)',
        args: ['automation_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/automations/${id(args[0]!)}`) }),
      },
      update: {
        summary: 'Change the name, filters, columns, formula escaping, schedule or destination (each given replaces the stored one)',
        args: ['automation_id'],
        flags: {
          name: { type: 'string', value: '<name>', description: 'New name' },
          columns: { type: 'string', value: '<field,...|all>', description: 'Fields to export, in order; all = every field' },
          'clear-filters': { type: 'boolean', description: 'Export every record (no filters)' },
          ...exportFlags,
        },
        run: async ({ client, args, flags }) => {
          if (flags['clear-filters'] && flags.filter !== undefined) throw usageError('give either --filter or --clear-filters, not both');
          const body = defined({
            name: flags.name,
            filters: flags['clear-filters'] ? {} : filters(flags.filter),
            columns: columns(flags.columns, true),
            schedule: schedule(flags, false),
            destination: destination(flags, false),
            escape_formulas: escapeFormulas(flags['escape-formulas']),
          });
          if (Object.keys(body).length === 0) throw usageError('nothing to update: give --name, --filter, --clear-filters, --columns, --escape-formulas, a schedule or a destination');
          return { output: await client.request('PATCH', `/automations/${id(args[0]!)}`, body) };
        },
      },
      pause: patchVerb('Pause its schedule (a manual run still starts)', 'automation_id', (a) => `/automations/${a}`, { status: 'paused' }),
      resume: patchVerb('Resume its schedule', 'automation_id', (a) => `/automations/${a}`, { status: 'active' }),
      delete: deleteVerb('Delete an automation and its schedule; its runs stay readable', 'automation_id', (a) => `/automations/${a}`),
      run: {
        summary: 'Run it now; with --wait, follow the run to its end',
        args: ['automation_id'],
        flags: {
          wait: { type: 'boolean', description: 'Poll the run until it succeeded or failed; exit 1 if it failed (its error on stderr)' },
          'poll-ms': { type: 'string', value: '<ms>', description: 'Polling interval with --wait (default 1000)' },
          timeout: { type: 'string', value: '<seconds>', description: 'With --wait: give up waiting after this long (exit 1; the run goes on)' },
        },
        run: async ({ client, args, flags }) => {
          const timeout = int('timeout', flags.timeout);
          if (timeout !== undefined && timeout < 1) throw usageError(`--timeout must be at least 1 second, got ${timeout}`);
          if ((timeout !== undefined || flags['poll-ms'] !== undefined) && !flags.wait) throw usageError('--timeout and --poll-ms apply to --wait only');
          const pollMs = int('poll-ms', flags['poll-ms']) ?? 1000;
          if (pollMs < 1) throw usageError(`--poll-ms must be at least 1, got ${pollMs}`);
          const started = await client.request<AutomationRun>('POST', `/automations/${id(args[0]!)}/runs`);
          if (!flags.wait) return { output: started };
          const { run, timedOut } = await waitForAutomationRun(client, started, { pollMs, timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
          if (timedOut) {
            process.stderr.write(`error: automation run ${run.id} is still ${run.status} after ${timeout} s; stopped waiting (the run goes on)\n`);
            return { output: run, exitCode: 1 };
          }
          if (run.status === 'failed') {
            process.stderr.write(`error: automation run ${run.id} failed after ${run.attempts} attempt(s): ${oneLine(run.error ?? '') || 'no error recorded'}\n`);
            return { output: run, exitCode: 1 };
          }
          return { output: run };
        },
      },
      runs: {
        summary: "List an automation's runs, most recent first",
        args: ['automation_id'],
        flags: page,
        run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/automations/${id(args[0]!)}/runs${pageQuery(flags)}`) }),
      },
      'run-get': {
        summary: 'Show one run: status, attempts, records exported, file name, error',
        args: ['run_id'],
        flags: {},
        run: async ({ client, args }) => ({ output: await client.request('GET', `/automation_runs/${id(args[0]!)}`) }),
      },
    },
  },
};
