/**
 * patches/drizzle-orm+0.45.4.patch: drizzle's `is(value, Kind)` (asked several times per chunk of every query it
 * builds) walked the value's class chain on every check that `instanceof` answered false; patched, each class's
 * chain is walked once and remembered. The answers must stay what they were, for values of this copy of drizzle and
 * for entities of another copy (the reason `is` is not a plain `instanceof`), and a value without a prototype is no
 * entity rather than a TypeError.
 */
import { Column, entityKind, is, SQL, sql, Table } from 'drizzle-orm';
import { PgDialect, pgTable, text } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';

const things = pgTable('things', { id: text('id').primaryKey(), name: text('name') });

/** An SQL of another copy of drizzle: a class of its own that carries the same kind. */
class ForeignSql {
  static readonly [entityKind] = 'SQL';
}
class ForeignSubSql extends ForeignSql {}

describe('drizzle is()', () => {
  it('answers as instanceof would, for entities of this copy, whatever was asked before', () => {
    for (let round = 0; round < 3; round++) {
      expect(is(things.id, Column)).toBe(true);
      expect(is(things.id, SQL)).toBe(false);
      expect(is(things.id, Table)).toBe(false);
      expect(is(things, Table)).toBe(true);
      expect(is(things, Column)).toBe(false);
      expect(is(sql`select 1`, SQL)).toBe(true);
      expect(is(sql`select 1`, Column)).toBe(false);
    }
  });

  it('recognises an entity of another copy by its kind, also through a subclass', () => {
    expect(is(new ForeignSql(), SQL)).toBe(true);
    expect(is(new ForeignSubSql(), SQL)).toBe(true);
    expect(is(new ForeignSubSql(), Column)).toBe(false);
  });

  it('is false for what is no entity: plain values, objects, arrays, and an object without a prototype', () => {
    for (const value of [null, undefined, 0, 'SQL', {}, [], new Date(), Object.create(null) as object]) expect(is(value, SQL)).toBe(false);
  });

  it('still refuses a class that is no drizzle entity', () => {
    expect(() => is({}, Date as never)).toThrow(/doesn't look like a Drizzle entity/);
  });

  it('builds the same SQL as before', () => {
    const q = sql`select ${things.id}, ${things.name} from ${things} where ${things.id} = ${'a'} and ${sql`${things.name} in ${['x', 'y']}`}`;
    const built = new PgDialect().sqlToQuery(q);
    expect(built.sql).toBe('select "things"."id", "things"."name" from "things" where "things"."id" = $1 and "things"."name" in ($2, $3)');
    expect(built.params).toEqual(['a', 'x', 'y']);
  });
});
