/**
 * The SSRF guard of live deliveries: which addresses a webhook or export may connect to, classified by ipaddr.js, as
 * the admin API's URL check and the sender's connect-time check see them.
 */
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { GuardRefusal, lookupThrough, refusalOf } from '../../activities/address-guard';
import { blockedRangeOf, isBlockedAddress, isLoopbackName, neverReachedRangeOf } from '../../domain/addresses';

/** Special-purpose IPv4 addresses, each with the name of its range. */
const IPV4_RANGES: [string, string][] = [
  ['0.0.0.0', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['255.255.255.255', 'broadcast'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['169.254.169.254', 'link-local'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['100.64.0.1', 'shared (carrier-grade NAT)'],
  ['100.127.255.255', 'shared (carrier-grade NAT)'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['192.0.0.8', 'reserved or documentation'],
  ['192.0.2.1', 'reserved or documentation'],
  ['192.88.99.1', 'reserved or documentation'],
  ['198.18.0.1', 'reserved or documentation'],
  ['198.19.255.255', 'reserved or documentation'],
  ['198.51.100.1', 'reserved or documentation'],
  ['203.0.113.1', 'reserved or documentation'],
  ['240.0.0.1', 'reserved or documentation'],
  ['192.175.48.1', 'AS112'],
  ['192.31.196.1', 'AS112'],
  ['192.52.193.1', 'AMT relay'],
];

/** Special-purpose IPv6 addresses, each with the name of its range. */
const IPV6_RANGES: [string, string][] = [
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['fe80::1', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['ff02::1', 'multicast'],
  ['fc00::1', 'unique local (private)'],
  ['fd12:3456:789a::1', 'unique local (private)'],
  ['fec0::1', 'site-local'],
  ['100::1', 'discard-only'],
  ['::ffff:8.8.8.8', 'IPv4-mapped'],
  ['::ffff:0:808:808', 'IPv4-translated'],
  ['64:ff9b::808:808', 'NAT64'],
  ['64:ff9b:1::1', 'NAT64'],
  ['2002:808:808::1', '6to4'],
  ['2001::1', 'Teredo'],
  ['2001:2::1', 'benchmarking'],
  ['2001:3::1', 'AMT relay'],
  ['2001:4:112::1', 'AS112'],
  ['2620:4f:8000::1', 'AS112'],
  ['2001:10::1', 'ORCHID'],
  ['2001:20::1', 'ORCHIDv2'],
  ['2001:30::1', 'drone remote ID'],
  ['5f00::1', 'segment routing'],
  ['2001:db8::1', 'reserved or documentation'],
  ['2001:1::1', 'reserved or documentation'],
  ['3fff::1', 'reserved or documentation'],
  ['::808:808', 'IPv4-compatible or unallocated (outside 2000::/3)'],
  ['1::1', 'IPv4-compatible or unallocated (outside 2000::/3)'],
  ['4000::1', 'IPv4-compatible or unallocated (outside 2000::/3)'],
  ['e000::1', 'IPv4-compatible or unallocated (outside 2000::/3)'],
];

describe('blockedRangeOf', () => {
  it.each([
    ['IPv4', IPV4_RANGES],
    ['IPv6', IPV6_RANGES],
  ])('refuses every special-purpose %s range, naming it', (_family, cases) => {
    for (const [address, range] of cases) expect(blockedRangeOf(address), address).toBe(range);
  });

  it('accepts public unicast addresses of both families', () => {
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '172.32.0.1',
      '100.128.0.1',
      '192.0.3.1',
      '223.255.255.254',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      '2a00:1450:4001:82b::200e',
      '2001:200::1',
      '2606:4700:4700::1111%eth0',
    ]) {
      expect(blockedRangeOf(address), address).toBeNull();
      expect(isBlockedAddress(address), address).toBe(false);
    }
  });

  it('refuses IPv4 embedded in IPv6 in every spelling, whatever the embedded address', () => {
    for (const address of [
      // Mapped.
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::FFFF:7F00:1',
      '0:0:0:0:0:ffff:7f00:1',
      '0000:0000:0000:0000:0000:ffff:7f00:0001',
      '::ffff:127.000.000.001',
      '::ffff:8.8.8.8',
      // Compatible (::/96).
      '::127.0.0.1',
      '::7f00:1',
      '0:0:0:0:0:0:7f00:1',
      '::8.8.8.8',
      // Translated (::ffff:0:0/96).
      '::ffff:0:7f00:1',
      '::ffff:0:127.0.0.1',
      '0000:0000:0000:0000:ffff:0000:7f00:0001',
      '::FFFF:0:808:808',
      // 6to4, NAT64, Teredo.
      '2002:7f00:1::',
      '2002:7F00:0001::',
      '2002:808:808::',
      '64:ff9b::7f00:1',
      '64:ff9b::127.0.0.1',
      '0064:FF9B:0000:0000:0000:0000:7F00:0001',
      '64:ff9b::8.8.8.8',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      // A zone id changes nothing.
      'fe80::1%eth0',
      'FE80::1%25',
      '::ffff:127.0.0.1%eth0',
    ]) {
      expect(blockedRangeOf(address), address).not.toBeNull();
      expect(isBlockedAddress(address), address).toBe(true);
    }
  });

  it('refuses what is not an IP address in a standard spelling', () => {
    for (const address of ['', 'localhost', 'example.com', '127.1', '0x7f.0.0.1', '2130706433', '010.0.0.1', '1.2.3.4.5', ':::1', '[::1]']) {
      expect(blockedRangeOf(address), address).toBe('not an IP address');
    }
  });

  it('knows localhost names', () => {
    expect(isLoopbackName('localhost')).toBe(true);
    expect(isLoopbackName('LOCALHOST.')).toBe(true);
    expect(isLoopbackName('api.localhost')).toBe(true);
    expect(isLoopbackName('localhost.example.com')).toBe(false);
  });
});

describe('what a test integration may reach', () => {
  it('loopback and private addresses over http, never link-local (cloud metadata) or IPv6 forms embedding IPv4', () => {
    for (const url of [
      'http://127.0.0.1:4000/in',
      'http://[::1]/in',
      'http://0x7f.1/',
      'http://10.0.0.1/h',
      'http://192.168.1.1/h',
      'http://[fd00::1]/h',
      'http://hooks.example.com/in',
    ]) {
      expect(refusalOf(new URL(url), false), url).toBeNull();
    }
    for (const [url, shown, range] of [
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254', 'link-local'],
      ['http://[fe80::1]/h', 'fe80::1', 'link-local'],
      ['https://[::ffff:169.254.169.254]/h', '::ffff:a9fe:a9fe', 'IPv4-mapped'],
      ['https://[64:FF9B::A9FE:A9FE]/latest', '64:ff9b::a9fe:a9fe', 'NAT64'],
      ['https://[2002:a9fe:a9fe::]/', '2002:a9fe:a9fe::', '6to4'],
    ] as const) {
      expect(refusalOf(new URL(url), false), url).toBe(`refused: ${shown} is a ${range} address, which no delivery reaches (a test integration's neither)`);
      expect(neverReachedRangeOf(shown)).toBe(range);
    }
    expect(neverReachedRangeOf('127.0.0.1')).toBeNull();
    expect(neverReachedRangeOf('10.1.2.3')).toBeNull();
  });

  it('refuses a name that resolves to a link-local address when connecting', async () => {
    const lookup = (address: string) =>
      new Promise<string>((resolve, reject) =>
        lookupThrough((_h, cb) => cb(null, [{ address, family: address.includes(':') ? 6 : 4 }]), false)('meta.example.test', {}, (err, a) =>
          err ? reject(err) : resolve(a as string),
        ),
      );
    const err = await lookup('169.254.169.254').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GuardRefusal);
    expect((err as Error).message).toBe('refused: meta.example.test resolves to 169.254.169.254, a link-local address, which no delivery reaches');
    await expect(lookup('127.0.0.1')).resolves.toBe('127.0.0.1');
    await expect(lookup('10.0.0.7')).resolves.toBe('10.0.0.7');
  });
});

describe('the guard of live deliveries', () => {
  it('refuses a URL naming a special-purpose address, however the URL spells it', () => {
    for (const [url, shown] of [
      ['https://[::127.0.0.1]/', '::7f00:1'],
      ['https://[::ffff:0:7f00:1]/', '::ffff:0:7f00:1'],
      ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
      ['https://[2002:7f00:1::]/in', '2002:7f00:1::'],
      ['https://[64:FF9B::A9FE:A9FE]/latest', '64:ff9b::a9fe:a9fe'],
      ['https://[0:0:0:0:0:0:0:1]/', '::1'],
      ['https://0x7f.1/', '127.0.0.1'],
      ['https://2130706433/', '127.0.0.1'],
      ['https://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ] as const) {
      expect(refusalOf(new URL(url), true), url).toMatch(
        new RegExp(`^refused: ${shown.replace(/[.]/g, '\\.')} is a special-purpose address \\(.+\\), not a public one$`),
      );
    }
    expect(refusalOf(new URL('https://[2606:4700:4700::1111]/in'), true)).toBeNull();
    expect(refusalOf(new URL('https://8.8.8.8/in'), true)).toBeNull();
    expect(refusalOf(new URL('https://hooks.example.com/in'), true)).toBeNull();
  });

  it('refuses a name that resolves to an embedded loopback address when connecting', async () => {
    const resolveTo =
      (...addresses: string[]) =>
      (_host: string, cb: (err: Error | null, a: LookupAddress[]) => void) =>
        cb(
          null,
          addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
        );
    const lookup = (addresses: string[]) =>
      new Promise<string>((resolve, reject) =>
        lookupThrough(resolveTo(...addresses), true)('rebind.example.test', {}, (err, address) => (err ? reject(err) : resolve(address as string))),
      );
    for (const address of ['::ffff:0:7f00:1', '::7f00:1', '2002:a9fe:a9fe::', '64:ff9b::a00:1']) {
      const err = await lookup(['93.184.216.34', address]).catch((e: unknown) => e);
      expect(err, address).toBeInstanceOf(GuardRefusal);
      expect((err as Error).message).toBe(
        `refused: rebind.example.test resolves to ${address}, a special-purpose address (${blockedRangeOf(address)}), not a public one`,
      );
    }
    await expect(lookup(['93.184.216.34', '2606:4700:4700::1111'])).resolves.toBe('93.184.216.34');
  });
});
