/**
 * Webhooks: an integration's subscriptions (the signing secret shown once at creation and at each rotation; edit,
 * disable, rotate with a grace window), a subscription's deliveries filtered by status with replay of one, of every
 * dead-lettered one or of a time range (prefilled, after an enable, from when it was disabled), a delivery's attempts
 * and payload, and the integration's events of the last 30 days with resend.
 */
import type { z } from '@hono/zod-openapi';
import type { Child, FC } from 'hono/jsx';
import { ALL_EVENT_TYPES } from '../../../domain/events';
import { PLAN_RULES, PLANS } from '../../../domain/plans';
import { deliveryWorkflowIdOf } from '../../../domain/contract';
import { ALL_EVENTS, DEFAULT_ROTATION_GRACE_SECONDS, DELIVERY_STATUSES } from '../../../domain/webhooks';
import type { Event, EventResendResult, EventWithPayload } from '../../admin/events.schemas';
import type { Delivery, DeliveryWithPayload, ReplayResult, RotatedSecret, Subscription, SubscriptionCreated } from '../../admin/webhooks.schemas';
import type { AdminClient } from '../admin';
import { field, fields, loadList, type ConsoleApp } from '../context';
import {
  Badge,
  FactsCard,
  FilterForm,
  Form,
  IdLink,
  ListSection,
  ListTable,
  SecretOnce,
  SortHeader,
  Table,
  TemporalLink,
  Time,
  WorkflowLink,
  type Column,
  type Ui,
} from '../ui';
import { LiveListTable, LiveRegion } from '../live';
import { IntegrationFrame, loadIntegrationContext, loadIntegrationList, loadOfIntegration, tabCrumb } from './integrations';
import { num } from './organizations';

type Sub = z.infer<typeof Subscription>;
type Del = z.infer<typeof Delivery>;

/**
 * Whether a delivery has a workflow of its own: one whose first attempt failed (the dispatcher handed it to a
 * `deliverWebhook` workflow for the schedule) or that has more than one attempt (a retry or a replay). A delivery
 * taken at its first attempt, or still waiting for it, has none (docs/webhooks.md).
 */
const hasWorkflow = (d: Pick<Del, 'attempt_count' | 'attempts'>): boolean => d.attempt_count > 1 || (d.attempt_count === 1 && d.attempts[0]?.error != null);
type Evt = z.infer<typeof Event>;

/** What a redirect after a change says on the page it lands on (codes only: a link cannot make the console say anything else). */
function noticeOf(url: URL): string | undefined {
  const n = Number(url.searchParams.get('n') ?? '0');
  switch (url.searchParams.get('done')) {
    case 'saved':
      return 'Saved.';
    case 'replayed':
      return n === 0
        ? 'There was nothing dead-lettered to replay.'
        : n === 1
          ? 'Replay started: one more attempt is on its way.'
          : `Replay started for ${n} deliveries.`;
    case 'resent':
      return n === 0 ? 'No active subscription wants this event: nothing was sent.' : `Resent to ${n} subscription${n === 1 ? '' : 's'}.`;
    case 'disabled':
      return 'Disabled: it gets nothing from now on, and deliveries still being retried stop.';
    case 'replayed-range':
      return n === 0
        ? 'That range holds no event this subscription wants: nothing was sent.'
        : `Replay started for ${n} event${n === 1 ? '' : 's'} of that range.`;
    case 'enabled':
      return 'Enabled: events recorded from now on are delivered. What it missed while disabled is sent by replaying that time range (below).';
    case 'deleted':
      return 'Deleted.';
    default:
      return undefined;
  }
}

/** A delivery whose attempts are still due. */
const due = (status: string) => status === 'pending' || status === 'retrying';

/** Success rate of the last 24 hours, and how many attempts it counts. */
const HealthSummary: FC<{ health: Sub['health'] }> = ({ health }) =>
  health.success_rate === null ? (
    <span class="muted">no attempts in 24 h</span>
  ) : (
    <span>
      {(health.success_rate * 100).toFixed(1)}% of {health.attempts.toLocaleString('en-US')} attempts (24 h)
    </span>
  );

