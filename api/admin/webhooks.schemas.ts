/**
 * The admin API's schemas of webhook subscriptions, their secrets, deliveries and replays, beside their routes
 * (webhooks.ts).
 */
import { z } from '@hono/zod-openapi';
import { ALL_EVENT_TYPES } from '../../domain/events';
import { DELIVERY_STATUSES, SUBSCRIPTION_STATUSES } from '../../domain/webhooks';
import { datetimeField, plainText } from '../../domain/scalars';
import { DateTime, Uuid, OrderedListQuery, enumListParam, someField } from './schemas';

const EventTypeName = z.enum(['*', ...ALL_EVENT_TYPES]);
const EventTypes = z
  .array(EventTypeName)
  .min(1)
  .max(ALL_EVENT_TYPES.length + 1)
  .openapi({ description: 'Event types to receive, or `["*"]` for every type.', example: ['LEASE_SIGNED', 'LEASE_UPDATED'] });
const WebhookUrl = plainText().min(1).max(2048).openapi({
  description:
    'Where events are POSTed. Live integrations: HTTPS to a public host: not `localhost`, nor a loopback, private, link-local or other special-purpose address (IPv4 embedded in IPv6 included), neither as written nor as resolved when sending. Test integrations may use http:// and loopback.',
  example: 'https://example.com/webhooks/propsync',
});
const Description = plainText().max(500).trim().nullable().optional();
const MaxInFlight = z.number().int().min(1).max(256).nullable().optional().openapi({
  description:
    'Attempts of this subscription in flight at once (null: the deployment default, WEBHOOK_MAX_IN_FLIGHT, 16). First attempts go out in production order either way; with 1 they also arrive in that order, one after another.',
  example: 16,
});
const StandardWebhooks = z.boolean().optional().openapi({
  description:
    'Also sign each delivery the Standard Webhooks way: `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64>`), verifiable with the published `standardwebhooks` libraries, besides `X-Service-Signature`. Default on for a new subscription.',
});
export const SubscriptionCreate = z
  .strictObject({ url: WebhookUrl, event_types: EventTypes, description: Description, max_in_flight: MaxInFlight, standard_webhooks: StandardWebhooks })
  .openapi('WebhookSubscriptionCreate');
