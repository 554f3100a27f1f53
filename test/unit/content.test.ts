import { describe, expect, it } from 'vitest';
import { requestHashOf } from '../../db/operations';
import { canonicalJson, hashRecord, inKeyOrder, nestsDeeperThan, recordOf } from '../../domain/content';
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

describe('canonicalJson, the one both record comparison and idempotency keys use', () => {
  it('sorts keys at every depth, arrays inside arrays included, and keeps array order', () => {
    expect(canonicalJson({ b: [[{ d: 1, c: 2 }, 'x'], { f: { h: 1, g: 2 }, e: [] }], a: {} })).toBe(
      '{"a":{},"b":[[{"c":2,"d":1},"x"],{"e":[],"f":{"g":2,"h":1}}]}',
    );
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
  });

  it('orders integer-like keys as text, not as every object lists them', () => {
    expect(canonicalJson({ 9: 'a', 10: 'b', x: 'c' })).toBe('{"10":"b","9":"a","x":"c"}');
  });

  it('leaves undefined properties out, writes an undefined element as null, and undefined itself as null', () => {
    expect(canonicalJson({ b: undefined, a: 1 })).toBe('{"a":1}');
    expect(canonicalJson({ a: [1, undefined, null] })).toBe('{"a":[1,null,null]}');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(undefined)).toBe(canonicalJson(null));
  });

  it('keeps a __proto__ key of a parsed body as a key', () => {
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":{"y":1,"x":2},"a":0}'))).toBe('{"__proto__":{"x":2,"y":1},"a":0,"b":1}');
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":2}'))).toBe('{"__proto__":2,"b":1}');
  });

  // The request hash is stored with its idempotency key for 24 hours: a different text for the same body would turn a
  // retry of an accepted write into a 409. These are the bytes and the hash the service has always produced.
  const body = JSON.parse(
    '{"unit_id":"uni_01","z":[3,{"b":[[2,1],{"y":null,"x":"é\\u2028\\""}],"a":true}],"10":1,"9":{"":0,"A":-0.5e-7},"custom_data":{"k":[]},"empty":{},"name":"Ünïcode 😀"}',
  );

  it('writes a request body exactly as idempotency keys were stored', () => {
    expect(canonicalJson(body)).toBe(
      '{"10":1,"9":{"":0,"A":-5e-8},"custom_data":{"k":[]},"empty":{},"name":"Ünïcode 😀","unit_id":"uni_01","z":[3,{"a":true,"b":[[2,1],{"x":"é\u2028\\"","y":null}]}]}',
    );
    expect(requestHashOf('post', '/v1/leases/lea_01/residents', body)).toBe('6ae15b8ab04a00f4642ad7d383043734392872325eef3d9165d3b6bcfb08400c');
  });

  it('binds the hash to the method, the path and the content, not to the key order', () => {
    const a = { status: 'active', residents: [{ role: 'primary', id: 'res_1' }], custom_data: { b: 1, a: { d: [1], c: null } } };
    const b = { custom_data: { a: { c: null, d: [1] }, b: 1 }, residents: [{ id: 'res_1', role: 'primary' }], status: 'active' };
    expect(requestHashOf('POST', '/v1/leases/lea_01/residents', a)).toBe(requestHashOf('post', '/v1/leases/lea_01/residents', b));
    expect(requestHashOf('PATCH', '/v1/leases/lea_01/residents', body)).not.toBe(requestHashOf('POST', '/v1/leases/lea_01/residents', body));
    expect(requestHashOf('POST', '/v1/leases/lea_02/residents', body)).not.toBe(requestHashOf('POST', '/v1/leases/lea_01/residents', body));
    expect(requestHashOf('POST', '/v1/leases/lea_01/residents', { ...body, name: 'other' })).not.toBe(
      requestHashOf('POST', '/v1/leases/lea_01/residents', body),
    );
  });
});

describe('nestsDeeperThan', () => {
  it('counts the value itself as the first level, and walks any depth without running out of stack', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 2)).toBe(true);
    expect(nestsDeeperThan({ a: 1, b: [1, 2, null], c: { d: 'x' } }, 2)).toBe(false);
    let deep: unknown = null;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(nestsDeeperThan(deep, 16)).toBe(true);
    expect(nestsDeeperThan(deep, 100_000)).toBe(false);
    expect(() => canonicalJson(deep)).toThrow(RangeError);
  });
});
