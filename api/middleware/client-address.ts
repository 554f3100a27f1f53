/**
 * The address of the client of a request, as the admin-token throttle counts it (api/admin/auth.ts).
 *
 * It is the connection's peer, unless TRUST_PROXY says the API sits behind a proxy of its own: then it is the first
 * address of X-Forwarded-For (caddy, in docker-compose.yml, replaces whatever a client sent there with the address it
 * saw, so the first entry is the client's). Without TRUST_PROXY the header is ignored: anyone can send one.
 *
 * IPv4-mapped IPv6 addresses are written as IPv4; other IPv6 addresses count as their /64, the network one
 * subscriber gets and can rotate through at will.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import ipaddr from 'ipaddr.js';

/** An IP address in one spelling per client, or undefined when `raw` is not an IP address. */
function addressKeyOf(raw: string): string | undefined {
  const text = raw.trim();
  if (!ipaddr.IPv4.isValidFourPartDecimal(text) && !ipaddr.IPv6.isValid(text)) return undefined;
  const ip = ipaddr.process(text);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${ip.toString().split('%')[0]}/64`).toString()}/64`;
}

/**
 * The request's client address, or undefined for a request made in-process (`app.request()`, as the console calls
 * the admin API with the configured token), which came over no connection. A connection whose peer is unknown (it
 * closed already) is `unknown`.
 */
export function clientAddress(c: Context, trustProxy: boolean): string | undefined {
  const bindings = c.env as { incoming?: unknown; server?: { incoming?: unknown } } | undefined;
  if (!bindings?.incoming && !bindings?.server?.incoming) return undefined;
  if (trustProxy) {
    const first = c.req.header('x-forwarded-for')?.split(',')[0];
    const forwarded = first === undefined ? undefined : addressKeyOf(first);
    if (forwarded) return forwarded;
  }
  const peer = getConnInfo(c).remote.address;
  return (peer ? addressKeyOf(peer) : undefined) ?? 'unknown';
}