export const SubscriptionUpdate = someField(
  z.strictObject({
    url: WebhookUrl.optional(),
    event_types: EventTypes.optional(),
    description: Description,
    status: z.enum(SUBSCRIPTION_STATUSES).optional(),
    max_in_flight: MaxInFlight,
    standard_webhooks: StandardWebhooks,
  }),
).openapi('WebhookSubscriptionUpdate');
export const Subscription = z
  .object({
    id: z.string().openapi({ example: 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    url: z.string(),
    event_types: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    max_in_flight: z.number().int().nullable().openapi({ description: 'Attempts in flight at once; null: the deployment default.' }),
    standard_webhooks: z
      .boolean()
      .openapi({ description: 'Whether deliveries also carry the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`).' }),
    previous_secret_expires_at: DateTime.nullable().openapi({ description: 'End of the current rotation window, when one is open.' }),
    disabled: z
      .object({
        at: DateTime,
        by: z.enum(['operator', 'failures', 'gone']),
        reason: z.string().nullable(),
      })
      .nullable()
      .openapi('WebhookSubscriptionDisabled', {
        description:
          'Why a `disabled` subscription is disabled: by an `operator`, or by the service, when every attempt had `failures` for WEBHOOK_DISABLE_AFTER_MS (5 days) or the receiver answered 410 (`gone`). Null while active. Enabling it again (PATCH `status: "active"`) clears it and resumes its queue.',
      }),
    health: z
      .object({
        success_rate: z.number().min(0).max(1).nullable().openapi({
          description: 'Succeeded attempts over attempts of the last 24 hours (of its 1,000 most recent deliveries at most); null without attempts.',
        }),
        attempts: z.number().int().openapi({ description: 'Attempts that rate counts.' }),
        last_success_at: DateTime.nullable(),
        last_failure_at: DateTime.nullable(),
        failing_since: DateTime.nullable().openapi({
          description: 'Since when every attempt has failed (the first failure after the last success); null when the last outcome was a success.',
        }),
        pending: z.number().int().openapi({ description: 'Deliveries waiting in its queue for their first attempt.' }),
        retrying: z.number().int().openapi({ description: 'Deliveries waiting for a retry.' }),
        dead_lettered: z.number().int(),
      })
      .openapi('WebhookEndpointHealth', { description: "The receiver's health, from the attempts made to it." }),
    circuit: z
      .object({
        state: z.enum(['closed', 'open']),
        opened_at: DateTime.nullable(),
        next_probe_at: DateTime.nullable(),
      })
      .openapi('WebhookCircuit', {
        description:
          "The dispatcher's circuit breaker. `open` after a run of failed first attempts (WEBHOOK_CIRCUIT_FAILURES): the queue waits, and one delivery probes the receiver at `next_probe_at`; the first success closes it.",
      }),
    created_at: DateTime,
    updated_at: DateTime,
  })
  .openapi('WebhookSubscription');
export const SubscriptionCreated = Subscription.extend({
  secret: z.string().openapi({ description: 'The signing secret (`whsec_…`). Shown only in this response.' }),
}).openapi('WebhookSubscriptionCreated');
export const RotateSecret = z
  .strictObject({
    grace_period_seconds: z
      .number()
      .int()
      .min(0)
      .max(30 * 86_400)
      .optional()
      .openapi({ description: 'How long the previous secret keeps signing (default 86400).' }),
  })
  .openapi('WebhookSecretRotate');
export const RotatedSecret = z
  .object({
    secret: z.string().openapi({ description: 'The new signing secret. Shown only in this response.' }),
    previous_secret_expires_at: DateTime.openapi({ description: 'Until then deliveries also carry X-Service-Signature-Previous.' }),
  })
  .openapi('WebhookSecretRotated');
const Attempt = z
  .object({
    number: z.number().int(),
    started_at: DateTime,
    duration_ms: z.number().int(),
    response_status: z.number().int().nullable(),
    error: z.string().nullable().openapi({ description: 'Why the attempt failed (connection error, time-out, guard refusal, HTTP status); null on success.' }),
    response_body: z.string().nullable().openapi({ description: 'The first bytes of the response body.' }),
  })
  .openapi('WebhookAttempt');
export const Delivery = z
  .object({
    id: z.string().openapi({ example: 'whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    event_id: z.string(),
    event_type: z.string(),
    subscription_id: z.string(),
    integration_id: Uuid,
    status: z.enum(DELIVERY_STATUSES),
    attempt_count: z.number().int(),
    next_attempt_at: DateTime.nullable(),
    last_attempt_at: DateTime.nullable(),
    created_at: DateTime,
    updated_at: DateTime,
    attempts: z.array(Attempt),
  })
  .openapi('WebhookDelivery');
export const DeliveryWithPayload = Delivery.extend({
  payload: z.record(z.string(), z.unknown()).nullable().openapi({ description: 'The event exactly as sent (null once purged).' }),
}).openapi('WebhookDeliveryWithPayload');
export const DeliveryQuery = OrderedListQuery('desc').extend({
  status: enumListParam(DELIVERY_STATUSES, 'Only deliveries in this status.'),
  event_type: enumListParam(ALL_EVENT_TYPES, 'Only deliveries of this event type.'),
});
export const SubscriptionReplay = z
  .union([
    z.strictObject({ status: z.literal('dead_lettered') }),
    z.strictObject({ since: datetimeField('Start of the range.'), until: datetimeField('End of the range.') }),
  ])
  .openapi('WebhookSubscriptionReplay', {
    description: 'Replay every dead-lettered delivery (`{status: "dead_lettered"}`), or every event in a time range of the last 30 days (`{since, until}`).',
  });
export const ReplayResult = z.object({ replayed: z.number().int(), delivery_ids: z.array(z.string()) }).openapi('WebhookReplayResult');
