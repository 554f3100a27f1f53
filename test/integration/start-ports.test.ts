/**
 * `npm start` (here `tsx scripts/start.ts`, without its ensure step) refuses at once when another program holds a port
 * it would listen on, naming the port and the variable that moves it, and changes nothing elsewhere: a second system
 * started on the first one's API port used to seed its demo organization into the first one (whose API answered the
 * readiness check), and one on its Temporal port used to adopt that server for a database of its own.
 */
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, inject, it } from 'vitest';
import { freePort, Processes } from '../support/faults';

const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));
const procs = new Processes();
const servers: (Server | TcpServer)[] = [];

afterAll(async () => {
  await procs.killAll();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** An HTTP server answering every request 200 `{}` (another system's API, ready), and the requests it got. */
async function anotherApi(port: number): Promise<IncomingMessage[]> {
  const got: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    got.push(req);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return got;
}

async function start(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string; tookMs: number }> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['TEMPORAL_ADDRESS', 'PUBLIC_BASE_URL', 'SANDBOX_URL', 'METRICS_PORT', 'WORKER_METRICS_PORT']) delete base[name];
  const startedAt = Date.now();
  const { child, output } = procs.spawnLogged(process.execPath, [TSX, 'scripts/start.ts'], {
    ...base,
    // A database of the test server's (no embedded Postgres): nothing in it is touched before the check.
    DATABASE_URL: inject('databaseUrl'),
    PORT: String(await freePort()),
    SANDBOX_PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    LOG_PRETTY: 'false',
    ...env,
  });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  return { code, output: output(), tookMs: Date.now() - startedAt };
}

it('refuses when its API port answers for another system, and sends that system nothing', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const got = await anotherApi(port);
  const run = await start({ PORT: String(port), TEMPORAL_ADDRESS: inject('temporalAddress') });
  expect(run.code, run.output).toBe(1);
  expect(run.output).toContain(`not starting: another program already listens on 127.0.0.1:${port} (PORT)`);
  expect(run.output).not.toContain('Demo organization created');
  expect(run.output).not.toContain('database migrated');
  expect(got.map((r) => `${r.method} ${r.url}`)).toEqual([]);
});

it('refuses when something holds its Temporal port, and says how to use a server of ones own there', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const held = createTcpServer((s) => s.destroy());
  servers.push(held);
  await new Promise<void>((r) => held.listen(port, '127.0.0.1', r));
  const sandboxPort = await freePort();
  const otherSandbox = createTcpServer((s) => s.destroy());
  servers.push(otherSandbox);
  await new Promise<void>((r) => otherSandbox.listen(sandboxPort, '127.0.0.1', r));
  const run = await start({ TEMPORAL_PORT: String(port), SANDBOX_PORT: String(sandboxPort) });
  expect(run.code, run.output).toBe(1);
  // Every taken port at once, not one per attempt.
  expect(run.output).toContain(`another program already listens on 127.0.0.1:${sandboxPort} (SANDBOX_PORT), 127.0.0.1:${port} (TEMPORAL_PORT)`);
  expect(run.output).toContain(`set TEMPORAL_ADDRESS=127.0.0.1:${port} to use it`);
  expect(run.output).not.toContain('using it as the Temporal server');
  expect(run.output).not.toContain('database migrated');
});