const EventTypePicker: FC<{ selected: string[] }> = ({ selected }) => (
  <fieldset>
    <legend>Event types</legend>
    <label class="check">
      <input type="checkbox" name="event_types" value={ALL_EVENTS} checked={selected.includes(ALL_EVENTS)} /> every event (*)
    </label>
    {ALL_EVENT_TYPES.map((t) => (
      <label class="check">
        <input type="checkbox" name="event_types" value={t} checked={selected.includes(t)} /> <code>{t}</code>
      </label>
    ))}
  </fieldset>
);

/** The plans with webhooks, for the note that stands in for the form on the others. */
const WEBHOOK_PLAN_NAMES = PLANS.filter((p) => PLAN_RULES[p].webhooks).join(' and ');

/** A subscription's deliveries, one row each. */
const deliveryColumns = (ui: Ui): Column<Del>[] => [
  { head: 'Delivery', cell: (d) => <IdLink href={`/console/webhook-deliveries/${d.id}`} id={d.id} /> },
  { head: 'Event', cell: (d) => <code>{d.event_type}</code>, narrow: true },
  { head: 'Status', cell: (d) => <Badge status={d.status} /> },
  { head: 'Attempts', cell: (d) => d.attempt_count, class: 'num' },
  {
    head: 'Last response',
    cell: (d) => {
      const last = d.attempts[d.attempts.length - 1];
      return last ? (last.response_status ?? last.error ?? '—') : '—';
    },
  },
  { head: 'Last attempt', cell: (d) => <Time iso={d.last_attempt_at} />, narrow: true },
  { head: 'Next attempt', cell: (d) => <Time iso={d.next_attempt_at} /> },
  { head: '', cell: (d) => (hasWorkflow(d) ? <WorkflowLink ui={ui} id={deliveryWorkflowIdOf(d.id)} /> : ''), narrow: true },
];

