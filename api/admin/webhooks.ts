/**
 * Webhook subscriptions of an integration (scale and enterprise plans), their signing secrets and rotation, and the
 * deliveries an operator inspects and replays. The secret is shown once, at creation (and at each rotation), and
 * stored encrypted; only the delivery activity opens it, to sign.
 */
import { whileIntegrationLive } from '../../db/apply';
import { pageOf } from '../../db/queries';
import type { OpenAPIHono } from '@hono/zod-openapi';
import {
  attemptsOf,
  createSubscription,
  deadLetteredOf,
  changeSubscription,
  deleteSubscription,
  deliveriesOfEvents,
  eventBody,
  eventsInRange,
  eventTimes,
  getDelivery,
  getSubscription,
  getSubscriptionEvenDeleted,
  listDeliveries,
  listSubscriptions,
  queueAndCommitDeliveries,
  rotateSigningSecret,
  type AttemptRow,
  type QueueItem,
  type DeliveryRow,
  type EventRow,
  type SubscriptionRow,
} from '../../db/webhooks';
import { databaseNow } from '../../db/clock';
import type { IntegrationRow } from '../../db/tenants';
import { clearFailingRun, healthOf, NO_HEALTH, type Health } from '../../db/webhook-health';
import { OPERATIONAL_EVENT_TYPES } from '../../domain/events';
import { PLAN_RULES } from '../../domain/plans';
import { ALL_EVENTS, DEFAULT_ROTATION_GRACE_SECONDS, RETENTION_MS } from '../../domain/webhooks';
import type { ApiDeps } from '../deps';
import { ApiError } from '../problem';
import {
  Delivery,
  DeliveryQuery,
  DeliveryWithPayload,
  ReplayResult,
  RotatedSecret,
  RotateSecret,
  Subscription,
  SubscriptionCreate,
  SubscriptionCreated,
  SubscriptionReplay,
  SubscriptionUpdate,
} from './webhooks.schemas';
import { deleted, deleteRoute, listRoute, patchRoute, postRoute, retrieveRoute } from './routes';
import { IdParam, json, linkTo, listOf, problemResponse, unavailableResponse, IntegrationId } from './schemas';
import { checkOutboundUrl, found, listPageWith, loadById, loadIntegration, viaTemporal, withinDeadline } from './support';

/** Most events one range replay re-sends; a wider range is refused with a hint to narrow it. */
const MAX_RANGE_REPLAY = 10_000;

const loadDeliveryControl = () => import('../../control/webhooks');

