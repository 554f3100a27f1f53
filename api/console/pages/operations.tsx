/** Write Operations: an integration's list filtered by status, and one Operation's attempts, next attempt and last error. */
import type { z } from '@hono/zod-openapi';
import type { FC } from 'hono/jsx';
import { OPERATION_STATUSES } from '../../../domain/operations';
import type { AdminOperation } from '../../admin/operations.schemas';
import type { AdminClient } from '../admin';
import type { ConsoleApp } from '../context';
import { Badge, FactsCard, FilterForm, IdLink, TemporalLink, Time, WorkflowLink } from '../ui';
import { isLive, LiveListTable, LiveRegion } from '../live';
import { IntegrationFrame, loadIntegrationList, loadOfIntegration } from './integrations';

type Op = z.infer<typeof AdminOperation>;

const SourceState: FC<{ op: Op }> = ({ op }) => (op.source.state ? <Badge status={op.source.state} /> : <span class="muted">not yet</span>);

export function registerOperationPages(app: ConsoleApp, admin: AdminClient): void {
  app.get('/integrations/:id/operations', async (c) => {
    const ui = c.get('ui');
    const [ops, ctx] = await loadIntegrationList<Op>(c, admin, '/operations', { order: 'desc', filters: ['status'] });
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="operations">
        <h2>Write Operations</h2>
        <FilterForm ui={ui} filters={[{ name: 'status', label: 'Status', values: OPERATION_STATUSES }]} />
        <LiveListTable
          id="operations"
          ui={ui}
          label="Operations"
          list={ops}
          sortBy="Accepted"
          columns={[
            { head: 'Operation', cell: (op) => <IdLink href={`/console/operations/${op.id}`} id={op.id} /> },
            { head: 'Type', cell: (op) => <code>{op.type}</code> },
            { head: 'Status', cell: (op) => <Badge status={op.status} /> },
            { head: 'Source', cell: (op) => <SourceState op={op} /> },
            { head: 'Attempts', cell: (op) => op.reconcile.attempts, class: 'num' },
            { head: 'Next attempt', cell: (op) => <Time iso={op.reconcile.next_attempt_at} /> },
            { head: 'Last error', cell: (op) => op.reconcile.last_error ?? <span class="muted">—</span> },
            { head: 'Accepted', cell: (op) => <Time iso={op.created_at} /> },
            { head: '', cell: (op) => <WorkflowLink ui={ui} id={op.workflow_id} /> },
          ]}
          empty={ops.filtered ? 'No Operations in this status.' : 'No writes yet. Each POST or PATCH to /v1 becomes an Operation, listed here.'}
        />
      </IntegrationFrame>,
    );
  });

  app.get('/operations/:id', async (c) => {
    const ui = c.get('ui');
    const [op, ctx] = await loadOfIntegration<Op>(c, admin, `/operations/${encodeURIComponent(c.req.param('id'))}`);
    return c.html(
      <IntegrationFrame ui={ui} ctx={ctx} tab="operations" title={`Operation ${op.id}`} item={op.id}>
        <LiveRegion id="operation" ui={ui} active={isLive(op.status)}>
          <FactsCard
            rows={[
              ['Type', <code>{op.type}</code>],
              ['Status', <Badge status={op.status} />],
              [
                'Target',
                op.resource.id ? (
                  <code>{`${op.resource.type} ${op.resource.id}`}</code>
                ) : op.type.endsWith('.create') ? (
                  `a new ${op.resource.type}`
                ) : (
                  op.resource.type
                ),
              ],
              ['Source', <SourceState op={op} />],
              ['Applied at the source', <Time iso={op.source.applied_at} />],
              ['Cache', <Badge status={op.reconcile.state} />],
              ['Attempts', String(op.reconcile.attempts)],
              ['Next attempt', op.reconcile.next_attempt_at ? <Time iso={op.reconcile.next_attempt_at} /> : <span class="muted">none scheduled</span>],
              ['Last error', op.reconcile.last_error ?? <span class="muted">none</span>],
              ['Result', op.result ? <code>{op.result.id}</code> : <span class="muted">—</span>],
              ['Idempotency key', op.idempotency_key ? <code>{op.idempotency_key}</code> : <span class="muted">—</span>],
              ['Accepted', <Time iso={op.created_at} />],
              ['Updated', <Time iso={op.updated_at} />],
              ['Workflow', <TemporalLink ui={ui} workflowId={op.workflow_id} label={op.workflow_id} />],
            ]}
          />
          <p class="muted">Every attempt is a step of the workflow's history in the Temporal UI; the request body (personal data) is never shown.</p>
        </LiveRegion>
      </IntegrationFrame>,
    );
  });
}
