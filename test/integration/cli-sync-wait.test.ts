/**
 * How `sync run --wait` stops waiting, the CLI as a child process against the served app with no sync worker (so a
 * job stays queued as long as a test needs): at its `--timeout`, however long `--poll-ms` is; and on SIGINT (Ctrl-C)
 * or SIGTERM while its live bar is drawn on a terminal (`script` gives it a pseudo-terminal), which must give the
 * terminal its cursor and line wrap back before it exits 130 or 143.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { createOrganization } from '../../db/tenants';
import type { TestServer } from '../support/api-server';
import { runCli } from '../support/cli';
import { unsyncedIntegration } from '../support/fixtures';
import { onServices } from '../support/services';
import { until } from '../support/until';

const ROOT = resolve(import.meta.dirname, '../..');
/** What shows the cursor again (cli-progress's stop with `hideCursor`), and turns line wrap back on. */
const SHOW_CURSOR = '\x1b[?25h';
const WRAP_ON = '\x1b[?7h';

let db: Db;
let config: Config;
let api: TestServer;

onServices({ pool: 3, api: true }, (s) => ({ db, config, api } = s));

/** A test-mode integration row of its own organization; no worker runs here, so its sync jobs stay queued. */
async function integration(): Promise<string> {
  const org = await createOrganization(db, { name: `cli-sync-wait-${randomUUID().slice(0, 8)}` });
  return (await unsyncedIntegration(db, org.id)).id;
}

it('stops waiting at --timeout, not a poll interval later, and says the run goes on', { timeout: 60_000 }, async () => {
  const id = await integration();
  const startedAt = Date.now();
  const r = await runCli({ url: api.url, token: config.ADMIN_TOKEN }, ['sync', 'run', id, '--wait', '--timeout', '1', '--poll-ms', '20000']);
  const took = Date.now() - startedAt;
  expect(r.code, r.stderr).toBe(1);
  const job = JSON.parse(r.stdout);
  expect(job).toMatchObject({ id: expect.stringMatching(/^syj_/), status: 'queued' });
  expect(r.stderr.trim().split('\n').at(-1)).toBe(`error: sync job ${job.id} is still queued after 1 s; stopped waiting (the run goes on)`);
  // The CLI's own start (tsx) takes a few seconds on a loaded machine; the poll interval alone is 20.
  expect(took).toBeLessThan(15_000);
});

/**
 * `sync run <id> --wait` on a pseudo-terminal, its shell's pid (that of the CLI, which it execs) first: what it wrote
 * so far, its stdin (the terminal's keyboard), and its end.
 */
function onTerminal(id: string) {
  // Node itself with tsx's loader, so the pid is the CLI's: the `tsx` command would run it as a child of its own and,
  // when a signal for it goes unanswered for 30 ms (a loaded machine), SIGKILL it before it can restore the terminal.
  const command = [
    process.execPath,
    '--import',
    'tsx',
    'cli/main.ts',
    'sync',
    'run',
    id,
    '--wait',
    '--poll-ms',
    '100',
    '--url',
    api.url,
    '--token',
    config.ADMIN_TOKEN,
  ].join(' ');
  const child = spawn('script', ['-qec', `echo CLI_PID=$$; exec ${command}`, '/dev/null'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm', SHELL: '/bin/sh' },
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const done = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 50_000);
  void done.finally(() => clearTimeout(killer));
  return { child, out: () => out, done };
}

/** The bar is on the terminal (the cursor hidden): the CLI's pid and the job it follows. */
async function barDrawn(run: ReturnType<typeof onTerminal>): Promise<{ pid: number; job: string }> {
  const [, pid, job] = await until('the bar on the terminal', () => /CLI_PID=(\d+)[\s\S]*sync (syj_\w+) \[/.exec(run.out()) ?? undefined, {
    timeoutMs: 40_000,
  });
  expect(run.out()).toContain('\x1b[?25l');
  return { pid: Number(pid), job: job! };
}

/** After the bar: the cursor shown and line wrap on again, and the one line that the run goes on. */
function expectRestored(out: string, job: string): void {
  const after = out.slice(out.indexOf('\x1b[?25l'));
  expect(after).toContain(SHOW_CURSOR);
  expect(after).toContain(WRAP_ON);
  expect(after.slice(after.lastIndexOf(SHOW_CURSOR))).toContain(`stopped waiting: sync job ${job} goes on (queued; see: sync get ${job})`);
}

it('gives the terminal its cursor back on Ctrl-C, says the sync goes on, and exits 130', { timeout: 60_000 }, async () => {
  const run = onTerminal(await integration());
  const { job } = await barDrawn(run);
  // Ctrl-C typed on the terminal: SIGINT to its foreground processes.
  run.child.stdin.write('\x03');
  expect(await run.done).toBe(130);
  expectRestored(run.out(), job);
  // It stopped following; the job itself is left as it was.
  const shown = await runCli({ url: api.url, token: config.ADMIN_TOKEN }, ['sync', 'get', job]);
  expect(JSON.parse(shown.stdout).status).toBe('queued');
});

it('gives the terminal its cursor back on SIGTERM and exits 143', { timeout: 60_000 }, async () => {
  const run = onTerminal(await integration());
  const { pid, job } = await barDrawn(run);
  process.kill(pid, 'SIGTERM');
  expect(await run.done).toBe(143);
  expectRestored(run.out(), job);
});
