/**
 * `sync run --wait` as an operator runs it: a child process against the served app, a real worker and the sandbox
 * PMS. It follows the job to its end, shows progress on stderr (plain lines, as stderr is not a terminal here),
 * prints the final job on stdout, and exits 1 when the job fails.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { expect, inject, it } from 'vitest';
import type { Config } from '../../config';
import type { TestServer } from '../support/api-server';
import { onServices } from '../support/services';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');

let config: Config;
let api: TestServer;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      TSX,
      ['cli/main.ts', ...args, '--url', api.url, '--token', config.ADMIN_TOKEN],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME }, timeout: 90_000 },
      (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

onServices({ pool: 4, sandbox: true, api: true, worker: true }, (s) => ({ config, api } = s));

/** A new organization's test-mode integration on the enterprise plan, made with the CLI: `source` is its source's flags. */
async function integrationOf(orgName: string, source: string[]): Promise<{ id: string }> {
  const org = JSON.parse((await cli(['org', 'create', '--name', orgName])).stdout);
  const created = await cli(['integration', 'create', '--org', org.id, '--mode', 'test', '--plan', 'enterprise', ...source, '--no-initial-sync']);
  expect(created.code, created.stderr).toBe(0);
  return JSON.parse(created.stdout);
}

it('follows a run to success with progress on stderr and the final job on stdout', async () => {
  const integration = await integrationOf('Waiter', ['--source', 'sandbox', '--size', '40']);

  const r = await cli(['sync', 'run', integration.id, '--wait', '--poll-ms', '100']);
  expect(r.code, r.stderr).toBe(0);
  const job = JSON.parse(r.stdout);
  expect(job).toMatchObject({ id: expect.stringMatching(/^syj_/), integration_id: integration.id, status: 'succeeded', trigger: 'manual', error: null });
  expect(job.records_new).toBeGreaterThan(40);
  expect(job.records_seen).toBe(job.records_new);
  const lines = r.stderr.trim().split('\n');
  expect(lines[0]).toMatch(
    new RegExp(`^sync ${job.id} (queued|running): \\d/4 entities, seen=\\d+ new=\\d+ updated=\\d+ soft_deleted=\\d+ \\(\\d\\d:\\d\\d\\)$`),
  );
  expect(lines.at(-1)).toMatch(
    new RegExp(`^sync ${job.id} succeeded: 4/4 entities, seen=${job.records_seen} new=${job.records_new} updated=0 soft_deleted=0 `),
  );
});

it('draws a live bar when stderr is a terminal', async () => {
  const integration = await integrationOf('Terminal', ['--source', 'sandbox', '--size', '30']);
  // util-linux `script` gives the CLI a pseudo-terminal; everything it writes comes back on one stream.
  const command = [TSX, 'cli/main.ts', 'sync', 'run', integration.id, '--wait', '--poll-ms', '100', '--url', api.url, '--token', config.ADMIN_TOKEN].join(' ');
  const out: string = await new Promise((done, fail) =>
    execFile(
      'script',
      ['-qec', command, '/dev/null'],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm' }, timeout: 90_000 },
      (err, stdout) => (err ? fail(err) : done(stdout)),
    ),
  );
  const plain = out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
  expect(plain).toMatch(/sync syj_\w+ \[█{20}\] 4\/4 entities \| succeeded \| seen \d+ new \d+ updated 0 soft-deleted 0 \| \d\d:\d\d/);
  expect(plain).toContain('"status": "succeeded"');
});

it('exits 1 with the job error when the run fails', async () => {
  // The sandbox refuses a wrong API key: a permanent source failure, so the run fails at once.
  const integration = await integrationOf('Failing', ['--source', 'entrata', '--base-url', inject('sandboxUrl'), '--api-key', 'not-a-sandbox-key']);
  const r = await cli(['sync', 'run', integration.id, '--wait', '--poll-ms', '100']);
  expect(r.code).toBe(1);
  const job = JSON.parse(r.stdout);
  expect(job).toMatchObject({ status: 'failed', error: expect.any(String) });
  expect(r.stderr.trim().split('\n').at(-1)).toBe(`error: sync job ${job.id} failed: ${job.error}`);
});
