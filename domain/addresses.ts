/**
 * Addresses a live integration's webhook or export may never reach (server-side request forgery guard). Checked when
 * a subscription or destination is made (IP literals, `localhost`) and again on the address a delivery actually
 * connects to.
 *
 * The classification is ipaddr.js's, which names every IANA special-purpose range of both families; only what it
 * calls `unicast` passes, so a range it learns in a later release is refused without a change here. Pure JS (no Node
 * built-ins), like the rest of domain/.
 */
import ipaddr from 'ipaddr.js';

/**
 * IANA's global unicast space. IPv6 outside it is either special-purpose (refused by range anyway) or unallocated,
 * which includes the IPv4-compatible `::a.b.c.d` (::/96, deprecated by RFC 4291) that ipaddr.js calls unicast.
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** Words for ipaddr.js's range names in refusals; a name missing here is shown as ipaddr.js spells it. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'shared (carrier-grade NAT)',
  private: 'private',
  reserved: 'reserved or documentation',
  as112: 'AS112',
  amt: 'AMT relay',
  uniqueLocal: 'unique local (private)',
  ipv4Mapped: 'IPv4-mapped',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard-only',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
  benchmarking: 'benchmarking',
  as112v6: 'AS112',
  deprecatedOrchid: 'ORCHID',
  orchid2: 'ORCHIDv2',
  droneRemoteIdProtocolEntityTags: 'drone remote ID',
  segmentRouting: 'segment routing',
};

/**
 * The special-purpose range `address` is in, in words ("loopback", "6to4", …), or null when it is a public unicast
 * address a live delivery may connect to. Anything that is not an IP address in a standard spelling is refused too.
 *
 * An IPv6 address that embeds an IPv4 one (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, translated
 * `::ffff:0:a.b.c.d`, 6to4 `2002::/16`, NAT64 `64:ff9b::/96`, Teredo `2001::/32`) is refused whatever the embedded
 * address: nothing legitimate resolves to one (the resolver is asked without V4MAPPED), and translators and relays
 * forward to networks this process cannot see, so judging the embedded address would only be a guess.
 */
export function blockedRangeOf(address: string): string | null {
  // Only dotted quads: `127.1` or `0x7f.0.0.1` are loopback to inet_aton but not to everything that parses addresses.
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) {
    const range = ipaddr.IPv4.parse(address).range();
    return range === 'unicast' ? null : (RANGE_WORDS[range] ?? range);
  }
  if (ipaddr.IPv6.isValid(address)) {
    const ip = ipaddr.IPv6.parse(address);
    const range = ip.range();
    if (range !== 'unicast') return RANGE_WORDS[range] ?? range;
    return ip.match(GLOBAL_UNICAST_V6) ? null : 'IPv4-compatible or unallocated (outside 2000::/3)';
  }
  return 'not an IP address';
}

/**
 * Ranges no delivery connects to, a test integration's included (which may otherwise use loopback and private
 * addresses: a receiver on the developer's machine, network or container network): link-local, where cloud metadata
 * services answer (169.254.169.254), and the IPv6 forms that embed an IPv4 address, which could spell one.
 */
const NEVER = new Set(['link-local', 'IPv4-mapped', 'IPv4-translated', 'NAT64', '6to4', 'Teredo', 'IPv4-compatible or unallocated (outside 2000::/3)']);

/** The range of `address` if no delivery may connect to it whatever the integration's mode, else null. */
export function neverReachedRangeOf(address: string): string | null {
  const range = blockedRangeOf(address);
  return range !== null && NEVER.has(range) ? range : null;
}

/** Whether a live delivery must not connect to this address. */
export function isBlockedAddress(address: string): boolean {
  return blockedRangeOf(address) !== null;
}

/** Host names that always mean this machine. */
export function isLoopbackName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}
