/**
 * Guessing the admin token, over real HTTP with two API processes (own pools) sharing one database: wrong admin API
 * bearers and wrong console sign-ins are counted together per client address and per token prefix, answered 429
 * rate_limit_exceeded with Retry-After past the allowance by either process, with delays that grow; the right token
 * still works from another address, and resets its address's count. And console sessions are stored as an HMAC.
 *
 * The servers trust X-Forwarded-For (TRUST_PROXY, as behind compose's caddy), so each test is a client of its own
 * address and blocks nothing another test file needs; the admin token is this file's own, so are its prefix counts.
 */
import { createHash, createHmac, hkdfSync, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { consoleSessions } from '../../db/schema';
import { expectProblem, startApi, type Reply, type TestServer } from '../support/api-server';
import { testConfig, testDb } from '../support/context';
import { until } from '../support/until';

let db: Db;
let db2: Db;
let config: Config;
let one: TestServer;
let two: TestServer;
/** A third process whose first delay is 1 s, to watch the delays grow without long waits. */
let quick: TestServer;

const PREFIX_LENGTH = 8;

beforeAll(async () => {
  db = testDb(3);
  db2 = testDb(3);
  const settings = {
    ADMIN_TOKEN: `throttle-${randomUUID()}`,
    TRUST_PROXY: 'true',
    ADMIN_AUTH_ADDRESS_FAILURES: '3',
    ADMIN_AUTH_PREFIX_FAILURES: '5',
    ADMIN_AUTH_PREFIX_LENGTH: String(PREFIX_LENGTH),
    ADMIN_AUTH_DELAY_MS: '3000',
  };
  config = testConfig(settings);
  [one, two, quick] = await Promise.all([startApi(db, config), startApi(db2, config), startApi(db2, testConfig({ ...settings, ADMIN_AUTH_DELAY_MS: '1000' }))]);
});
afterAll(async () => {
  await one?.close();
  await two?.close();
  await quick?.close();
  await closeDb(db);
  await closeDb(db2);
});

/** A client address no other test uses (a documentation range is not needed: nothing connects to it). */
const freshAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
/** A wrong token of a family (prefix) of its own. */
const wrongToken = () => `w${randomUUID()}`;

async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/** An admin API request from `address` (the proxy's X-Forwarded-For: the client first, then any proxies). */
async function bearer(api: TestServer, token: string, address: string): Promise<Reply> {
  return reply(
    await fetch(`${api.url}/admin/v1/organizations?limit=1`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': `${address}, 172.18.0.5` } }),
  );
}

/** The console's sign-in form posted from `address`, as the browser sends it. */
async function signIn(api: TestServer, token: string, address: string): Promise<Reply> {
  const res = await fetch(`${api.url}/console/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url, 'x-forwarded-for': address },
    body: new URLSearchParams({ token, next: '/console/organizations' }),
    redirect: 'manual',
  });
  return reply(res);
}

const expectUnauthorized = (r: Reply) => expectProblem(r, 401, 'unauthorized', config.DOCS_BASE_URL);
function expectThrottled(r: Reply, retryAfter?: string): void {
  expectProblem(r, 429, 'rate_limit_exceeded', config.DOCS_BASE_URL);
  expect(r.body.title).toBe('Too Many Requests');
  expect(r.body.detail).toMatch(/Too many wrong admin tokens/);
  if (retryAfter) expect(r.headers.get('retry-after')).toBe(retryAfter);
  else expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('wrong admin bearers', () => {
  it('are answered 401 up to the allowance, then 429 with Retry-After by either process; the right token works from elsewhere', async () => {
    const address = freshAddress();
    for (let i = 0; i < 3; i++) expectUnauthorized(await bearer(i % 2 ? two : one, wrongToken(), address));
    expectThrottled(await bearer(two, wrongToken(), address), '3');
    // While the address is blocked every token it sends is refused, on either process: the right one too.
    for (const api of [one, two]) expectThrottled(await bearer(api, config.ADMIN_TOKEN, address));
    // Other clients are not affected, whatever their token.
    expect((await bearer(one, config.ADMIN_TOKEN, freshAddress())).status).toBe(200);
    expectUnauthorized(await bearer(two, wrongToken(), freshAddress()));
  });

  it("the right token resets its address's count", async () => {
    const address = freshAddress();
    for (let i = 0; i < 2; i++) expectUnauthorized(await bearer(one, wrongToken(), address));
    expect((await bearer(two, config.ADMIN_TOKEN, address)).status).toBe(200);
    // Three more are allowed again: the two before the success no longer count.
    for (let i = 0; i < 3; i++) expectUnauthorized(await bearer(i % 2 ? one : two, wrongToken(), address));
    expectThrottled(await bearer(one, wrongToken(), address), '3');
  });

  it('block for a delay that doubles with each wrong token after one, and the right token works again once it has passed', async () => {
    const address = freshAddress();
    for (let i = 0; i < 3; i++) expectUnauthorized(await bearer(quick, wrongToken(), address));
    expectThrottled(await bearer(quick, wrongToken(), address), '1');
    // Guesses during the block are refused unchecked and uncounted; the first one after it blocks for twice as long.
    const after = await until(
      'a wrong token sent after the 1 s block to be refused with a new block',
      async () => {
        const r = await bearer(quick, wrongToken(), address);
        expectThrottled(r);
        return r;
      },
      (r) => r.headers.get('retry-after') !== '1',
    );
    expect(after.headers.get('retry-after')).toBe('2');
    // The right token is refused until the block ends, then works (and resets the count: three wrong ones are allowed).
    await until('the right token to work once the 2 s block has passed', async () => {
      const r = await bearer(quick, config.ADMIN_TOKEN, address);
      if (r.status !== 200) expectThrottled(r);
      return r.status === 200;
    });
    for (let i = 0; i < 3; i++) expectUnauthorized(await bearer(quick, wrongToken(), address));
    expectThrottled(await bearer(quick, wrongToken(), address), '1');
  });
});

describe('a token family guessed from many addresses', () => {
  it('is blocked once its prefix passes its allowance, from every address and process; other tokens are not', async () => {
    const family = `f${randomUUID().slice(0, PREFIX_LENGTH - 1)}`;
    for (let i = 0; i < 5; i++) expectUnauthorized(await bearer(i % 2 ? two : one, `${family}${randomUUID()}`, freshAddress()));
    expectThrottled(await bearer(two, `${family}${randomUUID()}`, freshAddress()), '3');
    expectThrottled(await bearer(one, `${family}-another-guess`, freshAddress()));
    expectUnauthorized(await bearer(one, wrongToken(), freshAddress()));
    expect((await bearer(two, config.ADMIN_TOKEN, freshAddress())).status).toBe(200);
  });

  it('does not count the guesses of an address that is blocked, so one address cannot block a family', async () => {
    const family = `g${randomUUID().slice(0, PREFIX_LENGTH - 1)}`;
    const address = freshAddress();
    for (let i = 0; i < 3; i++) expectUnauthorized(await bearer(one, `${family}${randomUUID()}`, address));
    expectThrottled(await bearer(two, `${family}${randomUUID()}`, address), '3');
    for (let i = 0; i < 10; i++) expectThrottled(await bearer(i % 2 ? one : two, `${family}${randomUUID()}`, address));
    // The family has 4 failures of its allowance of 5: another address gets one more plain 401, then the block.
    expectUnauthorized(await bearer(one, `${family}${randomUUID()}`, freshAddress()));
    expectThrottled(await bearer(two, `${family}${randomUUID()}`, freshAddress()), '3');
  });
});

describe('console sign-in', () => {
  it('counts wrong sign-ins with wrong bearers, then shows the sign-in page with 429 and Retry-After; another address signs in', async () => {
    const address = freshAddress();
    const wrong = await signIn(one, wrongToken(), address);
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('That is not the admin token of this deployment');
    expectUnauthorized(await bearer(two, wrongToken(), address));
    expect((await signIn(two, wrongToken(), address)).status).toBe(401);

    const throttled = await signIn(one, wrongToken(), address);
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('3');
    expect(throttled.headers.get('content-type')).toMatch(/^text\/html/);
    expect(throttled.headers.get('set-cookie')).toBeNull();
    // The problem as the console shows every problem (status, title, detail, type), above the form to try again with.
    expect(throttled.body).toMatch(/429 Too Many Requests/);
    expect(throttled.body).toContain('Too many wrong admin tokens');
    expect(throttled.body).toContain(`${config.DOCS_BASE_URL}/errors/rate_limit_exceeded`);
    expect(throttled.body).toContain('name="token"');

    // The admin API refuses the address too, and the right token opens no session from it.
    expectThrottled(await bearer(two, config.ADMIN_TOKEN, address));
    const refused = await signIn(two, config.ADMIN_TOKEN, address);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('set-cookie')).toBeNull();

    const elsewhere = await signIn(two, config.ADMIN_TOKEN, freshAddress());
    expect(elsewhere.status).toBe(303);
    expect(elsewhere.headers.get('location')).toBe('/console/organizations');
    const cookie = elsewhere.headers.get('set-cookie')!.split(';')[0]!;
    const page = await fetch(`${one.url}/console/organizations`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>Organizations</h1>');
  });
});

describe('console sessions', () => {
  const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

  it('are stored as the HMAC of their token under a key derived from ADMIN_TOKEN, not its SHA-256', async () => {
    const res = await signIn(one, config.ADMIN_TOKEN, freshAddress());
    expect(res.status).toBe(303);
    const token = /^propsync_console=([^;]+)/.exec(res.headers.get('set-cookie')!)![1]!;
    const key = Buffer.from(hkdfSync('sha256', config.ADMIN_TOKEN, 'propsync admin token', 'console session token', 32));
    const hmac = createHmac('sha256', key).update(token).digest('hex');
    expect(await db.select({ csrf: consoleSessions.csrfToken }).from(consoleSessions).where(eq(consoleSessions.tokenHash, hmac))).toHaveLength(1);
    expect(
      await db
        .select()
        .from(consoleSessions)
        .where(eq(consoleSessions.tokenHash, sha256(token))),
    ).toEqual([]);
    // The session is every process's.
    const page = await fetch(`${two.url}/console/organizations`, { headers: { cookie: `propsync_console=${token}` } });
    expect(page.status).toBe(200);
  });

  it('a row holding the bare SHA-256 of a token (as sessions were stored before) opens no session', async () => {
    const token = randomBytes(32).toString('base64url');
    const now = new Date();
    await db.insert(consoleSessions).values({
      tokenHash: sha256(token),
      csrfToken: randomBytes(32).toString('base64url'),
      adminTokenHash: sha256(config.ADMIN_TOKEN),
      createdAt: now,
      expiresAt: new Date(now.getTime() + 3_600_000),
    });
    const res = await fetch(`${one.url}/console/organizations`, { headers: { cookie: `propsync_console=${token}` }, redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/console\/sign-in/);
  });
});
