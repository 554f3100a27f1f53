/**
 * The admin API's schemas of automations (scheduled CSV exports): entity, filters, columns, schedule, destination,
 * and their runs, beside their routes (automations.ts).
 */
import { validateHeaderValue } from 'node:http';
import { z } from '@hono/zod-openapi';
import { ENTITIES } from '../../domain/cdm';
import { listParameters } from '../../domain/filters';
import { AUTOMATION_STATUSES, MIN_EVERY_SECONDS, PLURAL, RUN_STATUSES } from '../../domain/automations';
import { NUL_FREE_PATTERN, plainText } from '../../domain/scalars';
import { text } from '../schemas';
import { DateTime, Uuid, someField } from './schemas';

const PLURALS = ENTITIES.map((e) => PLURAL[e]) as [string, ...string[]];
const ExportEntityName = z.enum([...PLURALS, ...ENTITIES]).openapi({
  description: 'The entity to export: `properties`, `units`, `residents` or `leases` (the singular is accepted too). Replies show the plural.',
  example: 'leases',
});
const AutomationName = text(200).openapi({
  description: 'A label; the file of each run is named `<name>-<run id>.csv` (made safe for file systems and URLs).',
  example: 'Nightly leases',
});
/** Every name a filter may have, of some entity (which of them the automation's entity takes is said in words). */
const FILTER_NAMES = [...new Set(ENTITIES.flatMap((e) => listParameters(e)))].filter((n) => n !== 'limit' && n !== 'offset');
const ExportFilters = z.record(plainText(), plainText()).openapi({
  description:
    "The query parameters of the entity's list endpoint (`GET /v1/<entity>`), as strings, exactly as a caller would send them; validated by the same rules when saved (a bad one, or one the entity's list does not have, is a 422 at `/filters/<name>`). `limit` and `offset` do not apply: an export is every matching record.",
  example: { status: 'active,notice', start_date_gte: '2025-01-01', 'order-by': 'start_date:desc' },
  propertyNames: { type: 'string', enum: FILTER_NAMES },
  additionalProperties: { type: 'string', pattern: NUL_FREE_PATTERN },
} as never);
const ExportColumns = z
  .array(plainText().max(100))
  .min(1)
  .max(100)
  .openapi({
    description:
      "Fields of the entity's record to export, in this order (each at most once). Money fields become `<field>_amount` (minor units) and `<field>_currency`.",
    example: ['id', 'unit_id', 'status', 'start_date', 'rent_amount'],
  });

/** The cron forms accepted: five fields (minute hour day-of-month month day-of-week), or a predefined name. */
/** One cron field of values in [`min`, `max`]: `*`, a value or a range, each with an optional step, comma-separated. */
const cronField = (value: string) => {
  const item = `(\\*|(${value})(-(${value}))?)(/([1-9][0-9]?))?`;
  return `${item}(,${item})*`;
};
/**
 * Letters either way, as a pattern a JSON Schema validator reads too (it takes no flags): header names, cron's month
 * and day names.
 */
const caseless = (word: string) => [...word].map((ch) => (/[a-z]/.test(ch) ? `[${ch.toUpperCase()}${ch}]` : ch)).join('');
/**
 * What a five-field schedule may say, field by field (minute, hour, day of month, month, day of week), as Temporal's
 * parser reads it: values with or without a leading zero, month and day names (`JAN`, `mon-fri`), Sunday as 0 or 7.
 */
const CRON_PATTERN = `^(@(yearly|annually|monthly|weekly|daily|hourly)|${[
  '[0-5]?[0-9]',
  '[01]?[0-9]|2[0-3]',
  '0?[1-9]|[12][0-9]|3[01]',
  `0?[1-9]|1[0-2]|${caseless('jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec')}`,
  `0?[0-7]|${caseless('sun|mon|tue|wed|thu|fri|sat')}`,
]
  .map(cronField)
  .join(' ')})$`;
const CRON = new RegExp(CRON_PATTERN);
/** The shape of an IANA zone name (`UTC`, `America/Argentina/Buenos_Aires`, `Etc/GMT+5`): what the document says. */
const TIME_ZONE_PATTERN = '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$';
/**
 * Whether `zone` is an IANA time zone: what the runtime's time zone data resolves, current names (`Asia/Kolkata`,
 * `Europe/Kyiv`) and their older aliases alike (Node 20 lists only one spelling of each).
 */
