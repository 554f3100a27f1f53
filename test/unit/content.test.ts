import { describe, expect, it } from 'vitest';
import { canonicalJson, hashRecord, inKeyOrder, recordOf } from '../../domain/content';
import { mapUnit } from '../../source/entrata/mapping';

const record = (custom_data: Record<string, unknown>) => ({ x_id: 'L1', status: 'current', rent: { amount: 103500, currency: 'USD' }, custom_data });

describe('content identity of a mapped record', () => {
  it('hashes equal content equally whatever order its custom_data keys arrived in', () => {
    const a = hashRecord(record({ b: 1, a: { y: [1, { d: 2, c: 3 }], x: null } }));
    const b = hashRecord(record({ a: { x: null, y: [1, { c: 3, d: 2 }] }, b: 1 }));
    expect(a.hash).toBe(b.hash);
    expect(a.json).toBe(b.json);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('hashes different content differently', () => {
    expect(hashRecord(record({ a: 1 })).hash).not.toBe(hashRecord(record({ a: 2 })).hash);
    expect(hashRecord(record({ a: 1 })).hash).not.toBe(hashRecord({ ...record({ a: 1 }), status: 'past' }).hash);
  });

  it('gives the record back from its JSON, custom_data in key order', () => {
    const input = record({ z: '1', a: [true] });
    const hashed = hashRecord(input, false);
    expect(hashed.record).toBeUndefined();
    expect(recordOf(hashed)).toEqual(input);
    expect(Object.keys(recordOf(hashed).custom_data)).toEqual(['a', 'z']);
    expect(recordOf(hashRecord(input))).toBe(input);
  });

  it('copies only what is out of order', () => {
    const sorted = { a: 1, b: { c: 2, d: [3] } };
    expect(inKeyOrder(sorted)).toBe(sorted);
    const unsorted = { b: 1, a: 2 };
    expect(Object.keys(inKeyOrder(unsorted))).toEqual(['a', 'b']);
    expect(Object.keys(unsorted)).toEqual(['b', 'a']);
    expect(canonicalJson(unsorted)).toBe('{"a":2,"b":1}');
  });

  it('the mapping hands over custom_data with its keys sorted', () => {
    const u = mapUnit({ unitId: 7, propertyId: 1, zeta: 'z', unitStatusTypeId: 2, alpha: 'a', address: { county: 'X', streetLine1: '1 Main' } });
    expect(Object.keys(u.custom_data)).toEqual([...Object.keys(u.custom_data)].sort());
    expect(u.custom_data).toEqual({ alpha: 'a', 'address.county': 'X', unitStatusTypeId: 2, zeta: 'z' });
  });
});
