/** `automation`: automations (scheduled CSV exports of an integration) and their runs. */
import { int, required, defined, page, pageQuery, id, patchVerb, deleteVerb, usageError, type Noun, type Flag, type FlagValue } from '../command';
import { oneLine, waitForAutomationRun, type AutomationRun } from '../progress';

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
  const list =
    typeof value === 'string'
      ? value
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean)
      : [];
  if (list.length === 0)
    throw usageError(`--columns must list field names (id,status,rent_amount)${allowAll ? ' or be all' : ''}, got ${JSON.stringify(value)}`);
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
  filter: {
    type: 'string',
    multiple: true,
    value: '<name=value>',
    description: "A query parameter of the entity's list endpoint, e.g. status=active,notice (repeatable)",
  },
  every: { type: 'string', value: '<seconds>', description: 'Run every this many seconds (at least 60)' },
  cron: { type: 'string', value: '"<expr>"', description: 'Or run on a five-field cron, e.g. "0 6 * * 1-5"' },
  timezone: { type: 'string', value: '<Area/City>', description: 'Time zone of --cron (default UTC)' },
  'http-url': { type: 'string', value: '<url>', description: 'Send the file to this URL (live integrations: public https only)' },
  method: { type: 'string', value: '<PUT|POST>', description: 'With --http-url: how the file is sent (default PUT)' },
  header: {
    type: 'string',
    multiple: true,
    value: '"<Name: value>"',
    description: 'With --http-url: a header to send, stored encrypted, never shown again (repeatable)',
  },
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

export const automation: Noun = {
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
        if (Object.keys(body).length === 0)
          throw usageError('nothing to update: give --name, --filter, --clear-filters, --columns, --escape-formulas, a schedule or a destination');
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
};
