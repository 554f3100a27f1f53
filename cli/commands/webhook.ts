/** `webhook`: webhook subscriptions of an integration (scale and enterprise plans) and their deliveries. */
import { int, required, defined, page, pageQuery, id, patchVerb, deleteVerb, usageError, type Noun, type FlagValue } from '../command';

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
  const types =
    typeof value === 'string'
      ? value
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean)
      : [];
  if (types.length === 0) throw usageError(`--${name} must list event types (LEASE_SIGNED,LEASE_UPDATED) or be *, got ${JSON.stringify(value)}`);
  return types;
}

/** A description; an empty one clears it. */
const descriptionOrNull = (value: FlagValue) => (value === undefined ? undefined : value === '' ? null : value);

export const webhook: Noun = {
  summary: 'Webhook subscriptions of an integration (scale and enterprise plans) and their deliveries',
  verbs: {
    create: {
      summary: 'Subscribe a URL to events; the signing secret is printed this once',
      args: ['integration_id'],
      flags: {
        endpoint: { type: 'string', value: '<url>', description: 'Where events are POSTed (required; live integrations: public https only)' },
        events: { type: 'string', value: '<TYPE,...|*>', description: "Comma-separated event types, or '*' for every type (required)" },
        description: { type: 'string', value: '<text>', description: 'A label' },
        'standard-webhooks': {
          type: 'string',
          value: '<on|off>',
          description: 'Also sign with the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature); default on',
        },
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
      run: async ({ client, args, flags }) => ({
        output: await client.request('GET', `/integrations/${id(args[0]!)}/webhook_subscriptions${pageQuery(flags)}`),
      }),
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
    enable: patchVerb('Set the status to active (what it missed is not resent: see replay-all)', 'subscription_id', (s) => `/webhook_subscriptions/${s}`, {
      status: 'active',
    }),
    disable: patchVerb('Set the status to disabled: it gets nothing, retries stop', 'subscription_id', (s) => `/webhook_subscriptions/${s}`, {
      status: 'disabled',
    }),
    delete: deleteVerb(
      'Delete a subscription; its delivery history stays readable until the retention ends',
      'subscription_id',
      (s) => `/webhook_subscriptions/${s}`,
    ),
    'rotate-secret': {
      summary: 'Rotate the signing secret; the new one is printed this once',
      args: ['subscription_id'],
      flags: { 'grace-seconds': { type: 'string', value: '<n>', description: 'How long the previous secret keeps signing too (default 86400)' } },
      run: async ({ client, args, flags }) => ({
        output: await client.request(
          'POST',
          `/webhook_subscriptions/${id(args[0]!)}/rotate_secret`,
          defined({ grace_period_seconds: int('grace-seconds', flags['grace-seconds']) }),
        ),
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
          defined({ status: flags.status, event_type: flags['event-type'], limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<
            string,
            string
          >,
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
};
