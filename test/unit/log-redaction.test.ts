import { describe, expect, it } from 'vitest';
import { isSensitiveKey, REDACTED, redactLogObject, redactText } from '../../config/logger';

const API_KEY = 'sk_live_0123456789abcdefghijABCDEFGHIJ01';
const WHSEC = 'whsec_3kZr0c5VqM9yN2pW8xL4bT6uH1sJ7dF0';

describe('redactLogObject', () => {
  it('replaces the values of sensitive keys at any depth, in objects and arrays', () => {
    const out = redactLogObject({
      integration_id: 'i1',
      source: { base_url: 'https://pms.example.com', api_key: 'pms-key' },
      req: { headers: { authorization: 'Bearer x', 'x-api-key': 'k', cookie: 'c=1', accept: 'json' } },
      list: [{ deep: [{ deeper: { secret: 's', previous_secret: 'p', client_secret: 'c', sandboxControlToken: 't' } }] }],
      ENCRYPTION_KEYS: [{ kid: 'k1', key: 'material' }],
      password: 'pw',
    });
    expect(out).toEqual({
      integration_id: 'i1',
      source: { base_url: 'https://pms.example.com', api_key: REDACTED },
      req: { headers: { authorization: REDACTED, 'x-api-key': REDACTED, cookie: REDACTED, accept: 'json' } },
      list: [{ deep: [{ deeper: { secret: REDACTED, previous_secret: REDACTED, client_secret: REDACTED, sandboxControlToken: REDACTED } }] }],
      ENCRYPTION_KEYS: REDACTED,
      password: REDACTED,
    });
  });

  it('leaves absent values and ordinary keys alone, and does not touch the input', () => {
    const input = { secret: null, previous_secret_expires_at: '2025-01-01T00:00:00.000Z', token_count: 3, api_key: 'x' };
    expect(redactLogObject(input)).toEqual({ secret: null, previous_secret_expires_at: '2025-01-01T00:00:00.000Z', token_count: 3, api_key: REDACTED });
    expect(input.api_key).toBe('x');
  });

  it('turns errors into plain objects and redacts their own fields and causes', () => {
    const err = Object.assign(new Error('upstream said no', { cause: new Error('socket hang up') }), {
      code: 'E1',
      config: { headers: { Authorization: 'Bearer abc' } },
    });
    const out = redactLogObject({ err }) as { err: Record<string, any> };
    expect(out.err).toMatchObject({ type: 'Error', message: 'upstream said no: socket hang up', code: 'E1', config: { headers: { Authorization: REDACTED } } });
    expect(out.err.stack).toContain('upstream said no');
  });

  it('cuts cycles and depth instead of failing or writing unredacted values', () => {
    const cyclic: Record<string, unknown> = { name: 'a' };
    cyclic.self = cyclic;
    expect(redactLogObject({ cyclic })).toEqual({ cyclic: { name: 'a', self: '[circular]' } });
    let deep: Record<string, unknown> = { api_key: 'bottom' };
    for (let i = 0; i < 20; i++) deep = { next: deep };
    expect(JSON.stringify(redactLogObject(deep))).not.toContain('bottom');
    // A shared (not cyclic) object is written wherever it appears.
    const shared = { id: 1 };
    expect(redactLogObject({ a: shared, b: shared })).toEqual({ a: { id: 1 }, b: { id: 1 } });
  });

  it('recognises sensitive keys by name, whatever their case and separators', () => {
    for (const k of [
      'api_key',
      'apiKey',
      'API-KEY',
      'X-Api-Key',
      'secret',
      'webhook_secret',
      'signingSecret',
      'ADMIN_TOKEN',
      'access_token',
      'Authorization',
      'Set-Cookie',
      'encryption_keys',
    ]) {
      expect(isSensitiveKey(k), k).toBe(true);
    }
    for (const k of ['key_prefix', 'base_url', 'tokens_used', 'previous_secret_expires_at', 'integration_id']) expect(isSensitiveKey(k), k).toBe(false);
  });
});

describe('redactText', () => {
  it('masks API keys, signing secrets, sandbox keys, bearer tokens and URL passwords anywhere in a line', () => {
    const line = JSON.stringify({
      msg: `key ${API_KEY} failed`,
      err: { stack: `Error: signed with ${WHSEC}\n at x` },
      note: 'sandbox key sbx_abcdefghijklmnopqrstuvwxyz012345 refused; sent Bearer dev-admin-token-change-me',
      url: 'postgres://propsync:hunter2@db:5432/propsync',
    });
    const out = redactText(line);
    for (const leaked of [API_KEY, WHSEC, 'sbx_abcdefghijklmnopqrstuvwxyz012345', 'dev-admin-token-change-me', 'hunter2']) expect(out).not.toContain(leaked);
    expect(out).toContain('postgres://propsync:[redacted]@db:5432/propsync');
    // Still the same JSON, with the same fields.
    expect(Object.keys(JSON.parse(out) as object)).toEqual(['msg', 'err', 'note', 'url']);
  });

  it('masks a Standard Webhooks secret whole (base64, with + / and = padding)', () => {
    const secret = 'whsec_ab+cd/EF0123456789ghijklmnopqrstUVWXYZ+/01234=';
    const out = redactText(`rotated to ${secret} today`);
    expect(out).toBe(`rotated to ${REDACTED} today`);
  });

  it('leaves key prefixes, ids and encrypted values alone', () => {
    const line = '{"key_prefix":"sk_test_AbCd","id":"whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8","v":"enc:v1:k1:abc:def:ghi"}';
    expect(redactText(line)).toBe(line);
  });
});