function isTimeZone(zone: string): boolean {
  if (!new RegExp(TIME_ZONE_PATTERN).test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
const MAX_EVERY_SECONDS = 366 * 86_400;

/**
 * One object whose rules say which form it takes, rather than a union: a union's failure points at `schedule` as a
 * whole, while an operator needs to be told which member (`/schedule/every`, `/schedule/cron`) is wrong.
 */
const AutomationScheduleInput = z
  .strictObject({
    every: z
      .number()
      .int()
      .min(MIN_EVERY_SECONDS)
      .max(MAX_EVERY_SECONDS)
      .optional()
      .openapi({ description: `Seconds between runs, at least ${MIN_EVERY_SECONDS}.` }),
    cron: z.string().max(200).optional().openapi({
      description: 'Five-field cron (`minute hour day-of-month month day-of-week`, single spaces), or `@daily`, `@hourly`, …',
      example: '0 6 * * 1-5',
      pattern: CRON_PATTERN,
    }),
    timezone: z
      .string()
      .max(100)
      .optional()
      .openapi({ description: 'IANA time zone of a `cron` schedule (`Area/City`); default `UTC`.', example: 'America/Chicago', pattern: TIME_ZONE_PATTERN }),
  })
  .superRefine((s, ctx) => {
    if (s.every === undefined && s.cron === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give `every` (seconds between runs) or `cron` (with an optional `timezone`)' });
      return;
    }
    if (s.every !== undefined && s.cron !== undefined) ctx.addIssue({ code: 'custom', path: ['cron'], message: 'give either `every` or `cron`, not both' });
    if (s.every !== undefined && s.timezone !== undefined)
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'a time zone applies to a `cron` schedule only' });
    if (s.cron !== undefined && !CRON.test(s.cron)) {
      ctx.addIssue({
        code: 'custom',
        path: ['cron'],
        message:
          'must be five cron fields (minute hour day-of-month month day-of-week, e.g. "0 6 * * 1-5") or one of @yearly, @annually, @monthly, @weekly, @daily, @hourly',
      });
    }
    if (s.timezone !== undefined && !isTimeZone(s.timezone)) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'not a known IANA time zone (e.g. America/Chicago, Europe/Paris, UTC)' });
    }
  })
  .openapi('AutomationScheduleInput', {
    description: 'Either `{every}` (an interval) or `{cron, timezone?}`.',
    oneOf: [
      { type: 'object', required: ['every'], not: { anyOf: [{ required: ['cron'] }, { required: ['timezone'] }] } },
      { type: 'object', required: ['cron'], not: { required: ['every'] } },
    ],
    example: { cron: '0 6 * * 1-5', timezone: 'America/Chicago' },
  });

/**
 * Headers that describe the connection and the framing (the export's own, as activities/export.ts keeps them) or the
 * host the URL names: an operator cannot set them. `content-type` may be set (a presigned URL may require one).
 */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADERS = 20;
const MAX_HEADER_VALUE = 4096;

