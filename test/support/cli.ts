/** Runs the operator CLI as an operator does: a child process (`tsx cli/main.ts ...`), stdout JSON, stderr, exit code. */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

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
