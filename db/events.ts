/**
 * The outbox as an operator reads it (admin API): an integration's events within the retention, one event with its
 * stored body, and how many deliveries each has per status. Older events are gone for readers even before the daily
 * clean-up removes them.
 */
import { and, count, eq, getTableColumns, gte, inArray, isNull } from 'drizzle-orm';
import { DELIVERY_STATUSES, RETENTION_MS, type DeliveryStatus } from '../domain/webhooks';
import type { Tx } from './client';
import { inOrder, type SortOrder } from './order';
import { events, integrations, webhookDeliveries } from './schema';
import type { EventRow } from './webhooks';

/** Every column but the payload (`data`) and its serialization (`body`): what a list shows. */
const { data: _data, body: _body, ...SUMMARY_COLUMNS } = getTableColumns(events);
export type EventSummary = Omit<EventRow, 'data' | 'body'>;

/** The oldest moment an event may have been recorded at and still be read. */
export const retainedSince = (now = new Date()): Date => new Date(now.getTime() - RETENTION_MS);

/** Events of an integration within the retention, by creation time (`order`, ties by id), optionally of some types. */
export async function eventsOf(
  tx: Tx,
  integrationId: string,
  page: { types?: string[]; order: SortOrder; limit: number; offset: number },
  now = new Date(),
): Promise<EventSummary[]> {
  return tx
    .select(SUMMARY_COLUMNS)
    .from(events)
    .where(
      and(
        eq(events.integrationId, integrationId),
        gte(events.createdAt, retainedSince(now)),
        page.types ? inArray(events.type, page.types) : undefined,
      ),
    )
    .orderBy(...inOrder(page.order, events.createdAt, events.id))
    .limit(page.limit)
    .offset(page.offset);
}

/** One event within the retention, with its stored body, if its integration still exists. */
export async function retainedEvent(tx: Tx, id: string, now = new Date()): Promise<EventRow | undefined> {
  const [row] = await tx
    .select({ event: events })
    .from(events)
    .innerJoin(integrations, eq(integrations.id, events.integrationId))
    .where(and(eq(events.id, id), gte(events.createdAt, retainedSince(now)), isNull(integrations.deletedAt)));
  return row?.event;
}

export type DeliveryCounts = Record<DeliveryStatus, number> & { total: number };

const noDeliveries = (): DeliveryCounts => ({ total: 0, ...(Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, 0])) as Record<DeliveryStatus, number>) });

/** Deliveries of each of these events, per status: one grouped query for a whole page. */
export async function deliveryCountsOf(tx: Tx, eventIds: string[]): Promise<Map<string, DeliveryCounts>> {
  const out = new Map(eventIds.map((id) => [id, noDeliveries()]));
  if (eventIds.length === 0) return out;
  const rows = await tx
    .select({ eventId: webhookDeliveries.eventId, status: webhookDeliveries.status, n: count() })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.eventId, eventIds))
    .groupBy(webhookDeliveries.eventId, webhookDeliveries.status);
  for (const r of rows) {
    const counts = out.get(r.eventId)!;
    counts[r.status] += r.n;
    counts.total += r.n;
  }
  return out;
}
