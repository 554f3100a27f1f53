import { once } from 'node:events';
import { connect, createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { withTimeout } from '../../api/routes/health';

/** A port nothing listens on: bound, read and closed again. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function refusedConnection(port: number): Promise<never> {
  return new Promise((_, reject) => connect(port, '127.0.0.1').on('error', reject));
}

describe('the readiness check timeout', () => {
  it("gives way to the probe's own outcome when a busy event loop runs the timer late", async () => {
    const port = await closedPort();
    const probe = withTimeout(refusedConnection(port), 200);
    // Hold the loop past the limit: when it runs again, the timer and the refused connection are both due.
    const until = Date.now() + 500;
    while (Date.now() < until);
    await expect(probe).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('times out a probe that has no outcome', async () => {
    await expect(withTimeout(new Promise(() => {}), 50)).rejects.toThrow();
    await expect(withTimeout(new Promise(() => {}), 50)).rejects.not.toHaveProperty('code');
  });
});
