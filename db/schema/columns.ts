/** Column shapes every area of the schema uses. */
import { bigint, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/** A point in time, to the millisecond, with its time zone. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });
/** A money amount: a bigint column, read as a JS number. */
export const money = (name: string) => bigint(name, { mode: 'number' });

/** A prefixed id (db/ids.ts) as the primary key. */
export const prefixedId = () => text('id').primaryKey();
/** The organization and the integration a row belongs to. */
export const ownedBy = () => ({
  organizationId: uuid('organization_id').notNull(),
  integrationId: uuid('integration_id').notNull(),
});
/** Which of its organization's two worlds a row belongs to, as the API keys that see it. */
export const testOrLive = () => text('mode', { enum: ['test', 'live'] }).notNull();
/** When a row was made and last changed: the database's time unless given. */
export const timestamps = () => ({
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
