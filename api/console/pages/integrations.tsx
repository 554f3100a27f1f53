/**
 * An integration (plan, cadence, its sync runs with live progress, "sync now") and a sync run's detail (counts,
 * progress per entity, skipped records and why). While a run is queued or running, htmx re-reads the page every two
 * seconds and swaps in the part that changes; it stops once every run shown has ended.
 */
import type { z } from '@hono/zod-openapi';
import type { FC, PropsWithChildren } from 'hono/jsx';
import type { Context } from 'hono';
import { SYNC_ORDER } from '../../../domain/cdm';
import type { Organization } from '../../admin/organizations.schemas';
import type { SkippedRecord, SyncJob } from '../../admin/syncs.schemas';
import type { AdminClient, Page } from '../admin';
import { loadList, type ConsoleApp, type ConsoleEnv } from '../context';
import { isLive, LiveListTable, LiveRegion } from '../live';
import { Badge, FactsCard, Form, IdLink, Layout, ListTable, pagingOf, Table, Tabs, TemporalLink, Time, WorkflowLink, type List, type Ui } from '../ui';
import { cadence, integrationLabel, type IntegrationView } from './organizations';

type Job = z.infer<typeof SyncJob>;
type Skipped = z.infer<typeof SkippedRecord>;
type Org = z.infer<typeof Organization>;

export interface IntegrationContext {
  integration: IntegrationView;
  org: Org;
}

export async function loadIntegrationContext(c: Context, admin: AdminClient, id: string): Promise<IntegrationContext> {
  const integration = await admin.get<IntegrationView>(c, `/integrations/${encodeURIComponent(id)}`);
  const org = await admin.get<Org>(c, `/organizations/${integration.organization_id}`);
  return { integration, org };
}

/**
 * The integration of a page at /integrations/:id, and one page of its list at `path` under it (`/operations`), read
 * as loadList reads one.
 */
export async function loadIntegrationList<T>(
  c: Context<ConsoleEnv, `/integrations/:id${string}`>,
  admin: AdminClient,
  path: string,
  how: Parameters<typeof loadList>[3],
): Promise<[List<T>, IntegrationContext]> {
  const ctx = await loadIntegrationContext(c, admin, c.req.param('id'));
  return [await loadList<T>(c, admin, `/integrations/${ctx.integration.id}${path}`, how), ctx];
}

/** What a page shows (an Operation, a subscription, a run…) read at `path`, and the integration it belongs to. */
export async function loadOfIntegration<T extends { integration_id: string }>(c: Context, admin: AdminClient, path: string): Promise<[T, IntegrationContext]> {
  const item = await admin.get<T>(c, path);
  return [item, await loadIntegrationContext(c, admin, item.integration_id)];
}

/** The tabs between the pages of one integration: each one's label and path under the integration's. */
const TABS = {
  runs: ['Sync runs', ''],
  webhooks: ['Webhooks', '/webhooks'],
  events: ['Events', '/events'],
  operations: ['Operations', '/operations'],
  automations: ['Automations', '/automations'],
} as const;
type Tab = keyof typeof TABS;

/** The link to a tab of the integration, as a breadcrumb: its label and address. */
export const tabCrumb = (ctx: IntegrationContext, tab: Tab): [string, string] => [TABS[tab][0], `/console/integrations/${ctx.integration.id}${TABS[tab][1]}`];

/**
 * The frame of every page of one integration: breadcrumbs and the tabs between its pages, `tab` the current one. On
 * the page of one `item` of a tab, the breadcrumbs go through the tab's list (and `crumbs`) to the item's id.
 */
export const IntegrationFrame: FC<
  PropsWithChildren<{ ui: Ui; ctx: IntegrationContext; tab: Tab; title?: string; crumbs?: [string, string?][]; item?: string; notice?: string }>
