/** Column shapes every area of the schema uses. */
import { bigint, timestamp } from 'drizzle-orm/pg-core';

/** A point in time, to the millisecond, with its time zone. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });
/** A money amount: a bigint column, read as a JS number. */
export const money = (name: string) => bigint(name, { mode: 'number' });
