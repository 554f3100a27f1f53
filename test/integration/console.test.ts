/**
 * The operator console in a real browser (Playwright driving Debian's Chromium) against the real stack: the app
 * served over HTTP, Postgres, the Temporal dev server, the sync, write and delivery workers of this file's task
 * queue, the outbox relay, the sandbox PMS, and a local webhook receiver. Every step is what an operator does and
 * sees; screenshots of the main pages go to test/artifacts/console/.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq, sql } from 'drizzle-orm';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { consoleSessions, integrations, organizations } from '../../db/schema';
import { adminCaller, startApi, type Reply, type TestServer } from '../support/api-server';
import { launchBrowser, newContext, screenshot } from '../support/browser';
import { testConfig } from '../support/context';
import { onServices } from '../support/services';
import { recordEvents, residentUpdates, type Receiver, type WebhookStack } from '../support/webhooks';
import { write } from '../support/writes';

let db: Db;
let config: Config;
let api: TestServer;
let webhooks: WebhookStack;
let receiver: Receiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;

/** Three quick delivery attempts, then the dead letter. */
const DELIVERY_SCHEDULE = '0,300,300';

onServices(
  {
    pool: 6,
    sandbox: true,
    settings: { WEBHOOK_RETRY_SCHEDULE_MS: DELIVERY_SCHEDULE, TEMPORAL_UI_URL: 'http://temporal-ui.example:8233' },
    api: true,
    worker: true,
    webhooks: true,
    writes: true,
    receiver: true,
  },
  (s) => ({ db, config, api, webhooks, receiver } = s),
);
beforeAll(async () => {
  browser = await launchBrowser();
  context = await newContext(browser);
  // Whatever a page logs as an error (a resource it asked for and did not get, a script that threw, a blocked load)
  // fails the test that opened it: an operator would see it in the browser's console. Chrome also logs each answer
  // of 400 or more to a page or a form the test sent on purpose (a 404 page, a refused form): those the tests check
  // on the page, so a failed load counts unless it was such a page or form.
  context.on('response', (r) => {
    if (r.status() >= 400 && ['document', 'xhr', 'fetch'].includes(r.request().resourceType())) answeredPages.add(r.url());
  });
  context.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (/^Failed to load resource: the server responded with a status of \d+/.test(m.text()) && answeredPages.has(m.location().url)) return;
    consoleErrors.push(`${m.location().url}: ${m.text()}`);
  });
  context.on('weberror', (e) => consoleErrors.push(`uncaught: ${e.error().message}`));
  page = await context.newPage();
});

const consoleErrors: string[] = [];
const answeredPages = new Set<string>();
afterEach(() => {
  expect(consoleErrors.splice(0), 'errors in the browser console').toEqual([]);
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
});

const at = (path: string) => `${api.url}${path}`;

const admin = (method: string, path: string, body?: unknown): Promise<Reply> => adminCaller(api, config.ADMIN_TOKEN)(method, path, body);

/** The text of the first element the locator finds, once it is there. */
async function textOf(locator: ReturnType<Page['locator']>, timeout = 15_000): Promise<string> {
  await locator.first().waitFor({ timeout });
  return (await locator.first().textContent()) ?? '';
}

async function signIn(p: Page): Promise<void> {
  await p.goto(at('/console/sign-in'));
  if (/\/console\/organizations/.test(p.url())) return; // already signed in
  await p.getByLabel('Admin token').fill(config.ADMIN_TOKEN);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.waitForURL(/\/console\/organizations/);
}