export function registerWebhookPages(app: ConsoleApp, admin: AdminClient): void {
  app.get('/integrations/:id/webhooks', async (c) => {
    const ui = c.get('ui');
    const [subs, ctx] = await loadIntegrationList<Sub>(c, admin, '/webhook_subscriptions', { order: 'asc' });
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="webhooks" notice={noticeOf(ui.url)}>
        <ListSection
          title="Webhook subscriptions"
          list={subs}
          sortBy="Created"
          columns={[
            {
              head: 'URL',
              cell: (s) => (
                <>
                  <IdLink href={`/console/webhook-subscriptions/${s.id}`} id={s.url} />
                  {s.description && <div class="muted">{s.description}</div>}
                </>
              ),
            },
            { head: 'Events', cell: (s) => s.event_types.join(', ') },
            {
              head: 'Status',
              cell: (s) => (
                <>
                  <Badge status={s.status} />
                  {s.disabled && s.disabled.by !== 'operator' && <div class="muted">by the service: {s.disabled.by === 'gone' ? '410 Gone' : 'failing'}</div>}
                </>
              ),
            },
            { head: 'Health', cell: (s) => <HealthSummary health={s.health} /> },
            { head: 'Created', cell: (s) => <Time iso={s.created_at} /> },
          ]}
          empty="No subscriptions yet. Add an endpoint below to be told about every change, signed."
        />
        <h2>New subscription</h2>
        {PLAN_RULES[ctx.integration.plan].webhooks ? (
          <Form ui={ui} action={`/console/integrations/${ctx.integration.id}/webhooks`} class="stack">
            <label>
              Endpoint URL
              <input name="url" type="url" required placeholder="https://example.com/hooks/propsync" />
            </label>
            <EventTypePicker selected={[ALL_EVENTS]} />
            <label>
              Description (optional)
              <input name="description" maxlength={500} />
            </label>
            <label class="check">
              <input type="checkbox" name="standard_webhooks" value="on" checked /> also sign with the Standard Webhooks headers (<code>webhook-id</code>,{' '}
              <code>webhook-timestamp</code>, <code>webhook-signature</code>)
            </label>
            <button type="submit">Create subscription</button>
          </Form>
        ) : (
          <p class="muted">
            Webhooks come with the {WEBHOOK_PLAN_NAMES} plans, and this integration is on <strong>{ctx.integration.plan}</strong>: change its plan to add a
            subscription.
          </p>
        )}
      </IntegrationFrame>,
    );
  });

  app.post('/integrations/:id/webhooks', async (c) => {
    const ui = c.get('ui');
    const id = c.req.param('id');
    const description = (await field(c, 'description')).trim();
    const created = await admin.post<z.infer<typeof SubscriptionCreated>>(c, `/integrations/${encodeURIComponent(id)}/webhook_subscriptions`, {
      url: await field(c, 'url'),
      event_types: await fields(c, 'event_types'),
      ...(description ? { description } : {}),
      // An unchecked box sends nothing: off.
      standard_webhooks: (await field(c, 'standard_webhooks')) === 'on',
    });
    const ctx = await loadIntegrationContext(c, admin, created.integration_id);
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="webhooks" title="Subscription created" crumbs={[tabCrumb(ctx, 'webhooks')]}>
        <SecretOnce label={`Signing secret of ${created.url}`} value={created.secret} after={`/console/webhook-subscriptions/${created.id}`}>
          <p>
            Verify each delivery's <code>X-Service-Signature</code> with it (HMAC-SHA256 of the raw body, keyed with the secret as shown)
            {created.standard_webhooks && (
              <>
                , or its <code>webhook-signature</code> with any Standard Webhooks library
              </>
            )}
            .
          </p>
        </SecretOnce>
        <p>
          <a href={`/console/webhook-subscriptions/${created.id}`}>Go to the subscription</a>
        </p>
      </IntegrationFrame>,
      201,
    );
  });

  app.get('/webhook-subscriptions/:id', async (c) => {
    const ui = c.get('ui');
    const [sub, ctx] = await loadOfIntegration<Sub>(c, admin, `/webhook_subscriptions/${encodeURIComponent(c.req.param('id'))}`);
    const deliveries = await loadList<Del>(c, admin, `/webhook_subscriptions/${sub.id}/deliveries`, { order: 'desc', filters: ['status', 'event_type'] });
    const base = `/console/webhook-subscriptions/${sub.id}`;
    // Just after a replay of its dead letters, they are followed too until their attempts are under way.
    const replayed = ui.url.searchParams.get('done') === 'replayed';
    const live = (status: string) => due(status) || (replayed && status === 'dead_lettered');
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="webhooks" title={`Subscription ${sub.url}`} item={sub.id} notice={noticeOf(ui.url)}>
        {/* Followed while deliveries are queued, being retried or just replayed, as the table below is: its counts and rows agree. */}
        <LiveRegion
          id="subscription"
          ui={ui}
          active={
            sub.health.pending + sub.health.retrying > 0 ||
            (replayed && sub.health.dead_lettered > 0) ||
            deliveries.page.results.some((row) => live(row.status))
          }
        >
          <FactsCard
            rows={[
              ['Id', <code>{sub.id}</code>],
              ['Status', <Badge status={sub.status} />],
              ['URL', <code>{sub.url}</code>],
              ['Event types', sub.event_types.join(', ')],
              ['Description', sub.description ?? <span class="muted">none</span>],
              ...(sub.disabled
                ? ([
                    [
                      'Disabled',
                      <span>
                        <Time iso={sub.disabled.at} /> by {sub.disabled.by === 'operator' ? 'an operator' : 'the service'}
                        {sub.disabled.reason && <>: {sub.disabled.reason}</>}
                      </span>,
                    ],
                  ] as [string, Child][])
                : []),
              ['Health', <HealthSummary health={sub.health} />],
              ['Last success', sub.health.last_success_at ? <Time iso={sub.health.last_success_at} /> : <span class="muted">none recorded</span>],
              ['Failing since', sub.health.failing_since ? <Time iso={sub.health.failing_since} /> : <span class="muted">not failing</span>],
              ['Waiting', `${sub.health.pending} queued, ${sub.health.retrying} retrying, ${sub.health.dead_lettered} dead-lettered`],
              ['Standard Webhooks headers', sub.standard_webhooks ? 'yes (webhook-id, webhook-timestamp, webhook-signature)' : <span class="muted">no</span>],
              ['In flight at once', sub.max_in_flight ?? <span class="muted">the deployment default</span>],
              [
                'Circuit',
                sub.circuit.state === 'open' ? (
                  <span>
                    <Badge status="open" /> since <Time iso={sub.circuit.opened_at!} />; its queue waits, next probe <Time iso={sub.circuit.next_probe_at!} />
                  </span>
                ) : (
                  <span class="muted">closed</span>
                ),
              ],
              [
                'Previous secret valid until',
                sub.previous_secret_expires_at ? <Time iso={sub.previous_secret_expires_at} /> : <span class="muted">no rotation window open</span>,
              ],
              ['Created', <Time iso={sub.created_at} />],
              ['Updated', <Time iso={sub.updated_at} />],
            ]}
          />
        </LiveRegion>
        <div class="row">
          <Form
            ui={ui}
            action={`${base}/status`}
            confirm={
              sub.status === 'active'
                ? 'Disable this subscription? It gets nothing from now on, its queue pauses, and deliveries being retried are cancelled (replayable).'
                : undefined
            }
          >
            <input type="hidden" name="status" value={sub.status === 'active' ? 'disabled' : 'active'} />
            <button type="submit" class={sub.status === 'active' ? 'danger' : ''}>
              {sub.status === 'active' ? 'Disable' : 'Enable'}
            </button>
          </Form>{' '}
          {sub.status === 'active' && (
            <Form ui={ui} action={`${base}/replay`} confirm="Replay every dead-lettered delivery of this subscription now?">
              <button type="submit" class="secondary">
                Replay all dead-lettered
              </button>
            </Form>
          )}
        </div>

        <h2>Replay a time range</h2>
        <p class="muted">
          Sends every event of the integration recorded in the range (within the last 30 days) that this subscription wants again, including events it never
          got: recorded before it existed, or while it was disabled. Times in ISO 8601 (<code>2026-11-01T00:00:00Z</code>).
        </p>
        {sub.status !== 'active' ? (
          <p class="muted">Replays need the subscription enabled: enable it above, then replay what it missed.</p>
        ) : (
          <Form ui={ui} action={`${base}/replay-range`} class="row" confirm="Send every event of this range to the subscription again?">
            <label>
              Since
              <input name="since" required value={ui.url.searchParams.get('since') ?? ''} placeholder="2026-11-01T00:00:00Z" />
            </label>
            <label>
              Until
              <input name="until" required value={new Date().toISOString()} />
            </label>
            <button type="submit" class="secondary">
              Replay range
            </button>
          </Form>
        )}

        <h2>Deliveries</h2>
        <FilterForm
          ui={ui}
          filters={[
            { name: 'status', label: 'Status', values: DELIVERY_STATUSES },
            { name: 'event_type', label: 'Event type', values: ALL_EVENT_TYPES },
          ]}
        />
        <LiveListTable
          id="deliveries"
          ui={ui}
          live={live}
          label="Deliveries"
          list={deliveries}
          columns={deliveryColumns(ui)}
          empty={
            deliveries.filtered
              ? 'No deliveries match this filter.'
              : 'No deliveries yet: events recorded from now on that this subscription wants are delivered here.'
          }
        />
        <p class="muted">
          Sorted by creation time,{' '}
          <SortHeader url={ui.url} paging={deliveries.paging} label={deliveries.paging.order === 'desc' ? 'newest first' : 'oldest first'} />.
        </p>

        <div class="grid2">
          <section>
            <h2>Edit</h2>
            <Form ui={ui} action={base} class="stack">
              <label>
                Endpoint URL
                <input name="url" type="url" required value={sub.url} />
              </label>
              <EventTypePicker selected={sub.event_types} />
              <label>
                Description
                <input name="description" maxlength={500} value={sub.description ?? ''} />
              </label>
              <button type="submit">Save</button>
            </Form>
          </section>
          <section>
            <h2>Rotate the signing secret</h2>
            <p class="muted">
              The new secret signs every delivery from now on; during the grace window deliveries also carry a signature made with the current one.
            </p>
            <Form ui={ui} action={`${base}/rotate`} class="row" confirm="Rotate the signing secret? The new one is shown once.">
              <label>
                Grace window (seconds)
                <input name="grace_period_seconds" inputmode="numeric" value={String(DEFAULT_ROTATION_GRACE_SECONDS)} />
              </label>
              <button type="submit">Rotate</button>
            </Form>
            <h2>Delete</h2>
            <Form ui={ui} action={`${base}/delete`} confirm="Delete this subscription? It gets nothing from now on.">
              <button type="submit" class="danger">
                Delete subscription
              </button>
            </Form>
          </section>
        </div>
      </IntegrationFrame>,
    );
  });

  app.post('/webhook-subscriptions/:id', async (c) => {
    const id = c.req.param('id');
    const description = (await field(c, 'description')).trim();
    const sub = await admin.patch<Sub>(c, `/webhook_subscriptions/${encodeURIComponent(id)}`, {
      url: await field(c, 'url'),
      event_types: await fields(c, 'event_types'),
      description: description || null,
    });
    return c.redirect(`/console/webhook-subscriptions/${sub.id}?done=saved`, 303);
  });

  app.post('/webhook-subscriptions/:id/status', async (c) => {
    const path = `/webhook_subscriptions/${encodeURIComponent(c.req.param('id'))}`;
    const status = await field(c, 'status');
    // When it was disabled: the start of what an enabled subscription missed, which the page offers to replay.
    const disabledAt = status === 'active' ? (await admin.get<Sub>(c, path)).disabled?.at : undefined;
    const sub = await admin.patch<Sub>(c, path, { status });
    const since = sub.status === 'active' && disabledAt ? `&since=${encodeURIComponent(disabledAt)}` : '';
    return c.redirect(`/console/webhook-subscriptions/${sub.id}?done=${sub.status === 'active' ? 'enabled' : 'disabled'}${since}`, 303);
  });

  app.post('/webhook-subscriptions/:id/replay-range', async (c) => {
    const id = c.req.param('id');
    const result = await admin.post<z.infer<typeof ReplayResult>>(c, `/webhook_subscriptions/${encodeURIComponent(id)}/replay`, {
      since: (await field(c, 'since')).trim(),
      until: (await field(c, 'until')).trim(),
    });
    return c.redirect(`/console/webhook-subscriptions/${encodeURIComponent(id)}?done=replayed-range&n=${result.replayed}`, 303);
  });

  app.post('/webhook-subscriptions/:id/delete', async (c) => {
    const sub = await admin.get<Sub>(c, `/webhook_subscriptions/${encodeURIComponent(c.req.param('id'))}`);
    await admin.delete(c, `/webhook_subscriptions/${sub.id}`);
    return c.redirect(`/console/integrations/${sub.integration_id}/webhooks?done=deleted`, 303);
  });

  app.post('/webhook-subscriptions/:id/rotate', async (c) => {
    const ui = c.get('ui');
    const id = c.req.param('id');
    const grace = num(await field(c, 'grace_period_seconds'));
    const rotated = await admin.post<z.infer<typeof RotatedSecret>>(
      c,
      `/webhook_subscriptions/${encodeURIComponent(id)}/rotate_secret`,
      grace === undefined ? {} : { grace_period_seconds: grace },
    );
    const [sub, ctx] = await loadOfIntegration<Sub>(c, admin, `/webhook_subscriptions/${encodeURIComponent(id)}`);
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="webhooks" title="Signing secret rotated" item={sub.id}>
        <SecretOnce label={`New signing secret of ${sub.url}`} value={rotated.secret} after={`/console/webhook-subscriptions/${sub.id}`}>
          <p>
            Until <Time iso={rotated.previous_secret_expires_at} /> deliveries also carry <code>X-Service-Signature-Previous</code>, made with the secret this
            replaced.
          </p>
        </SecretOnce>
        <p>
          <a href={`/console/webhook-subscriptions/${sub.id}`}>Back to the subscription</a>
        </p>
      </IntegrationFrame>,
    );
  });

  app.post('/webhook-subscriptions/:id/replay', async (c) => {
    const id = c.req.param('id');
    const result = await admin.post<z.infer<typeof ReplayResult>>(c, `/webhook_subscriptions/${encodeURIComponent(id)}/replay`, { status: 'dead_lettered' });
    return c.redirect(`/console/webhook-subscriptions/${encodeURIComponent(id)}?done=replayed&n=${result.replayed}`, 303);
  });

  app.get('/webhook-deliveries/:id', async (c) => {
    const ui = c.get('ui');
    const [d, ctx] = await loadOfIntegration<z.infer<typeof DeliveryWithPayload>>(c, admin, `/webhook_deliveries/${encodeURIComponent(c.req.param('id'))}`);
    // Followed live while attempts are due, and after a replay until its attempt is recorded (`after`: the count before).
    const after = Number(ui.url.searchParams.get('after') ?? 'NaN');
    const active = due(d.status) || d.attempt_count <= after;
    return c.html(
      <IntegrationFrame
        ui={ui}
        ctx={ctx}
        tab="webhooks"
        title={`Delivery ${d.id}`}
        crumbs={[['Subscription', `/console/webhook-subscriptions/${d.subscription_id}`]]}
        item={d.id}
        notice={noticeOf(ui.url)}
      >
        <LiveRegion id="delivery" ui={ui} active={active}>
          <FactsCard
            rows={[
              ['Status', <Badge status={d.status} />],
              ['Event', <a href={`/console/events/${d.event_id}`} class="mono">{`${d.event_type} ${d.event_id}`}</a>],
              ['Attempts', String(d.attempt_count)],
              ['Next attempt', <Time iso={d.next_attempt_at} />],
              ['Created', <Time iso={d.created_at} />],
              [
                'Workflow',
                hasWorkflow(d) ? (
                  <TemporalLink ui={ui} workflowId={deliveryWorkflowIdOf(d.id)} label={deliveryWorkflowIdOf(d.id)} />
                ) : (
                  <span class="muted">
                    {d.attempt_count === 0 ? 'none yet (its first attempt is queued with its subscription’s dispatcher)' : 'none (taken at its first attempt)'}
                  </span>
                ),
              ],
            ]}
          />
          <Form ui={ui} action={`/console/webhook-deliveries/${d.id}/replay`}>
            <button type="submit">Replay now</button>
          </Form>
          <h2>Attempts</h2>
          <Table
            label="Attempts"
            rows={d.attempts}
            columns={[
              { head: '#', cell: (a) => a.number, class: 'num' },
              { head: 'Started', cell: (a) => <Time iso={a.started_at} /> },
              { head: 'Duration', cell: (a) => `${a.duration_ms} ms`, class: 'num' },
              { head: 'Response', cell: (a) => a.response_status ?? <span class="muted">none</span> },
              { head: 'Error', cell: (a) => a.error ?? <span class="muted">—</span> },
              { head: 'Response body', cell: (a) => (a.response_body ? <code class="wrap">{a.response_body}</code> : <span class="muted">—</span>) },
            ]}
            empty="No attempt has finished yet."
          />
        </LiveRegion>
        <h2>Payload</h2>
        {d.payload ? <pre>{JSON.stringify(d.payload, null, 2)}</pre> : <p class="muted">Purged with the event (older than the 30-day retention).</p>}
      </IntegrationFrame>,
    );
  });

  app.post('/webhook-deliveries/:id/replay', async (c) => {
    const d = await admin.post<Del>(c, `/webhook_deliveries/${encodeURIComponent(c.req.param('id'))}/replay`);
    return c.redirect(`/console/webhook-deliveries/${d.id}?done=replayed&n=1&after=${d.attempt_count}`, 303);
  });

  app.get('/integrations/:id/events', async (c) => {
    const ui = c.get('ui');
    const [events, ctx] = await loadIntegrationList<Evt>(c, admin, '/events', { order: 'desc', filters: ['type'] });
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="events" notice={noticeOf(ui.url)}>
        <h2>Events of the last 30 days</h2>
        <FilterForm ui={ui} filters={[{ name: 'type', label: 'Type', values: ALL_EVENT_TYPES }]} />
        <ListTable
          label="Events"
          list={events}
          sortBy="Recorded"
          columns={[
            { head: 'Event', cell: (e) => <IdLink href={`/console/events/${e.id}`} id={e.id} /> },
            { head: 'Type', cell: (e) => <code>{e.type}</code> },
            { head: 'Recorded', cell: (e) => <Time iso={e.created_at} /> },
            { head: 'From', cell: (e) => <Origin e={e} /> },
            {
              head: 'Deliveries',
              cell: (e) => (
                <>
                  {e.deliveries.total === 0 ? <span class="muted">none</span> : `${e.deliveries.succeeded}/${e.deliveries.total} delivered`}
                  {e.deliveries.dead_lettered > 0 && (
                    <>
                      {' '}
                      <Badge status="dead_lettered" />
                    </>
                  )}
                </>
              ),
            },
            {
              head: '',
              cell: (e) => (
                <Form ui={ui} action={`/console/events/${e.id}/resend`}>
                  <input type="hidden" name="back" value={ctx.integration.id} />
                  <button type="submit" class="secondary">
                    Resend
                  </button>
                </Form>
              ),
            },
          ]}
          empty={
            events.filtered ? 'No events of this type in the last 30 days.' : 'No events in the last 30 days. Run a sync (Sync runs tab) to record changes.'
          }
        />
      </IntegrationFrame>,
    );
  });

  app.get('/events/:id', async (c) => {
    const ui = c.get('ui');
    const [e, ctx] = await loadOfIntegration<z.infer<typeof EventWithPayload>>(c, admin, `/events/${encodeURIComponent(c.req.param('id'))}`);
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="events" title={`${e.type} ${e.id}`} item={e.id} notice={noticeOf(ui.url)}>
        <FactsCard
          rows={[
            ['Type', <code>{e.type}</code>],
            ['Category', e.category],
            ['Recorded', <Time iso={e.created_at} />],
            ['From', <Origin e={e} />],
            ['Dispatched', <Time iso={e.dispatched_at} />],
            [
              'Deliveries',
              `${e.deliveries.total} in all: ${
                DELIVERY_STATUSES.filter((s) => e.deliveries[s] > 0)
                  .map((s) => `${e.deliveries[s]} ${s}`)
                  .join(', ') || 'none'
              }`,
            ],
          ]}
        />
        <Form ui={ui} action={`/console/events/${e.id}/resend`}>
          <button type="submit">Resend to its subscriptions</button>
        </Form>
        <h2>Payload</h2>
        {e.payload ? <pre>{JSON.stringify(e.payload, null, 2)}</pre> : <p class="muted">Not serialized yet: nothing was sent.</p>}
      </IntegrationFrame>,
    );
  });

  app.post('/events/:id/resend', async (c) => {
    const id = c.req.param('id');
    const result = await admin.post<z.infer<typeof EventResendResult>>(c, `/events/${encodeURIComponent(id)}/resend`);
    // From an integration's list of events, back to that list; from the event's page, back to it.
    const back = await field(c, 'back');
    if (back) return c.redirect(`/console/integrations/${encodeURIComponent(back)}/events?done=resent&n=${result.resent}`, 303);
    return c.redirect(`/console/events/${encodeURIComponent(id)}?done=resent&n=${result.resent}`, 303);
  });
}

/** Where an event came from: its sync run, write Operation or automation run. */
const Origin: FC<{ e: Evt }> = ({ e }) =>
  e.sync_job_id ? (
    <a href={`/console/sync-jobs/${e.sync_job_id}`}>sync run</a>
  ) : e.operation_id ? (
    <a href={`/console/operations/${e.operation_id}`}>Operation</a>
  ) : e.automation_run_id ? (
    <span>automation run</span>
  ) : (
    <span class="muted">—</span>
  );