function subscriptionView(row: SubscriptionRow, health: Health = NO_HEALTH) {
  const windowOpen = row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > Date.now();
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    id: row.id,
    integration_id: row.integrationId,
    url: row.url,
    event_types: row.eventTypes,
    description: row.description,
    status: row.status,
    max_in_flight: row.maxInFlight,
    standard_webhooks: row.standardWebhooks,
    previous_secret_expires_at: windowOpen ? row.previousSecretExpiresAt!.toISOString() : null,
    disabled:
      row.status === 'disabled' ? { at: iso(row.disabledAt ?? row.updatedAt)!, by: row.disabledBy ?? ('operator' as const), reason: row.disabledReason } : null,
    health: {
      success_rate: health.successRate,
      attempts: health.attempts,
      last_success_at: iso(health.lastSuccessAt),
      last_failure_at: iso(health.lastFailureAt),
      failing_since: iso(health.failingSince),
      pending: health.pending,
      retrying: health.retrying,
      dead_lettered: health.deadLettered,
    },
    circuit: {
      state: row.circuitOpenedAt ? ('open' as const) : ('closed' as const),
      opened_at: row.circuitOpenedAt?.toISOString() ?? null,
      next_probe_at: row.circuitNextProbeAt?.toISOString() ?? null,
    },
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Subscriptions as the admin API shows them, each with its endpoint health (one query for them all). */
async function subscriptionViews(deps: Pick<ApiDeps, 'db'>, rows: SubscriptionRow[]) {
  const health = await healthOf(
    deps.db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => subscriptionView(r, health.get(r.id)));
}

function deliveryView(row: DeliveryRow, attempts: AttemptRow[]) {
  return {
    id: row.id,
    event_id: row.eventId,
    event_type: row.eventType,
    subscription_id: row.subscriptionId,
    integration_id: row.integrationId,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
    last_attempt_at: row.lastAttemptAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    attempts: attempts.map((a) => ({
      number: a.number,
      started_at: a.startedAt.toISOString(),
      duration_ms: a.durationMs,
      response_status: a.responseStatus,
      error: a.error,
      response_body: a.responseBody,
    })),
  };
}

function invalid(pointer: string, detail: string): ApiError {
  return new ApiError('validation_error', `${pointer}: ${detail}`, { errors: [{ pointer, detail }] });
}

/** Webhooks are a Scale and Enterprise feature: 403 with the reason for the other plans. */
export function requireWebhookPlan(integration: IntegrationRow): void {
  if (!PLAN_RULES[integration.plan].webhooks) {
    throw new ApiError(
      'forbidden',
      `Webhooks are available on the scale and enterprise plans; integration ${integration.id} is on the ${integration.plan} plan (it can read by API only). Upgrade the plan to subscribe.`,
    );
  }
}

/** Live integrations deliver over HTTPS to public hosts only; test integrations may use http:// and loopback. */
const checkUrl = (raw: string, integration: IntegrationRow) =>
  checkOutboundUrl(raw, integration, 'url', { credentials: 'authenticate the webhook by its signature' });

function normalizeTypes(types: string[]): string[] {
  const named = [...new Set(types)];
  // `*` covers the catalog but not the operational notices (wantsEvent): those named beside it stay.
  return named.includes(ALL_EVENTS) ? [ALL_EVENTS, ...named.filter((t) => (OPERATIONAL_EVENT_TYPES as readonly string[]).includes(t))] : named;
}

function loadSubscription(deps: ApiDeps, id: string): Promise<SubscriptionRow> {
  return loadById('webhookSubscription', id, 'webhook subscription', (id) => getSubscription(deps.db, id));
}

function loadDelivery(deps: ApiDeps, id: string): Promise<DeliveryRow> {
  return loadById('webhookDelivery', id, 'webhook delivery', (id) => getDelivery(deps.db, id));
}

/** A replay needs an active subscription of an integration that still exists and is on a plan with webhooks. */
async function replayable(deps: ApiDeps, sub: SubscriptionRow): Promise<void> {
  const integration = await loadIntegration(deps, sub.integrationId);
  requireWebhookPlan(integration);
  if (sub.status !== 'active')
    throw new ApiError('conflict', `Webhook subscription ${sub.id} is disabled; enable it (PATCH status "active") before replaying.`);
}

type Replayable = DeliveryRow & { eventCreatedAt: Date };

/** Deliveries with the time their event was recorded (its dead letter expires with the event's retention). */
async function withEventTimes(deps: ApiDeps, rows: DeliveryRow[]): Promise<Replayable[]> {
  const times = await eventTimes(
    deps.db,
    rows.map((r) => r.eventId),
  );
  return rows.map((r) => ({ ...r, eventCreatedAt: times.get(r.eventId) ?? r.createdAt }));
}

async function runLanes<T>(items: T[], lanes: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(lanes, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** What one re-send covers: events to send to subscriptions, and deliveries to attempt again. */
export interface Redelivery {
  sends?: { sub: SubscriptionRow; event: Pick<EventRow, 'id' | 'type'> }[];
  deliveries?: DeliveryRow[];
}

/** A delivery waiting in its subscription's queue for its first attempt: its dispatcher sends it in its turn. */
const queuedForFirstAttempt = (d: DeliveryRow) => d.status === 'pending' && d.seq !== null;

/**
 * The one path of every operator re-send (a subscription's bulk replay, an event's resend): a (subscription, event)
 * pair that never had a delivery gets one, queued at the end of the subscription's queue like a relayed one; a pair
 * that has one, and every delivery given, gets one more attempt on that same record (replayDelivery), except one
 * still waiting in the queue, which goes out in its turn. Callers check the plan and the subscriptions. Temporal
 * unreachable: 503 saying what could not be done (`action`, via viaTemporal); what was queued by then stays queued
 * (the relay wakes its dispatcher), and a retry replays the rest. Returns the ids of the deliveries, the new ones first.
 */
export async function redeliver(deps: ApiDeps, work: Redelivery, action = 'replay the deliveries'): Promise<string[]> {
  const replay: DeliveryRow[] = (work.deliveries ?? []).filter((d) => !queuedForFirstAttempt(d));
  const toQueue: QueueItem[] = [];
  const perSub = new Map<string, { sub: SubscriptionRow; events: Pick<EventRow, 'id' | 'type'>[] }>();
  for (const { sub, event } of work.sends ?? []) {
    const entry = perSub.get(sub.id) ?? { sub, events: [] };
    entry.events.push(event);
    perSub.set(sub.id, entry);
  }
  const waiting: string[] = [];
  for (const { sub, events } of perSub.values()) {
    const have = new Map(
      (
        await deliveriesOfEvents(
          deps.db,
          sub.id,
          events.map((e) => e.id),
        )
      ).map((d) => [d.eventId, d]),
    );
    for (const event of events) {
      const d = have.get(event.id);
      if (!d) toQueue.push({ sub, event });
      else if (queuedForFirstAttempt(d)) waiting.push(d.id);
      else replay.push(d);
    }
  }
  const { idle, queued } = toQueue.length > 0 ? await queueAndCommitDeliveries(deps.db, toQueue) : { idle: [], queued: [] };
  await viaTemporal(deps, action, async (client) => {
    const control = await loadDeliveryControl();
    const ctl = control.deliveryControlOf(client, deps.config);
    // A deadline per call: a bulk action of thousands takes as long as it takes, one call that hangs does not.
    await runLanes(idle, 16, (id) => withinDeadline(deps, client, () => control.wakeDispatcher(ctl, { id, integrationId: perSub.get(id)!.sub.integrationId })));
    await runLanes(await withEventTimes(deps, replay), 16, (d) => withinDeadline(deps, client, () => control.replayDelivery(ctl, d)));
  });
  return [...queued.map((d) => d.id), ...waiting, ...replay.map((d) => d.id)];
}

const tags = ['Webhooks'];
const SubscriptionId = IdParam('whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'Webhook subscription id (`whs_` + ULID).');
const DeliveryId = IdParam('whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8', 'Webhook delivery id (`whd_` + ULID).');
export const forbidden = { 403: problemResponse('The integration is on a plan without webhooks.') };
const conflict = { 409: problemResponse('The subscription is disabled.') };

export function registerWebhooks(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    postRoute({
      path: '/integrations/{id}/webhook_subscriptions',
      tags,
      summary: 'Subscribe to events',
      description:
        'The response is the only one that shows the signing `secret`. Events recorded from now on that match `event_types` are delivered to `url`. Scale and enterprise plans only.',
      params: IntegrationId,
      body: SubscriptionCreate,
      responses: {
        201: json(
          SubscriptionCreated,
          'The subscription, with its secret.',
          linkTo('GetSubscription', 'getWebhookSubscription', 'The subscription created (without its secret).'),
        ),
        ...forbidden,
      },
    }),
    async (c) => {
      const integration = await loadIntegration(deps, c.req.valid('param').id);
      requireWebhookPlan(integration);
      const input = c.req.valid('json');
      const url = checkUrl(input.url, integration);
      // Made under the integration's lock: a deletion under way either takes it along or finds it not made (404).
      const created = await whileIntegrationLive(deps.db, integration.id, (tx) =>
        createSubscription(
          tx,
          {
            organizationId: integration.organizationId,
            integrationId: integration.id,
            url,
            eventTypes: normalizeTypes(input.event_types),
            description: input.description ?? null,
            maxInFlight: input.max_in_flight ?? null,
            standardWebhooks: input.standard_webhooks ?? true,
          },
          deps.secrets,
        ),
      );
      const { row, secret } = found(created, 'integration', integration.id);
      return c.json({ ...subscriptionView(row), secret }, 201);
    },
  );

  app.openapi(
    listRoute({
      path: '/integrations/{id}/webhook_subscriptions',
      tags,
      summary: "List an integration's webhook subscriptions",
      params: IntegrationId,
      list: listOf(Subscription, 'WebhookSubscriptionList'),
      order: 'asc',
      note: '; without secrets',
    }),
    async (c) => {
      const integration = await loadIntegration(deps, c.req.valid('param').id);
      const { limit, offset, order } = c.req.valid('query');
      const rows = await listSubscriptions(deps.db, integration.id, { limit, offset, order });
      const page = pageOf(rows, { limit, offset }, (r) => r);
      return c.json({ ...page, results: await subscriptionViews(deps, page.results) }, 200);
    },
  );

  app.openapi(
    retrieveRoute({
      path: '/webhook_subscriptions/{id}',
      operationId: 'getWebhookSubscription',
      tags,
      summary: 'Retrieve a webhook subscription',
      params: SubscriptionId,
      ok: json(Subscription, 'The subscription, without its secret.'),
    }),
    async (c) => c.json((await subscriptionViews(deps, [await loadSubscription(deps, c.req.valid('param').id)]))[0]!, 200),
  );

  app.openapi(
    patchRoute({
      path: '/webhook_subscriptions/{id}',
      tags,
      summary: 'Change a webhook subscription',
      description:
        'A `disabled` subscription gets no new deliveries; its queue (deliveries waiting for their first attempt) pauses, and deliveries being retried end `cancelled` at once (replayable; enabling it again does not resume them). Enabling it again resumes the queue in order; events recorded while it was disabled are not sent: a replay by time range does that.',
      params: SubscriptionId,
      body: SubscriptionUpdate,
      responses: { 200: json(Subscription, 'The subscription.') },
    }),
    async (c) => {
      const before = await loadSubscription(deps, c.req.valid('param').id);
      const integration = await loadIntegration(deps, before.integrationId);
      const input = c.req.valid('json');
      // When it was disabled or enabled, in the database's time: the relay compares it with events' times (the
      // database's), and this process's clock may differ.
      const toggledAt = input.status !== undefined && input.status !== before.status ? await databaseNow(deps.db) : undefined;
      const row = await changeSubscription(deps.db, before.id, {
        ...(input.url !== undefined ? { url: checkUrl(input.url, integration) } : {}),
        ...(input.event_types !== undefined ? { eventTypes: normalizeTypes(input.event_types) } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.status !== undefined ? { status: input.status } : {}),
        ...(input.max_in_flight !== undefined ? { maxInFlight: input.max_in_flight } : {}),
        ...(input.standard_webhooks !== undefined ? { standardWebhooks: input.standard_webhooks } : {}),
        // Who disabled it and why, until it is enabled again; when it was disabled and enabled again stay, so that the
        // relay queues an event it reaches late as it would have on time (worker/roles/relay.ts).
        ...(input.status === 'disabled' && before.status !== 'disabled'
          ? { disabledAt: toggledAt, disabledBy: 'operator' as const, disabledReason: 'disabled by an operator' }
          : {}),
        ...(input.status === 'active' && before.status !== 'active' ? { enabledAt: toggledAt, disabledBy: null, disabledReason: null } : {}),
      });
      // Enabled again: its queue (what waited while it was disabled) goes on. Best effort: when Temporal is away,
      // the relay's sweep wakes it shortly.
      if (before.status !== 'active' && row!.status === 'active') {
        // Its old failures no longer count towards disabling it again.
        await clearFailingRun(deps.db, row!.id);
        await viaTemporal(deps, 'wake the dispatcher', async (client) => {
          const control = await loadDeliveryControl();
          await control.wakeDispatcher(control.deliveryControlOf(client, deps.config), { id: row!.id, integrationId: row!.integrationId });
        }).catch(() => {});
      }
      return c.json((await subscriptionViews(deps, [row!]))[0]!, 200);
    },
  );

  app.openapi(
    deleteRoute({
      path: '/webhook_subscriptions/{id}',
      tags,
      summary: 'Delete a webhook subscription',
      description:
        'It gets nothing from now on: its queue and its deliveries being retried end `cancelled` at once (nothing more is sent). Its delivery history (`GET /webhook_subscriptions/{id}/deliveries`, `GET /webhook_deliveries/{id}`) stays readable until the retention ends.',
      params: SubscriptionId,
      responses: deleted,
    }),
    async (c) => {
      const row = await loadSubscription(deps, c.req.valid('param').id);
      await deleteSubscription(deps.db, row.id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    postRoute({
      path: '/webhook_subscriptions/{id}/rotate_secret',
      tags,
      summary: 'Rotate the signing secret',
      description:
        'The new secret signs every delivery from now on (`X-Service-Signature`); during the grace window (default 24 h) deliveries also carry `X-Service-Signature-Previous`, made with the secret this call replaces.',
      params: SubscriptionId,
      body: RotateSecret,
      responses: { 200: json(RotatedSecret, 'The new secret, shown only here.') },
    }),
    async (c) => {
      const sub = await loadSubscription(deps, c.req.valid('param').id);
      const grace = c.req.valid('json').grace_period_seconds ?? DEFAULT_ROTATION_GRACE_SECONDS;
      const now = new Date();
      const expires = new Date(now.getTime() + grace * 1000);
      const { secret } = await rotateSigningSecret(deps.db, sub.id, deps.secrets, expires, now);
      return c.json({ secret, previous_secret_expires_at: expires.toISOString() }, 200);
    },
  );

  app.openapi(
    listRoute({
      path: '/webhook_subscriptions/{id}/deliveries',
      tags,
      summary: "List a subscription's deliveries",
      description:
        'Newest first by default (`order=asc`: oldest first), each with its attempts. Filter by `status` (e.g. `dead_lettered`) and `event_type`, each a comma-separated list matching any; a value outside its list is a 422.',
      params: SubscriptionId,
      query: DeliveryQuery,
      list: listOf(Delivery, 'WebhookDeliveryList'),
      order: 'desc',
    }),
    async (c) => {
      // A deleted subscription's history too (DELETE says it stays readable).
      const sub = await loadById('webhookSubscription', c.req.valid('param').id, 'webhook subscription', (id) => getSubscriptionEvenDeleted(deps.db, id));
      const query = c.req.valid('query');
      const read = (page: typeof query) => listDeliveries(deps.db, sub.id, { ...page, statuses: page.status, eventTypes: page.event_type });
      return c.json(await listPageWith(query, read, (ids) => attemptsOf(deps.db, ids), deliveryView), 200);
    },
  );

  app.openapi(
    retrieveRoute({
      path: '/webhook_deliveries/{id}',
      tags,
      summary: 'Retrieve a delivery',
      description: 'With every attempt and the payload exactly as sent.',
      params: DeliveryId,
      ok: json(DeliveryWithPayload, 'The delivery.'),
    }),
    async (c) => {
      const row = await loadDelivery(deps, c.req.valid('param').id);
      const [attempts, body] = await Promise.all([attemptsOf(deps.db, [row.id]), eventBody(deps.db, row.eventId)]);
      return c.json({ ...deliveryView(row, attempts.get(row.id)!), payload: body === null ? null : (JSON.parse(body) as Record<string, unknown>) }, 200);
    },
  );

  app.openapi(
    postRoute({
      path: '/webhook_deliveries/{id}/replay',
      tags,
      summary: 'Replay a delivery',
      description:
        "One more attempt now, on the same delivery record: the same event id and bytes, signed with the current secret(s). Works for a dead-lettered delivery, one still being retried, and one that succeeded; a delivery still waiting in its subscription's queue for its first attempt is refused with 409 (it goes out in its turn).",
      params: DeliveryId,
      responses: { 202: json(Delivery, 'The delivery, as it stands before the attempt.'), ...forbidden, ...conflict, ...unavailableResponse },
    }),
    async (c) => {
      const row = await loadDelivery(deps, c.req.valid('param').id);
      const sub = await getSubscription(deps.db, row.subscriptionId);
      if (!sub) throw new ApiError('conflict', `Webhook subscription ${row.subscriptionId} was deleted; its deliveries cannot be replayed.`);
      if (queuedForFirstAttempt(row)) {
        throw new ApiError('conflict', `Webhook delivery ${row.id} is waiting in its subscription's queue for its first attempt; it goes out in its turn.`);
      }
      await replayable(deps, sub);
      const [born] = (await withEventTimes(deps, [row])) as [Replayable];
      await viaTemporal(deps, 'replay the delivery', async (client) => {
        const control = await loadDeliveryControl();
        await control.replayDelivery(control.deliveryControlOf(client, deps.config), born);
      });
      const attempts = await attemptsOf(deps.db, [row.id]);
      return c.json(deliveryView(row, attempts.get(row.id)!), 202);
    },
  );

  app.openapi(
    postRoute({
      path: '/webhook_subscriptions/{id}/replay',
      tags,
      summary: 'Replay deliveries in bulk',
      description:
        '`{"status": "dead_lettered"}` replays every dead-lettered delivery of the subscription. `{"since", "until"}` re-sends every event of the integration recorded in that range (within the 30-day retention) that the subscription wants, including events it never got (made before it existed, or while it was disabled).',
      params: SubscriptionId,
      body: SubscriptionReplay,
      responses: { 202: json(ReplayResult, 'What was replayed.'), ...forbidden, ...conflict, ...unavailableResponse },
    }),
    async (c) => {
      const sub = await loadSubscription(deps, c.req.valid('param').id);
      await replayable(deps, sub);
      const input = c.req.valid('json');
      let work: Redelivery;
      if ('status' in input) {
        work = { deliveries: await deadLetteredOf(deps.db, sub.id) };
      } else {
        const since = new Date(input.since);
        const until = new Date(input.until);
        if (since > until) throw invalid('since', 'must not be after until.');
        const oldest = new Date(Date.now() - RETENTION_MS);
        const found = await eventsInRange(deps.db, sub, since < oldest ? oldest : since, until, MAX_RANGE_REPLAY + 1);
        if (found.length > MAX_RANGE_REPLAY) throw invalid('since', `The range holds more than ${MAX_RANGE_REPLAY} events; replay it in narrower ranges.`);
        work = { sends: found.map((event) => ({ sub, event })) };
      }
      const ids = await redeliver(deps, work);
      return c.json({ replayed: ids.length, delivery_ids: ids }, 202);
    },
  );
}
