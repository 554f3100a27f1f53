import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { adminClientConfig, ConfigError, liveModeRefusal, parseConfig } from '../../config';
import { temporalConnectionOptions } from '../../config/temporal';

const key = () => randomBytes(32).toString('base64');

/** The ConfigError message of a configuration that must be refused. */
function refusal(env: Record<string, string>): string {
  let err: unknown;
  try {
    parseConfig(env);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  return (err as Error).message;
}

/** What a live deployment sets: tokens and a key of its own. */
const LIVE_READY = {
  SERVED_MODES: 'test,live',
  ADMIN_TOKEN: 'a-long-random-admin-token-of-ours',
  SANDBOX_CONTROL_TOKEN: 'a-long-random-control-token-of-ours',
  ENCRYPTION_KEYS: `k1:${key()}`,
};

describe('configuration', () => {
  it('runs every worker role by default, the ones WORKER_ROLES names otherwise, and refuses a role it does not know', () => {
    expect(parseConfig({}).WORKER_ROLES).toEqual(['sync', 'webhooks', 'writes', 'automations', 'relay']);
    expect(parseConfig({ WORKER_ROLES: ' webhooks , relay,webhooks' }).WORKER_ROLES).toEqual(['webhooks', 'relay']);
    expect(refusal({ WORKER_ROLES: 'webhooks,delivery' })).toMatch(/^ {2}WORKER_ROLES: .*sync.*webhooks.*writes.*automations.*relay/m);
    expect(refusal({ WORKER_ROLES: ',' })).toMatch(/^ {2}WORKER_ROLES: name at least one of sync, webhooks, writes, automations, relay$/m);
  });

  it('has working defaults and derives the addresses that depend on others', () => {
    const c = parseConfig({});
    expect(c).toMatchObject({ PORT: 3000, TEMPORAL_PORT: 7233, TEMPORAL_UI_PORT: 8233, SANDBOX_PORT: 4010, SERVED_MODES: ['test', 'live'] });
    expect(c.TEMPORAL_ADDRESS).toBeUndefined();
    // Unset DATABASE_URL: npm start runs an embedded Postgres; a process started on its own uses the local default.
    expect(c).toMatchObject({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/propsync',
      DATABASE_URL_SET: false,
      DATA_DIR: '.data',
      EMBEDDED_PG_PORT: 54329,
    });
    expect(parseConfig({ DATABASE_URL: 'postgres://u@db:5432/x' })).toMatchObject({ DATABASE_URL: 'postgres://u@db:5432/x', DATABASE_URL_SET: true });
    expect(c.SANDBOX_URL).toBe('http://127.0.0.1:4010');
    expect(c.DOCS_BASE_URL).toBe('http://127.0.0.1:3000/docs');
    expect(c.PROBLEM_BASE_URL).toBe('http://127.0.0.1:3000/problems');
    // Unset: the built-in development key, so that npm start and the tests need no setup.
    expect(c.ENCRYPTION_KEYS.map((k) => [k.kid, k.key.length])).toEqual([['dev', 32]]);
  });

  it('takes every port and address from the environment; an empty value means unset', () => {
    const c = parseConfig({
      ...LIVE_READY,
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
    const message = refusal({ PORT: 'abc', SANDBOX_PORT: '99999', ADMIN_TOKEN: 'short', SERVED_MODES: 'prod', ENCRYPTION_KEYS: 'nonsense' });
    for (const name of ['PORT', 'SANDBOX_PORT', 'ADMIN_TOKEN', 'SERVED_MODES', 'ENCRYPTION_KEYS']) expect(message).toMatch(new RegExp(`^  ${name}: `, 'm'));
  });

  it('takes delay lists of whole milliseconds, and refuses an empty item or any other number form instead of reading it as 0', () => {
    const c = parseConfig({ WEBHOOK_RETRY_SCHEDULE_MS: ' 0, 30000 ,60000', WEBHOOK_PROBE_SCHEDULE_MS: '30000' });
    expect(c.WEBHOOK_RETRY_SCHEDULE_MS).toEqual([0, 30_000, 60_000]);
    expect(c.WEBHOOK_PROBE_SCHEDULE_MS).toEqual([30_000]);
    for (const value of ['1,,2', '0,', ',5', '1e3', '0x10', '-1', ' , ']) {
      const message = refusal({
        WEBHOOK_RETRY_SCHEDULE_MS: value,
        WRITE_RETRY_SCHEDULE_MS: value,
        AUTOMATION_RETRY_SCHEDULE_MS: value,
        WEBHOOK_PROBE_SCHEDULE_MS: value,
      });
      for (const name of ['WEBHOOK_RETRY_SCHEDULE_MS', 'WRITE_RETRY_SCHEDULE_MS', 'AUTOMATION_RETRY_SCHEDULE_MS', 'WEBHOOK_PROBE_SCHEDULE_MS']) {
        expect(message, value).toMatch(new RegExp(`^  ${name}: `, 'm'));
      }
    }
  });

  it("takes OpenTelemetry's sampler names in any case, and refuses a misspelt or unimplemented one or a ratio outside 0 to 1", () => {
    expect(parseConfig({ OTEL_TRACES_SAMPLER: 'ParentBased_TraceIdRatio', OTEL_TRACES_SAMPLER_ARG: '0.1' }).OTEL_TRACES_SAMPLER).toBe(
      'parentbased_traceidratio',
    );
    // Named by the specification but not implemented by the SDK for Node, which would then keep every trace.
    for (const name of ['jaeger_remote', 'parentbased_jaeger_remote', 'xray'])
      expect(refusal({ OTEL_TRACES_SAMPLER: name })).toMatch(/^ {2}OTEL_TRACES_SAMPLER: must be one of /m);
    expect(refusal({ OTEL_TRACES_SAMPLER: 'traceidration' })).toMatch(/^ {2}OTEL_TRACES_SAMPLER: must be one of /m);
    for (const arg of ['half', '1.5', '-0.1', ' ']) {
      expect(refusal({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })).toMatch(/^ {2}OTEL_TRACES_SAMPLER_ARG: /m);
    }
  });
});

describe('PUBLIC_BASE_URL unset', () => {
  it('is http://HOST:PORT as a URL holds it: loopback for every interface, an IPv6 address in brackets', () => {
    expect(parseConfig({ HOST: '0.0.0.0', PORT: '4000' }).PUBLIC_BASE_URL).toBe('http://127.0.0.1:4000');
    expect(parseConfig({ HOST: '::', PORT: '4000' }).PUBLIC_BASE_URL).toBe('http://127.0.0.1:4000');
    expect(parseConfig({ HOST: '::1', PORT: '4000' }).PUBLIC_BASE_URL).toBe('http://[::1]:4000');
    expect(parseConfig({ HOST: 'fd00::5' }).PUBLIC_BASE_URL).toBe('http://[fd00::5]:3000');
    expect(parseConfig({ HOST: 'api.internal' }).PUBLIC_BASE_URL).toBe('http://api.internal:3000');
  });
});

describe("the admin API client's configuration (the CLI's)", () => {
  it('derives the address and token as parseConfig does, from those variables alone', () => {
    for (const env of [
      {},
      { HOST: '0.0.0.0', PORT: '4000' },
      { HOST: '::', PORT: '4000' },
      { HOST: '::1' },
      { HOST: 'api.internal', ADMIN_TOKEN: 'a-long-random-admin-token' },
      { PUBLIC_BASE_URL: 'https://x.example.com/' },
    ]) {
      const { PUBLIC_BASE_URL, ADMIN_TOKEN } = parseConfig(env);
      expect(adminClientConfig({ ...env, LOG_LEVEL: 'warning', DB_POOL_MAX: 'many' })).toEqual({ PUBLIC_BASE_URL, ADMIN_TOKEN });
    }
  });

  it('refuses a bad value in one line; reads neither HOST nor PORT beside PUBLIC_BASE_URL, nor what is given instead', () => {
    expect(() => adminClientConfig({ PORT: '0', ADMIN_TOKEN: 'short' })).toThrow(/^PORT: [^\n;]+; ADMIN_TOKEN: must be at least 16 characters$/);
    expect(adminClientConfig({ PUBLIC_BASE_URL: 'http://a.example.com', PORT: 'x' }).PUBLIC_BASE_URL).toBe('http://a.example.com');
    expect(adminClientConfig({ PUBLIC_BASE_URL: 'nope', ADMIN_TOKEN: 'short' }, { url: 'http://b', token: 't' })).toEqual({
      PUBLIC_BASE_URL: 'http://b',
      ADMIN_TOKEN: 't',
    });
  });
});

describe('ENCRYPTION_KEYS', () => {
  it('parses kid:base64 entries in order; the first is the active key', () => {
    const [a, b] = [randomBytes(32), randomBytes(32)];
    const c = parseConfig({ ENCRYPTION_KEYS: ` k2:${a.toString('base64')} , k1:${b.toString('base64')},` });
    expect(c.ENCRYPTION_KEYS.map((k) => k.kid)).toEqual(['k2', 'k1']);
    expect(c.ENCRYPTION_KEYS[0]!.key.equals(a)).toBe(true);
    expect(c.ENCRYPTION_KEYS[1]!.key.equals(b)).toBe(true);
  });

  it.each([
    ['a key of the wrong length', `k1:${randomBytes(16).toString('base64')}`, /entry 1 \(k1\): the key must be 32 random bytes in base64/],
    ['a key that is not base64', `k1:${'!'.repeat(44)}`, /entry 1 \(k1\): the key must be 32 random bytes/],
    ['an entry without a key id', key(), /entry 1: expected kid:base64/],
    ['a key id with a colon-unsafe character', `k 1:${key()}`, /entry 1: the key id must be/],
    ['a key id that appears twice', `k1:${key()},k2:${key()},k1:${key()}`, /entry 3 \(k1\): the key id k1 appears more than once/],
    ['no entry at all', ' , ', /no key/],
  ])('refuses %s, naming ENCRYPTION_KEYS and never the key', (_what, value, detail) => {
    const message = refusal({ ENCRYPTION_KEYS: value });
    expect(message).toMatch(/^ {2}ENCRYPTION_KEYS: /m);
    expect(message).toMatch(detail);
    for (const part of value.split(/[,:]/).filter((p) => p.trim().length >= 16)) expect(message).not.toContain(part.trim());
  });
});

describe('serving live mode', () => {
  /** What an API or worker process says when it refuses to start (loadConfigOrExit({serving: true})). */
  const liveRefusal = (env: Record<string, string>) => liveModeRefusal(parseConfig(env));

  it('is served by default (both modes), and a deployment with tokens and a key of its own may serve it', () => {
    expect(parseConfig({}).SERVED_MODES).toEqual(['test', 'live']);
    expect(liveRefusal(LIVE_READY)).toBeUndefined();
  });

  it.each([
    ['ADMIN_TOKEN', { ADMIN_TOKEN: '' }, /^ {2}ADMIN_TOKEN: is the development default/m],
    ['SANDBOX_CONTROL_TOKEN', { SANDBOX_CONTROL_TOKEN: '' }, /^ {2}SANDBOX_CONTROL_TOKEN: is the development default/m],
    ['ENCRYPTION_KEYS', { ENCRYPTION_KEYS: '' }, /^ {2}ENCRYPTION_KEYS: unset/m],
  ])('refuses the default %s, saying which', (name, unset, line) => {
    const message = liveRefusal({ ...LIVE_READY, ...unset })!;
    expect(message).toMatch(/^Refusing to serve live mode/);
    expect(message).toMatch(line);
    // One line per problem: only this one.
    expect(message.split('\n')).toHaveLength(2);
    expect(message).toContain(name);
  });

  it('names every problem at once, one line each: the defaults, and SERVED_MODES=live alone', () => {
    for (const env of [{}, { SERVED_MODES: 'live' }] as Record<string, string>[]) {
      const lines = liveRefusal(env)!.split('\n').slice(1);
      expect(lines.map((l) => /^ {2}([A-Z_]+): /.exec(l)?.[1])).toEqual(['ADMIN_TOKEN', 'SANDBOX_CONTROL_TOKEN', 'ENCRYPTION_KEYS']);
    }
  });

  it('refuses the public development key as the active key, but keeps it as an older one for re-encryption', () => {
    const dev = parseConfig({}).ENCRYPTION_KEYS[0]!.key.toString('base64');
    expect(liveRefusal({ ...LIVE_READY, ENCRYPTION_KEYS: `mine:${dev}` })).toMatch(
      /^ {2}ENCRYPTION_KEYS: unset, or its first \(active\) key is the public development key/m,
    );
    const env = { ...LIVE_READY, ENCRYPTION_KEYS: `k1:${key()},dev:${dev}` };
    expect(parseConfig(env).ENCRYPTION_KEYS.map((k) => k.kid)).toEqual(['k1', 'dev']);
    expect(liveRefusal(env)).toBeUndefined();
  });

  it('test mode alone serves with every development default', () => {
    expect(liveRefusal({ SERVED_MODES: 'test' })).toBeUndefined();
  });

  it('an API process that would serve live mode on the defaults exits at once, saying which', async () => {
    const { execFile } = await import('node:child_process');
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((done) => {
        const child = execFile(
          process.execPath,
          ['--import', 'tsx', 'api/main.ts'],
          { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 },
          (err, _out, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
        );
        child.stdin?.end();
      });
    const refused = await run({ SERVED_MODES: 'test,live' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Refusing to serve live mode/m);
    expect(refused.stderr).toMatch(/^ {2}ADMIN_TOKEN: /m);
  });
});

describe('the Temporal connection', () => {
  it('is plain on a local address by default', () => {
    expect(temporalConnectionOptions(parseConfig({}))).toEqual({ address: '127.0.0.1:7233' });
    expect(temporalConnectionOptions(parseConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }))).toEqual({ address: 'temporal:7233' });
  });

  it('uses TLS with an API key (Temporal Cloud), or when asked', () => {
    const cloud = parseConfig({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_NAMESPACE: 'ns.acct', TEMPORAL_API_KEY: 'tcld-key' });
    expect(temporalConnectionOptions(cloud)).toEqual({ address: 'ns.acct.tmprl.cloud:7233', tls: {}, apiKey: 'tcld-key' });
    expect(temporalConnectionOptions(parseConfig({ TEMPORAL_TLS: 'true' }))).toEqual({ address: '127.0.0.1:7233', tls: {} });
  });

  it('reads an mTLS client certificate, a CA and a server name from files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'propsync-tls-'));
    try {
      for (const [f, v] of [
        ['c.pem', 'CERT'],
        ['k.pem', 'KEY'],
        ['ca.pem', 'CA'],
      ])
        writeFileSync(join(dir, f!), v!);
      const c = parseConfig({
        TEMPORAL_ADDRESS: 'temporal.internal:7233',
        TEMPORAL_TLS_CERT_PATH: join(dir, 'c.pem'),
        TEMPORAL_TLS_KEY_PATH: join(dir, 'k.pem'),
        TEMPORAL_TLS_CA_PATH: join(dir, 'ca.pem'),
        TEMPORAL_TLS_SERVER_NAME: 'temporal',
      });
      const o = temporalConnectionOptions(c);
      expect(o.tls?.serverNameOverride).toBe('temporal');
      expect(o.tls?.serverRootCACertificate?.toString()).toBe('CA');
      expect(o.tls?.clientCertPair?.crt.toString()).toBe('CERT');
      expect(o.tls?.clientCertPair?.key.toString()).toBe('KEY');
      expect(o.apiKey).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a client certificate without its key', () => {
    expect(() => parseConfig({ TEMPORAL_TLS_CERT_PATH: '/x/c.pem' })).toThrow(/TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH/);
  });
});
