/**
 * `npm run bench:console`: what the operator console's server-side rendering costs, against its floor measured in
 * the same run on the same API process: the admin API's JSON of the list the page shows.
 *
 * Seeds a fresh bench database with one organization, a scale integration, a webhook subscription and 25 deliveries
 * of three attempts each. The API (api/main.ts) and the load generator (bench/lib/load.ts, autocannon) each run as a
 * process of their own. Alternating rounds, as fast as the API answers with `--connections` connections:
 *   console  GET /console/webhook-subscriptions/{id}  (signed in; the page reads the subscription, its integration,
 *            its organization and the deliveries with their attempts through the admin API in-process, and renders)
 *   floor    GET /admin/v1/webhook_subscriptions/{id}/deliveries?limit=25  (the same deliveries as JSON)
 * Before measuring it checks that the page lists every delivery and the JSON holds 25; any non-2xx answer, error or
 * timeout fails the run (exit 1, no figures). Figures are printed, never asserted.
 * Usage: npm run bench:console [-- --rounds 3 --seconds 10 --connections 4]
 */
import { availableParallelism } from 'node:os';
import type autocannon from 'autocannon';
import { loadConfigOrExit } from '../config';
import { closeDb, createDb } from '../db/client';
import { newId } from '../db/ids';
import { events, webhookAttempts } from '../db/schema';
import { createIntegration, createOrganization } from '../db/tenants';
import { createSubscription, ensureDelivery } from '../db/webhooks';
import { categoryOf } from '../domain/events';
import { createKeyring } from '../domain/secrets';
import { benchArgs } from './lib/args';
import type { LoadSpec } from './lib/load';
import { freshDatabase, loadAverage, startApi, startChild, waitHealthy } from './lib/processes';
import { CheckFailed, endBench } from './lib/report';
import { median } from './lib/stats';

const args = benchArgs({ rounds: 3, seconds: 10, connections: 4, warmup: 3 });
const DELIVERIES = 25;
const ADMIN_TOKEN = 'bench-console-admin-token-0123456789';

const say = (msg: string) => console.log(`[bench:console] ${msg}`);

async function seed(databaseUrl: string, secretsConfig: ReturnType<typeof loadConfigOrExit>): Promise<{ subscriptionId: string; deliveryIds: string[] }> {
  const db = createDb(databaseUrl, { max: 2 });
  try {
    const keyring = createKeyring(secretsConfig.ENCRYPTION_KEYS);
    const org = await createOrganization(db, { name: 'Console bench' });
    const integration = await createIntegration(
      db,
      { organizationId: org.id, mode: 'test', plan: 'scale', sourceType: 'sandbox', sourceConfig: { base_url: 'http://127.0.0.1:1', api_key: 'unused' } },
      keyring,
    );
    const { row: sub } = await createSubscription(
      db,
      { organizationId: org.id, integrationId: integration.id, url: 'http://127.0.0.1:9/hooks', eventTypes: ['*'], description: 'bench' },
      keyring,
    );
    const deliveryIds: string[] = [];
    for (let i = 0; i < DELIVERIES; i++) {
      const event = { id: newId('event'), type: 'LEASE_UPDATED' as const };
      await db.insert(events).values({
        ...event,
        organizationId: org.id,
        integrationId: integration.id,
        mode: 'test',
        category: categoryOf(event.type),
        data: { id: `lse_${i}`, changed: ['rent'] },
        createdAt: new Date(),
      });
      const { row } = await ensureDelivery(db, sub, event);
      deliveryIds.push(row.id);
      await db.insert(webhookAttempts).values(
        [1, 2, 3].map((number) => ({
          deliveryId: row.id,
          number,
          startedAt: new Date(),
          durationMs: 12 * number,
          responseStatus: 503,
          error: 'HTTP 503',
          responseBody: 'busy',
        })),
      );
    }
    return { subscriptionId: sub.id, deliveryIds };
  } finally {
    await closeDb(db);
  }
}

