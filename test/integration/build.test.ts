/**
 * The built artefacts, checked with what runs here (no Docker): `npm run build` once; docker-compose.yml and the
 * Dockerfile read for what production depends on (every command a file of dist/, pinned images, health checks, only
 * production packages imported by the bundles); then the compiled processes started with plain `node`, no tsx,
 * against this run's Postgres and Temporal dev server: the migrations into a database of their own, the sandbox PMS
 * on it, the worker on the prebuilt workflow bundle and the API, which starts a sync the worker runs and serves the
 * synced leases.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { configSchema, parseConfig, WORKER_ROLE_NAMES } from '../../config';
import { closeDb, type Db } from '../../db/client';
import { createApiKey, createIntegration, createOrganization } from '../../db/tenants';
import { syncWorkflowIdOf } from '../../domain/contract';
import { sandboxControlClient } from '../../sandbox/control';
import { testDb, testKeyring } from '../support/context';
import { freePort, Processes } from '../support/faults';
import { until } from '../support/sync';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST = join(ROOT, 'dist');
const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  restart?: string;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string | number>;
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
}

beforeAll(async () => {
  // NODE_OPTIONS cleared: nothing the test runner was started with may help the build or the processes below.
  await run('npm', ['run', '-s', 'build'], { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' }, timeout: 110_000 });
}, 120_000);

describe('docker-compose.yml and the Dockerfile', () => {
  const composeText = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
  const services = (parse(composeText, { merge: true }) as { services: Record<string, Service> }).services;
  const ours = Object.entries(services).filter(([, s]) => s.build !== undefined);

  it('has every part of the production shape, each service on a pinned image', () => {
    expect(Object.keys(services).sort()).toEqual([
      'api',
      'grafana',
      'migrate',
      'postgres',
      'prometheus',
      'proxy',
      'sandbox',
      'temporal',
      'temporal-ui',
      'worker',
      'worker-webhooks',
    ]);
    for (const [name, s] of Object.entries(services)) {
      const [image, tag] = (s.image ?? '').split(':');
      expect(image, name).toBeTruthy();
      expect(tag, `${name}: ${s.image} has no tag`).toMatch(/^v?\d[\w.-]*$/);
      if (s.build !== undefined) expect(s.image, name).toBe(`propsync:${pkg.version}`);
    }
    expect(ours.map(([n]) => n).sort()).toEqual(['api', 'migrate', 'sandbox', 'worker', 'worker-webhooks']);
  });

  it('runs the compiled JavaScript of dist/ in every service of ours, never tsx', () => {
    expect(composeText).not.toMatch(/\btsx\b/);
    for (const [name, s] of ours) {
      expect(s.command?.[0], name).toBe('node');
      expect(s.command?.[1], name).toMatch(/^dist\/[\w-]+\.mjs$/);
      expect(existsSync(join(ROOT, s.command![1]!)), `${name}: ${s.command![1]} after npm run build`).toBe(true);
    }
  });

  it('has a health check on every long-running service, and services wait for what they need', () => {
    for (const [name, s] of Object.entries(services)) {
      if (s.restart === 'no') continue;
      expect(s.healthcheck?.test.length, `${name} has no health check`).toBeGreaterThan(0);
      for (const arg of s.healthcheck!.test.filter((a) => a.startsWith('dist/'))) expect(existsSync(join(ROOT, arg)), `${name}: ${arg}`).toBe(true);
      for (const dep of Object.keys(s.depends_on ?? {})) expect(services, `${name} depends on ${dep}`).toHaveProperty([dep]);
    }
    expect(services.migrate!.restart).toBe('no');
    for (const name of ['api', 'worker', 'worker-webhooks', 'sandbox'])
      expect(services[name]!.depends_on?.migrate?.condition, name).toBe('service_completed_successfully');
  });

  it('runs every worker role in exactly one worker service, webhook delivery and the relay apart from the rest', () => {
    const rolesOf = (name: string) => parseConfig({ WORKER_ROLES: String(services[name]!.environment?.WORKER_ROLES) }).WORKER_ROLES;
    expect(rolesOf('worker-webhooks')).toEqual(['webhooks', 'relay']);
    expect([...rolesOf('worker'), ...rolesOf('worker-webhooks')].sort()).toEqual([...WORKER_ROLE_NAMES].sort());
    for (const name of ['worker', 'worker-webhooks']) expect(services[name]!.command, name).toEqual(['node', 'dist/worker.mjs']);
  });

  it("shares the export folder with the API (it checks an automation's directory) and the workers (they write it)", () => {
    const exportRoot = `/app/${parseConfig({}).EXPORT_ROOT.replace(/^\.\//, '')}`;
    for (const name of ['api', 'worker'])
      expect(services[name]!.volumes, name).toContainEqual(expect.stringMatching(new RegExp(`^exports:${exportRoot}(:ro)?$`)));
  });

  it('mounts the Temporal TLS files into every service of ours once the commented ./certs lines are uncommented', () => {
    const uncommented = composeText.replace(/^(\s*)# (volumes:|\s*- \.\/certs:)/gm, '$1$2');
    const withCerts = (parse(uncommented, { merge: true }) as { services: Record<string, Service> }).services;
    for (const [name] of ours) expect(withCerts[name]!.volumes, name).toContain('./certs:/certs:ro');
  });

  it('puts two API replicas behind the proxy, the only service on port 3000', () => {
    expect(services.api!.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(services.api!.ports).toBeUndefined();
    expect(services.proxy!.ports).toEqual(['3000:3000']);
    expect(services.proxy!.depends_on?.api?.condition).toBe('service_healthy');
    const mount = services.proxy!.volumes!.find((v) => v.endsWith(':/etc/caddy/Caddyfile:ro'))!;
    const caddyfile = readFileSync(join(ROOT, mount.split(':')[0]!), 'utf8');
    expect(caddyfile).toMatch(/dynamic a api 3000/);
  });

  it('passes the secrets and the Temporal connection settings as environment variables the configuration knows', () => {
    // The configuration's variables, and node's own (a webhook worker's V8 options).
    const known = new Set([...Object.keys(configSchema.shape), 'NODE_OPTIONS']);
    for (const [name, s] of ours) {
      const env = Object.keys(s.environment ?? {});
      for (const v of [
        'DATABASE_URL',
        'ADMIN_TOKEN',
        'ENCRYPTION_KEYS',
        'SANDBOX_CONTROL_TOKEN',
        'TEMPORAL_ADDRESS',
        'TEMPORAL_TLS',
        'TEMPORAL_TLS_CERT_PATH',
        'TEMPORAL_TLS_KEY_PATH',
        'TEMPORAL_TLS_CA_PATH',
        'TEMPORAL_TLS_SERVER_NAME',
        'TEMPORAL_API_KEY',
      ]) {
        expect(env, `${name} lacks ${v}`).toContain(v);
      }
      for (const v of env) expect(known.has(v), `${name}: ${v} is not a configuration variable`).toBe(true);
    }
  });

  it('builds in one stage and runs, as a non-root user, only production packages and dist/ in the final one', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const nodeImage = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
    expect(nodeImage).toMatch(/^node:\d+\.\d+\.\d+-/);
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const [build, final] = [stages[0]!, stages.at(-1)!];
    expect(build).toMatch(/^\$\{NODE_IMAGE\} AS build$/m);
    expect(build).toMatch(/^RUN npm run build$/m);
    for (const stage of [build, final]) {
      // patch-package's postinstall needs patches/ before the install.
      expect(stage.indexOf('COPY patches'), stage).toBeGreaterThan(-1);
      expect(stage.indexOf('COPY patches')).toBeLessThan(stage.indexOf('RUN npm ci'));
    }
    expect(final).toMatch(/^RUN npm ci --omit=dev\b/m);
    expect(final).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(final).not.toMatch(/\btsx\b|COPY \. /);
    expect(/^USER (\S+)$/m.exec(final)?.[1]).not.toMatch(/^(root|0)$/);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(final)![1]!) as string[];
    expect(cmd[0]).toBe('node');
    expect(existsSync(join(ROOT, cmd[1]!))).toBe(true);
  });

  it('bundles import only Node built-ins and production dependencies (the final image has no others)', () => {
    const builtins = new Set(builtinModules);
    for (const file of readdirSync(DIST).filter((f) => f.endsWith('.mjs'))) {
      const code = readFileSync(join(DIST, file), 'utf8');
      const specifiers = [...code.matchAll(/^\s*import\s[^;]*?from\s*"([^"]+)"|^\s*import\s*"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/gm)].map(
        (m) => (m[1] ?? m[2] ?? m[3])!,
      );
      expect(specifiers.length, file).toBeGreaterThan(0);
      for (const s of specifiers) {
        if (s.startsWith('node:') || builtins.has(s)) continue;
        expect(s.startsWith('.'), `${file} imports ${s} by path`).toBe(false);
        const name = s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!;
        expect(pkg.dependencies, `${file} imports ${name}, not a production dependency`).toHaveProperty([name]);
      }
    }
  });
});

describe('the compiled processes', () => {
  const procs = new Processes();
  const taskQueue = `test-build-${randomUUID()}`;
  const adminToken = 'test-admin-token-0123456789';
  const controlToken = 'test-build-sandbox-control-token';
  // The migrations and the sandbox PMS get a database of their own; the worker and the API use the run's.
  const ownDbName = `propsync_build_${Date.now().toString(36)}_${process.pid}`;
  const ownDbUrl = Object.assign(new URL(inject('databaseUrl')), { pathname: `/${ownDbName}` }).toString();
  let db: Db;
  let connection: Connection;
  let apiUrl = '';
  let sandboxUrl = '';
  let worker: ReturnType<Processes['spawnLogged']>;
  let api: ReturnType<Processes['spawnLogged']>;

  /** The environment of a compiled process: this file's task queue, no tsx (NODE_OPTIONS cleared). */
  const envOf = (over: Record<string, string>): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_OPTIONS: '',
      DATABASE_URL: inject('databaseUrl'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      ADMIN_TOKEN: adminToken,
      SANDBOX_CONTROL_TOKEN: controlToken,
      SERVED_MODES: 'test',
      WORKER_ROLES: 'sync,webhooks,writes,automations',
      WORKER_RECONCILE_SCHEDULES: 'false',
      DB_POOL_MAX: '3',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      LOG_PRETTY: 'false',
      ...over,
    };
    delete env.WORKFLOW_BUNDLE_PATH;
    return env;
  };
  const node = (args: string[], env: NodeJS.ProcessEnv) => run(process.execPath, args, { cwd: ROOT, env, timeout: 30_000 });
  const logLines = (output: string) =>
    output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string } & Record<string, unknown>);
  const started = async (what: string, p: ReturnType<Processes['spawnLogged']>, msg: string) =>
    until(`${what}: ${msg}`, async () => {
      if (p.child.exitCode !== null) throw new Error(`${what} exited ${p.child.exitCode}:\n${p.output()}`);
      return logLines(p.output()).some((l) => l.msg === msg) ? true : undefined;
    });

  beforeAll(async () => {
    db = testDb(3);
    connection = await Connection.connect({ address: inject('temporalAddress') });
    const { stdout } = await node(['dist/migrate.mjs'], envOf({ DATABASE_URL: ownDbUrl }));
    expect(stdout).toMatch(/migrations applied/);

    const [apiPort, sandboxPort] = [await freePort(), await freePort()];
    apiUrl = `http://127.0.0.1:${apiPort}`;
    sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const sandbox = procs.spawnLogged(process.execPath, ['dist/sandbox.mjs'], envOf({ DATABASE_URL: ownDbUrl, SANDBOX_PORT: String(sandboxPort) }));
    // One attempt per step: a sync that cannot run (say, its page-reading thread cannot load) fails the run at once.
    worker = procs.spawnLogged(process.execPath, ['dist/worker.mjs'], envOf({ SYNC_RETRY_MAX_ATTEMPTS: '1' }));
    api = procs.spawnLogged(process.execPath, ['dist/api.mjs'], envOf({ PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl }));
    await Promise.all([
      started('sandbox', sandbox, 'sandbox PMS listening'),
      started('worker', worker, 'worker started'),
      started('api', api, 'API listening'),
    ]);
  }, 60_000);

  afterAll(async () => {
    await procs.killAll();
    await connection?.close();
    if (db) await closeDb(db);
    const sql = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "${ownDbName}" with (force)`).catch(() => {});
    await sql.end();
  });

  it('the worker runs the prebuilt workflow bundle: no bundling at start-up', () => {
    const lines = logLines(worker.output());
    expect(lines.find((l) => l.msg === 'using the prebuilt workflow bundle')?.workflow_bundle).toBe(join(DIST, 'workflows.js'));
    expect(lines.some((l) => l.msg === 'bundled the workflows at start-up')).toBe(false);
  });

  it('the API is ready, runs a sync through the worker (its page-reading thread included) and serves the synced leases', async () => {
    expect((await fetch(`${apiUrl}/readyz`)).status).toBe(200);

    const companyId = randomUUID();
    const control = sandboxControlClient(sandboxUrl, controlToken);
    const { api_key } = await control.createCompany({ companyId, size: 12, seed: 3 });
    const org = await createOrganization(db, { name: `build-${companyId.slice(0, 8)}` });
    const integration = await createIntegration(
      db,
      { organizationId: org.id, mode: 'test', plan: 'enterprise', sourceType: 'sandbox', sourceConfig: { base_url: sandboxUrl, api_key, size: 12, seed: 3 } },
      testKeyring(),
    );
    const { key } = await createApiKey(db, { organizationId: org.id, mode: 'test' });

    const started = await fetch(`${apiUrl}/admin/v1/integrations/${integration.id}/syncs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(started.status).toBe(202);
    const job = (await started.json()) as { id: string };
    const client = new Client({ connection });
    const ended = await Promise.race([
      client.workflow
        .getHandle(syncWorkflowIdOf(job.id))
        .result()
        .then(() => 'ended'),
      new Promise((resolve) => worker.child.once('exit', () => resolve('the worker exited'))),
      new Promise((resolve) => setTimeout(resolve, 30_000, 'still running after 30 s')),
    ]);
    expect(ended, `the sync did not end; the worker's log ends:\n${worker.output().slice(-3000)}`).toBe('ended');

    // The compiled CLI reads the job through the compiled API.
    const { stdout } = await node(['dist/cli.mjs', 'sync', 'get', job.id, '--url', apiUrl, '--token', adminToken], envOf({}));
    expect((JSON.parse(stdout) as { status: string }).status).toBe('succeeded');

    const leases = await fetch(`${apiUrl}/v1/leases?limit=100`, { headers: { authorization: `Bearer ${key}` } });
    expect(leases.status).toBe(200);
    const { results } = (await leases.json()) as { results: unknown[] };
    expect(results.length).toBe((await control.getCompany(companyId))!.counts.lease);
    expect(results.length).toBeGreaterThan(0);
  });

  it('the compiled API serves the console (its JSX pages, its own assets and the pinned htmx) and the docs bundle', async () => {
    const signIn = await fetch(`${apiUrl}/console/sign-in`);
    expect(signIn.status).toBe(200);
    expect(await signIn.text()).toContain('name="token"');
    for (const [path, contains] of [
      ['/console/assets/htmx.min.js', 'htmx'],
      ['/console/assets/console.js', 'localize'],
      ['/console/assets/console.css', '.badge'],
      ['/docs/assets/scalar-api-reference.js', 'scalar'],
    ] as const) {
      const res = await fetch(`${apiUrl}${path}`);
      expect(res.status, path).toBe(200);
      expect(await res.text(), path).toContain(contains);
    }
    // Signing in works against the compiled app's own session table.
    const session = await fetch(`${apiUrl}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: apiUrl },
      body: new URLSearchParams({ token: adminToken, next: '/console/organizations' }),
      redirect: 'manual',
    });
    expect(session.status).toBe(303);
    const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
    const orgs = await fetch(`${apiUrl}/console/organizations`, { headers: { cookie } });
    expect(orgs.status).toBe(200);
    expect(await orgs.text()).toContain('<h1>Organizations</h1>');
  });

  it("the worker health check sees this host's worker poll its task queue, and no worker on another", async () => {
    const { stdout } = await node(['dist/worker-health.mjs'], envOf({}));
    expect(stdout).toMatch(/^healthy/);
    const other = await node(['dist/worker-health.mjs'], envOf({ TEMPORAL_TASK_QUEUE: `test-build-nobody-${randomUUID()}` })).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^unhealthy: no worker of/);
  });
});