> = ({ ui, ctx, tab, title, crumbs, item, notice, children }) => {
  const base = `/console/integrations/${ctx.integration.id}`;
  return (
    <Layout
      ui={ui}
      title={title ?? integrationLabel(ctx.integration)}
      notice={notice}
      crumbs={[
        ['Organizations', '/console/organizations'],
        [ctx.org.name, `/console/organizations/${ctx.org.id}`],
        [integrationLabel(ctx.integration), base],
        ...(item === undefined ? (crumbs ?? []) : [tabCrumb(ctx, tab), ...(crumbs ?? []), [item] as [string]]),
      ]}
    >
      <Tabs current={tabCrumb(ctx, tab)[1]} tabs={Object.values(TABS).map(([label, path]) => [label, `${base}${path}`])} />
      {children}
    </Layout>
  );
};

/** "2/4 entities · 7 pages": how far a run got, as the CLI says it (the run's page shows each entity). */
function progressText(job: Job): string {
  const done = SYNC_ORDER.filter((e) => job.progress[e]?.done).length;
  const pages = SYNC_ORDER.reduce((n, e) => n + (job.progress[e]?.pages ?? 0), 0);
  return `${done}/${SYNC_ORDER.length} entities · ${pages} page${pages === 1 ? '' : 's'}`;
}

