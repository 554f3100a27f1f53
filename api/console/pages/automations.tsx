/** Automations (scheduled CSV exports) of an integration and their runs: run now, pause and resume. */
import type { z } from '@hono/zod-openapi';
import { automationRunWorkflowIdOf } from '../../../domain/contract';
import type { Automation, AutomationRun } from '../../admin/automations.schemas';
import type { AdminClient, Page } from '../admin';
import { field, type ConsoleApp } from '../context';
import { Badge, Facts, Form, Pager, pagingOf, listQuery, SortHeader, Table, TemporalLink, Time } from '../ui';
import { IntegrationFrame, LiveRegion, loadIntegrationContext } from './integrations';
import { cadence } from './organizations';

type Auto = z.infer<typeof Automation>;
type Run = z.infer<typeof AutomationRun>;

const scheduleText = (a: Auto) => ('every' in a.schedule ? cadence(a.schedule.every) : `cron ${a.schedule.cron} (${a.schedule.timezone})`);
const destinationText = (a: Auto) => (a.destination.type === 'http' ? `${a.destination.method} ${a.destination.url}` : `directory ${a.destination.path}`);
const live = (r: Run) => r.status === 'queued' || r.status === 'running';

export function registerAutomationPages(app: ConsoleApp, admin: AdminClient): void {
  app.get('/integrations/:id/automations', async (c) => {
    const ui = c.get('ui');
    const ctx = await loadIntegrationContext(c, admin, c.req.param('id'));
    const paging = pagingOf(ui.url, { order: 'asc' });
    const page = await admin.get<Page<Auto>>(c, `/integrations/${ctx.integration.id}/automations`, listQuery(paging));
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab={`/console/integrations/${ctx.integration.id}/automations`}>
        <h2>Automations</h2>
        <Table
          label="Automations"
          rows={page.results.length}
          head={['Name', 'Entity', 'Schedule', 'Destination', 'Status', <SortHeader url={ui.url} paging={paging} label="Created" />]}
          empty="No automations yet. Create one with the admin API or the CLI (`propsync automation create`): a scheduled CSV export of one entity."
        >
          {page.results.map((a) => (
            <tr>
              <td>
                <a href={`/console/automations/${a.id}`}>{a.name}</a>
              </td>
              <td>{a.entity}</td>
              <td>{scheduleText(a)}</td>
              <td>
                <code>{destinationText(a)}</code>
              </td>
              <td>
                <Badge status={a.status} />
              </td>
              <td>
                <Time iso={a.created_at} />
              </td>
            </tr>
          ))}
        </Table>
        <Pager url={ui.url} paging={paging} page={page} />
      </IntegrationFrame>,
    );
  });

  app.get('/automations/:id', async (c) => {
    const ui = c.get('ui');
    const a = await admin.get<Auto>(c, `/automations/${encodeURIComponent(c.req.param('id'))}`);
    const ctx = await loadIntegrationContext(c, admin, a.integration_id);
    const paging = pagingOf(ui.url, { order: 'desc' });
    const runs = await admin.get<Page<Run>>(c, `/automations/${a.id}/runs`, listQuery(paging));
    const done = ui.url.searchParams.get('done');
    return c.html(
      <IntegrationFrame
        ui={ui}
        ctx={ctx}
        tab={`/console/integrations/${ctx.integration.id}/automations`}
        title={`Automation ${a.name}`}
        crumbs={[['Automations', `/console/integrations/${ctx.integration.id}/automations`], [a.id]]}
        notice={
          done === 'started'
            ? 'Run started.'
            : done === 'paused'
              ? 'Paused: scheduled runs stop (a manual run still starts).'
              : done === 'active'
                ? 'Resumed.'
                : undefined
        }
      >
        <div class="card">
          <Facts
            rows={[
              ['Id', <code>{a.id}</code>],
              ['Status', <Badge status={a.status} />],
              ['Entity', a.entity],
              [
                'Filters',
                Object.keys(a.filters).length === 0 ? <span class="muted">every record</span> : <code>{new URLSearchParams(a.filters).toString()}</code>,
              ],
              ['Columns', a.columns ? a.columns.join(', ') : <span class="muted">every field</span>],
              ['Schedule', scheduleText(a)],
              ['Destination', <code>{destinationText(a)}</code>],
              [
                'Temporal Schedule',
                <a
                  href={`${ui.temporalUi}/namespaces/${encodeURIComponent(ui.namespace)}/schedules/${encodeURIComponent(a.schedule_id)}`}
                  rel="noreferrer"
                  target="_blank"
                >
                  {a.schedule_id}
                </a>,
              ],
              ['Created', <Time iso={a.created_at} />],
            ]}
          />
        </div>
        <div class="row">
          <Form ui={ui} action={`/console/automations/${a.id}/runs`}>
            <button type="submit">Run now</button>
          </Form>{' '}
          <Form ui={ui} action={`/console/automations/${a.id}/status`}>
            <input type="hidden" name="status" value={a.status === 'active' ? 'paused' : 'active'} />
            <button type="submit" class="secondary">
              {a.status === 'active' ? 'Pause' : 'Resume'}
            </button>
          </Form>
        </div>
        <h2>Runs</h2>
        <LiveRegion id="runs" ui={ui} active={runs.results.some(live)}>
          <Table
            label="Runs"
            rows={runs.results.length}
            head={[
              'Run',
              'Status',
              'Trigger',
              <SortHeader url={ui.url} paging={paging} label="Created" />,
              'Finished',
              'Records',
              'Attempts',
              'Next attempt',
              'Error',
              '',
            ]}
            empty="No runs yet: the schedule starts the first, or press “Run now”."
          >
            {runs.results.map((r) => (
              <tr data-status={r.status}>
                <td>
                  <code>{r.id}</code>
                  <div class="muted">{r.file_name}</div>
                </td>
                <td>
                  <Badge status={r.status} />
                </td>
                <td>{r.trigger}</td>
                <td>
                  <Time iso={r.created_at} />
                </td>
                <td>
                  <Time iso={r.finished_at} />
                </td>
                <td class="num">{r.records_exported ?? '—'}</td>
                <td class="num">{r.attempts}</td>
                <td>
                  <Time iso={r.next_attempt_at} />
                </td>
                <td>{r.error ?? <span class="muted">—</span>}</td>
                <td>
                  <TemporalLink ui={ui} workflowId={automationRunWorkflowIdOf(r.id)} label="Workflow ↗" />
                </td>
              </tr>
            ))}
          </Table>
          <Pager url={ui.url} paging={paging} page={runs} />
        </LiveRegion>
      </IntegrationFrame>,
    );
  });

  app.post('/automations/:id/runs', async (c) => {
    const run = await admin.post<Run>(c, `/automations/${encodeURIComponent(c.req.param('id'))}/runs`);
    return c.redirect(`/console/automations/${run.automation_id}?done=started`, 303);
  });

  app.post('/automations/:id/status', async (c) => {
    const a = await admin.patch<Auto>(c, `/automations/${encodeURIComponent(c.req.param('id'))}`, { status: await field(c, 'status') });
    return c.redirect(`/console/automations/${a.id}?done=${a.status}`, 303);
  });
}
