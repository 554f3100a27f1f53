/**
 * The client address the admin-token throttle counts by: the connection's peer, or the first X-Forwarded-For address
 * only behind a trusted proxy (TRUST_PROXY). Over HTTP every test client is 127.0.0.1, shared by every test file, so
 * the rule itself is checked here on requests handed to the app with the peer node-server would give it.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { clientAddress } from '../../api/middleware/client-address';

const app = new Hono();
app.get('/', (c) => c.text(clientAddress(c, c.req.query('trust') === 'yes') ?? '(in-process)'));

/** What the app answers for a request from `peer` (node-server's bindings), with these headers. */
async function seen(opts: { peer?: string | null; trust?: boolean; forwardedFor?: string }): Promise<string> {
  const bindings = opts.peer === null ? undefined : { incoming: { socket: { remoteAddress: opts.peer, remotePort: 50000 } } };
  const headers: Record<string, string> = opts.forwardedFor === undefined ? {} : { 'x-forwarded-for': opts.forwardedFor };
  const res = await app.request(`/?trust=${opts.trust ? 'yes' : 'no'}`, { headers }, bindings);
  return res.text();
}

describe('the client address', () => {
  it('is the connection peer, and X-Forwarded-For is ignored unless the proxy is trusted', async () => {
    expect(await seen({ peer: '198.51.100.7' })).toBe('198.51.100.7');
    expect(await seen({ peer: '198.51.100.7', forwardedFor: '203.0.113.9' })).toBe('198.51.100.7');
  });

  it('behind a trusted proxy is the first X-Forwarded-For address, else the peer when there is none or it is no address', async () => {
    expect(await seen({ peer: '172.18.0.5', trust: true, forwardedFor: '203.0.113.9, 10.0.0.1' })).toBe('203.0.113.9');
    expect(await seen({ peer: '172.18.0.5', trust: true })).toBe('172.18.0.5');
    expect(await seen({ peer: '172.18.0.5', trust: true, forwardedFor: 'unknown, 203.0.113.9' })).toBe('172.18.0.5');
  });

  it('writes IPv4-mapped IPv6 as IPv4 and counts other IPv6 addresses by their /64', async () => {
    expect(await seen({ peer: '::ffff:198.51.100.7' })).toBe('198.51.100.7');
    expect(await seen({ peer: '2001:db8:1:2:aaaa:bbbb:cccc:dddd' })).toBe('2001:db8:1:2::/64');
    expect(await seen({ peer: '::1', trust: true, forwardedFor: '2001:db8:1:2::99' })).toBe('2001:db8:1:2::/64');
  });

  it('is unknown for a connection without a peer (closed already), and there is none for an in-process request', async () => {
    expect(await seen({ peer: undefined })).toBe('unknown');
    expect(await seen({ peer: null, forwardedFor: '203.0.113.9', trust: true })).toBe('(in-process)');
  });
});