async function main() {
  say(`load average ${loadAverage()} on ${availableParallelism()} CPUs at the start`);
  const config = loadConfigOrExit();
  const databaseUrl = await freshDatabase(config.DATABASE_URL, 'bench_console');
  const { subscriptionId, deliveryIds } = await seed(databaseUrl, config);
  const api = await startApi(databaseUrl, { ADMIN_TOKEN });
  try {
    await waitHealthy(api.url);
    const signIn = await fetch(`${api.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url },
      body: new URLSearchParams({ token: ADMIN_TOKEN }),
      redirect: 'manual',
    });
    const cookie = signIn.headers.get('set-cookie')?.split(';')[0];
    if (signIn.status !== 303 || !cookie) throw new CheckFailed(`sign-in answered ${signIn.status}`);

    const targets = {
      console: { path: `/console/webhook-subscriptions/${subscriptionId}`, headers: { cookie } },
      floor: { path: `/admin/v1/webhook_subscriptions/${subscriptionId}/deliveries?limit=${DELIVERIES}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    } as const;

    const page = await (await fetch(api.url + targets.console.path, { headers: targets.console.headers })).text();
    const missing = deliveryIds.filter((id) => !page.includes(id));
    if (missing.length > 0) throw new CheckFailed(`the console page lacks ${missing.length} of the ${DELIVERIES} deliveries`);
    const json = (await (await fetch(api.url + targets.floor.path, { headers: targets.floor.headers })).json()) as { results: unknown[] };
    if (json.results.length !== DELIVERIES) throw new CheckFailed(`the admin list holds ${json.results.length} deliveries, not ${DELIVERIES}`);
    say(
      `the page lists all ${DELIVERIES} deliveries (${(page.length / 1024).toFixed(0)} KiB of HTML); the JSON holds ${DELIVERIES} (${(JSON.stringify(json).length / 1024).toFixed(0)} KiB)`,
    );

    async function load(name: keyof typeof targets, seconds: number): Promise<autocannon.Result> {
      const spec: LoadSpec = { url: api.url, paths: [targets[name].path], headers: targets[name].headers, connections: args.connections, duration: seconds };
      const gen = startChild('bench/lib/load.ts', [], {}, '[load]', { stdin: true, echo: () => false });
      gen.process.stdin!.end(JSON.stringify(spec));
      const [, out] = await gen.line(/^load-result (.*)$/, (seconds + 60) * 1000);
      await gen.stop();
      const r = JSON.parse(out!) as autocannon.Result;
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) throw new CheckFailed(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
      return r;
    }

    for (const name of ['console', 'floor'] as const) await load(name, args.warmup);
    const figures = { console: [] as autocannon.Result[], floor: [] as autocannon.Result[] };
    for (let round = 1; round <= args.rounds; round++) {
      for (const name of ['console', 'floor'] as const) figures[name].push(await load(name, args.seconds));
      say(`round ${round}/${args.rounds} done`);
    }

    console.log(
      `\nConsole page vs the admin API's JSON of its list: ${args.rounds} alternating rounds x ${args.seconds} s, ${args.connections} connections, ${DELIVERIES} deliveries x 3 attempts; median over rounds\n`,
    );
    console.log('target    requests/s  p50 ms  p99 ms');
    const row = (name: 'console' | 'floor') => {
      const rs = figures[name];
      const rps = median(rs.map((r) => r.requests.average));
      console.log(
        `${name.padEnd(9)} ${rps.toFixed(1).padStart(10)} ${median(rs.map((r) => r.latency.p50))
          .toFixed(1)
          .padStart(7)} ${median(rs.map((r) => r.latency.p99))
          .toFixed(1)
          .padStart(7)}`,
      );
      return rps;
    };
    const c = row('console');
    const f = row('floor');
    console.log(
      `\nratio (console / floor throughput): ${(c / f).toFixed(2)}  (the page makes four admin reads in-process and renders ${(page.length / 1024).toFixed(0)} KiB of HTML)`,
    );
  } finally {
    await api.stop();
  }
}

endBench('console', main);
