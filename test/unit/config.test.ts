import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../config';

describe('configuration', () => {
  it('has working defaults and derives the addresses that depend on others', () => {
    const c = parseConfig({});
    expect(c).toMatchObject({ PORT: 3000, TEMPORAL_PORT: 7233, TEMPORAL_UI_PORT: 8233, SANDBOX_PORT: 4010, SERVED_MODES: ['test', 'live'] });
    expect(c.TEMPORAL_ADDRESS).toBeUndefined();
    expect(c.SANDBOX_URL).toBe('http://127.0.0.1:4010');
    expect(c.DOCS_BASE_URL).toBe('http://127.0.0.1:3000/docs');
    expect(c.PROBLEM_BASE_URL).toBe('http://127.0.0.1:3000/problems');
  });

  it('takes every port and address from the environment; an empty value means unset', () => {
    const c = parseConfig({
      PORT: '8080',
      SANDBOX_PORT: '5000',
      PUBLIC_BASE_URL: 'https://api.example.com/',
      TEMPORAL_ADDRESS: 'temporal:7233',
      SERVED_MODES: 'live',
      DOCS_BASE_URL: '',
    });
    expect(c).toMatchObject({ PORT: 8080, SANDBOX_URL: 'http://127.0.0.1:5000', TEMPORAL_ADDRESS: 'temporal:7233', SERVED_MODES: ['live'] });
    expect(c.DOCS_BASE_URL).toBe('https://api.example.com/docs');
  });

  it('refuses bad values with a message that names each variable', () => {
    let err: unknown;
    try {
      parseConfig({ PORT: 'abc', SANDBOX_PORT: '99999', ADMIN_TOKEN: 'short', SERVED_MODES: 'prod' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    for (const name of ['PORT', 'SANDBOX_PORT', 'ADMIN_TOKEN', 'SERVED_MODES']) expect(message).toMatch(new RegExp(`^  ${name}: `, 'm'));
  });
});
