/** What checking a write against its source's write options needs from the cache. */
import { and, eq, isNull } from 'drizzle-orm';
import type { WritableEntity } from '../domain/operations';
import type { Db } from './client';
import { tableOf } from './records';
import { properties } from './schema';

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
