/** Automations (scheduled CSV exports) of an integration and their runs: run now, pause and resume. */
import type { z } from '@hono/zod-openapi';
import { automationRunWorkflowIdOf } from '../../../domain/contract';
import type { Automation, AutomationRun } from '../../admin/automations.schemas';
import type { AdminClient } from '../admin';
import { field, loadList, type ConsoleApp } from '../context';
import { Badge, FactsCard, Form, ListSection, Time, WorkflowLink } from '../ui';
import { LiveListTable } from '../live';
import { IntegrationFrame, loadIntegrationList, loadOfIntegration } from './integrations';
import { cadence } from './organizations';

type Auto = z.infer<typeof Automation>;
type Run = z.infer<typeof AutomationRun>;

const scheduleText = (a: Auto) => ('every' in a.schedule ? cadence(a.schedule.every) : `cron ${a.schedule.cron} (${a.schedule.timezone})`);
const destinationText = (a: Auto) =>
  a.destination.type === 'http'
    ? `${a.destination.method} ${a.destination.url}${a.destination.content_length ? ' (with Content-Length)' : ''}`
    : `directory ${a.destination.path}`;

export function registerAutomationPages(app: ConsoleApp, admin: AdminClient): void {
  app.get('/integrations/:id/automations', async (c) => {
    const ui = c.get('ui');
    const [automations, ctx] = await loadIntegrationList<Auto>(c, admin, '/automations', { order: 'asc' });
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="automations">
        <ListSection
          title="Automations"
          list={automations}
          sortBy="Created"
          columns={[
            { head: 'Name', cell: (a) => <a href={`/console/automations/${a.id}`}>{a.name}</a> },
            { head: 'Entity', cell: (a) => a.entity },
            { head: 'Schedule', cell: scheduleText },
            { head: 'Destination', cell: (a) => <code>{destinationText(a)}</code> },
            { head: 'Status', cell: (a) => <Badge status={a.status} /> },
            { head: 'Created', cell: (a) => <Time iso={a.created_at} /> },
          ]}
          empty="No automations yet. Create one with the admin API or the CLI (`npm run -s cli -- automation create`): a scheduled CSV export of one entity."
        />
      </IntegrationFrame>,
    );
  });

  app.get('/automations/:id', async (c) => {
    const ui = c.get('ui');
    const [a, ctx] = await loadOfIntegration<Auto>(c, admin, `/automations/${encodeURIComponent(c.req.param('id'))}`);
    const runs = await loadList<Run>(c, admin, `/automations/${a.id}/runs`, { order: 'desc' });
    const done = ui.url.searchParams.get('done');
    return c.html(
      <IntegrationFrame
        ui={ui}
        ctx={ctx}
        tab="automations"
        title={`Automation ${a.name}`}
        item={a.id}
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
        <FactsCard
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
        <LiveListTable
          id="runs"
          ui={ui}
          label="Runs"
          list={runs}
          sortBy="Created"
          columns={[
            {
              head: 'Run',
              cell: (r) => (
                <>
                  <code>{r.id}</code>
                  <div class="muted">{r.file_name}</div>
                </>
              ),
            },
            { head: 'Status', cell: (r) => <Badge status={r.status} /> },
            { head: 'Trigger', cell: (r) => r.trigger },
            { head: 'Created', cell: (r) => <Time iso={r.created_at} /> },
            { head: 'Finished', cell: (r) => <Time iso={r.finished_at} /> },
            { head: 'Records', cell: (r) => r.records_exported ?? '—', class: 'num' },
            { head: 'Attempts', cell: (r) => r.attempts, class: 'num' },
            { head: 'Next attempt', cell: (r) => <Time iso={r.next_attempt_at} /> },
            { head: 'Error', cell: (r) => r.error ?? <span class="muted">—</span> },
            { head: '', cell: (r) => <WorkflowLink ui={ui} id={automationRunWorkflowIdOf(r.id)} /> },
          ]}
          empty="No runs yet: the schedule starts the first, or press “Run now”."
        />
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