describe('sign-in', () => {
  it('asks for the admin token, refuses a wrong one, and opens an HttpOnly SameSite=Strict session with an expiry', async () => {
    const res = await page.goto(at('/console/organizations'));
    expect(page.url()).toMatch(/\/console\/sign-in\?next=%2Fconsole%2Forganizations$/);
    expect(res!.headers()['cache-control']).toBe('no-store');

    await page.getByLabel('Admin token').fill('not-the-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await textOf(page.getByRole('alert'))).toContain('not the admin token');
    expect(await context.cookies()).toEqual([]);
    await screenshot(page, '01-sign-in');

    await page.getByLabel('Admin token').fill(config.ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/organizations$/);
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();

    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'propsync_console', path: '/console', httpOnly: true, sameSite: 'Strict', secure: false });
    const hours = (cookie!.expires * 1000 - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(11.9);
    expect(hours).toBeLessThanOrEqual(12);
    // Only the token's digest is stored, and which admin token opened it as a slow stamp (scrypt), so that a copy of
    // the table makes each offline guess of the admin token costly, not a digest or another fast function of it.
    const rows = await db.select().from(consoleSessions);
    expect(rows.some((r) => r.tokenHash === cookie!.value)).toBe(false);
    const { adminTokenStamp } = await import('../../api/console/session');
    const { keyFromAdminToken } = await import('../../api/admin/auth');
    // This browser's session (other files' services may share the table, under admin tokens of their own).
    const mine = createHmac('sha256', keyFromAdminToken(config.ADMIN_TOKEN, 'console session token')).update(cookie!.value).digest('hex');
    expect(rows.find((r) => r.tokenHash === mine)?.adminTokenHash).toBe(adminTokenStamp(config.ADMIN_TOKEN));
    const fast = [
      createHash('sha256').update(config.ADMIN_TOKEN).digest('hex'),
      keyFromAdminToken(config.ADMIN_TOKEN, 'console session admin token').toString('hex'),
    ];
    expect(rows.some((r) => fast.includes(r.adminTokenHash))).toBe(false);
  });

  it('signs out: the session ends on the server, not only in this browser', async () => {
    const other = await newContext(browser);
    const p = await other.newPage();
    await signIn(p);
    const [cookie] = await other.cookies();
    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.waitForURL(/\/console\/sign-in$/);
    expect(await other.cookies()).toEqual([]);
    // The old cookie replayed by hand is no longer a session.
    const replay = await fetch(at('/console/organizations'), { headers: { cookie: `propsync_console=${cookie!.value}` }, redirect: 'manual' });
    expect(replay.status).toBe(303);
    expect(replay.headers.get('location')).toMatch(/^\/console\/sign-in/);
    await other.close();
  });
});

