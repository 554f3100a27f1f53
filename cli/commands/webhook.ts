/** `webhook`: webhook subscriptions of an integration (scale and enterprise plans) and their deliveries. */
import type { FieldFlags } from '../client';
import { defined, id, callVerb, deleteVerb, listVerb, sendVerb, type Noun } from '../command';
import { int, intOrNull, required, commaList, usageError, option, toggle, type FlagValue } from '../flags';

/** `on`/`off` (also `true`/`false`) as a boolean; undefined when the flag is absent. */
function onOff(name: string, value: FlagValue | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'true') return true;
  if (value === 'off' || value === 'false') return false;
  throw usageError(`--${name} must be on or off, got ${JSON.stringify(value)}`);
}

/** `LEASE_SIGNED,LEASE_UPDATED` or `*` (every type) as the API's `event_types`. */
function eventTypes(name: string, value: FlagValue): string[] | undefined {
  if (value === undefined) return undefined;
  const types = typeof value === 'string' ? commaList(value) : [];
  if (types.length === 0) throw usageError(`--${name} must list event types (LEASE_SIGNED,LEASE_UPDATED) or be *, got ${JSON.stringify(value)}`);
  return types;
}

/** A description; an empty one clears it. */
const descriptionOrNull = (value: FlagValue) => (value === undefined ? undefined : value === '' ? null : value);

/** The flags of a subscription's fields (create and update). */
const SUBSCRIPTION_FIELDS: FieldFlags = {
  url: '--endpoint',
  event_types: '--events',
  standard_webhooks: '--standard-webhooks',
  max_in_flight: '--max-in-flight',
};

/** `--max-in-flight`: the subscription's `max_in_flight`, `default` (or `null`) for the deployment's. */
const maxInFlightFlag = option(
  '<n|default>',
  'Attempts in flight at once, 1 to 256; 1 = deliveries arrive in order, one after another; default = the deployment default (WEBHOOK_MAX_IN_FLIGHT, 16)',
);

export const webhook: Noun = {
  summary: 'Webhook subscriptions of an integration (scale and enterprise plans) and their deliveries',
  verbs: {
    create: sendVerb('POST /integrations/{integration_id}/webhook_subscriptions', {
      summary: 'Subscribe a URL to events; the signing secret is printed this once',
      flags: {
        endpoint: option('<url>', 'Where events are POSTed (required; live integrations: public https only)'),
        events: option('<TYPE,...|*>', "Comma-separated event types, or '*' for every type (required)"),
        description: option('<text>', 'A label'),
        'standard-webhooks': option('<on|off>', 'Also sign with the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature); default on'),
        'max-in-flight': maxInFlightFlag,
      },
      body: (flags) =>
        defined({
          url: required('endpoint', flags.endpoint),
          event_types: eventTypes('events', required('events', flags.events)),
          description: descriptionOrNull(flags.description),
          standard_webhooks: onOff('standard-webhooks', flags['standard-webhooks']),
          max_in_flight: intOrNull('max-in-flight', flags['max-in-flight']),
        }),
      fields: SUBSCRIPTION_FIELDS,
    }),
    list: listVerb("List an integration's webhook subscriptions (without secrets), oldest first", '/integrations/{integration_id}/webhook_subscriptions'),
    get: callVerb('Show a webhook subscription (without its secret)', 'GET /webhook_subscriptions/{subscription_id}'),
    update: sendVerb('PATCH /webhook_subscriptions/{subscription_id}', {
      summary: 'Change the endpoint, event types, description, status, signing headers or attempts in flight',
      flags: {
        endpoint: option('<url>', 'New address to POST events to'),
        events: option('<TYPE,...|*>', "Comma-separated event types, or '*' for every type"),
        description: option('<text>', "New label; '' clears it"),
        status: option('<active|disabled>', 'disabled = gets nothing, retries stop; enabling does not resend what it missed'),
        'standard-webhooks': option('<on|off>', 'Sign with the Standard Webhooks headers too, or stop'),
        'max-in-flight': maxInFlightFlag,
      },
      body: (flags) =>
        defined({
          url: flags.endpoint,
          event_types: eventTypes('events', flags.events),
          description: descriptionOrNull(flags.description),
          status: flags.status,
          standard_webhooks: onOff('standard-webhooks', flags['standard-webhooks']),
          max_in_flight: intOrNull('max-in-flight', flags['max-in-flight']),
        }),
      nothing: 'nothing to update: give --endpoint, --events, --description, --status, --standard-webhooks or --max-in-flight',
      fields: SUBSCRIPTION_FIELDS,
    }),
    health: {
      summary: "A subscription's endpoint health: success rate (24 h), last success and failure, failing since, what waits; and who disabled it and why",
      args: ['subscription_id'],
      flags: {},
      run: async ({ client, args }) => {
        const sub = (await client.request('GET', `/webhook_subscriptions/${id(args[0]!)}`)) as Record<string, unknown>;
        return { output: { id: sub.id, url: sub.url, status: sub.status, disabled: sub.disabled, ...(sub.health as object) } };
      },
    },
    enable: callVerb('Set the status to active (what it missed is not resent: see replay-all)', 'PATCH /webhook_subscriptions/{subscription_id}', {
      status: 'active',
    }),
    disable: callVerb('Set the status to disabled: it gets nothing, retries stop', 'PATCH /webhook_subscriptions/{subscription_id}', { status: 'disabled' }),
    delete: deleteVerb('Delete a subscription; its delivery history stays readable until the retention ends', '/webhook_subscriptions/{subscription_id}'),
    'rotate-secret': sendVerb('POST /webhook_subscriptions/{subscription_id}/rotate_secret', {
      summary: 'Rotate the signing secret; the new one is printed this once',
      flags: { 'grace-seconds': option('<n>', 'How long the previous secret keeps signing too (default 86400)') },
      body: (flags) => defined({ grace_period_seconds: int('grace-seconds', flags['grace-seconds']) }),
      fields: { grace_period_seconds: '--grace-seconds' },
    }),
    deliveries: listVerb("List a subscription's deliveries with their attempts, most recent first", '/webhook_subscriptions/{subscription_id}/deliveries', {
      status: option('<status,...>', 'pending, retrying, succeeded, dead_lettered, cancelled or expired; a comma-separated list matches any'),
      'event-type': option('<TYPE,...>', 'Only these event types (comma-separated)'),
    }),
    delivery: callVerb('Show a delivery with every attempt and the payload as sent', 'GET /webhook_deliveries/{delivery_id}'),
    replay: callVerb('Attempt a delivery once more now (same event id and bytes, current secret)', 'POST /webhook_deliveries/{delivery_id}/replay'),
    'replay-all': sendVerb('POST /webhook_subscriptions/{subscription_id}/replay', {
      summary: 'Replay every dead-lettered delivery, or every event of a time range (last 30 days)',
      flags: {
        'dead-lettered': toggle('Replay every dead-lettered delivery'),
        since: option('<iso>', 'Start of the range, e.g. 2025-01-31T00:00:00Z (with --until)'),
        until: option('<iso>', 'End of the range (with --since)'),
      },
      body: (flags) => {
        const range = flags.since !== undefined || flags.until !== undefined;
        if (flags['dead-lettered'] && range) throw usageError('give either --dead-lettered or --since and --until, not both');
        if (!flags['dead-lettered'] && !range) throw usageError('nothing to replay: give --dead-lettered, or --since and --until');
        return flags['dead-lettered'] ? { status: 'dead_lettered' } : { since: required('since', flags.since), until: required('until', flags.until) };
      },
      fields: { status: '--dead-lettered' },
    }),
  },
};
