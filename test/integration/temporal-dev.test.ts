/**
 * Starting the Temporal dev server (`npm start`, the outage tests): the server binds ports it picked at random a
 * moment earlier, and on a busy machine another process can take one in between. Such a start is made again; any
 * other failure, or one that keeps losing its ports, is reported with the server's output.
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../scripts/temporal-dev';
import { TEMPORAL_CLI } from '../../scripts/tools';
import { freePort, Processes } from '../support/faults';

const procs = new Processes();
const dbFile = join(tmpdir(), `propsync-devserver-${randomUUID()}.sqlite`);
afterAll(async () => {
  await procs.killAll();
  for (const f of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`]) rmSync(f, { force: true });
});

/** What the dev server prints when a port it picked was taken before it bound it (as seen on CI). */
const LOST_PORT =
  'Error: failed starting server: failed to build *frontend.HTTPAPIServer: failed listening for HTTP API on 127.0.0.1:35067: listen tcp 127.0.0.1:35067: bind: address already in use';

/** A stand-in start that prints `line` on stderr and exits 1. */
function failing(line: string) {
  const child = procs.spawn(process.execPath, ['-e', `console.error(${JSON.stringify(line)}); process.exit(1)`], process.env);
  return { child, output: () => procs.stderr.get(child) ?? '' };
}

describe('starting the Temporal dev server', () => {
  it('makes a start that lost a port to another process again, and returns the one that serves', async () => {
    const port = await freePort();
    const retries: string[] = [];
    let launches = 0;
    const launch = () => {
      launches += 1;
      if (launches === 1) return failing(LOST_PORT);
      const child = procs.spawn(
        TEMPORAL_CLI,
        ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', dbFile],
        process.env,
      );
      return { child, output: () => procs.stderr.get(child) ?? '' };
    };
    const child = await startDevServer(launch, `127.0.0.1:${port}`, { onRetry: (why) => retries.push(why) });

    expect(launches).toBe(2);
    expect(retries).toEqual([expect.stringContaining('another process took a port it had picked; starting it again (start 2 of 3)')]);
    expect(child.exitCode).toBeNull();
    const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
    try {
      expect((await connection.workflowService.getSystemInfo({})).serverVersion).toBeTruthy();
    } finally {
      await connection.close();
    }
    await procs.kill(child, 'SIGTERM');
  }, 60_000);

  it("gives up after three starts that each lost a port, with the last one's output", async () => {
    let launches = 0;
    const start = startDevServer(
      () => {
        launches += 1;
        return failing(`${LOST_PORT} (start ${launches})`);
      },
      `127.0.0.1:${await freePort()}`,
    );
    await expect(start).rejects.toThrow(/exited \(code 1\) before it served; its output ends:\n.*address already in use \(start 3\)/);
    expect(launches).toBe(3);
  });

  it('does not start again after any other failure', async () => {
    let launches = 0;
    const start = startDevServer(
      () => {
        launches += 1;
        return failing('Error: unable to open the database file: permission denied');
      },
      `127.0.0.1:${await freePort()}`,
    );
    await expect(start).rejects.toThrow(/before it served; its output ends:\nError: unable to open the database file: permission denied/);
    expect(launches).toBe(1);
  });
});
