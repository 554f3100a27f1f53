/** Runs the operator CLI as an operator does: a child process (`tsx cli/main.ts ...`), stdout JSON, stderr, exit code. */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** The CLI with the API's address and token in its environment, as an operator's shell would have them. */
export function runCli(target: { url: string; token: string }, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((done) => {
    execFile(
      TSX,
      ['cli/main.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, PUBLIC_BASE_URL: target.url, ADMIN_TOKEN: target.token, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        let json: unknown;
        try {
          json = stdout ? JSON.parse(stdout) : undefined;
        } catch {
          json = undefined;
        }
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr, json });
      },
    );
  });
}

/** The run exited 0 with nothing on stderr: the JSON it printed. */
export function ok(r: CliRun): any {
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toBe('');
  return r.json;
}

/**
 * The run exited 1 with one line (the `error:` line) on stderr, and printed `opts.stdout` when given (a command may
 * print before it fails, as `run --wait` does its final run): the stderr.
 */
export function fails(r: CliRun, opts: { stdout?: string } = {}): string {
  expect(r.code, r.stdout).toBe(1);
  if (opts.stdout !== undefined) expect(r.stdout).toBe(opts.stdout);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  return r.stderr;
}
