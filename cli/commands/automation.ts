/** `automation`: automations (scheduled CSV exports of an integration) and their runs. */
import type { FieldFlags } from '../client';
import { defined, id, callVerb, deleteVerb, listVerb, sendVerb, type Noun } from '../command';
import { int, required, commaList, pollMsFlag, usageError, waitFlags, option, repeatable, toggle, type Flag, type FlagValue } from '../flags';
import { errorLine, waitForAutomationRun, waited, type AutomationRun } from '../progress';

/** The values of a repeatable flag (none when absent). */
const many = (value: FlagValue): string[] => (value === undefined || typeof value === 'boolean' ? [] : typeof value === 'string' ? [value] : value);

/** A repeatable flag of `name<separator>value` items as an object (undefined when absent); `entry` splits one item or refuses it. */
function entries(value: FlagValue, entry: (item: string, seen: Record<string, string>) => [string, string]): Record<string, string> | undefined {
  const items = many(value);
  if (items.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const item of items) {
    const [name, v] = entry(item, out);
    out[name] = v;
  }
  return out;
}

/** `--filter status=active,notice --filter start_date_gte=2025-01-01` as the API's `filters` object. */
const filters = (value: FlagValue) =>
  entries(value, (pair, seen) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw usageError(`--filter must be name=value (a query parameter of the entity's list endpoint), got ${JSON.stringify(pair)}`);
    const name = pair.slice(0, at).trim();
    if (name in seen) throw usageError(`--filter ${name} is given twice; a list filter takes comma-separated values (status=active,notice)`);
    return [name, pair.slice(at + 1)];
  });