/** Whether the export's HTTP client (node:http) will send this header value; it refuses the whole request if not. */
function nodeSends(value: string): boolean {
  try {
    validateHeaderValue('x', value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a destination header value cannot be sent as given, or null. An RFC 9110 field value, as node:http sends it:
 * visible US-ASCII, with spaces and tabs inside; obs-text (U+0080 to U+00FF) goes out as single bytes, and anything
 * above is refused by Node, so every run would fail. The offending character is named, never the value: it may be a
 * credential (a character HTTP cannot carry is part of no working one).
 */
function headerValueProblem(value: string): string | null {
  if (value.length > MAX_HEADER_VALUE) return `a header value is at most ${MAX_HEADER_VALUE} characters`;
  if (/[\r\n]/.test(value)) return 'a header value is one line: no CR or LF';
  if (!nodeSends(value)) {
    const bad = [...value].find((ch) => !nodeSends(ch))!;
    const code = `U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    return `contains ${code}, which an HTTP header cannot carry: use visible ASCII, spaces and tabs (U+0080 to U+00FF are sent as single bytes)`;
  }
  // RFC 9110 trims surrounding whitespace from a field value: the receiver would not get what was given.
  if (/^[ \t]|[ \t]$/.test(value)) return 'a header value may not start or end with a space or tab (HTTP drops them)';
  return null;
}
/**
 * What the document can say of destination headers: a name is an HTTP token of at most 100 characters and none of the
 * reserved ones (in any case); a value is a field value as headerValueProblem() takes it. Only a name given twice in
 * different cases is left to words.
 */
const HEADER_NAME_PATTERN = `^(?!(?:${[...RESERVED_HEADERS].map(caseless).join('|')})$)[!#$%&'*+.^_\`|~0-9A-Za-z-]{1,100}$`;
const HEADER_VALUE_PATTERN = '^(?:[!-~\\u0080-\\u00ff](?:[\\t -~\\u0080-\\u00ff]*[!-~\\u0080-\\u00ff])?)?$';
const DestinationHeaders = z
  .record(z.string(), z.string())
  .superRefine((headers, ctx) => {
    const seen = new Set<string>();
    const names = Object.keys(headers);
    if (names.length > MAX_HEADERS) ctx.addIssue({ code: 'custom', path: [], message: `at most ${MAX_HEADERS} headers` });
    for (const name of names) {
      const value = headers[name]!;
      const lower = name.toLowerCase();
      if (!HEADER_NAME.test(name) || name.length > 100) ctx.addIssue({ code: 'custom', path: [name], message: 'not a valid HTTP header name' });
      else if (RESERVED_HEADERS.has(lower))
        ctx.addIssue({ code: 'custom', path: [name], message: `${name} describes the connection, not the file; the export sets it itself` });
      else if (seen.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: 'given twice (header names are case-insensitive)' });
      else {
        const problem = headerValueProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      }
      seen.add(lower);
    }
  })
  .openapi({
    description: `Headers sent with the file (e.g. \`Authorization\`), at most ${MAX_HEADERS}. Names are HTTP tokens; values are RFC 9110 field values of at most ${MAX_HEADER_VALUE} characters: visible ASCII with spaces and tabs inside (not leading or trailing), no line breaks or control characters, and no character above U+00FF (U+0080 to U+00FF are sent as single bytes); anything else is a 422 at \`/destination/headers/<name>\`. Values are stored encrypted and never shown again; replies list the names only.`,
    example: { Authorization: 'Bearer s3cr3t' },
    maxProperties: MAX_HEADERS,
    propertyNames: { type: 'string', pattern: HEADER_NAME_PATTERN },
    additionalProperties: { type: 'string', maxLength: MAX_HEADER_VALUE, pattern: HEADER_VALUE_PATTERN },
  } as never);
const DestinationUrl = plainText().min(1).max(2048).openapi({
  description:
    'Where the file is sent. Live integrations: HTTPS to a public host: not `localhost`, nor a loopback, private, link-local or other special-purpose address (IPv4 embedded in IPv6 included), neither as written nor as resolved when sending. Test integrations may use http:// and loopback.',
  example: 'https://files.example.com/exports/leases.csv',
});
const DestinationMethod = z.enum(['PUT', 'POST']).openapi({
  description: 'How the file is sent: it is the request body, `content-type: text/csv; charset=utf-8` unless `headers` name another. Default `PUT`.',
});
const ContentLength = z.boolean().openapi({
  description:
    'Send the file with a `Content-Length` header instead of as a chunked body (`Transfer-Encoding: chunked`, the default: streamed as the database writes it). S3 and MinIO presigned URLs refuse a chunked upload (`501 NotImplemented` naming `Transfer-Encoding`) and Azure Blob requires the length: set `true` for them. The file is then written whole to a temporary file on the worker (as much free disk as the export is large) and sent when it is complete, which starts the upload later. Default `false`.',
  example: true,
});
const DirectoryPath = plainText()
  .min(1)
  .max(500)
  .superRefine((path, ctx) => {
    if (/^([/\\]|[A-Za-z]:)/.test(path)) ctx.addIssue({ code: 'custom', message: 'must be relative to the export root (EXPORT_ROOT), not absolute' });
    else if (path.split(/[/\\]/).includes('..'))
      ctx.addIssue({ code: 'custom', message: 'must not contain `..` segments: a directory destination stays inside the export root' });
  })
  .openapi({ description: "A directory relative to the deployment's export root (EXPORT_ROOT); never absolute, never `..`.", example: 'finance/leases' });

const HttpDestinationInput = z
  .strictObject({
    type: z.literal('http'),
    url: DestinationUrl,
    method: DestinationMethod.optional(),
    headers: DestinationHeaders.optional(),
    content_length: ContentLength.optional(),
  })
  .openapi('HttpDestinationInput');
const DirectoryDestinationInput = z.strictObject({ type: z.literal('directory'), path: DirectoryPath }).openapi('DirectoryDestinationInput');
const DestinationInput = z.discriminatedUnion('type', [HttpDestinationInput, DirectoryDestinationInput]);

const EscapeFormulas = z.boolean().openapi({
  description:
    "CSV-injection protection for spreadsheet users (as OWASP recommends): a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is written with a leading `'`, and every text cell is quoted, so a spreadsheet shows the value instead of running it as a formula. Numbers (a negative balance), dates, times and the ids this service makes (`id` and its `*_id` references) are never changed; the source's own ids (`x_id`, `floorplan_id`) are text and are escaped like any other. Default `true`; `false` writes every value exactly as the API serves it, for files that programs read.",
  example: true,
});

export const AutomationCreate = z
  .strictObject({
    name: AutomationName,
    entity: ExportEntityName,
    filters: ExportFilters.optional(),
    columns: ExportColumns.optional().openapi({ description: 'Fields to export, in order; default every field of the entity.' }),
    schedule: AutomationScheduleInput,
    destination: DestinationInput,
    escape_formulas: EscapeFormulas.optional(),
  })
  .openapi('AutomationCreate');
export const AutomationUpdate = someField(
  z.strictObject({
    name: AutomationName.optional(),
    filters: ExportFilters.optional().openapi({ description: 'Replaces the filters (`{}`: every record).' }),
    columns: ExportColumns.nullable().optional().openapi({ description: 'Replaces the columns; null = every field of the entity.' }),
    schedule: AutomationScheduleInput.optional(),
    destination: DestinationInput.optional().openapi({
      description:
        'Replaces the destination: `method` and `content_length` left out are their defaults again (`PUT`, `false`). For an HTTP destination that stays HTTP, omitting `headers` keeps the stored ones (their values are never shown, so they cannot be sent back) as long as the URL keeps its origin (scheme, host and port): a URL on another origin needs `headers` again, else a 422 at `/destination/headers`; `headers: {}` removes them.',
    }),
    status: z
      .enum(AUTOMATION_STATUSES)
      .optional()
      .openapi({ description: '`paused` stops scheduled runs (a manual run still starts); `active` resumes them.' }),
    escape_formulas: EscapeFormulas.optional(),
  }),
).openapi('AutomationUpdate');

const IntervalSchedule = z.object({ every: z.number().int() }).openapi('IntervalSchedule');
const CronSchedule = z.object({ cron: z.string(), timezone: z.string() }).openapi('CronSchedule');
const HttpDestination = z
  .object({
    type: z.literal('http'),
    url: z.string(),
    method: z.enum(['PUT', 'POST']),
    headers: z.array(z.string()).openapi({ description: 'Names of the headers sent with the file; their values are never shown.', example: ['Authorization'] }),
    content_length: ContentLength,
  })
  .openapi('HttpDestination');
const DirectoryDestination = z.object({ type: z.literal('directory'), path: z.string() }).openapi('DirectoryDestination');

export const Automation = z
  .object({
    id: z.string().openapi({ example: 'atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    organization_id: Uuid,
    name: z.string(),
    entity: z.enum(PLURALS),
    filters: z.record(z.string(), z.string()),
    columns: z.array(z.string()).nullable().openapi({ description: 'Fields exported, in order; null = every field of the entity.' }),
    schedule: z.union([IntervalSchedule, CronSchedule]),
    destination: z.discriminatedUnion('type', [HttpDestination, DirectoryDestination]),
    escape_formulas: EscapeFormulas,
    status: z.enum(AUTOMATION_STATUSES),
    schedule_id: z.string().openapi({
      description: "The automation's Temporal Schedule (see it in the Temporal UI).",
      example: 'automation-schedule-atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8',
    }),
    created_at: DateTime,
    updated_at: DateTime,
  })
  .openapi('Automation');

export const AutomationRun = z
  .object({
    id: z.string().openapi({ example: 'aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8', description: 'The run id, which is also the id of its Temporal workflow.' }),
    automation_id: z.string(),
    status: z.enum(RUN_STATUSES).openapi({
      description:
        '`queued`: its first attempt is not finished; `running`: an attempt failed transiently and another is scheduled (`next_attempt_at`); `succeeded`: the file was delivered; `failed`: a permanent failure, or the last retry failed (`error`).',
    }),
    trigger: z.enum(['schedule', 'manual']),
    records_exported: z.number().int().nullable(),
    file_name: z.string().openapi({ example: 'Nightly leases-aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8.csv' }),
    attempts: z.number().int().openapi({ description: 'Attempts made so far.' }),
    next_attempt_at: DateTime.nullable(),
    error: z.string().nullable().openapi({ description: 'Why the last attempt failed.' }),
    started_at: DateTime.nullable(),
    finished_at: DateTime.nullable(),
    created_at: DateTime,
  })
  .openapi('AutomationRun');
