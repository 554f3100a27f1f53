/**
 * The outbox as readers see it: an operator (admin API: an integration's events within the retention, one event with
 * its stored body, and how many deliveries each has per status), and an organization's own clients (the public feed,
 * GET /v1/events, in production order). Older events are gone for readers even before the daily clean-up removes
 * them.
 */
import { and, count, eq, getTableColumns, gte, inArray, isNull, ne, sql } from 'drizzle-orm';
import { DELIVERY_STATUSES, RETENTION_MS, type DeliveryStatus } from '../domain/webhooks';
import type { Tx } from './client';
import { inOrder, type SortOrder } from './order';
import { eventPositions, events, integrations, webhookDeliveries } from './schema';
import { eventBodies, eventBody, type EventRow } from './webhooks';

/** Every column but the payload (`data`) and its serialization (`body`): what a list shows. */
const { data: _data, body: _body, ...SUMMARY_COLUMNS } = getTableColumns(events);
export type EventSummary = Omit<EventRow, 'data' | 'body'>;

/** The oldest moment an event may have been recorded at and still be read. */
const retainedSince = (now = new Date()): Date => new Date(now.getTime() - RETENTION_MS);

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
    .where(and(eq(events.integrationId, integrationId), gte(events.createdAt, retainedSince(now)), page.types ? inArray(events.type, page.types) : undefined))
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

// ---------------------------------------------------------------------------------------------------------------
// Production order: the public feed
// ---------------------------------------------------------------------------------------------------------------

/**
 * Mark events dispatched and give them their places in production order, in the order given (the relay's, which is
 * the order their deliveries were queued in), storing with them the bodies given (`bodies[i]` for `eventIds[i]`; an
 * event with a body stored already keeps it): one tuple version per event for both, where storing the body later
 * made a second. The next block of positions comes from the one `event_positions` row,
 * whose lock this transaction then holds until it commits: a relay transaction that takes a later block waits for
 * this one to commit first, so a reader never sees a position while a lower one is still uncommitted, and a reader
 * that has seen position p will never see a new event below p. An event another relay numbered first keeps its
 * place (its block then has a hole, which is harmless).
 */
export async function markDispatched(tx: Tx, eventIds: readonly string[], bodies: readonly (string | null)[] = []): Promise<void> {
  if (eventIds.length === 0) return;
  // The bodies as one JSON array (ROWS FROM pads a shorter one with nulls): one parameter, whatever their number.
  await tx.execute(sql`
    with block as (
      insert into ${eventPositions} as p (name, last) values ('events', ${eventIds.length})
      on conflict (name) do update set last = p.last + excluded.last
      returning last
    )
    update ${events} e set dispatched_at = now(), position = (select last from block) - ${eventIds.length} + v.ord, body = coalesce(e.body, v.body)
    from rows from (unnest(${sql.param(eventIds)}::text[]), json_array_elements_text(${JSON.stringify(bodies)}::json)) with ordinality as v(id, body, ord)
    where e.id = v.id and e.position is null`);
}

/** Whose events a feed reader sees: an API key's organization and mode. */
export interface FeedReader {
  organizationId: string;
  mode: 'test' | 'live';
}

export interface FeedQuery {
  /** The event the page starts just after (any event of the reader within the retention, matching the filters or not). */
  after?: string;
  limit: number;
  types?: string[];
  integrationIds?: string[];
  createdAfter?: Date;
  createdBefore?: Date;
}

/** A page of the feed: each event's stored envelope (the bytes webhooks send), and whether more follow. */
export interface FeedPage {
  bodies: string[];
  hasMore: boolean;
}

/**
 * A page of the reader's events within the retention in production order (events.position), the ones the relay has
 * numbered only, docs/api.md's catalog only (operational notices go to the subscriptions that name them). Undefined when `after` names no event of the reader within the retention (unknown, another
 * organization's or mode's, or expired). Events of a removed integration are not shown.
 */
export async function feedPage(tx: Tx, reader: FeedReader, q: FeedQuery, now = new Date()): Promise<FeedPage | undefined> {
  const since = retainedSince(now);
  let after = 0;
  if (q.after !== undefined) {
    const [row] = await tx
      .select({ position: events.position })
      .from(events)
      .where(and(eq(events.id, q.after), eq(events.organizationId, reader.organizationId), eq(events.mode, reader.mode), gte(events.createdAt, since)));
    if (!row) return undefined;
    // Known but not yet numbered by the relay (a webhook of a range replay can carry such an event): nothing is listed
    // after it yet; the next page after it, once the relay has taken it, starts where it stands.
    if (row.position === null) return { bodies: [], hasMore: false };
    after = row.position;
  }
  const rows = await tx.execute<{ id: string; body: string | null }>(sql`
    select e.id, e.body from ${events} e
    where e.organization_id = ${reader.organizationId} and e.mode = ${reader.mode}
      and e.position is not null and e.position > ${after} and e.created_at >= ${since.toISOString()} and e.category <> 'operational'
      ${q.types && q.types.length > 0 ? sql`and e.type = any(${sql.param(q.types)}::text[])` : sql``}
      ${q.integrationIds && q.integrationIds.length > 0 ? sql`and e.integration_id = any(${sql.param(q.integrationIds)}::uuid[])` : sql``}
      ${q.createdAfter ? sql`and e.created_at >= ${q.createdAfter.toISOString()}` : sql``}
      ${q.createdBefore ? sql`and e.created_at <= ${q.createdBefore.toISOString()}` : sql``}
      and not exists (select 1 from ${integrations} i where i.id = e.integration_id and i.deleted_at is not null)
    order by e.position
    limit ${q.limit + 1}`);
  const page = rows.slice(0, q.limit);
  // Events no subscription has taken yet have no stored body: serialized and stored now, once, as a dispatcher would.
  const missing = page.filter((r) => r.body === null).map((r) => r.id);
  const made = missing.length > 0 ? await eventBodies(tx, missing) : new Map<string, string>();
  return { bodies: page.flatMap((r) => r.body ?? made.get(r.id) ?? []), hasMore: rows.length > q.limit };
}

/** One of the reader's events within the retention, as its stored envelope; undefined when it is not the reader's. */
export async function feedEvent(tx: Tx, reader: FeedReader, id: string, now = new Date()): Promise<string | undefined> {
  const [row] = await tx
    .select({ id: events.id, body: events.body })
    .from(events)
    .innerJoin(integrations, eq(integrations.id, events.integrationId))
    .where(
      and(
        eq(events.id, id),
        eq(events.organizationId, reader.organizationId),
        eq(events.mode, reader.mode),
        gte(events.createdAt, retainedSince(now)),
        ne(events.category, 'operational'),
        isNull(integrations.deletedAt),
      ),
    );
  if (!row) return undefined;
  return row.body ?? (await eventBody(tx, row.id)) ?? undefined;
}
