import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createKeyring,
  isPlaintext,
  kidOf,
  openSigningSecret,
  openSourceConfig,
  places,
  sealSigningSecret,
  sealSourceConfig,
  SecretError,
} from '../../domain/secrets';

const k1 = { kid: 'k1', key: randomBytes(32) };
const k2 = { kid: 'k2', key: randomBytes(32) };
const place = places.sourceApiKey('5f0c2d7e-1b8a-4c3e-9d2f-6a7b8c9d0e1f');
const SECRET = 'whsec_3kZr0c5VqM9yN2pW8xL4bT6uH1sJ7dF0';

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('keyring', () => {
  it('seals with the first key into enc:v1:<kid>:<iv>:<tag>:<ciphertext> and opens it again', () => {
    const ring = createKeyring([k1, k2]);
    const stored = ring.seal(SECRET, place);
    expect(stored).toMatch(/^enc:v1:k1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]+$/);
    expect(stored).not.toContain(SECRET.slice(6));
    expect(kidOf(stored)).toBe('k1');
    expect(ring.isCurrent(stored)).toBe(true);
    expect(ring.open(stored, place)).toBe(SECRET);
  });

  it('uses a fresh IV for every value', () => {
    const ring = createKeyring([k1]);
    const a = ring.seal(SECRET, place);
    const b = ring.seal(SECRET, place);
    expect(a).not.toBe(b);
    expect(a.split(':')[3]).not.toBe(b.split(':')[3]);
  });

  it('opens values of an older key after rotation; they are no longer current', () => {
    const old = createKeyring([k1]).seal(SECRET, place);
    const rotated = createKeyring([k2, k1]);
    expect(rotated.open(old, place)).toBe(SECRET);
    expect(rotated.isCurrent(old)).toBe(false);
    expect(kidOf(rotated.seal(SECRET, place))).toBe('k2');
  });

  it('refuses a value whose key is not in the ring, naming the key id and never the value', () => {
    const stored = createKeyring([k1]).seal(SECRET, place);
    const err = thrown(() => createKeyring([k2]).open(stored, place));
    expect(err).toBeInstanceOf(SecretError);
    expect(err.message).toMatch(/sealed with key k1, which ENCRYPTION_KEYS does not hold \(it holds k2\)/);
    expect(err.message).not.toContain(SECRET);
    expect(err.message).not.toContain(stored);
  });

  it('refuses a value sealed with another key under the same id, or altered, or moved to another row', () => {
    const ring = createKeyring([k1]);
    const stored = ring.seal(SECRET, place);
    const impostor = createKeyring([{ kid: 'k1', key: randomBytes(32) }]);
    expect(thrown(() => impostor.open(stored, place)).message).toMatch(/does not open with key k1/);
    const parts = stored.split(':');
    const flipped = Buffer.from(parts[5]!, 'base64url');
    flipped[0]! ^= 1;
    parts[5] = flipped.toString('base64url');
    expect(thrown(() => ring.open(parts.join(':'), place))).toBeInstanceOf(SecretError);
    expect(thrown(() => ring.open(stored, places.sourceApiKey('00000000-0000-4000-8000-000000000000'))).message).toMatch(/does not open with key k1/);
    const err = thrown(() => ring.open('enc:v1:k1:only-two', place));
    expect(err.message).toMatch(/malformed/);
    expect(thrown(() => ring.open('enc:v9:k1:a:b:c', place)).message).toMatch(/unknown format/);
  });

  it('returns a plaintext from before encryption as it is (the re-encryption pass finds it), never current', () => {
    const ring = createKeyring([k1]);
    expect(isPlaintext('sbx_legacy')).toBe(true);
    expect(ring.open('sbx_legacy', place)).toBe('sbx_legacy');
    expect(ring.isCurrent('sbx_legacy')).toBe(false);
    expect(kidOf('sbx_legacy')).toBeNull();
  });

  it('refuses to seal a sealed value, and keyrings that cannot work', () => {
    const ring = createKeyring([k1]);
    expect(thrown(() => ring.seal(ring.seal(SECRET, place), place))).toBeInstanceOf(SecretError);
    expect(thrown(() => createKeyring([]))).toBeInstanceOf(SecretError);
    expect(thrown(() => createKeyring([{ kid: 'k1', key: randomBytes(16) }])).message).toMatch(/k1 has 16 bytes/);
    expect(thrown(() => createKeyring([k1, { ...k2, kid: 'k1' }])).message).toMatch(/k1 appears twice/);
    expect(thrown(() => createKeyring([{ kid: 'a:b', key: randomBytes(32) }])).message).toMatch(/key id/);
  });
});

describe('the two places secrets are stored', () => {
  it('a source api key: sealed for its integration, the other settings untouched', () => {
    const ring = createKeyring([k1]);
    const id = '5f0c2d7e-1b8a-4c3e-9d2f-6a7b8c9d0e1f';
    const sealed = sealSourceConfig(ring, id, { base_url: 'https://pms.example.com', api_key: 'pms-key', size: 3 });
    expect(sealed).toEqual({ base_url: 'https://pms.example.com', api_key: expect.stringMatching(/^enc:v1:k1:/), size: 3 });
    expect(openSourceConfig(ring, { id, sourceConfig: sealed })).toEqual({ base_url: 'https://pms.example.com', api_key: 'pms-key', size: 3 });
    expect(() => openSourceConfig(ring, { id: '00000000-0000-4000-8000-000000000000', sourceConfig: sealed })).toThrow(SecretError);
  });

  it('a signing secret: current and previous share the subscription place, so a rotation may move the value', () => {
    const ring = createKeyring([k1]);
    const stored = sealSigningSecret(ring, 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8', SECRET);
    expect(openSigningSecret(ring, 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8', stored)).toBe(SECRET);
    expect(() => openSigningSecret(ring, 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E9', stored)).toThrow(SecretError);
  });
});
