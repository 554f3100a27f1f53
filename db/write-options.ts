/** What a write needs from the cache: its target integration and record, and its property for the write options check. */
import { and, eq, isNull } from 'drizzle-orm';
import type { WritableEntity } from '../domain/operations';
import type { Mode } from '../domain/plans';
import type { Db } from './client';
import { TABLES, tableOf } from './records';
import { integrations, properties } from './schema';

/** The x_id of a record's property (the property whose write options apply to it), if the cache holds it. */
export async function propertyXIdOf(db: Db, entity: WritableEntity, id: string): Promise<string | null> {
  const t = tableOf(entity) as unknown as typeof import('./schema').units;
  const [row] = await db
    .select({ xId: properties.xId })
    .from(t)
    .innerJoin(properties, and(eq(properties.id, t.propertyId), isNull(properties.deletedAt)))
    .where(eq(t.id, id));
  return row?.xId ?? null;
}

/** The integrations of an organization and mode that are not deleted: those a key may write through. */
export async function liveIntegrationIdsOf(db: Db, organizationId: string, mode: Mode): Promise<string[]> {
  const rows = await db
    .select({ id: integrations.id })
    .from(integrations)
    .where(and(eq(integrations.organizationId, organizationId), eq(integrations.mode, mode), isNull(integrations.deletedAt)));
  return rows.map((r) => r.id);
}

/** The integrations whose cache holds a live property with this x_id, in an organization and mode. */
export async function integrationsHoldingProperty(db: Db, organizationId: string, mode: Mode, propertyXId: string): Promise<string[]> {
  const holders = await db
    .selectDistinct({ id: properties.integrationId })
    .from(properties)
    .where(and(eq(properties.organizationId, organizationId), eq(properties.mode, mode), eq(properties.xId, propertyXId), isNull(properties.deletedAt)));
  return holders.map((h) => h.id);
}

/** A live record of an organization and mode, of a live integration, by CDM id: what a write may target. */
export async function liveRecordOf(
  db: Db,
  entity: WritableEntity | 'property',
  organizationId: string,
  mode: Mode,
  id: string,
): Promise<{ id: string; xId: string; integrationId: string } | undefined> {
  const t = TABLES[entity] as unknown as (typeof TABLES)['property'];
  const [row] = await db
    .select({ id: t.id, xId: t.xId, integrationId: t.integrationId })
    .from(t)
    .innerJoin(integrations, and(eq(integrations.id, t.integrationId), isNull(integrations.deletedAt)))
    .where(and(eq(t.id, id), eq(t.organizationId, organizationId), eq(t.mode, mode), isNull(t.deletedAt)));
  return row;
}