/** `--columns id,status,rent_amount`, or `all` (every field: the default). */
function columns(value: FlagValue, allowAll: boolean): string[] | null | undefined {
  if (value === undefined) return undefined;
  if (allowAll && value === 'all') return null;
  const list = typeof value === 'string' ? commaList(value) : [];
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
const headers = (value: FlagValue) =>
  entries(value, (line) => {
    const at = line.indexOf(':');
    const name = at > 0 ? line.slice(0, at).trim() : '';
    // The value itself is never echoed: it may be a credential.
    if (!name) throw usageError('--header must be "Name: value"');
    return [name, line.slice(at + 1).trim()];
  });

/** `--http-url <url> [--method PUT|POST] [--header "Name: value"]… [--content-length]` or `--directory <path>`. */
function destination(flags: Record<string, FlagValue>, isRequired: boolean): Record<string, unknown> | undefined {
  const url = flags['http-url'];
  const dir = flags.directory;
  const httpOnly = flags.method !== undefined || flags.header !== undefined || flags['content-length'] !== undefined;
  const notHttp = () => usageError('--method, --header and --content-length apply to --http-url only');
  if (url !== undefined && dir !== undefined) throw usageError('give either --http-url or --directory, not both');
  if (dir !== undefined && httpOnly) throw notHttp();
  if (url !== undefined) {
    return defined({
      type: 'http',
      url: required('http-url', url),
      method: flags.method,
      headers: headers(flags.header),
      content_length: flags['content-length'] === true ? true : undefined,
    });
  }
  if (dir !== undefined) return { type: 'directory', path: required('directory', dir) };
  if (httpOnly) throw notHttp();
  if (isRequired) throw usageError('a destination is required: give --http-url <url> or --directory <path>');
  return undefined;
}

const exportFlags: Record<string, Flag> = {
  filter: repeatable('<name=value>', "A query parameter of the entity's list endpoint, e.g. status=active,notice (repeatable)"),
  every: option('<seconds>', 'Run every this many seconds (at least 60)'),
  cron: option('"<expr>"', 'Or run on a five-field cron, e.g. "0 6 * * 1-5"'),
  timezone: option('<Area/City>', 'Time zone of --cron (default UTC)'),
  'http-url': option('<url>', 'Send the file to this URL (live integrations: public https only)'),
  method: option('<PUT|POST>', 'With --http-url: how the file is sent (default PUT)'),
  header: repeatable('"<Name: value>"', 'With --http-url: a header to send, stored encrypted, never shown again (repeatable)'),
  'content-length': toggle(
    "With --http-url: send the file with a Content-Length, not chunked (S3/MinIO presigned URLs need it); it is written whole to the worker's disk first",
  ),
  directory: option('<path>', 'Or write the file to this directory, relative to the export root'),
  'escape-formulas': option('<on|off>', "CSV-injection protection for spreadsheets: a text cell starting with = + - @ TAB or CR gets a leading ' (default on)"),
};

/** The flags of an automation's fields (create and update). */
const EXPORT_FIELDS: FieldFlags = {
  filters: '--filter',
  // Same name, but its items are said as such: `--columns item 2`, not `/columns/1`.
  columns: '--columns',
  schedule: '--every or --cron',
  '/schedule/every': '--every',
  '/schedule/cron': '--cron',
  '/schedule/timezone': '--timezone',
  destination: '--http-url or --directory',
  '/destination/url': '--http-url',
  '/destination/method': '--method',
  '/destination/headers': '--header',
  '/destination/content_length': '--content-length',
  '/destination/path': '--directory',
  escape_formulas: '--escape-formulas',
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
    create: sendVerb('POST /integrations/{integration_id}/automations', {
      summary: 'Create an automation: an entity, its filters, a schedule and a destination',
      flags: {
        name: option('<name>', 'Its name; each file is <name>-<run id>.csv (required)'),
        entity: option('<entity>', 'properties, units, residents or leases (required)'),
        columns: option('<field,...>', 'Fields to export, in order (default every field)'),
        ...exportFlags,
      },
      body: (flags) =>
        defined({
          name: required('name', flags.name),
          entity: required('entity', flags.entity),
          filters: filters(flags.filter),
          columns: columns(flags.columns, false),
          schedule: schedule(flags, true),
          destination: destination(flags, true),
          escape_formulas: escapeFormulas(flags['escape-formulas']),
        }),
      fields: EXPORT_FIELDS,
    }),
    list: listVerb("List an integration's automations, oldest first (header names only)", '/integrations/{integration_id}/automations'),
    get: callVerb('Show an automation (header names only)', 'GET /automations/{automation_id}'),
    update: sendVerb('PATCH /automations/{automation_id}', {
      summary: 'Change the name, filters, columns, formula escaping, schedule or destination (each given replaces the stored one)',
      flags: {
        name: option('<name>', 'New name'),
        columns: option('<field,...|all>', 'Fields to export, in order; all = every field'),
        'clear-filters': toggle('Export every record (no filters)'),
        ...exportFlags,
      },
      body: (flags) => {
        if (flags['clear-filters'] && flags.filter !== undefined) throw usageError('give either --filter or --clear-filters, not both');
        return defined({
          name: flags.name,
          filters: flags['clear-filters'] ? {} : filters(flags.filter),
          columns: columns(flags.columns, true),
          schedule: schedule(flags, false),
          destination: destination(flags, false),
          escape_formulas: escapeFormulas(flags['escape-formulas']),
        });
      },
      nothing: 'nothing to update: give --name, --filter, --clear-filters, --columns, --escape-formulas, a schedule or a destination',
      fields: EXPORT_FIELDS,
    }),
    pause: callVerb('Pause its schedule (a manual run still starts)', 'PATCH /automations/{automation_id}', { status: 'paused' }),
    resume: callVerb('Resume its schedule', 'PATCH /automations/{automation_id}', { status: 'active' }),
    delete: deleteVerb('Delete an automation and its schedule; its runs stay readable', '/automations/{automation_id}'),
    run: {
      summary: 'Run it now; with --wait, follow the run to its end',
      args: ['automation_id'],
      flags: {
        wait: toggle('Poll the run until it succeeded or failed; exit 1 if it failed (its error on stderr)'),
        'poll-ms': pollMsFlag,
        timeout: option('<seconds>', 'With --wait: give up waiting after this long (exit 1; the run goes on)'),
      },
      run: async ({ client, args, flags }) => {
        const { timeout, pollMs } = waitFlags(flags);
        const started = await client.request<AutomationRun>('POST', `/automations/${id(args[0]!)}/runs`);
        if (!flags.wait) return { output: started };
        const followed = await waitForAutomationRun(client, started, { pollMs, timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
        return waited('automation run', followed, timeout, 'the run goes on', (r) => ` after ${r.attempts} attempt(s): ${errorLine(r.error)}`);
      },
    },
    runs: listVerb("List an automation's runs, most recent first", '/automations/{automation_id}/runs'),
    'run-get': callVerb('Show one run: status, attempts, records exported, file name, error', 'GET /automation_runs/{run_id}'),
  },
};
