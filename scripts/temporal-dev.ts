/**
 * Starting `temporal server start-dev`, shared by `npm start` and the outage tests.
 *
 * The dev server picks its HTTP API, metrics and internal service ports at random: it finds a free port, lets go of
 * it and binds it moments later. On a busy machine another process can take that port in between (as the local end
 * of an outgoing connection, say), and the server exits before it ever serves, with "address already in use". Such a
 * start is made again, since the next one picks other ports; any other failure is final.
 */
import type { ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';

/** Starts of the dev server made before giving up on one that keeps losing a port. */
export const DEV_SERVER_START_ATTEMPTS = 3;

/** A started dev server process and what it has written so far (its stdout and stderr, or their tail). */
export interface DevServerLaunch {
  child: ChildProcess;
  output: () => string;
}

export interface DevServerOptions {
  /** How long one start may take to answer (default 60 s). */
  timeoutMs?: number;
  /** Starts made in all (default DEV_SERVER_START_ATTEMPTS). */
  attempts?: number;
  /** true once the caller is shutting down: the wait ends and the child is returned as it is. */
  stopped?: () => boolean;
  /** Told why a start is made again. */
  onRetry?: (why: string) => void;
}

/**
 * Launches a dev server and waits until it answers on `address`, returning its process. A start that exits having
 * lost a port is launched again; one that exits otherwise, keeps losing or does not answer in time is an error that
 * carries the tail of its output (a start that does not answer is killed first).
 */
export async function startDevServer(launch: () => DevServerLaunch, address: string, options: DevServerOptions = {}): Promise<ChildProcess> {
  const { timeoutMs = 60_000, attempts = DEV_SERVER_START_ATTEMPTS, stopped = () => false, onRetry } = options;
  for (let attempt = 1; ; attempt++) {
    const { child, output } = launch();
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    const deadline = Date.now() + timeoutMs;
    while (!exited() && !stopped()) {
      if ((await temporalAnswers(address)) === true) return child;
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the Temporal dev server did not answer on ${address} within ${timeoutMs / 1000} s; its output ends:\n${tail(output())}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    if (stopped()) return child;
    const why = `the Temporal dev server exited (${child.signalCode ?? `code ${child.exitCode}`}) before it served`;
    if (!lostPortRace(output()) || attempt >= attempts) throw new Error(`${why}; its output ends:\n${tail(output())}`);
    onRetry?.(`${why}: another process took a port it had picked; starting it again (start ${attempt + 1} of ${attempts})`);
  }
}

/** Whether a dev server's output says it could not bind a port. */
function lostPortRace(output: string): boolean {
  return output.includes('address already in use');
}

/** true when a Temporal server answers on `address` now (a gRPC call, not only an open port), else why not. */
async function temporalAnswers(address: string): Promise<true | string> {
  try {
    const c = await Connection.connect({ address, connectTimeout: 1_000 });
    try {
      await c.workflowService.getSystemInfo({});
      return true;
    } finally {
      await c.close();
    }
  } catch (err) {
    return String(err);
  }
}

function tail(output: string): string {
  return output.length > 4_000 ? `…${output.slice(-4_000)}` : output;
}
