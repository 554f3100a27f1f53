/**
 * The server-side request forgery guard of every request sent to a URL a customer chose (webhook deliveries,
 * automation exports), for live integrations: https:// only, and never to a loopback, private, link-local or other
 * special-purpose address, IPv4 embedded in IPv6 included (domain/addresses.ts). A test integration may use http://,
 * loopback and private addresses, never link-local ones (cloud metadata) or IPv6 forms embedding IPv4. Checked on
 * the URL before connecting (an IP literal is connected to without a lookup) and on the addresses the name resolves
 * to when connecting, so a name that resolves (or rebinds) to such an address is refused too.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { blockedRangeOf, neverReachedRangeOf } from '../domain/addresses';

/** How host names are resolved (tests inject one that maps names to loopback). */
export type Resolver = (hostname: string, cb: (err: Error | null, addresses: LookupAddress[]) => void) => void;

export const defaultResolver: Resolver = (hostname, cb) => dnsLookup(hostname, { all: true, verbatim: true }, cb);

/** A connection the guard refused: the URL, not the network, is at fault. */
export class GuardRefusal extends Error {
  override name = 'GuardRefusal';
}

/**
 * Why the guard refuses `url` before any connection, or null. Unguarded (a test integration), only the ranges no
 * delivery reaches (link-local, where cloud metadata services answer, and IPv6 forms embedding IPv4) are refused.
 */
export function refusalOf(url: URL, guard: boolean): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!guard) {
    const never = isIP(host) ? neverReachedRangeOf(host) : null;
    return never ? `refused: ${host} is a ${never} address, which no delivery reaches (a test integration's neither)` : null;
  }
  if (url.protocol !== 'https:') return 'refused: live deliveries go to https:// URLs only';
  const range = isIP(host) ? blockedRangeOf(host) : null;
  return range ? `refused: ${host} is a special-purpose address (${range}), not a public one` : null;
}

/**
 * A `lookup` for http(s) agents and requests through `resolver`; guarded, it fails with GuardRefusal when any address
 * the name resolves to is blocked.
 */
export function lookupThrough(resolver: Resolver, guard: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolver(hostname, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const rangeOf = guard ? blockedRangeOf : neverReachedRangeOf;
      const blocked = addresses.map((a) => ({ address: a.address, range: rangeOf(a.address) })).find((a) => a.range);
      if (blocked) {
        const why = guard ? `a special-purpose address (${blocked.range}), not a public one` : `a ${blocked.range} address, which no delivery reaches`;
        return callback(new GuardRefusal(`refused: ${hostname} resolves to ${blocked.address}, ${why}`), '', 0);
      }
      if (addresses.length === 0) {
        const message = `${hostname} did not resolve`;
        return callback(guard ? new GuardRefusal(`refused: ${message}`) : new Error(message), '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