describe('CSRF', () => {
  it('refuses a form posted from another site, and a same-site form without the session token', async () => {
    await signIn(page);
    const name = `csrf-${randomUUID().slice(0, 8)}`;
    // Same site (127.0.0.1), another origin (port): the browser sends the session cookie along.
    const evil: Server = createServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<form id="f" method="post" action="${at('/console/organizations')}"><input name="name" value="${name}"></form><script>document.getElementById('f').submit()</script>`,
        );
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const attacked = await context.newPage();
      const refused = attacked.waitForResponse((r) => r.url() === at('/console/organizations') && r.request().method() === 'POST');
      await attacked.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      expect((await refused).status()).toBe(403);
      expect(await textOf(attacked.getByRole('alert'))).toContain('Cross-site form posts are refused');
      await attacked.close();
    } finally {
      evil.close();
    }
    // From a console page itself, but without the form's token (a script posting with the cookie).
    const status = await page.evaluate(async (n) => {
      const r = await fetch('/console/organizations', { method: 'POST', body: new URLSearchParams({ name: n }), redirect: 'manual' });
      return r.status;
    }, name);
    expect(status).toBe(403);
    expect(await db.select().from(organizations).where(eq(organizations.name, name))).toEqual([]);
  });
});

describe('docs', () => {
  it('/docs renders the operations of the OpenAPI document under its own Content-Security-Policy, and it, the error pages and the console load nothing from outside', async () => {
    const p = await context.newPage();
    const outside: string[] = [];
    p.on('request', (r) => {
      if (!r.url().startsWith(api.url) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) outside.push(r.url());
    });
    // What the page's Content-Security-Policy blocks, as the browser reports it.
    await p.addInitScript(() => {
      type Violation = { effectiveDirective: string; blockedURI: string };
      const page = globalThis as unknown as { blocked: string[]; document: { addEventListener(type: string, listener: (e: Violation) => void): void } };
      page.blocked = [];
      page.document.addEventListener('securitypolicyviolation', (e) => page.blocked.push(`${e.effectiveDirective} ${e.blockedURI}`));
    });
    const docs = await p.goto(at('/docs'));
    expect(docs!.headers()['content-security-policy']).toMatch(/(^|; )script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    expect(docs!.headers()['x-frame-options']).toBe('DENY');
    // The reference renders the document's tags in its sidebar (as links or as group buttons, by Scalar version);
    // opening one shows its operations.
    await p.getByRole('heading', { name: 'Property Data Sync API' }).first().waitFor({ timeout: 30_000 });
    for (const [tag, operation] of [
      ['Leases', 'Update a lease'],
      ['Operations', 'Retrieve an Operation'],
    ] as const) {
      await p.getByRole('listitem').getByText(tag, { exact: true }).first().click();
      await p.getByText(operation).first().waitFor();
    }
    await screenshot(p, '09-docs', { fullPage: false });
    // No button of Scalar's hosted services, which cannot work offline (it offers them on a page served from localhost).
    expect(await p.getByRole('button', { name: /Ask AI|Generate MCP|Deploy|Developer Tools/ }).count()).toBe(0);
    // It works under its policy: nothing it needs was blocked (zod probes whether it may compile with eval, and falls
    // back when it may not).
    expect((await p.evaluate(() => (globalThis as unknown as { blocked: string[] }).blocked)).filter((b) => b !== 'script-src eval')).toEqual([]);
    // The error-type pages and the console ask for nothing outside the service either.
    await p.goto(at('/docs/errors/not_found'));
    expect(await textOf(p.locator('h1'))).toContain('Not Found');
    await p.goto(at('/console/organizations'));
    await p.getByRole('heading', { name: 'Organizations' }).waitFor();
    expect(outside).toEqual([]);
    await p.close();
  });
});

describe('operating an integration', () => {
  let orgId: string;
  let integrationId: string;
  let subscriptionId: string;

  it('creates an organization and a sandbox integration from the pages', async () => {
    await signIn(page);
    const name = `Console Co ${randomUUID().slice(0, 6)}`;
    await page.getByLabel('Name').fill(name);
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(/\/console\/organizations\/[0-9a-f-]{36}$/);
    orgId = page.url().split('/').pop()!;
    webhooks.orgs.add(orgId);
    expect(await textOf(page.getByRole('heading', { level: 1 }))).toBe(name);
    expect(await textOf(page.locator('.empty').first())).toContain('No integrations yet');

    await page.getByText('Connect an integration').click();
    await page.getByLabel('Name (optional)').fill('Console sandbox');
    await page.locator('select[name=plan]').selectOption('scale');
    await page.getByLabel('Sandbox size').fill('30');
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.waitForURL(/\/console\/integrations\/[0-9a-f-]{36}$/);
    integrationId = page.url().split('/').pop()!;
    expect(await textOf(page.locator('dl.facts'))).toContain('scale');
  });

  it('shows a problem detail when the admin API refuses a form', async () => {
    await page.goto(at(`/console/organizations/${orgId}`));
    await page.getByText('Connect an integration').click();
    await page.getByLabel('Sync every').fill('5');
    await page.getByRole('button', { name: 'Connect' }).click();
    const alert = await textOf(page.getByRole('alert'));
    expect(alert).toContain('422 Unprocessable Entity');
    expect(alert).toContain('sync_interval_seconds');
    // With the request id an operator quotes (the admin API's refusal carries the console request's).
    expect(alert).toMatch(/request req_[0-9A-HJKMNP-TV-Z]{26}/);
  });

  it('triggers a sync and follows its progress until it succeeds', async () => {
    await page.goto(at(`/console/integrations/${integrationId}`));
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.waitForURL(/\/console\/sync-jobs\/syj_\w+$/);
    const jobId = page.url().split('/').pop()!;
    // The page follows the run by itself (htmx), no reload.
    await page.locator('#job .badge.succeeded').waitFor({ timeout: 60_000 });
    const facts = await textOf(page.locator('#job dl.facts'));
    expect(facts).toMatch(/Records seen\s*\d+/);
    const link = await page.getByRole('link', { name: `sync-${jobId}` }).getAttribute('href');
    expect(link).toBe(`http://temporal-ui.example:8233/namespaces/default/workflows/sync-${jobId}`);
    expect(await textOf(page.locator('.empty'))).toContain('No records were skipped');
    await screenshot(page, '04-sync-run');
    await page.goto(at(`/console/integrations/${integrationId}`));
    await page.locator(`tr:has(a:text("${jobId}")) .badge.succeeded`).waitFor();
    await screenshot(page, '03-integration');
  });

  it('keeps the integration’s status in step with its runs while one is under way', async () => {
    // Slow reads (a count of them, so the fault ends by itself) keep the run under way while the page is read.
    expect((await admin('POST', `/integrations/${integrationId}/sandbox/faults`, { kind: 'slow', delay_ms: 1_000, count: 3, methods: 'reads' })).status).toBe(
      200,
    );
    expect((await admin('POST', `/integrations/${integrationId}/syncs`)).status).toBe(202);
    await page.goto(at(`/console/integrations/${integrationId}`));
    expect(await textOf(page.locator('#facts .badge').last())).toMatch(/^(queued|running)$/);
    expect(await page.locator('#facts').getAttribute('hx-get')).not.toBeNull();
    // No reload: the facts follow the run, and stop being re-read once it is over.
    await page.locator('#facts .badge.succeeded').waitFor({ timeout: 60_000 });
    await page.locator('#runs tbody tr').first().locator('.badge.succeeded').waitFor();
    expect(await page.locator('#facts').getAttribute('hx-get')).toBeNull();
  });

  it('creates a webhook subscription and shows its secret once', async () => {
    await page.goto(at(`/console/integrations/${integrationId}/webhooks`));
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('Description (optional)').fill('console test receiver');
    await page.getByRole('button', { name: 'Create subscription' }).click();
    const secret = (await textOf(page.locator('[data-secret]'))).trim();
    expect(secret).toMatch(/^whsec_/);
    expect(await textOf(page.locator('.secret'))).toContain('only time it is shown');
    // Standard Webhooks signing is on unless unticked.
    expect(await textOf(page.locator('.secret'))).toContain('webhook-signature');
    await screenshot(page, '05-subscription-secret');
    await page.getByRole('link', { name: 'Go to the subscription' }).click();
    await page.waitForURL(/\/console\/webhook-subscriptions\/whs_\w+/);
    subscriptionId = new URL(page.url()).pathname.split('/').pop()!;
    expect(await textOf(page.locator('dl.facts'))).toContain('yes (webhook-id, webhook-timestamp, webhook-signature)');
    expect(await page.content()).not.toContain(secret);
    await page.goto(at(`/console/integrations/${integrationId}/webhooks`));
    expect(await page.content()).not.toContain(secret);
    expect(await textOf(page.getByRole('table', { name: 'Webhook subscriptions' }))).toContain(receiver.url);
  });

  it('dead-letters a delivery the receiver keeps refusing, then replays it from the page and sees it delivered', async () => {
    receiver.reply(() => 500);
    const before = receiver.received.length;
    await page.goto(at(`/console/integrations/${integrationId}`));
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.locator('#job .badge.succeeded').waitFor({ timeout: 60_000 });
    // Three attempts (the shrunken schedule), then the dead letter.
    await receiver.waitFor((r) => r.length >= before + 3, 30_000);

    const filtered = at(`/console/webhook-subscriptions/${subscriptionId}?status=dead_lettered`);
    for (let i = 0; ; i++) {
      await page.goto(filtered);
      if ((await page.locator('tr[data-status="dead_lettered"]').count()) > 0) break;
      if (i > 60) throw new Error('no dead-lettered delivery listed');
      await page.waitForTimeout(500);
    }
    await screenshot(page, '06-deliveries-dead-letter');
    await page.locator('tr[data-status="dead_lettered"] a.mono').first().click();
    await page.waitForURL(/\/console\/webhook-deliveries\/whd_\w+$/);
    const attempts = page.getByRole('table', { name: 'Attempts' });
    expect(await attempts.locator('tbody tr').count()).toBe(3);
    expect(await textOf(attempts)).toContain('500');
    expect(await textOf(page.locator('pre'))).toContain('"type"');
    // Its first attempt failed: the delivery has a workflow of its own (the retries and the dead letter), linked.
    const deadId = /whd_\w+$/.exec(page.url())![0];
    expect(await page.locator('#delivery dl.facts').getByRole('link', { name: deadId }).getAttribute('href')).toMatch(new RegExp(`/workflows/${deadId}$`));
    await screenshot(page, '07-delivery-attempts');

    receiver.reply(() => 200);
    await page.getByRole('button', { name: 'Replay now' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('Replay started');
    await page.locator('#delivery .badge.succeeded').waitFor({ timeout: 30_000 });
    expect(await attempts.locator('tbody tr').count()).toBe(4);
    expect(await textOf(attempts.locator('tbody tr').last())).toContain('200');
  });

  it('shows the first attempt of a delivery that succeeded at once, and a replay after it as attempt 2', async () => {
    // The first attempt of this event is answered 202 after 120 ms; anything after it 200 at once.
    receiver.reply((r) =>
      (r.body.data as { id?: string } | undefined)?.id === 'res_console-first0' && r.headers['x-service-delivery-attempt'] === '1'
        ? { status: 202, afterMs: 120 }
        : 200,
    );
    const [integration] = await db.select().from(integrations).where(eq(integrations.id, integrationId));
    const [eventId] = await recordEvents(db, integration!, residentUpdates(1, 'console-first'));
    let deliveryId = '';
    for (let i = 0; ; i++) {
      const r = await admin('GET', `/webhook_subscriptions/${subscriptionId}/deliveries?status=succeeded&limit=100`);
      deliveryId = r.body.results.find((d: { event_id: string }) => d.event_id === eventId)?.id ?? '';
      if (deliveryId) break;
      if (i > 60) throw new Error('the delivery never succeeded');
      await page.waitForTimeout(250);
    }
    await page.goto(at(`/console/webhook-deliveries/${deliveryId}`));
    const attempts = page.getByRole('table', { name: 'Attempts' });
    const rows = attempts.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    const cells = async (row: number) => (await rows.nth(row).locator('td').allTextContents()).map((t) => t.trim());
    const [number, , duration, status, error, body] = await cells(0);
    expect([number, status, error, body]).toEqual(['1', '202', '—', 'ok']);
    expect(Number(/^(\d+) ms$/.exec(duration!)?.[1])).toBeGreaterThanOrEqual(120);
    // Taken at its first attempt by the dispatcher: no workflow of its own, so no link to one.
    const facts = page.locator('#delivery dl.facts');
    expect(await textOf(facts)).toContain('none (taken at its first attempt)');
    expect(await facts.getByRole('link', { name: deliveryId }).count()).toBe(0);

    await page.getByRole('button', { name: 'Replay now' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('Replay started');
    await rows.nth(1).waitFor({ timeout: 30_000 });
    expect((await cells(0))[3]).toBe('202');
    const second = await cells(1);
    expect([second[0], second[3], second[5]]).toEqual(['2', '200', 'ok']);
    expect(await textOf(page.locator('#delivery dl.facts'))).toMatch(/Attempts\s*2/);
    // The replay ran as the delivery's workflow: linked now.
    expect(await facts.getByRole('link', { name: deliveryId }).getAttribute('href')).toMatch(new RegExp(`/workflows/${deliveryId}$`));
  });

  it('lists the events of the last 30 days and resends one', async () => {
    await page.goto(at(`/console/integrations/${integrationId}/events?type=SYNC_COMPLETE`));
    const rows = page.getByRole('table', { name: 'Events' }).locator('tbody tr');
    expect(await rows.count()).toBeGreaterThanOrEqual(1);
    const before = receiver.received.length;
    await rows.first().getByRole('button', { name: 'Resend' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('Resent to 1 subscription');
    await receiver.waitFor((r) => r.length > before);
    await screenshot(page, '08-events');
  });

  it("shows a write Operation's attempts, next attempt and last error", async () => {
    // An API key made on the organization's page, shown once.
    await page.goto(at(`/console/organizations/${orgId}`));
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await textOf(page.locator('[data-secret]'))).trim();
    expect(key).toMatch(/^sk_test_/);
    await screenshot(page, '02-api-key-once');
    // Reloading goes to the organization's page: the form is not sent again (no second key), the key not shown again.
    const keys = async () => (await admin('GET', `/organizations/${orgId}/api_keys?limit=100`)).body.results.length;
    const keysBefore = await keys();
    await page.reload();
    expect(page.url()).toBe(at(`/console/organizations/${orgId}`));
    expect(await keys()).toBe(keysBefore);
    expect(await page.content()).not.toContain(key);

    // The source refuses the first write (503): the second attempt, 5 s later, applies it.
    expect((await admin('POST', `/integrations/${integrationId}/sandbox/faults`, { kind: 'unavailable', count: 1, methods: 'writes' })).status).toBe(200);
    const leases = (await (await fetch(at('/v1/leases?limit=1&status=active'), { headers: { authorization: `Bearer ${key}` } })).json()) as {
      results: { id: string }[];
    };
    const reply = await write(api.url, 'PATCH', `/v1/leases/${leases.results[0]!.id}`, { occupants: 3 }, { key });
    expect(reply.status).toBe(202);
    const operationId: string = reply.body.id;

    await page.goto(at(`/console/integrations/${integrationId}/operations`));
    await page.getByRole('link', { name: operationId }).click();
    await page.waitForURL(new RegExp(`/console/operations/${operationId}$`));
    await page.locator('#operation .badge.succeeded').waitFor({ timeout: 40_000 });
    const facts = await textOf(page.locator('#operation dl.facts'));
    expect(facts).toMatch(/Attempts\s*2/);
    expect(facts).toContain('lease.update');
    expect(await page.getByRole('link', { name: operationId }).getAttribute('href')).toBe(
      `http://temporal-ui.example:8233/namespaces/default/workflows/${operationId}`,
    );
    await screenshot(page, '10-operation');
  });

  it('edits, disables, enables and rotates a subscription; the rotation window shows and deliveries carry both signatures', async () => {
    const sub = at(`/console/webhook-subscriptions/${subscriptionId}`);
    await page.goto(sub);
    await page.locator('input[name=description]').fill('edited from the console');
    await page.getByRole('button', { name: 'Save' }).click();
    expect(await textOf(page.getByRole('status'))).toBe('Saved.');
    expect(await textOf(page.locator('dl.facts'))).toContain('edited from the console');

    // Disabling cancels deliveries being retried: the console asks first.
    const asked = new Promise<string>((resolve) =>
      page.once('dialog', (d) => {
        resolve(d.message());
        void d.accept();
      }),
    );
    await page.getByRole('button', { name: 'Disable' }).click();
    expect(await asked).toContain('deliveries being retried are cancelled');
    expect(await textOf(page.getByRole('status'))).toContain('Disabled');
    expect(await textOf(page.locator('dl.facts .badge'))).toBe('disabled');
    // Who disabled it and why, and the endpoint's health.
    const facts = await textOf(page.locator('dl.facts'));
    expect(facts).toContain('by an operator: disabled by an operator');
    expect(facts).toContain('Health');
    expect(facts).toMatch(/Waiting\s*\d+ queued, \d+ retrying, \d+ dead-lettered/);
    // Replays need it enabled: while it is disabled the page offers none, and says so.
    expect(await page.getByRole('button', { name: 'Replay range' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Replay all dead-lettered' }).count()).toBe(0);
    expect(await page.content()).toContain('Replays need the subscription enabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    expect(await textOf(page.locator('dl.facts .badge'))).toBe('active');
    expect(await textOf(page.locator('dl.facts'))).not.toContain('by an operator');

    page.once('dialog', (d) => void d.accept());
    await page.locator('input[name=grace_period_seconds]').fill('3600');
    await page.getByRole('button', { name: 'Rotate' }).click();
    const secret = (await textOf(page.locator('[data-secret]'))).trim();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('link', { name: 'Back to the subscription' }).click();
    expect(await page.content()).not.toContain(secret);
    const window = await textOf(page.locator('dl.facts'));
    expect(window).not.toContain('no rotation window open');

    // The next delivery is signed with the new secret and, during the window, the previous one.
    const before = receiver.received.length;
    await page.goto(at(`/console/integrations/${integrationId}/events?type=SYNC_COMPLETE`));
    await page.getByRole('button', { name: 'Resend' }).first().click();
    const [got] = (await receiver.waitFor((r) => r.length > before)).slice(before);
    expect(got!.headers['x-service-signature']).toBeTruthy();
    expect(got!.headers['x-service-signature-previous']).toBeTruthy();
  });

  it('offers no subscription form on a plan without webhooks, and says which plans have them', async () => {
    const { organization_id } = (await admin('GET', `/integrations/${integrationId}`)).body;
    const starter = await admin('POST', `/organizations/${organization_id}/integrations`, {
      name: 'Starter',
      mode: 'test',
      plan: 'starter',
      source: { type: 'sandbox', size: 1 },
      initial_sync: false,
    });
    expect(starter.status, JSON.stringify(starter.body)).toBe(201);
    await page.goto(at(`/console/integrations/${starter.body.id}/webhooks`));
    expect(await textOf(page.locator('main'))).toContain('Webhooks come with the scale and enterprise plans, and this integration is on starter');
    expect(await page.getByRole('button', { name: 'Create subscription' }).count()).toBe(0);
    await page.goto(at(`/console/integrations/${integrationId}/webhooks`));
    expect(await page.getByRole('button', { name: 'Create subscription' }).count()).toBe(1);
  });

  it('sends what a subscription missed while disabled by replaying the time range the page offers once it is enabled', async () => {
    const sub = at(`/console/webhook-subscriptions/${subscriptionId}`);
    await page.goto(sub);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Disable' }).click();
    expect(await textOf(page.locator('dl.facts .badge'))).toBe('disabled');
    expect((await admin('POST', `/integrations/${integrationId}/sandbox/changes`, { update: 2 })).status).toBe(200);
    await page.goto(at(`/console/integrations/${integrationId}`));
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.locator('#job .badge.succeeded').waitFor({ timeout: 60_000 });
    const missed = (
      await db.execute<{ id: string }>(sql`
      select e.id from events e join webhook_subscriptions s on s.integration_id = e.integration_id
      where s.id = ${subscriptionId} and e.created_at > s.disabled_at`)
    ).map((r) => r.id);
    expect(missed.length).toBeGreaterThan(0);
    const before = receiver.received.length;

    await page.goto(sub);
    await page.getByRole('button', { name: 'Enable' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('replaying that time range');
    expect(await page.locator('input[name=since]').inputValue()).not.toBe('');
    // Nothing recorded while it was disabled has gone out.
    expect(receiver.received.slice(before).filter((r) => missed.includes(r.body.id as string))).toEqual([]);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Replay range' }).click();
    expect(await textOf(page.getByRole('status'))).toMatch(new RegExp(`Replay started for ${missed.length} events? of that range`));
    const got = await receiver.waitFor((r) => missed.every((id) => r.slice(before).some((x) => x.body.id === id)));
    expect(got.length).toBeGreaterThan(before);

    // A range that makes no sense is refused on the page, and sends nothing.
    await page.locator('input[name=since]').fill('yesterday');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Replay range' }).click();
    expect(await textOf(page.getByRole('alert'))).toContain('since');
  });

  it('replays every dead-lettered delivery of a subscription at once', async () => {
    receiver.reply(() => 503);
    expect((await admin('POST', `/integrations/${integrationId}/sandbox/changes`, { update: 3 })).status).toBe(200);
    await page.goto(at(`/console/integrations/${integrationId}`));
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.locator('#job .badge.succeeded').waitFor({ timeout: 60_000 });
    const filtered = at(`/console/webhook-subscriptions/${subscriptionId}?status=dead_lettered`);
    let dead = 0;
    for (let i = 0; dead < 2; i++) {
      if (i > 60) throw new Error(`only ${dead} dead-lettered deliveries listed`);
      await page.waitForTimeout(500);
      await page.goto(filtered);
      dead = await page.locator('tr[data-status="dead_lettered"]').count();
    }
    receiver.reply(() => 200);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Replay all dead-lettered' }).click();
    expect(await textOf(page.getByRole('status'))).toMatch(/Replay started for \d+ deliveries/);
    // The subscription's counts follow its deliveries live while any is due or just replayed, as its table does: no reload.
    const waiting = (await textOf(page.locator('#subscription dl.facts'))).match(/(\d+) queued, (\d+) retrying, (\d+) dead-lettered/)!;
    if (Number(waiting[1]) + Number(waiting[2]) + Number(waiting[3]) > 0)
      expect(await page.locator('#subscription').getAttribute('hx-get')).toContain(subscriptionId);
    await page
      .locator('#subscription dl.facts')
      .filter({ hasText: / 0 dead-lettered/ })
      .waitFor({ timeout: 40_000 });
    for (let i = 0; ; i++) {
      await page.goto(filtered);
      if ((await page.locator('tr[data-status="dead_lettered"]').count()) === 0) break;
      if (i > 60) throw new Error('dead letters left after the replay');
      await page.waitForTimeout(500);
    }
    expect(await textOf(page.locator('.empty'))).toContain('No deliveries match this filter');
  });

  it('revokes an API key', async () => {
    await page.goto(at(`/console/organizations/${orgId}`));
    const keys = page.getByRole('table', { name: 'API keys' });
    expect(await keys.getByRole('button', { name: 'Revoke' }).count()).toBe(1);
    page.once('dialog', (d) => void d.accept());
    await keys.getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL(new RegExp(`/console/organizations/${orgId}$`));
    expect(await keys.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    expect(await keys.locator('tbody time').count()).toBeGreaterThanOrEqual(2); // created and revoked
  });

  it('lists automations, runs one now and pauses it', async () => {
    const created = await admin('POST', `/integrations/${integrationId}/automations`, {
      name: 'Console export',
      entity: 'leases',
      schedule: { every: 86_400 },
      destination: { type: 'http', url: receiver.url },
    });
    expect(created.status).toBe(201);
    await page.goto(at(`/console/integrations/${integrationId}/automations`));
    await page.getByRole('link', { name: 'Console export' }).click();
    expect(await textOf(page.locator('.empty'))).toContain('No runs yet');
    await page.getByRole('button', { name: 'Run now' }).click();
    expect(await textOf(page.getByRole('status'))).toBe('Run started.');
    const run = page.getByRole('table', { name: 'Runs' }).locator('tbody tr').first();
    const runId = (await textOf(run.locator('code'))).trim();
    expect(runId).toMatch(/^aru_/);
    expect(await run.getByRole('link', { name: 'Workflow ↗' }).getAttribute('href')).toBe(
      `http://temporal-ui.example:8233/namespaces/default/workflows/${runId}`,
    );
    await page.getByRole('button', { name: 'Pause' }).click();
    expect(await textOf(page.locator('dl.facts .badge'))).toBe('paused');
    await screenshot(page, '12-automation');
  });

  it('works at phone width', async () => {
    const phone = await newContext(browser, { width: 390, height: 844 });
    const p = await phone.newPage();
    await signIn(p);
    await p.goto(at(`/console/webhook-subscriptions/${subscriptionId}`));
    // Nothing but the tables' own scroll boxes is wider than the screen.
    const overflow = await p.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(p, '11-phone-subscription');
    await phone.close();
  });
});

describe('sessions and pages', () => {
  it('pages and sorts a table from the first page', async () => {
    await signIn(page);
    await Promise.all(Array.from({ length: 26 }, (_, i) => admin('POST', '/organizations', { name: `paging-${i}` })));
    await page.goto(at('/console/organizations'));
    const times = async () =>
      page
        .getByRole('table', { name: 'Organizations' })
        .locator('tbody time')
        .evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')!));
    const first = await times();
    expect(first).toHaveLength(25);
    expect([...first].sort()).toEqual(first); // oldest first
    await page.getByRole('link', { name: 'Next page →' }).click();
    expect(await textOf(page.locator('.pager'))).toContain('Rows 26–');
    expect((await times())[0]! >= first[24]!).toBe(true);
    await page.getByRole('link', { name: 'Created ↑' }).click();
    expect(new URL(page.url()).searchParams.get('order')).toBe('desc');
    expect(new URL(page.url()).searchParams.get('offset')).toBeNull();
    const newest = await times();
    expect([...newest].sort().reverse()).toEqual(newest);
    expect(newest[0]! >= first[24]!).toBe(true);
  });

  it("shows times in the viewer's zone, with UTC on hover", async () => {
    await page.goto(at('/console/organizations'));
    const time = page.locator('tbody time').first();
    await page.waitForFunction("!(document.querySelector('tbody time')?.textContent ?? '').endsWith('UTC')");
    expect(await time.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(await time.textContent()).toMatch(/E[SD]T$/); // the context's America/New_York
  });

  it('shows a missing page or record as a problem detail page', async () => {
    const res = await page.goto(at('/console/organizations/00000000-0000-4000-8000-000000000000'));
    expect(res!.status()).toBe(404);
    expect(await textOf(page.getByRole('alert'))).toContain('No organization 00000000-0000-4000-8000-000000000000');
    const none = await page.goto(at('/console/nothing-here'));
    expect(none!.status()).toBe(404);
    expect(await textOf(page.getByRole('alert'))).toContain('The console has no page /console/nothing-here');
    // A trailing slash is the page without it.
    for (const [asked, shown] of [
      ['/console/', '/console/organizations'],
      ['/console/organizations/?limit=5', '/console/organizations?limit=5'],
    ]) {
      const res = await page.goto(at(asked!));
      expect(res!.status()).toBe(200);
      expect(page.url()).toBe(at(shown!));
    }
  });

  it('ends sessions that expired, and every session when the admin token changes', async () => {
    const signInBy = async (base: string, token: string) => {
      const res = await fetch(`${base}/console/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
        body: new URLSearchParams({ token }),
        redirect: 'manual',
      });
      expect(res.status).toBe(303);
      return res.headers.get('set-cookie')!;
    };
    const open = async (base: string, cookie: string) => (await fetch(`${base}/console/organizations`, { headers: { cookie }, redirect: 'manual' })).status;

    const expiring = (await signInBy(api.url, config.ADMIN_TOKEN)).split(';')[0]!;
    expect(await open(api.url, expiring)).toBe(200);
    // The row holds the session token's HMAC under a key derived from the admin token (api/admin/auth.ts).
    const { createHmac } = await import('node:crypto');
    const { keyFromAdminToken } = await import('../../api/admin/auth');
    const hash = createHmac('sha256', keyFromAdminToken(config.ADMIN_TOKEN, 'console session token')).update(expiring.split('=')[1]!).digest('hex');
    await db
      .update(consoleSessions)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(consoleSessions.tokenHash, hash));
    expect(await open(api.url, expiring)).toBe(303);
    // A live region's poll is sent to the sign-in page as a whole (htmx follows HX-Redirect).
    const poll = await fetch(at('/console/organizations?offset=25'), { headers: { cookie: expiring, 'hx-request': 'true' }, redirect: 'manual' });
    expect(poll.status).toBe(401);
    expect(poll.headers.get('hx-redirect')).toBe('/console/sign-in?next=%2Fconsole%2Forganizations%3Foffset%3D25');

    // Signing in again from a signed-in browser ends the session it held.
    const first = (await signInBy(api.url, config.ADMIN_TOKEN)).split(';')[0]!;
    const again = await fetch(`${api.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url, cookie: first },
      body: new URLSearchParams({ token: config.ADMIN_TOKEN }),
      redirect: 'manual',
    });
    expect(again.status).toBe(303);
    expect(await open(api.url, first)).toBe(303);
    expect(await open(api.url, again.headers.get('set-cookie')!.split(';')[0]!)).toBe(200);

    // The same database behind an API whose ADMIN_TOKEN was rotated.
    const cookie = (await signInBy(api.url, config.ADMIN_TOKEN)).split(';')[0]!;
    const rotated = await startApi(db, testConfig({ ADMIN_TOKEN: 'a-rotated-admin-token-0123456789' }));
    try {
      expect(await open(rotated.url, cookie)).toBe(303);
      expect(await open(api.url, cookie)).toBe(200);
    } finally {
      await rotated.close();
    }
  });

  it('marks the cookie Secure when the console is reached over HTTPS (through a proxy that says so)', async () => {
    const res = await fetch(at('/console/sign-in'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url.replace('http:', 'https:'), 'x-forwarded-proto': 'https' },
      body: new URLSearchParams({ token: config.ADMIN_TOKEN }),
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Max-Age=43200/);
  });

  it('goes on after signing in to the console page asked for, and to none outside /console', async () => {
    const after = async (next: string) => {
      const res = await fetch(at('/console/sign-in'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url },
        body: new URLSearchParams({ token: config.ADMIN_TOKEN, next }),
        redirect: 'manual',
      });
      expect(res.status).toBe(303);
      return res.headers.get('location');
    };
    expect(await after('/console/organizations?offset=25')).toBe('/console/organizations?offset=25');
    expect(await after('/console/webhook_subscriptions/./x/../y')).toBe('/console/webhook_subscriptions/y');
    // Dot segments (plain or percent-encoded) that a browser resolves out of /console, another host, a scheme.
    for (const next of ['/console/../x', '/console/%2e%2e/x', '/console/.%2E/admin/v1', '//evil.example', 'https://evil.example/console', '/console\\evil']) {
      expect(await after(next), next).toBe('/console/organizations');
    }
  });
});
