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

/** A CLI run still going: what it has written so far, and its end. */
export interface StartedCli {
  /** Its stdout so far. */
  stdout: () => string;
  /** Its stderr so far (where progress lines go), to wait with until() for a line it prints while it runs. */
  stderr: () => string;
  done: Promise<CliRun>;
}

/** The CLI with the API's address and token in its environment, as an operator's shell would have them. */
export function runCli(target: { url: string; token: string }, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return startCli(target, args, env).done;
}

/** runCli, with what the CLI writes readable while it runs. */
export function startCli(target: { url: string; token: string }, args: string[], env: Record<string, string> = {}): StartedCli {
  const written = { stdout: '', stderr: '' };
  const ended = new Promise<CliRun>((done) => {
    const child = execFile(
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
    child.stdout?.on('data', (chunk: string) => (written.stdout += chunk));
    child.stderr?.on('data', (chunk: string) => (written.stderr += chunk));
  });
  return { stdout: () => written.stdout, stderr: () => written.stderr, done: ended };
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

/** `help` (a noun's --help) exited 0 and lists each of `verbs` on a line of its own, indented, before its description. */
export function expectVerbs(help: CliRun, verbs: string[]): void {
  expect(help.code).toBe(0);
  for (const line of verbs) expect(help.stdout).toContain(`  ${line} `);
}

/** `help` (a verb's --help) exited 0 and lists each of `flags` (`--name <value>`). */
export function expectFlags(help: CliRun, flags: string[]): void {
  expect(help.code).toBe(0);
  for (const flag of flags) expect(help.stdout).toContain(flag);
}

/**
 * Each case (the arguments, and what the error line must say) is refused as a usage mistake before any API call (the
 * API address leads nowhere): exit 2, nothing on stdout, one `error:` line on stderr.
 */
export async function expectUsageErrors(token: string, cases: [args: string[], error: string][]): Promise<void> {
  const runs = await Promise.all(cases.map(([args]) => runCli({ url: 'http://127.0.0.1:1', token }, args)));
  runs.forEach((r, i) => {
    expect(r.code, cases[i]![0].join(' ')).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: /);
    expect(r.stderr).toContain(cases[i]![1]);
  });
}
