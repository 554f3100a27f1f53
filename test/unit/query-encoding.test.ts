/**
 * The query-string check of api/middleware/query-encoding.ts: every name and value must decode as percent-encoded
 * UTF-8 (`+` a space), split as Hono's parser splits the query; the first that does not is named, and its answer is
 * the 400 of the other unparseable parameters.
 */
import { describe, expect, it } from 'vitest';
import { getQueryParams } from 'hono/utils/url';
import { malformedQueryError, malformedQueryParameter } from '../../api/middleware/query-encoding';

describe('malformedQueryParameter', () => {
  it.each([
    ['/v1/properties?name=%FF', { name: 'name', part: 'value' }],
    // A UTF-8 sequence cut short, a lone %, a % not followed by two hex digits.
    ['/v1/properties?name=%E2%82', { name: 'name', part: 'value' }],
    ['/v1/properties?name=%', { name: 'name', part: 'value' }],
    ['/v1/properties?name=100%_', { name: 'name', part: 'value' }],
    ['/v1/properties?name=%G1', { name: 'name', part: 'value' }],
    // An overlong encoding and a UTF-16 surrogate are not UTF-8 either.
    ['/v1/properties?name=%C0%AF', { name: 'name', part: 'value' }],
    ['/v1/properties?name=%ED%A0%80', { name: 'name', part: 'value' }],
    // The name itself, as sent; a value's name decoded.
    ['/v1/leases?limit=1&%FF=x', { name: '%FF', part: 'name' }],
    ['/v1/leases?%FF', { name: '%FF', part: 'name' }],
    ['/v1/leases?x%5Fid=%E2', { name: 'x_id', part: 'value' }],
    ['/v1/leases?x+id=%E2', { name: 'x id', part: 'value' }],
    // The first one, whatever follows; an absolute URL as the app sees it.
    ['http://127.0.0.1:3000/v1/units?status=vacant&note=%FF&name=%', { name: 'note', part: 'value' }],
    ['/v1/units?status=%ff,vacant', { name: 'status', part: 'value' }],
  ])('%s: %o', (url, found) => {
    expect(malformedQueryParameter(url)).toEqual(found);
  });

  it.each([
    '/v1/properties',
    '/v1/properties?',
    '/v1/properties?name=Sunset',
    '/v1/properties?name=100%25_Towers&limit=5',
    '/v1/properties?name=%E2%82%AC+%C3%A9',
    '/v1/properties?name=a+b%2Bc',
    '/v1/leases?x_id=L1&x_id=L2&status=',
    '/v1/leases?&&limit=1',
    // A parameter without a name is dropped by the parser: nothing reads it.
    '/v1/leases?=%FF&limit=1',
    // What follows a # is no part of the query.
    '/v1/leases?limit=1#%FF',
    // NUL decodes: it is refused later, by what reads the value.
    '/v1/leases?x_id=a%00b',
  ])('%s decodes', (url) => {
    expect(malformedQueryParameter(url)).toBeUndefined();
  });

  it("agrees with Hono's parser: what it leaves undecoded is what is refused", () => {
    for (const value of ['%FF', '%E2%82', '%', 'a%zz', '%C0%AF', 'caf%C3%A9', '%2B%20+', '100%25']) {
      const url = `http://h/v1/properties?name=${value}`;
      const decoded = (getQueryParams(url, 'name') as string[])[0];
      let strict: string | undefined;
      try {
        strict = decodeURIComponent(value.replace(/\+/g, ' '));
      } catch {
        strict = undefined;
      }
      expect(malformedQueryParameter(url) !== undefined, value).toBe(strict === undefined);
      if (strict !== undefined) expect(decoded, value).toBe(strict);
    }
  });
});

describe('malformedQueryError', () => {
  it('is the 400 bad_request of an unparseable query parameter, naming it', () => {
    const value = malformedQueryError({ name: 'name', part: 'value' });
    expect(value.slug).toBe('bad_request');
    expect(value.status).toBe(400);
    expect(value.detail).toMatch(/^Malformed request: query parameter `name` is not valid percent-encoded UTF-8 /);
    expect(value.opts.errors).toBeUndefined();
    expect(malformedQueryError({ name: '%FF', part: 'name' }).detail).toMatch(/^Malformed request: the name of query parameter `%FF` is not valid/);
  });
});