export function registerIntegrationPages(app: ConsoleApp, admin: AdminClient): void {
  app.get('/integrations/:id', async (c) => {
    const ui = c.get('ui');
    const [runs, ctx] = await loadIntegrationList<Job>(c, admin, '/sync_jobs', { order: 'desc', prefix: 'r_' });
    const { integration } = ctx;
    // The newest run is the first row of the default view; another page or order asks for it on its own.
    const newestFirst = runs.paging.offset === 0 && runs.paging.order === 'desc';
    const last = newestFirst
      ? runs.page.results[0]
      : (await admin.get<Page<Job>>(c, `/integrations/${integration.id}/sync_jobs`, { limit: 1, order: 'desc' })).results[0];
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="runs">
        {/* Followed while the last run is under way, as the runs below are: its status and the table agree. */}
        <LiveRegion id="facts" ui={ui} active={last !== undefined && isLive(last.status)}>
          <FactsCard
            rows={[
              ['Id', <code>{integration.id}</code>],
              ['Mode', <Badge status={integration.mode} />],
              ['Plan', integration.plan],
              [
                'Source',
                integration.source.type === integration.source.dialect ? integration.source.type : `${integration.source.type} (${integration.source.dialect})`,
              ],
              ['Cadence', `${cadence(integration.sync_interval_seconds)} (${integration.sync_interval_seconds} s)`],
              ['Full runs', `${cadence(integration.full_sync_interval_seconds)} where the source lists its changes; every run otherwise`],
              [
                'Status',
                last ? (
                  <span>
                    last run <Badge status={last.status} /> <Time iso={last.finished_at ?? last.started_at} />
                  </span>
                ) : (
                  <span class="muted">never synced</span>
                ),
              ],
              ['Created', <Time iso={integration.created_at} />],
            ]}
          />
        </LiveRegion>
        <Form ui={ui} action={`/console/integrations/${integration.id}/syncs`}>
          <button type="submit">Sync now</button>
        </Form>
        <h2>Sync runs</h2>
        <LiveListTable
          id="runs"
          ui={ui}
          label="Sync runs"
          list={runs}
          sortBy="Started"
          columns={[
            { head: 'Run', cell: (r) => <IdLink href={`/console/sync-jobs/${r.id}`} id={r.id} /> },
            { head: 'Status', cell: (r) => <Badge status={r.status} /> },
            { head: 'Trigger · kind', cell: (r) => `${r.trigger}${r.kind ? ` · ${r.kind}` : ''}`, narrow: true },
            { head: 'Started', cell: (r) => <Time iso={r.started_at} /> },
            { head: 'Finished', cell: (r) => <Time iso={r.finished_at} />, narrow: true },
            { head: 'Seen', cell: (r) => r.records_seen, class: 'num' },
            { head: 'New', cell: (r) => r.records_new, class: 'num' },
            { head: 'Updated', cell: (r) => r.records_updated, class: 'num' },
            { head: 'Deleted', cell: (r) => r.records_soft_deleted, class: 'num' },
            { head: 'Skipped', cell: (r) => r.records_skipped, class: 'num' },
            { head: 'Progress', cell: progressText, class: 'muted', narrow: true },
            { head: '', cell: (r) => <WorkflowLink ui={ui} id={r.workflow_id} />, narrow: true },
          ]}
          empty="No sync runs yet. Press “Sync now”, or wait for the schedule."
        />
      </IntegrationFrame>,
    );
  });

  app.post('/integrations/:id/syncs', async (c) => {
    const job = await admin.post<Job>(c, `/integrations/${encodeURIComponent(c.req.param('id'))}/syncs`);
    return c.redirect(`/console/sync-jobs/${job.id}`, 303);
  });

  app.get('/sync-jobs/:id', async (c) => {
    const ui = c.get('ui');
    const [job, ctx] = await loadOfIntegration<Job>(c, admin, `/sync_jobs/${encodeURIComponent(c.req.param('id'))}`);
    const paging = pagingOf(ui.url, { order: 'asc', limit: 50 }, 's_');
    // In entity and source id order: there is no order to choose.
    const skipped: List<Skipped> = {
      url: ui.url,
      paging,
      page: await admin.get<Page<Skipped>>(c, `/sync_jobs/${job.id}/skipped_records`, { limit: paging.limit, offset: paging.offset }),
      filtered: false,
    };
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="runs" title={`Sync run ${job.id}`} crumbs={[['Sync run']]}>
        <LiveRegion id="job" ui={ui} active={isLive(job.status)}>
          <FactsCard
            rows={[
              ['Status', <Badge status={job.status} />],
              ['Trigger', job.trigger],
              ['Kind', job.kind ?? <span class="muted">decided when the run starts</span>],
              [
                'Window',
                job.window_to ? (
                  <span>
                    {job.window_from ? <Time iso={job.window_from} /> : 'everything'} → <Time iso={job.window_to} />
                  </span>
                ) : (
                  <span class="muted">none yet</span>
                ),
              ],
              ['Started', <Time iso={job.started_at} />],
              ['Finished', <Time iso={job.finished_at} />],
              ['Records seen', String(job.records_seen)],
              ['New / updated / soft-deleted', `${job.records_new} / ${job.records_updated} / ${job.records_soft_deleted}`],
              ['Skipped', String(job.records_skipped)],
              ['Error', job.error ? <span>{job.error}</span> : <span class="muted">none</span>],
              [
                'Attempt',
                job.attempt > 1 && job.last_error && isLive(job.status) ? (
                  <span data-retrying>
                    {job.attempt}, retrying
                    {job.next_attempt_at ? (
                      <>
                        {' '}
                        at <Time iso={job.next_attempt_at} />
                      </>
                    ) : (
                      ' now'
                    )}{' '}
                    after: {job.last_error}
                  </span>
                ) : (
                  String(job.attempt)
                ),
              ],
              ['Workflow', <TemporalLink ui={ui} workflowId={job.workflow_id} label={job.workflow_id} />],
            ]}
          />
          <h2>Progress</h2>
          <Table
            label="Progress"
            rows={SYNC_ORDER}
            columns={[
              { head: 'Entity', cell: (e) => e },
              { head: 'Pages committed', cell: (e) => job.progress[e]?.pages ?? 0, class: 'num' },
              { head: 'Complete', cell: (e) => (job.progress[e]?.done ? '✓' : isLive(job.status) ? '…' : '—') },
            ]}
            empty=""
          />
        </LiveRegion>
        <h2>Skipped records</h2>
        <p class="muted">
          Records the source served that could not be read: left as they were in the cache (never soft-deleted). Fix them at the source; the next run picks them
          up.
        </p>
        <ListTable
          label="Skipped records"
          list={skipped}
          columns={[
            { head: 'Entity', cell: (s) => s.entity },
            { head: 'Source id', cell: (s) => (s.x_id === null ? <span class="muted">unreadable</span> : <code>{s.x_id}</code>) },
            { head: 'Reason', cell: (s) => s.reason },
            { head: 'Seen', cell: (s) => <Time iso={s.seen_at} /> },
          ]}
          empty="No records were skipped in this run."
        />
      </IntegrationFrame>,
    );
  });
}
