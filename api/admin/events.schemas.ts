/**
 * The admin API's schemas of events (the outbox, as an operator reads it) and their delivery counts, beside their
 * routes (events.ts).
 */
import { z } from '@hono/zod-openapi';
import { ALL_EVENT_TYPES, EVENT_CATEGORIES } from '../../domain/events';
import { DELIVERY_STATUSES } from '../../domain/webhooks';
import { DateTime, Uuid, OrderedListQuery, enumListParam } from './schemas';

export const EventQuery = OrderedListQuery('desc').extend({
  type: enumListParam(ALL_EVENT_TYPES, 'Only events of this type.'),
});
const DeliveryCounts = z
  .object({
    total: z.number().int().openapi({ description: 'Deliveries of the event, one per subscription it was sent (or re-sent) to.' }),
    ...(Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, z.number().int()])) as Record<(typeof DELIVERY_STATUSES)[number], z.ZodNumber>),
  })
  .openapi('EventDeliveryCounts', {
    description: 'How many deliveries of the event there are, in all and per status.',
    example: { total: 2, pending: 0, retrying: 0, succeeded: 1, dead_lettered: 1, cancelled: 0, expired: 0 },
  });
export const Event = z
  .object({
    id: z.string().openapi({ example: 'evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    type: z.enum(ALL_EVENT_TYPES),
    category: z.enum(EVENT_CATEGORIES),
    created_at: DateTime,
    sync_job_id: z.string().nullable().openapi({ description: 'The sync run that recorded the event, if any.' }),
    operation_id: z.string().nullable().openapi({ description: 'The write Operation that recorded the event, if any.' }),
    automation_run_id: z.string().nullable().openapi({ description: 'The automation run an AUTOMATION_* event reports.' }),
    record_id: z.string().nullable().openapi({ description: 'The record a data_change event is about.' }),
    dispatched_at: DateTime.nullable().openapi({
      description: 'When the outbox relay had started a delivery to every subscription that wanted it; null until then.',
    }),
    deliveries: DeliveryCounts,
  })
  .openapi('Event');
export const EventWithPayload = Event.extend({
  payload: z
    .record(z.string(), z.unknown())
    .nullable()
    .openapi({ description: 'The envelope exactly as sent to receivers; null while it has not been serialized yet (nothing was sent).' }),
}).openapi('EventWithPayload');
export const EventResendResult = z
  .object({
    resent: z.number().int().openapi({ description: 'Subscriptions the event was sent to again (0: no active subscription wants it).' }),
    delivery_ids: z.array(z.string()).openapi({ description: 'The delivery of each: a new one, or the existing one given one more attempt.' }),
  })
  .openapi('EventResendResult');
