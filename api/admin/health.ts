/**
 * The deployment's health as database facts (db/health.ts): the numbers behind the metrics' gauges and the console's
 * home page, read through the same few-seconds cache, so all three agree.
 */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { ApiDeps } from '../deps';
import { ApiError } from '../problem';
import { errorResponses, json, unavailableResponse } from './schemas';

const seconds = (description: string) => z.number().openapi({ description });
const count = (description: string) => z.number().int().openapi({ description });

export const Health = z
  .object({
    outbox_lag_seconds: seconds('Age of the oldest event the relay has not yet turned into deliveries; 0 when none.'),
    webhook_deliveries_pending: count('Deliveries waiting for (or in) their first attempt.'),
    webhook_deliveries_in_flight: count('First attempts sent and not yet recorded.'),
    webhook_deliveries_retrying: count('Deliveries waiting for their next attempt.'),
    webhook_dead_letters_open: count("Dead letters not yet replayed or expired, of subscriptions not deleted (a deleted one's cannot be replayed)."),
    webhook_circuits_open: count('Subscriptions whose circuit is open.'),
    webhook_subscription_failing_oldest_seconds: seconds(
      'Seconds every attempt of the active subscription failing longest has failed (since its last success); 0 when none is failing.',
    ),
    integrations_failing: count('Live integrations whose newest finished sync run failed.'),
    integrations_sync_overdue: count('Live integrations without a successful sync within 3 times their cadence.'),
    sync_runs_retrying: count('Sync runs retrying a step (attempt 2 or later).'),
    operation_oldest_queued_age_seconds: seconds('Age of the oldest Operation still queued or running; 0 when none.'),
    records_quarantined: count('Records quarantined now: each one a sync run listed as unreadable within the retention, once, unless a later run stored it.'),
  })
  .openapi('Health');

export function registerHealthFacts(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/health',
      tags: ['Health'],
      summary: 'Health numbers of the deployment',
      description:
        'Backlogs, dead letters, failing integrations and the oldest unfinished Operation, read from the database (cached for 5 s). Counts stop at 100,000.',
      responses: { 200: json(Health, 'The numbers.'), ...errorResponses, ...unavailableResponse },
    }),
    async (c) => {
      const f = await deps.health?.read().catch(() => undefined);
      if (!f) throw new ApiError('service_unavailable', 'The health numbers cannot be read from the database right now.', { headers: { 'retry-after': '5' } });
      return c.json(
        {
          outbox_lag_seconds: f.outboxLagSeconds,
          webhook_deliveries_pending: f.deliveriesPending,
          webhook_deliveries_in_flight: f.deliveriesInFlight,
          webhook_deliveries_retrying: f.deliveriesRetrying,
          webhook_dead_letters_open: f.deadLettersOpen,
          webhook_circuits_open: f.circuitsOpen,
          webhook_subscription_failing_oldest_seconds: f.oldestFailingSubscriptionSeconds,
          integrations_failing: f.integrationsFailing,
          integrations_sync_overdue: f.integrationsOverdue,
          sync_runs_retrying: f.syncRunsRetrying,
          operation_oldest_queued_age_seconds: f.oldestOpenOperationSeconds,
          records_quarantined: f.recordsQuarantined,
        },
        200,
      );
    },
  );
}
