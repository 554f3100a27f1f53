/**
 * The outbox as an operator reads it: an integration's events of the retention window (30 days) with how their
 * deliveries stand, one event with its payload, and a resend of one event to the subscriptions that want it now.
 * Older events are 404 here even before the daily clean-up removes them.
 */
import type { OpenAPIHono, z } from '@hono/zod-openapi';
import { deliveryCountsOf, eventsOf, retainedEvent, type DeliveryCounts, type EventSummary } from '../../db/events';
import { activeSubscriptionsOf, type EventRow } from '../../db/webhooks';
import type { EventCategory, EventType } from '../../domain/events';
import { isId } from '../../domain/ids';
import { wantsEvent } from '../../domain/webhooks';
import type { ApiDeps } from '../deps';
import { ApiError } from '../problem';
import { Event, EventQuery, EventResendResult, EventWithPayload } from './events.schemas';
import { listRoute, postRoute, retrieveRoute } from './routes';
import { IdParam, json, linkTo, listOf, unavailableResponse, IntegrationId } from './schemas';
import { listPageWith, loadIntegration } from './support';
import { forbidden, redeliver, requireWebhookPlan } from './webhooks';

function eventView(row: EventSummary, deliveries: DeliveryCounts): z.infer<typeof Event> {
  return {
    id: row.id,
    integration_id: row.integrationId,
    type: row.type as EventType,
    category: row.category as EventCategory,
    created_at: row.createdAt.toISOString(),
    sync_job_id: row.syncJobId,
    operation_id: row.operationId,
    automation_run_id: row.automationRunId,
    record_id: row.recordId,
    dispatched_at: row.dispatchedAt?.toISOString() ?? null,
    deliveries,
  };
}

const tags = ['Events'];
const EventId = IdParam('evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'Event id (`evt_` + ULID).');

/** Malformed, unknown, past the retention, or of a deleted integration: one 404. */
async function loadEvent(deps: ApiDeps, id: string): Promise<EventRow> {
  const row = isId('event', id) ? await retainedEvent(deps.db, id) : undefined;
  if (!row) throw new ApiError('not_found', `No event ${id} (events are kept for 30 days).`);
  return row;
}

export function registerEvents(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    listRoute({
      path: '/integrations/{id}/events',
      tags,
      summary: "List an integration's events",
      description:
        'The events recorded in the last 30 days (the retention), newest first by default (`order=asc`: oldest first), each with how many deliveries it has per status. Filter by `type` (a comma-separated list matching any).',
      params: IntegrationId,
      query: EventQuery,
      list: listOf(Event, 'EventList'),
      order: 'desc',
      links: linkTo('GetEvent', 'getEvent', 'The first event of the page.', '/results/0/id'),
    }),
    async (c) => {
      const integration = await loadIntegration(deps, c.req.valid('param').id);
      const query = c.req.valid('query');
      const read = (page: typeof query) => eventsOf(deps.db, integration.id, { ...page, types: page.type });
      return c.json(await listPageWith(query, read, (ids) => deliveryCountsOf(deps.db, ids), eventView), 200);
    },
  );

  app.openapi(
    retrieveRoute({
      path: '/events/{id}',
      operationId: 'getEvent',
      tags,
      summary: 'Retrieve an event',
      description:
        'With its deliveries per status and the payload exactly as sent (null while the outbox relay has not serialized it yet). 404 once it is older than 30 days.',
      params: EventId,
      ok: json(EventWithPayload, 'The event.'),
    }),
    async (c) => {
      const row = await loadEvent(deps, c.req.valid('param').id);
      const counts = await deliveryCountsOf(deps.db, [row.id]);
      const payload = row.body === null ? null : (JSON.parse(row.body) as Record<string, unknown>);
      return c.json({ ...eventView(row, counts.get(row.id)!), payload }, 200);
    },
  );

  app.openapi(
    postRoute({
      path: '/events/{id}/resend',
      tags,
      summary: 'Resend an event',
      description:
        'Sends the event again to every active subscription of its integration that wants its type (`*` or the type), as they stand now: a subscription that already has a delivery of it gets one more attempt on that delivery (as `POST /webhook_deliveries/{id}/replay`), except a delivery whose first attempt is still waiting in the subscription’s queue (behind others, or an open circuit), which is counted and goes out in its turn; one that never got it (created later, or disabled at the time) gets a new delivery. Same event id and bytes, signed with the current secret(s). When no active subscription wants the event, nothing is sent: 202 with `resent: 0`. Scale and enterprise plans only.',
      params: EventId,
      responses: { 202: json(EventResendResult, 'What was sent again.'), ...forbidden, ...unavailableResponse },
    }),
    async (c) => {
      const event = await loadEvent(deps, c.req.valid('param').id);
      requireWebhookPlan(await loadIntegration(deps, event.integrationId));
      const subs = (await activeSubscriptionsOf(deps.db, [event.integrationId])).filter((s) => wantsEvent(s.eventTypes, event.type));
      const ids = await redeliver(deps, { sends: subs.map((sub) => ({ sub, event })) }, 'resend the event');
      return c.json({ resent: ids.length, delivery_ids: ids }, 202);
    },
  );
}
