/** Organizations, their API keys (the key shown once at creation; revoke) and their integrations. */
import type { z } from '@hono/zod-openapi';
import { MODES, PLANS } from '../../../domain/plans';
import type { ApiKey, ApiKeyCreated } from '../../admin/api-keys.schemas';
import type { Integration } from '../../admin/integrations.schemas';
import type { Organization } from '../../admin/organizations.schemas';
import type { Health } from '../../admin/health';
import type { AdminClient } from '../admin';
import { field, fields, loadList, type ConsoleApp } from '../context';
import { Badge, Facts, FactsCard, Form, Layout, ListSection, ListTable, Select, SecretOnce, Time, type Ui } from '../ui';

type Org = z.infer<typeof Organization>;
type Key = z.infer<typeof ApiKey>;
export type IntegrationView = z.infer<typeof Integration>;

/** A number field as a number; anything else is passed on as typed, for the admin API to refuse with its reason. */
export const num = (s: string): number | string | undefined => (s.trim() === '' ? undefined : Number.isFinite(Number(s)) ? Number(s) : s);

export const integrationLabel = (i: IntegrationView) => i.name ?? `${i.source.type} integration`;

/** Seconds as an operator reads an age: 42 s, 7 min, 3 h 5 min. */
export function age(s: number): string {
  if (s < 90) return `${Math.round(s)} s`;
  // Whole minutes first, so that 59.5 of them are an hour, never "60 min".
  const minutes = Math.round(s / 60);
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/**
 * The console's home: the deployment's health numbers (GET /admin/v1/health, the same facts the metrics report), each
 * marked when it wants attention (the alert rules' thresholds: relay lag over 3 min, an Operation over 30 min, a
 * subscription failing every attempt for an hour; any dead letter or quarantined record).
 */
const HealthNumbers = ({ health }: { health: z.infer<typeof Health> | null }) =>
  health === null ? (
    <p class="muted" data-health="unavailable">
      The health numbers cannot be read from the database right now.
    </p>
  ) : (
    <div class="card" data-health>
      <Facts
        rows={[
          ['Outbox relay lag', <span data-warn={health.outbox_lag_seconds > 180 ? 'true' : undefined}>{age(health.outbox_lag_seconds)}</span>],
          ['Dead letters open', <span data-warn={health.webhook_dead_letters_open > 0 ? 'true' : undefined}>{String(health.webhook_dead_letters_open)}</span>],
          [
            'Failing integrations',
            <span data-warn={health.integrations_failing + health.integrations_sync_overdue > 0 ? 'true' : undefined}>
              {`${health.integrations_failing} failing, ${health.integrations_sync_overdue} overdue, ${health.sync_runs_retrying} retrying`}
            </span>,
          ],
          [
            'Oldest queued Operation',
            <span data-warn={health.operation_oldest_queued_age_seconds > 1800 ? 'true' : undefined}>
              {health.operation_oldest_queued_age_seconds === 0 ? 'none' : age(health.operation_oldest_queued_age_seconds)}
            </span>,
          ],
          [
            'Deliveries',
            `${health.webhook_deliveries_pending} pending (${health.webhook_deliveries_in_flight} in flight), ${health.webhook_deliveries_retrying} retrying, ${health.webhook_circuits_open} circuits open`,
          ],
          [
            'Subscription failing',
            <span data-warn={health.webhook_subscription_failing_oldest_seconds > 3600 ? 'true' : undefined}>
              {health.webhook_subscription_failing_oldest_seconds === 0 ? 'none' : `for ${age(health.webhook_subscription_failing_oldest_seconds)}`}
            </span>,
          ],
          ['Records quarantined', <span data-warn={health.records_quarantined > 0 ? 'true' : undefined}>{String(health.records_quarantined)}</span>],
        ]}
      />
    </div>
  );

export function registerOrganizationPages(app: ConsoleApp, admin: AdminClient): void {
  app.get('/organizations', async (c) => {
    const ui = c.get('ui');
    const [orgs, health] = await Promise.all([
      loadList<Org>(c, admin, '/organizations', { order: 'asc' }),
      admin.get<z.infer<typeof Health>>(c, '/health').catch(() => null),
    ]);
    return c.html(
      <Layout ui={ui} title="Organizations">
        <h2>Health</h2>
        <HealthNumbers health={health} />
        <ListTable
          label="Organizations"
          list={orgs}
          sortBy="Created"
          columns={[
            { head: 'Name', cell: (o) => <a href={`/console/organizations/${o.id}`}>{o.name}</a> },
            { head: 'Id', cell: (o) => <code>{o.id}</code>, narrow: true },
            { head: 'Created', cell: (o) => <Time iso={o.created_at} /> },
          ]}
          empty="No organizations yet. Create the first one below; then give it an API key and an integration."
        />
        <h2>New organization</h2>
        <Form ui={ui} action="/console/organizations" class="row">
          <label>
            Name
            <input name="name" required maxlength={200} />
          </label>
          <button type="submit">Create organization</button>
        </Form>
      </Layout>,
    );
  });

  app.post('/organizations', async (c) => {
    const org = await admin.post<Org>(c, '/organizations', { name: await field(c, 'name') });
    return c.redirect(`/console/organizations/${org.id}`, 303);
  });

  app.get('/organizations/:id', async (c) => {
    const ui = c.get('ui');
    const id = c.req.param('id');
    const [org, keys, ints] = await Promise.all([
      admin.get<Org>(c, `/organizations/${encodeURIComponent(id)}`),
      loadList<Key>(c, admin, `/organizations/${encodeURIComponent(id)}/api_keys`, { order: 'asc', prefix: 'k_' }),
      loadList<IntegrationView>(c, admin, `/organizations/${encodeURIComponent(id)}/integrations`, { order: 'asc', prefix: 'i_' }),
    ]);
    return c.html(
      <Layout ui={ui} title={org.name} crumbs={[['Organizations', '/console/organizations'], [org.name]]}>
        <FactsCard
          rows={[
            ['Id', <code>{org.id}</code>],
            [
              'Rate limit',
              `${org.rate_limit_per_minute === null ? "the plan's per minute" : `${org.rate_limit_per_minute}/min`}, burst ${org.rate_limit_burst ?? 'default (10 %)'}`,
            ],
            ['Created', <Time iso={org.created_at} />],
          ]}
        />

        <ListSection
          title="Integrations"
          list={ints}
          sortBy="Created"
          columns={[
            { head: 'Name', cell: (i) => <a href={`/console/integrations/${i.id}`}>{integrationLabel(i)}</a> },
            { head: 'Mode', cell: (i) => <Badge status={i.mode} /> },
            { head: 'Plan', cell: (i) => i.plan },
            { head: 'Source', cell: (i) => i.source.type },
            { head: 'Cadence', cell: (i) => cadence(i.sync_interval_seconds) },
            { head: 'Created', cell: (i) => <Time iso={i.created_at} /> },
          ]}
          empty="No integrations yet. Connect a source below (a sandbox source generates a test company to sync from)."
        />
        <details>
          <summary>Connect an integration</summary>
          <NewIntegration ui={ui} orgId={org.id} />
        </details>

        <ListSection
          title="API keys"
          list={keys}
          sortBy="Created"
          columns={[
            { head: 'Prefix', cell: (k) => <code>{k.key_prefix}…</code> },
            { head: 'Mode', cell: (k) => <Badge status={k.mode} /> },
            { head: 'Scopes', cell: (k) => k.scopes.join(', ') },
            { head: 'Created', cell: (k) => <Time iso={k.created_at} /> },
            { head: 'Last used', cell: (k) => <Time iso={k.last_used_at} /> },
            { head: 'Revoked', cell: (k) => (k.revoked_at ? <Time iso={k.revoked_at} /> : <Badge status="active" />) },
            {
              head: '',
              cell: (k) =>
                !k.revoked_at && (
                  <Form ui={ui} action={`/console/api-keys/${k.id}/revoke`} confirm={`Revoke ${k.key_prefix}…? Requests with it fail at once.`}>
                    <button type="submit" class="danger">
                      Revoke
                    </button>
                  </Form>
                ),
            },
          ]}
          empty="No API keys yet. Create one below: it is shown once."
        />
        <h2>New API key</h2>
        <Form ui={ui} action={`/console/organizations/${org.id}/api-keys`} class="row">
          <Select name="mode" label="Mode" values={MODES} />
          <fieldset>
            <legend>Scopes</legend>
            <label class="check">
              <input type="checkbox" name="scopes" value="read" checked /> read
            </label>
            <label class="check">
              <input type="checkbox" name="scopes" value="write" checked /> write
            </label>
          </fieldset>
          <button type="submit">Create key</button>
        </Form>
      </Layout>,
    );
  });

  app.post('/organizations/:id/api-keys', async (c) => {
    const ui = c.get('ui');
    const id = c.req.param('id');
    const scopes = await fields(c, 'scopes');
    const created = await admin.post<z.infer<typeof ApiKeyCreated>>(c, `/organizations/${encodeURIComponent(id)}/api_keys`, {
      mode: await field(c, 'mode'),
      ...(scopes.length > 0 ? { scopes } : { scopes: [] }),
    });
    return c.html(
      <Layout
        ui={ui}
        title="API key created"
        crumbs={[['Organizations', '/console/organizations'], ['Organization', `/console/organizations/${created.organization_id}`], ['New key']]}
      >
        <SecretOnce
          label={`${created.mode} key ${created.key_prefix}… (${created.scopes.join(', ')})`}
          value={created.key}
          after={`/console/organizations/${created.organization_id}`}
        >
          <p>
            Send it as <code>Authorization: Bearer &lt;key&gt;</code> to the <a href="/docs">public API</a>.
          </p>
        </SecretOnce>
        <p>
          <a href={`/console/organizations/${created.organization_id}`}>Back to the organization</a>
        </p>
      </Layout>,
      201,
    );
  });

  app.post('/api-keys/:id/revoke', async (c) => {
    const key = await admin.post<Key>(c, `/api_keys/${encodeURIComponent(c.req.param('id'))}/revoke`);
    return c.redirect(`/console/organizations/${key.organization_id}`, 303);
  });

  app.post('/organizations/:id/integrations', async (c) => {
    const id = c.req.param('id');
    const type = await field(c, 'source_type');
    const source =
      type === 'entrata'
        ? { type, base_url: await field(c, 'base_url'), api_key: await field(c, 'api_key') }
        : type === 'buildium'
          ? { type, base_url: await field(c, 'base_url'), client_id: await field(c, 'client_id'), client_secret: await field(c, 'client_secret') }
          : { type, dialect: await field(c, 'dialect'), ...(num(await field(c, 'size')) !== undefined ? { size: num(await field(c, 'size')) } : {}) };
    const name = (await field(c, 'name')).trim();
    const interval = num(await field(c, 'sync_interval_seconds'));
    const fullInterval = num(await field(c, 'full_sync_interval_seconds'));
    const created = await admin.post<IntegrationView>(c, `/organizations/${encodeURIComponent(id)}/integrations`, {
      ...(name ? { name } : {}),
      mode: await field(c, 'mode'),
      plan: await field(c, 'plan'),
      source,
      ...(interval !== undefined ? { sync_interval_seconds: interval } : {}),
      ...(fullInterval !== undefined ? { full_sync_interval_seconds: fullInterval } : {}),
    });
    return c.redirect(`/console/integrations/${created.id}`, 303);
  });
}

export const cadence = (seconds: number) =>
  seconds % 86_400 === 0
    ? `every ${seconds / 86_400} d`
    : seconds % 3600 === 0
      ? `every ${seconds / 3600} h`
      : seconds % 60 === 0
        ? `every ${seconds / 60} min`
        : `every ${seconds} s`;

const NewIntegration = ({ ui, orgId }: { ui: Ui; orgId: string }) => (
  <Form ui={ui} action={`/console/organizations/${orgId}/integrations`} class="stack">
    <label>
      Name (optional)
      <input name="name" maxlength={200} />
    </label>
    <div class="row">
      <Select name="mode" label="Mode" values={MODES} />
      <Select name="plan" label="Plan" values={PLANS} />
      <label>
        Source
        <select name="source_type">
          <option value="sandbox">sandbox (test mode)</option>
          <option value="entrata">entrata</option>
          <option value="buildium">buildium</option>
        </select>
      </label>
    </div>
    <div class="row">
      <label>
        Sandbox dialect (sandbox only)
        <select name="dialect">
          <option value="entrata">entrata (JSON-RPC)</option>
          <option value="buildium">buildium (REST, delta reads)</option>
        </select>
      </label>
      <label>
        Sandbox size (leases; sandbox only)
        <input name="size" inputmode="numeric" placeholder="50" />
      </label>
    </div>
    <label>
      Base URL (entrata and buildium)
      <input name="base_url" type="url" placeholder="https://pms.example.com/api" />
    </label>
    <label>
      Entrata API key (entrata only; stored encrypted)
      <input name="api_key" type="password" autocomplete="off" />
    </label>
    <div class="row">
      <label>
        Buildium client id (buildium only)
        <input name="client_id" autocomplete="off" />
      </label>
      <label>
        Buildium client secret (buildium only; stored encrypted)
        <input name="client_secret" type="password" autocomplete="off" />
      </label>
    </div>
    <div class="row">
      <label>
        Sync every … seconds (optional; the plan's cadence otherwise)
        <input name="sync_interval_seconds" inputmode="numeric" />
      </label>
      <label>
        Full run every … seconds (optional; a day otherwise; only where the source lists its changes)
        <input name="full_sync_interval_seconds" inputmode="numeric" />
      </label>
    </div>
    <button type="submit">Connect</button>
  </Form>
);
